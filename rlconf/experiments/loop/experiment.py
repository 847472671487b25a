"""The experiment loop: one loop for one or many environments, with evaluation and checkpoints.

    state = env.reset()
    while env.steps < budget:
        state = env.step(agent.act(state))

Everything else here is bookkeeping around that line: episode statistics to the loggers, periodic
greedy evaluation, periodic checkpoints, the progress bar, and the final test.

A checkpoint holds everything needed to continue: the agent (models, optimisers, schedules, counters), the
replay memory (on request, and always when a signal stops the run), every random generator, the loop's
counters and where each logger stands, as tensors and plain Python data only: it loads with
``torch.load(weights_only=True)`` (``load_checkpoint``), which runs no pickled code. An environment cannot be
saved: a resumed run resets it (with a seed derived from the run's seed and the checkpoint's step), so the
episodes in progress at the checkpoint
are abandoned: their steps count towards the budget, they get no row, and the agent's memory treats the
last state it stored as the end of its episode. Rows the loggers wrote after the checkpoint (by an attempt
that went on and was killed) are cut off, so episodes.csv continues without a gap or a repeated row.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rlconf import distributed
from rlconf.approximation import NonFinite
from rlconf.core import rng
from rlconf.environments.parallel import SamplerError
from rlconf.experiments.console.progress import ConsoleProgress
from rlconf.experiments.loop.evaluate import evaluate
from rlconf.experiments.loop.stopping import stop_requests
from rlconf.experiments.loop.team import TeamEnvironment
from rlconf.experiments.loop.video import TrainingVideos
from rlconf.experiments.rundir.checkpoint import (
    BEST,
    first_non_finite_weight,
    learner_state,
    numbered_checkpoints,
    write_checkpoint,
)
from rlconf.experiments.rundir.directory import CHECKPOINT, atomic_write, write_failure
from rlconf.experiments.rundir.saved import CHECKPOINT_FORMAT, CHECKPOINT_SCHEMA, check_recorded_sizes, conform
from rlconf.logging import Logger
from rlconf.logging.base import STEPS_PER_SECOND

TEST_SEED_OFFSET = 1_000_003  # evaluations reset their environments with the run's seed plus this
STATUS_SECONDS = 10.0  # how often a training run refreshes status.json (rlconf status reads it) and flushes its logs


# What ``restore`` reads from a checkpoint besides the agent: checked first (``check_restorable``).
RESUMED_KEYS = ("steps", "episodes", "last_return", "train_seconds", "next_eval", "next_checkpoint", "resumes",
                "rng", "logger")


class RunFailed(Exception):
    """Training stopped on a fault, keeping the last good checkpoint. Its message is the one line the user
    reads: what went wrong, at which step, and which checkpoint is intact. ``exit_status``: the process's."""

    def __init__(self, message: str, exit_status: int = 1):
        super().__init__(message)
        self.exit_status = exit_status


class ProcessLost(RuntimeError):
    """A process the run's training depends on (the async runner's acting process) failed or died: its
    message says which and how."""


class Diverged(RunFailed):
    """Training stopped because a loss, gradient norm or weight became nan or inf."""


class Pruned(Exception):
    """Training stopped after an evaluation because a sweep's pruner judged the run hopeless (rlconf.tuning),
    with a checkpoint of that step: the run ends there, untested, in the state "pruned"."""

    def __init__(self, steps: int, eval_return: float):
        self.steps = steps
        self.eval_return = eval_return
        super().__init__(f"pruned at step {steps:,}")


class Interrupted(Exception):
    """Training stopped on a signal, at a step boundary, after writing a checkpoint."""

    def __init__(self, signum: int, steps: int):
        self.signum = signum
        self.steps = steps
        super().__init__(f"{signal.Signals(signum).name} at step {steps:,}")


class Experiment:
    def __init__(self, agent, env, make_test_env: Callable[[], object], logger: Logger, run_dir: Path,
                 *, steps: int, seed: int, eval_every: int, eval_episodes: int, checkpoint_every: int,
                 progress: ConsoleProgress, checkpoint_extra: dict | None = None, save_replay: bool = False,
                 keep: int = 0, on_status: Callable[..., None] | None = None, scalars_every: int = 1000):
        self.agent = agent
        self.env = env
        self.make_test_env = make_test_env
        self.logger = logger
        self.run_dir = Path(run_dir)
        self.budget = steps
        self.seed = seed
        self.eval_every = eval_every
        self.eval_episodes = eval_episodes
        self.checkpoint_every = checkpoint_every
        self.progress = progress
        self.checkpoint_extra = checkpoint_extra or {}
        self.save_replay = save_replay
        self.keep = keep  # numbered checkpoints kept beside checkpoint.pt (checkpoint.keep)
        self.best_eval: float | None = None  # the best periodic evaluation so far: best.pt holds its weights
        # Called with "running" every STATUS_SECONDS and after each checkpoint, and while testing with
        # phase="test" (or "eval"), test_episodes_done and test_episodes: status.json, which rlconf status reads.
        self.on_status = on_status
        # Told each periodic evaluation's step and mean return; True stops training there (Pruned). A run of an
        # Optuna sweep reports to its trial through it (rlconf.tuning.trial.TrialReporter); other runs have none.
        self.on_evaluation: Callable[[int, float], bool] | None = None
        self._pruned: Pruned | None = None
        self.episodes = 0
        self.last_return: float | None = None
        self.best_return: float | None = None  # of any training episode so far
        self.test_details: dict[str, Any] = {}  # what the last test found besides its returns (multi-agent)
        self.test_stalled = 0  # episodes of the last test cut short for want of rewards (Atari's tests)
        self.scalars_every = scalars_every
        self._next_scalars = scalars_every
        # Scheduled hyperparameters (epsilon, learning rates, PPO's clip...), logged with verbose=true.
        self._schedules = agent.schedules() if logger.verbose else {}
        self.train_seconds = 0.0
        self.start_steps = 0  # where this attempt began: 0, or the checkpoint's step when resumed
        self.resumes = 0  # how many times this run has been resumed from a checkpoint
        self.checkpoint_steps: int | None = None  # the step of the checkpoint on disk (None: none yet)
        self._next_eval = float(eval_every or "inf")
        self._next_checkpoint = float(checkpoint_every or "inf")
        self._test_env = None
        # With several data-parallel learners (``env``: a TeamEnvironment) only the first one writes the run
        # directory and evaluates; every learner takes part in checkpoints (the first writes all their states).
        self.writer = distributed.rank() == 0
        # With the alternating sampler: the agent's body for each group of copies (bodies.Body.lane).
        self.lanes = [agent.lane(env.group_copies(g)) for g in range(env.groups)] if env.groups > 1 else None
        self.team = env if isinstance(env, TeamEnvironment) else None
        self.videos: TrainingVideos | None = None  # logger.video_every: a greedy episode's video now and then

    # -- training ------------------------------------------------------------------------------------
    def train(self) -> None:
        env = self.env
        start = self._start_training()
        # Signals only ask the loop to stop from before the first checkpoint on: one that comes while it is
        # written is answered at the first step (a checkpoint on disk means Ctrl-C is polite: tests wait for it).
        with stop_requests() as stop, self._stop_on_divergence():
            if self.team is not None:  # a team of learners agrees on the signal to stop on
                self.team.stop_request = stop
            if self.checkpoint_steps is None:  # a fresh run: from now on there is always a checkpoint to go back to
                self.save_checkpoint()
            step = self._stepping(env.reset(seed=self.reset_seed()), start)
            while env.steps < self.budget:
                step()
                self._keep_books(start, stop)
        self._end_training(start)

    def _start_training(self) -> float:
        """The moment training starts (this attempt's clock)."""
        start = time.perf_counter()
        self._next_status = start + STATUS_SECONDS
        self._rate_mark = (start, self.env.steps)
        if self.videos is not None:
            self.videos.begin(self.env.steps)
        return start

    def _keep_books(self, start: float, stop) -> None:
        """After an iteration of the loop: evaluations, checkpoints, scalars, the console and status.json when
        due; a stop signal checkpoints (with the replay) and raises Interrupted."""
        steps = self.env.steps
        if steps >= self._next_eval:
            self._next_eval += self.eval_every
            self._evaluate()
            if self._pruned is not None:
                self._end_training(start)
                raise self._pruned
        if self.videos is not None:
            self._video(steps)
        if steps >= self._next_checkpoint:
            self._next_checkpoint += self.checkpoint_every
            self._checkpoint_in_loop(start)
        now = time.perf_counter()
        if steps >= self._next_scalars:
            self._log_scalars(now)
        self.progress.update(steps, self.episodes, self.last_return, self.best_return, start, self.start_steps, now)
        if now >= self._next_status:
            self._next_status = now + STATUS_SECONDS
            self.logger.flush()  # episodes.csv readable as the run goes; a resume cuts it back
            self._status()
        signum = self._stopping(stop)
        if signum is not None:
            self.progress.stop()
            try:
                self._checkpoint_in_loop(start, replay=True)  # the memory too: the run goes on elsewhere
            except OSError as error:  # a full disk: stopped all the same, as the signal asked
                raise self.failed(write_failure(error), 128 + signum) from None
            raise Interrupted(signum, self.env.steps)

    def _end_training(self, start: float) -> None:
        self.train_seconds += time.perf_counter() - start
        self.logger.step = self.env.steps
        self.progress.stop()
        if self.videos is not None:  # the last video, written and with the loggers before the run's record closes
            self._video(self.env.steps, last=True)
        self.save_checkpoint()

    def _video(self, steps: int, last: bool = False) -> None:
        """A greedy episode's video when one is due; the videos written since, to the loggers. ``last``: wait for
        the one being written."""
        try:
            if self.videos.due(steps):
                self.videos.record(self.agent.test_agent(), steps)
            if last:
                self.videos.wait()
            self.videos.deliver()
        except OSError as error:  # a full disk: the run stops as it does when a checkpoint cannot be written
            raise self.failed(f"a video could not be written: {write_failure(error)}") from None

    def _stepping(self, state, start: float) -> Callable[[], None]:
        """One iteration of the loop: the agent acts on every copy and they all step; or, with the alternating
        sampler (``lanes``: the agent's body for each group of copies), each group in turn is waited for, acted
        on and sent stepping again, so that one group steps while the agent acts on the other. Episodes that
        end are recorded as they come."""
        env = self.env
        if self.lanes is None:
            def lockstep() -> None:
                nonlocal state
                state = env.step(self.agent.act(state))
                if env.completed:
                    self._record_episodes(start)

            return lockstep
        groups = [state[env.group_copies(g)] for g in range(len(self.lanes))]
        for g, lane in enumerate(self.lanes):
            env.step_async(lane.act(groups[g]), g)

        def alternate() -> None:
            for g, lane in enumerate(self.lanes):
                groups[g] = env.step_wait(g)
                if env.completed:
                    self._record_episodes(start)
                env.step_async(lane.act(groups[g]), g)

        return alternate

    def _stopping(self, stop) -> int | None:
        """The signal training stops on: this process's, or the one a team of learners agreed on."""
        return stop.signum if self.team is None else self.team.stop

    @contextlib.contextmanager
    def _stop_on_divergence(self) -> Iterator[None]:
        """A network's loss or gradient norm became nan or inf (``approximation.NonFinite``, raised before the
        step that would have used it): stop, keeping the last checkpoint as it is. A sampler worker that failed
        or died (``SamplerError``) stops the run the same way."""
        try:
            yield
        except NonFinite as error:
            raise self.failed(str(error), kind=Diverged) from None
        except (SamplerError, distributed.LearnerLost, ProcessLost) as error:
            raise self.failed(str(error)) from None

    def failed(self, what: str, exit_status: int = 1, kind: type[RunFailed] = RunFailed) -> RunFailed:
        """The one line of a fault (a divergence, a full disk): what went wrong, when, and which checkpoint is
        intact."""
        self.progress.stop()
        kept = ("no checkpoint had been written" if self.checkpoint_steps is None else
                f"the checkpoint of step {self.checkpoint_steps:,} is kept ({self.run_dir / 'checkpoint.pt'})")
        return kind(f"{what} at step {self.env.steps:,}; {kept}", exit_status)

    def _checkpoint_in_loop(self, start: float, replay: bool | None = None) -> None:
        """A checkpoint mid-training counts the seconds trained so far in this attempt."""
        elapsed = time.perf_counter() - start
        self.train_seconds += elapsed
        try:
            self.save_checkpoint(replay)
        finally:
            self.train_seconds -= elapsed

    def reset_seed(self) -> int:
        """The run's seed for a fresh run; for a resumed one a seed drawn from the run's seed and the step it
        resumes at, so that resuming twice from one checkpoint replays the same episodes, and the restarted
        episodes are not the run's first ones again."""
        if not self.start_steps:
            return self.seed
        return int(np.random.SeedSequence([self.seed, self.start_steps]).generate_state(1)[0] >> 1)

    def _status(self) -> None:
        if self.on_status is not None:
            self.on_status("running")

    def _record_episodes(self, start: float) -> None:
        wall = self.train_seconds + time.perf_counter() - start  # across attempts, as if never stopped
        self.logger.step = self.env.steps
        for episode in self.env.completed:
            returns, by_agent = self._episode_returns(episode)
            self.episodes += 1
            self.last_return = returns
            if self.best_return is None or returns > self.best_return:
                self.best_return = returns
            self.logger.add_episode(self.env.steps, self.episodes, returns, episode.length, wall,
                                    agent_returns=by_agent)

    def _episode_returns(self, episode) -> tuple[float, dict[str, float] | None]:
        """The return the run follows, and every player's (None: a single-agent episode)."""
        return episode.returns, None

    def _log_scalars(self, now: float) -> None:
        """Every ``scalars_every`` steps: the training rate since the last time, and the schedules' values."""
        steps = self.env.steps
        while self._next_scalars <= steps:
            self._next_scalars += self.scalars_every
        then, steps_then = self._rate_mark
        self._rate_mark = (now, steps)
        values = {STEPS_PER_SECOND: (steps - steps_then) / max(now - then, 1e-9)}
        values.update({f"schedule/{name}": float(scheduler) for name, scheduler in self._schedules.items()})
        self.logger.add_scalars(values, steps)

    def _evaluate(self) -> None:
        if not self.writer:  # the first learner evaluates; the others wait for it at their next exchange
            return
        episodes = self.eval_episodes
        try:
            returns = self.test(episodes, self._reporter("eval", episodes,
                                                         lambda done, _: self.progress.evaluating(done, episodes)))
        finally:
            self.progress.evaluating(None)
        self.logger.add_evaluation(self.env.steps, returns)
        r = np.asarray(returns, dtype=float)
        if self.best_eval is None or r.mean() > self.best_eval:
            self._save_best(float(r.mean()))
        self.progress.print(f"eval at {self.env.steps:,} steps: return {r.mean():.1f} ± {r.std():.1f} over "
                            f"{len(r)} episodes (min {r.min():.1f}, max {r.max():.1f})")
        if self.on_evaluation is not None and self.on_evaluation(self.env.steps, float(r.mean())):
            self._pruned = Pruned(self.env.steps, float(r.mean()))

    # -- testing -------------------------------------------------------------------------------------
    def test_env(self):
        """The copies of the environment tests play in (made on first use, kept for the run)."""
        if self._test_env is None:
            self._test_env = self.make_test_env()
        return self._test_env

    def test(self, episodes: int, report: Callable[[int, int], None] | None = None) -> list[float]:
        """``episodes`` test episodes; ``report(done, stalled)`` as ``evaluate`` calls it."""
        return evaluate(self.agent.test_agent(), self.test_env(), episodes, seed=self.seed + TEST_SEED_OFFSET,
                        report=report)

    def final_test(self, episodes: int, copies: int | None = None) -> list[float]:
        """The run's last test, a phase of its own: on the console (``ConsoleProgress.test``) and in
        status.json (``phase: test``, refreshed every STATUS_SECONDS: a long test is not a dead run).
        ``copies``: how many copies of the environment the test env will have, if the caller knows: the phase
        is then announced before they are built (16 Atari games take seconds on a busy machine)."""
        if copies is None:
            copies = self.test_env().n_envs if episodes else 1
        shown = self.progress.test(episodes, copies)
        try:
            return self.test(episodes, self._reporter("test", episodes, shown.update))
        finally:
            shown.stop()

    def _reporter(self, phase: str, episodes: int, show: Callable[[int, int], None]) -> Callable[[int, int], None]:
        """What a test reports to as it plays: ``show`` (the console, rate-limited there), the count of stalled
        episodes, and status.json at once and every STATUS_SECONDS."""
        next_status = 0.0

        def report(done: int, stalled: int) -> None:
            nonlocal next_status
            self.test_stalled = stalled
            show(done, stalled)
            now = time.perf_counter()
            if now >= next_status and self.on_status is not None:
                next_status = now + STATUS_SECONDS
                self.on_status("running", phase=phase, test_episodes_done=done, test_episodes=episodes)

        return report

    # -- checkpoints ---------------------------------------------------------------------------------
    def save_checkpoint(self, replay: bool | None = None) -> None:
        """Everything ``restore`` needs, written to a temporary file and renamed into place. ``replay``: also
        the replay memory (default: as configured, ``checkpoint.replay``)."""
        mine = {"agent": self.agent.state_dict(), "rng": rng.capture()}
        poisoned = first_non_finite_weight(mine["agent"])
        if poisoned is not None:  # never overwrite a good checkpoint with these
            raise self.failed(poisoned, kind=Diverged)
        if self.save_replay if replay is None else replay:
            mine["replay"] = self.agent.replay_state_dict()
        learners = distributed.gather(mine)  # every learner's own state (the first learner's alone, usually)
        if not self.writer:
            self.checkpoint_steps = self.env.steps
            return
        self.logger.step = self.env.steps
        self.logger.flush()
        state: dict[str, Any] = {
            "format": CHECKPOINT_FORMAT, **learners[0], "steps": self.env.steps,
            "episodes": self.episodes, "last_return": self.last_return, "best_return": self.best_return,
            "train_seconds": self.train_seconds, "best_eval": self.best_eval,
            "next_eval": self._next_eval, "next_checkpoint": self._next_checkpoint, "resumes": self.resumes,
            "logger": self.logger.state_dict(), **self._loop_state(), **self.checkpoint_extra}
        if len(learners) > 1:  # the other learners' agents, generators (and replay), in rank order
            state["learners"] = learners[1:]
        atomic_write(self.run_dir / CHECKPOINT, lambda tmp: write_checkpoint(state, tmp))
        self.checkpoint_steps = self.env.steps
        if self.keep:
            self._keep_numbered()
        self._status()

    def _keep_numbered(self) -> None:
        """checkpoint-<step>.pt: the checkpoint just written, a second name for the same file (a hard link: no
        copy; the next checkpoint.pt is a new file renamed over the name), and the oldest beyond ``keep`` gone."""
        latest, numbered = self.run_dir / CHECKPOINT, self.run_dir / f"checkpoint-{self.env.steps}.pt"
        numbered.unlink(missing_ok=True)
        try:
            os.link(latest, numbered)
        except OSError:  # a file system without hard links
            atomic_write(numbered, lambda tmp: shutil.copyfile(latest, tmp))
        for old in list(numbered_checkpoints(self.run_dir).values())[:-self.keep]:
            old.unlink(missing_ok=True)

    def _save_best(self, mean: float) -> None:
        """best.pt: the agent of the best periodic evaluation so far (what ``rlconf eval --checkpoint best``
        plays), written atomically; never from non-finite weights."""
        agent = self.agent.state_dict()
        if first_non_finite_weight(agent) is not None:
            return  # the next checkpoint says so, and stops the run
        state = {"format": CHECKPOINT_FORMAT, "agent": agent, "steps": self.env.steps, "episodes": self.episodes,
                 "eval_return": mean, **self.checkpoint_extra}
        atomic_write(self.run_dir / BEST, lambda tmp: write_checkpoint(state, tmp))
        self.best_eval = mean

    @staticmethod
    def check_restorable(agent, state: dict[str, Any], run_dir: Path | None = None) -> None:
        """Raise (ValueError, KeyError, RuntimeError, TypeError) unless ``restore`` could continue from
        ``state`` with ``agent``, made before the run directory is touched: every value ``restore`` reads is
        there and of its kind, the generators' states are ones they take, and (``run_dir``: the directory it
        resumes) the logs are as long as the checkpoint records. Loads the agent's state, which ``restore``
        loads again."""
        if state.get("format", 1) < CHECKPOINT_FORMAT:
            raise ValueError("the checkpoint was written by an older rlconf and cannot be resumed")
        conform(state, CHECKPOINT_SCHEMA, "", required=RESUMED_KEYS)
        if run_dir is not None:
            check_recorded_sizes(state["logger"], run_dir)
        mine = learner_state(state)
        rng.check(mine["rng"])
        agent.load_state_dict(mine["agent"])

    def restore(self, state: dict[str, Any] | None) -> None:
        """Continue from a checkpoint written by ``save_checkpoint`` (``None``: start over in a directory that
        an attempt killed before its first checkpoint wrote to). The agent must have been built from the same
        config; the environment is reset when training starts (see the module's docstring)."""
        if state is None:
            self.logger.load_state_dict(None)
            return
        if state.get("format", 1) < CHECKPOINT_FORMAT:
            raise ValueError("the checkpoint was written by an older rlconf and cannot be resumed")
        mine = learner_state(state)
        self.agent.load_state_dict(mine["agent"])
        if "replay" in mine:
            self.agent.load_replay_state_dict(mine["replay"])
        self.env.steps = self.start_steps = self.checkpoint_steps = state["steps"]
        self.episodes = state["episodes"]
        self.last_return = state["last_return"]
        self.best_return = state.get("best_return")
        self.best_eval = state.get("best_eval")
        self.train_seconds = state["train_seconds"]
        self._next_eval = state["next_eval"]
        self._next_checkpoint = state["next_checkpoint"]
        self.resumes = state["resumes"] + 1
        rng.restore(mine["rng"])
        self._load_loop_state(state)
        self.logger.step = state["steps"]
        self.logger.load_state_dict(state["logger"])

    def _loop_state(self) -> dict[str, Any]:
        """What a kind of experiment keeps besides the loop's counters (tensors and plain data)."""
        return {}

    def _load_loop_state(self, state: dict[str, Any]) -> None:
        pass

    def details(self) -> dict[str, Any]:
        """What summary.json reports besides the test's returns: the last test's findings (multi-agent)."""
        return dict(self.test_details)

    def close(self) -> None:
        self.env.close()
        if self._test_env is not None:
            self._test_env.close()
        if self.videos is not None:
            self.videos.close()
