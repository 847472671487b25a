"""From a composed config to a finished run: check, build, train, test, summarise.

Data flows one way: config -> settings (checked) -> registry builds env, agent, body -> loop -> loggers.
Nothing is written to disk until every component has been built, so bad input leaves no run directory.
A run may continue an earlier attempt from its checkpoint, or find itself finished (experiments.resume).
What the loop does besides training is told to callbacks (loop.callbacks), the user's among them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rlconf import distributed, registry
from rlconf.agents import Multiagent, ParallelAgent
from rlconf.core import EnvKind
from rlconf.core.layout import mask_width
from rlconf.environments import Environment
from rlconf.errors import ConfigError, first_line
from rlconf.experiments.build.agent import build_agent
from rlconf.experiments.build.environment import eval_env_count, make_env
from rlconf.experiments.build.setup import prepare
from rlconf.experiments.console.progress import ConsoleProgress, retract
from rlconf.experiments.loop import callbacks as loop_callbacks
from rlconf.experiments.loop import learners, preemption
from rlconf.experiments.loop.bandit import BanditExperiment
from rlconf.experiments.loop.callbacks import Callback
from rlconf.experiments.loop.experiment import (
    TEST_SEED_OFFSET,
    Experiment,
    Interrupted,
    LoopSettings,
    Pruned,
    RunFailed,
)
from rlconf.experiments.loop.learner_group import LearnerGroupEnvironment, learner_group_weights
from rlconf.experiments.loop.multiagent import MultiagentExperiment
from rlconf.experiments.loop.runner import Acting, ActingEnvironment, AsyncExperiment
from rlconf.experiments.loop.stopping import stop_callbacks
from rlconf.experiments.loop.summary import summarize, summary_line
from rlconf.experiments.loop.teams import TeamExperiment
from rlconf.experiments.loop.video import TrainingVideos
from rlconf.experiments.rundir import provenance, resume, warmstart
from rlconf.experiments.rundir.checkpoint import load_checkpoint
from rlconf.experiments.rundir.directory import (
    RunDirRefused,
    check_logdir,
    claim,
    make_run_dir,
    slurm_job_id,
    take_over,
    write_status,
)
from rlconf.experiments.rundir.sweep import redact_multirun, write_sweep_table
from rlconf.files import write_failure, write_json, write_text
from rlconf.logging import LoggerContext, LoggerGroup
from rlconf.settings import Settings, check_process_counts, redact
from rlconf.text import counted


def run(cfg: DictConfig, parent_dir: str | Path | None = None, overrides: list[str] | None = None,
        callbacks: Sequence[Callback] = ()) -> dict:
    """Run one experiment described by a composed config; returns the summary (also in summary.json).

    ``parent_dir``: the sweep directory of a sweep job, whose run directory is named by its ``overrides``.
    A sweep job, or a run given ``resume=DIR``, continues from its directory's checkpoint, or returns the
    summary of a run that has already finished. ``callbacks``: told of the run's events, after those the
    config names (``callbacks=``, ``stop.*``)."""
    try:
        return _run_or_skip(cfg, parent_dir, overrides, callbacks)
    finally:
        retract()  # the "building ..." line of a terminal, if nothing erased it yet (an error follows)


def _run_or_skip(cfg: DictConfig, parent_dir: str | Path | None, overrides: list[str] | None,
                 callbacks: Sequence[Callback]) -> dict:
    started_at = time.time()
    if cfg.get("rerun"):  # a new run of a recorded config: its values where today's presets differ
        cfg = provenance.as_recorded(cfg, cfg.rerun, warn=learners.first())
    settings = prepare(cfg)
    overrides = list(overrides or [])
    if parent_dir is not None and learners.first():  # Hydra wrote the sweep's command line there, secrets included
        redact_multirun(parent_dir)
    resolved = redact(OmegaConf.to_container(cfg, resolve=True))  # what is saved and logged: no secrets
    where = resume.plan(settings.run.steps, settings.run.resume, parent_dir,
                        (settings.agent_name, settings.env.name, settings.run.seed), overrides, resolved)
    if where.summary is not None:
        return _already_finished(settings, where.summary, where.run_dir, parent_dir)
    if where.run_dir is None:  # a fresh run: its directory can be made, said before anything is built
        try:
            check_logdir(settings.run.logdir)
        except ValueError as error:
            raise ConfigError(str(error)) from None
    check_process_counts(settings.hardware)
    users = user_callbacks(settings, callbacks)
    with learners.together(settings, cfg, parent_dir, overrides, run):
        if distributed.active():  # every learner continues what the first one found on disk
            where = distributed.scatter([where] * distributed.size() if distributed.rank() == 0 else None)
            if distributed.rank() != 0:
                return _follow(settings, where)
        return _lead(settings, where, resolved, overrides, parent_dir, started_at, users)


def user_callbacks(settings: Settings, given: Sequence[Callback]) -> list[Callback]:
    """The callbacks a user adds: ``callbacks=[module.Class]`` (from plugins), ``stop.*``, then ``given``
    (rlconf.train's); a ConfigError where a run of several learners, which cannot agree on them, has any."""
    wrong = next((c for c in given if not isinstance(c, Callback)), None)
    if wrong is not None:  # rlconf.train(cfg, callbacks=[...]) with a class, or something else
        raise ConfigError(f"callbacks: {wrong!r} is not a callback; allowed: rlconf.Callback objects (instances)")
    found = [*loop_callbacks.from_config(settings.run.callbacks),
             *stop_callbacks(settings.run.stop, settings.run.episodes), *given]
    if found and settings.hardware.learners > 1:
        raise ConfigError(f"hardware.learners={settings.hardware.learners}: callbacks and stop.* run in a run of "
                          "one learner; allowed: hardware.learners=1 with them")
    return found


def _lead(settings: Settings, where: resume.Plan, resolved: dict, overrides: list[str],
          parent_dir: str | Path | None, started_at: float, users: list[Callback]) -> dict:
    """The run, by its one writer (the only learner, or the first of several)."""
    with contextlib.ExitStack() as held:
        # One writer a run directory: a second resume of it is refused before anything is built or touched.
        claimed = where.run_dir is not None and where.run_dir.exists()
        lock = _hold(held, where.run_dir) if claimed else None
        built = build(settings, where)
        run_dir = make_run_directory(settings, where)
        if lock is None:
            lock = _hold(held, run_dir)
        take_over(lock, run_dir)  # everything is built: from here on, this run writes its directory
        setup = held.enter_context(SettingUp(run_dir, settings.run.steps, where))
        write_run_config(settings, run_dir, where, resolved, overrides)
        sweep_dir = parent_dir or (run_dir.parent if (run_dir.parent / "multirun.yaml").exists() else None)
        on_status = setup.until_running(functools.partial(write_status, run_dir))
        experiment = choose_experiment(settings, built, run_dir, resolved, where.existing, sweep_dir, on_status,
                                       users)
        summary = finish(settings, experiment, built.checkpoint, where, started_at)
        if sweep_dir is not None:  # a sweep's run, or one of them resumed on its own
            write_sweep_table(sweep_dir)
        experiment.progress.print(summary_line(f"{settings.agent_name} {settings.env.name}", summary,
                                               settings.run.steps))
        return {**summary, "run_dir": str(run_dir)}  # the caller's own path (rlconf.train), as it gave it


class SettingUp(contextlib.AbstractContextManager):
    """From the moment a run holds its directory until it trains, its status.json says ``starting``, and what
    ends it there says what happened: a stop signal (SIGTERM, Slurm's SIGUSR1/2, Ctrl-C) ``stopped``, an error
    ``failed``. Without it a directory whose run was killed while being set up had no status, and ``rlconf
    status`` showed it queued forever. Nothing has trained yet, so a signal stops at once (a fresh run's
    directory, which holds nothing of value, is removed); from its first ``running`` on, training answers
    signals itself (``stopping.stop_requests``) and reports its own faults (``finish``)."""

    SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)  # SIGINT raises KeyboardInterrupt already

    class Stopped(BaseException):  # not an Exception: nothing on the way out mistakes it for a fault
        def __init__(self, signum: int):
            super().__init__(signum)
            self.signum = signum

    def __init__(self, run_dir: Path, steps: int, where: resume.Plan):
        self.run_dir, self.steps, self.where = run_dir, steps, where
        self.training = False
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> SettingUp:
        self._status("starting")
        if threading.current_thread() is threading.main_thread():
            self.previous = {s: signal.signal(s, self._stop) for s in self.SIGNALS}
        return self

    def until_running(self, status: Callable[..., None]) -> Callable[..., None]:
        """``status`` (the experiment's on_status), ending the setup when the run first says it is running."""
        def report(state: str, **fields: Any) -> None:
            if state == "running":
                self._end()
            status(state, **fields)

        return report

    def __exit__(self, kind, error, traceback) -> None:
        training = self.training
        self._end()
        if kind is None or training:
            return
        if isinstance(error, (SettingUp.Stopped, KeyboardInterrupt)):
            signum = error.signum if isinstance(error, SettingUp.Stopped) else signal.SIGINT
            name = signal.Signals(signum).name
            if self.where.existing:
                self._status("stopped", signal=name)
                then = f"continue with: rlconf run resume={shlex.quote(str(self.run_dir))}"
            else:
                then = _nothing_kept(self.run_dir, self.where)
            print(f"rlconf: stopped by {name} before training began; {then}", file=sys.stderr)
            raise SystemExit(128 + signum) from None
        elif isinstance(error, ConfigError) and not self.where.existing:  # bad input leaves no run directory
            _nothing_kept(self.run_dir, self.where)
        elif isinstance(error, Exception):
            self._status("failed", error=first_line(error))

    def _end(self) -> None:
        self.training = True
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous = {}

    def _stop(self, signum: int, frame) -> None:
        raise SettingUp.Stopped(signum)

    def _status(self, state: str, **fields: Any) -> None:
        """status.json, where the directory (and the disk) still takes it."""
        if self.run_dir.is_dir():
            with contextlib.suppress(OSError):
                write_status(self.run_dir, state, total_steps=self.steps, **fields)


@dataclass
class Built:
    """What a run is made of, built before anything is written: bad input leaves no run directory."""

    env: Environment
    agent: ParallelAgent | Multiagent
    logger: LoggerGroup  # the agent logs through it; its backends open with the run directory (choose_experiment)
    checkpoint: dict | None  # the attempt it continues, checked against the agent
    videos: TrainingVideos | None = None  # logger.video_every


def build(settings: Settings, where: resume.Plan) -> Built:
    """The run's environment, its agent, and the checkpoint it resumes from: one of another agent is refused
    before the run directory is touched."""
    logger = LoggerGroup([], verbose=settings.run.verbose, debug_every=settings.logger.debug_every)
    env = make_env(settings, settings.hardware.n_envs)
    if distributed.active():  # one of several learners: the loop sees the group's steps and episodes
        env = LearnerGroupEnvironment(env, distributed.size(), distributed.rank())
    agent = build_agent(settings, env, logger)
    if settings.run.init.run and not where.existing:  # a warm start; a resumed run has its own weights
        warmstart.warm_start(agent, settings.run.init.run, settings.run.init.optimizer)
    if distributed.active():  # built from the same seed: the same weights on every learner, checked once
        distributed.check_same(learner_group_weights(agent.state_dict()), "the learners' first weights")
    checkpoint = _load_checkpoint(where.checkpoint) if where.checkpoint else None
    if checkpoint is not None:
        try:
            Experiment.check_restorable(agent, checkpoint, where.run_dir)
        except (ValueError, KeyError, RuntimeError, TypeError) as error:
            raise ConfigError(f"cannot resume {where.checkpoint}: {first_line(error)}") from None
    return Built(env, agent, logger, checkpoint, _videos(settings))


def _videos(settings: Settings) -> TrainingVideos | None:
    """The videos of ``logger.video_every``, their environment rendering already (the first learner films)."""
    if not settings.logger.video_every or distributed.rank() != 0:
        return None
    videos = TrainingVideos(lambda render_mode, wrappers: make_env(settings, 1, render_mode, wrappers, test=True),
                            settings.logger.video_every, settings.logger.video_length,
                            settings.run.seed + TEST_SEED_OFFSET)
    videos.check()
    return videos


def make_run_directory(settings: Settings, where: resume.Plan) -> Path:
    """The run's directory: the one it resumes, or a new one (made now that everything is built)."""
    try:
        run_dir = where.run_dir or make_run_dir(settings.run.logdir, settings.agent_name, settings.env.name,
                                                settings.run.seed)
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a disk that filled since check_logdir
        raise RunFailed(f"{write_failure(error)}; nothing was kept") from None
    return run_dir


def write_run_config(settings: Settings, run_dir: Path, where: resume.Plan, resolved: dict,
                     overrides: list[str]) -> None:
    """config.yaml, overrides.yaml and provenance.json beside the run. A resumed run keeps the summary.json
    of its shorter budget until it writes its own: its budget says it has not finished (rundir.finished_summary,
    ``rlconf status``), and a resume that is killed or fails keeps the earlier test result."""
    retract()
    try:
        write_text(run_dir / "config.yaml", OmegaConf.to_yaml(resolved))
        if not (run_dir / "overrides.yaml").exists():  # a resumed run keeps those it was launched with
            write_text(run_dir / "overrides.yaml", OmegaConf.to_yaml(redact(overrides)))
        provenance.write(run_dir, settings.hardware.device, overrides, where.existing, settings.run.rerun)
    except OSError as error:  # a full disk before the run began: a fresh run leaves nothing behind
        raise RunFailed(f"{write_failure(error)}; {_nothing_kept(run_dir, where)}") from None
    # First, whatever the output: a log (a pipe, a Slurm job's) says where the run is before its progress.
    if not settings.run.quiet and not where.existing:  # a resumed run says so (_restore)
        print(f"rlconf: run directory {run_dir}", file=sys.stderr, flush=True)


# The experiment loop of each kind of environment.
EXPERIMENTS: dict[EnvKind, type[Experiment]] = {
    EnvKind.SINGLE_AGENT: Experiment, EnvKind.MULTI_AGENT: MultiagentExperiment, EnvKind.BANDIT: BanditExperiment,
    EnvKind.TEAM: TeamExperiment}


def _return_columns(env) -> list[str]:
    """Whose returns episodes.csv keeps beside the run's own: a game's players, a team's groups (none: [])."""
    return list(env.agent_groups) if env.kind is EnvKind.TEAM else list(env.agents)


def choose_experiment(settings: Settings, built: Built, run_dir: Path, resolved: dict, resumed: bool,
                      sweep_dir: str | Path | None, on_status: Callable[..., None] | None = None,
                      callbacks: Sequence[Callback] = ()) -> Experiment:
    """The loop for the environment's kind (``EXPERIMENTS``), logging to the backends of the logger group,
    which open in ``run_dir`` now, and writing the run's status.json as it goes."""
    env = built.env
    context = LoggerContext(run_dir, config=resolved, name=run_dir.name,
                            sweep=Path(sweep_dir).name if sweep_dir else None, frames_per_step=env.frames_per_step,
                            resumed=resumed, quiet=settings.run.quiet, agents=_return_columns(env), arms=env.arms)
    built.logger.loggers = [registry.get("logger", name).from_config(options, context)
                            for name, options in settings.logger.backends.items()]
    experiment_class, options = EXPERIMENTS[env.kind], {}
    if settings.hardware.runner == "async":  # the environment steps in an acting process; this one learns
        experiment_class = AsyncExperiment
        acting = Acting(resolved, built.agent, settings.hardware.n_envs, settings.run.steps,
                        settings.hardware.sync_every, mask_width(env.action_space) if env.masks_actions else None)
        env.close()
        env, options = ActingEnvironment(env, acting), {"acting": acting}
    if built.videos is not None:
        built.videos.attach(run_dir, built.logger)
    # A run of an Optuna sweep reports its evaluations to its trial: only then is optuna imported.
    trial = trial_reporter(settings) if settings.run.trial.storage is not None else None
    test_envs = eval_env_count(settings, settings.run.test_episodes)
    return experiment_class(
        built.agent, env, lambda: make_env(settings, test_envs, test=True), built.logger, run_dir,
        LoopSettings.of(settings, checkpoint_extra={"config": resolved}),
        ConsoleProgress(f"{settings.agent_name} {settings.env.name}", settings.run.steps, quiet=settings.run.quiet),
        on_status=on_status, videos=built.videos, trial=trial, callbacks=callbacks, **options)


def trial_reporter(settings: Settings) -> Callable[[int, float], bool]:
    """The run's trial of an Optuna sweep (``trial.*``, set by the sweeper), told each periodic evaluation."""
    trial = settings.run.trial
    try:
        from rlconf.tuning.trial import TrialReporter

        return TrialReporter(trial.storage, trial.study, trial.number, trial.pruner, trial.pruner_args,
                             settings.run.steps, settings.run.eval_every)
    except ModuleNotFoundError as error:
        raise ConfigError(f"trial.storage={trial.storage}: a run of an Optuna sweep needs the missing package "
                          f"{error.name!r}: pip install 'rlconf[optuna]'") from None
    except KeyError as error:  # no such study or trial in the journal
        raise ConfigError(f"trial.storage={trial.storage}: {first_line(error)}") from None


def _follow(settings: Settings, where: resume.Plan) -> dict:
    """A learner other than the first: it trains its share beside the first learner, writing nothing (the
    first learner writes the run directory, their checkpoints and logs), and leaves when training ends (the
    first learner tests). Faults are the first learner's to report: this one leaves quietly."""
    built = build(settings, where)
    experiment = Experiment(built.agent, built.env, lambda: None, built.logger, where.run_dir or Path("."),
                            LoopSettings.of(settings), ConsoleProgress("", settings.run.steps, quiet=True))
    try:
        if where.existing:
            experiment.restore(built.checkpoint)
        experiment.train()
    except Interrupted as stop:
        raise SystemExit(128 + stop.signum) from None
    except RunFailed as error:
        raise SystemExit(error.exit_status) from None
    finally:
        experiment.close()
    return {}


def finish(settings: Settings, experiment: Experiment, checkpoint: dict | None, where: resume.Plan,
           started_at: float) -> dict[str, Any]:
    """Train (from the checkpoint, when resuming), test, and write the summary; returns it. A failure leaves
    its line in error.txt and status.json, or nothing of a fresh run that kept nothing."""
    run_dir, status, test_episodes = experiment.run_dir, experiment.status, settings.run.test_episodes
    try:
        if where.existing:
            _restore(experiment, checkpoint, run_dir, settings)
        status("running")
        pruned = None
        try:
            experiment.train()
        except Interrupted as stop:
            raise SystemExit(_stopped(stop, experiment, run_dir, status)) from None
        except Pruned as stop:  # a sweep's pruner ended it: nothing to test
            pruned = stop
        test_start = time.perf_counter()
        returns = [] if pruned else experiment.final_test(test_episodes, eval_env_count(settings, test_episodes))
        summary = summarize(settings, experiment, returns, time.perf_counter() - test_start, run_dir, started_at)
        if pruned:
            summary.update(state="pruned", pruned_at_step=pruned.steps, pruned_eval_return=pruned.eval_return)
        if returns:
            experiment.logger.add_evaluation(experiment.env.steps, returns)
        write_json(run_dir / "summary.json", summary)
        status(summary["state"], **{key: summary[key] for key in ("stop_reason",) if key in summary})
        experiment.end(summary["state"])
    except KeyboardInterrupt:  # a second Ctrl-C: stopped without a new checkpoint
        status("stopped")
        raise
    except (RunFailed, OSError) as error:  # a divergence, a full disk: one line, the last checkpoint kept
        failure = error if isinstance(error, RunFailed) else experiment.failed(write_failure(error))
        if experiment.checkpoint_steps is None and not where.existing:
            failure = RunFailed(f"{failure}; {_nothing_kept(run_dir, where)}", failure.exit_status)
        else:
            _record_failure(run_dir, str(failure), status)
        raise failure from None
    except Exception as error:
        write_text(run_dir / "error.txt", traceback.format_exc())
        status("failed", error=first_line(error))
        raise
    finally:
        experiment.progress.stop()
        # After a fault (a full disk) closing may fail too; that must not hide the line saying what happened.
        with contextlib.suppress(OSError) if sys.exc_info()[0] is not None else contextlib.nullcontext():
            experiment.logger.close()
            experiment.close()
    return summary


def _hold(held: contextlib.ExitStack, run_dir: Path) -> int:
    """Claim ``run_dir`` (its one writer) until ``held`` closes; the lock's descriptor."""
    try:
        lock = claim(run_dir)
    except RunDirRefused as error:  # busy, read-only, or crafted
        raise ConfigError(str(error)) from None
    held.callback(os.close, lock)
    return lock


def _nothing_kept(run_dir: Path, where: resume.Plan) -> str:
    """A fresh run that failed before its first checkpoint leaves no directory: it holds nothing of value."""
    if where.existing:
        return "the run directory is as it was"
    shutil.rmtree(run_dir, ignore_errors=True)
    return f"nothing was kept ({run_dir} removed)"


def _record_failure(run_dir: Path, line: str, status) -> None:
    """error.txt and status.json say why the run failed, where the disk still takes them."""
    try:
        write_text(run_dir / "error.txt", line + "\n")
        status("failed", error=line)
    except OSError:
        pass


def _load_checkpoint(path: Path) -> dict:
    try:
        return load_checkpoint(path)
    except ValueError as error:  # an older rlconf's checkpoint (pickled numpy objects), or a damaged file
        raise ConfigError(f"cannot resume {path}: {error}") from None


def _restore(experiment: Experiment, checkpoint: dict | None, run_dir: Path, settings: Settings) -> None:
    """Continue the attempt that left ``run_dir`` (from the start when it left no checkpoint)."""
    try:
        experiment.restore(checkpoint)
    except (ValueError, KeyError, RuntimeError) as error:  # another rlconf's or another agent's checkpoint
        raise ConfigError(f"cannot resume {run_dir / 'checkpoint.pt'}: {error}") from None
    if checkpoint is not None and "replay" not in checkpoint and experiment.agent.replay_state_dict():
        print(f"rlconf: {run_dir / 'checkpoint.pt'} holds no replay memory (checkpoint.replay=false): "
              "the resumed run refills it from empty and learns again once it holds agent.replay_start_size "
              "transitions",
              file=sys.stderr)
    if checkpoint is not None and not settings.run.quiet:
        print(f"rlconf: resuming {run_dir} at step {experiment.start_steps:,} "
              f"({counted(experiment.episodes, 'episode')})", file=sys.stderr)


def _stopped(stop: Interrupted, experiment: Experiment, run_dir: Path, status) -> int:
    """After a signal stopped training with a checkpoint: requeue under a scheduler, report, exit status."""
    # The checkpoint is on disk; a scheduler repeats its signals while this attempt ends (Slurm sends
    # SIGTERM once more when it requeues), and they must not cut the last status update short.
    for signum in (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, signal.SIG_IGN)
    requeued = preemption.should_requeue(stop.signum, stop.steps > experiment.start_steps) and preemption.requeue()
    status("requeued" if requeued else "stopped", signal=signal.Signals(stop.signum).name)
    experiment.end("requeued" if requeued else "stopped")
    then = (f"; requeued Slurm job {slurm_job_id()}" if requeued else
            f"; continue with: rlconf run resume={shlex.quote(str(run_dir))}")
    print(f"rlconf: stopped by {stop}; checkpoint written to {run_dir / 'checkpoint.pt'}{then}", file=sys.stderr)
    return 128 + stop.signum


def _already_finished(settings: Settings, summary: dict, run_dir: Path, parent_dir) -> dict:
    retract()
    if parent_dir is not None:
        write_sweep_table(parent_dir)
    if not settings.run.quiet:
        ended = (f"has stopped ({summary['stop_reason']}; summary.json)" if summary.get("stop_reason") else
                 "has finished (summary.json)")
        print(f"rlconf: {run_dir} {ended}: skipped", file=sys.stderr)
    return summary
