"""The experiment loop: one loop for one or many environments, with evaluation and checkpoints.

    state = env.reset()
    while env.steps < budget:
        state = env.step(agent.act(state))

Everything else here is bookkeeping around that line: episode statistics to the loggers, periodic
greedy evaluation, periodic checkpoints, the progress bar, and the final test. The bookkeeping is done by
callbacks told of the run's events (loop.callbacks; the loop's own in loop.bookkeeping), to which a user adds
their own; how the loop runs is a ``LoopSettings``.

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
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlconf import distributed
from rlconf.approximation import NonFinite
from rlconf.core import rng
from rlconf.environments.parallel import SamplerError
from rlconf.errors import RunFailed
from rlconf.experiments.console.progress import ConsoleProgress
from rlconf.experiments.loop import bookkeeping
from rlconf.experiments.loop.callbacks import Callback, Callbacks, Episode, Evaluation, Run
from rlconf.experiments.loop.evaluate import evaluate
from rlconf.experiments.loop.learner_group import LearnerGroupEnvironment
from rlconf.experiments.loop.stepping import lanes_of, stepping
from rlconf.experiments.loop.stopping import stop_requests
from rlconf.experiments.loop.video import TrainingVideos
from rlconf.experiments.rundir.checkpoint import BEST, first_non_finite_weight, learner_state, write_checkpoint
from rlconf.experiments.rundir.directory import CHECKPOINT
from rlconf.experiments.rundir.saved import CHECKPOINT_FORMAT, CHECKPOINT_SCHEMA, check_recorded_sizes, conform
from rlconf.files import atomic_write, write_failure
from rlconf.logging import Logger

TEST_SEED_OFFSET = 1_000_003  # evaluations reset their environments with the run's seed plus this
STATUS_SECONDS = bookkeeping.STATUS_SECONDS


# What ``restore`` reads from a checkpoint besides the agent: checked first (``check_restorable``).
RESUMED_KEYS = ("steps", "episodes", "last_return", "train_seconds", "next_eval", "next_checkpoint", "resumes",
                "rng", "logger")


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


@dataclass(frozen=True)
class LoopSettings:
    """How a loop runs: its budget and seed, how often it evaluates, checkpoints and logs, and what a checkpoint
    holds besides the run's state (``checkpoint_extra``: its config)."""

    steps: int
    seed: int = 0
    eval_every: int = 0  # environment steps between periodic evaluations (0: none)
    eval_episodes: int = 1
    checkpoint_every: int = 0  # environment steps between checkpoints (0: only the first and the last)
    save_replay: bool = False  # checkpoints hold the replay memory too (checkpoint.replay)
    keep: int = 0  # numbered checkpoints kept beside checkpoint.pt (checkpoint.keep)
    scalars_every: int = 1000
    pulls_every: int = 1  # bandits: pulls of each bandit per row of pulls.csv
    checkpoint_extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Any, **extra: Any) -> LoopSettings:
        """The loop's settings of a run's (rlconf.settings.Settings)."""
        run = settings.run
        return cls(steps=run.steps, seed=run.seed, eval_every=run.eval_every, eval_episodes=run.eval_episodes,
                   checkpoint_every=run.checkpoint_every, save_replay=run.checkpoint.replay, keep=run.checkpoint.keep,
                   scalars_every=settings.logger.scalars_every, pulls_every=settings.logger.pulls_every, **extra)


class Experiment:
    """One run's loop. ``on_status(state, **fields)`` writes status.json (rlconf status reads it); ``videos``:
    logger.video_every's; ``trial``: a run of an Optuna sweep reports each periodic evaluation to it, True prunes
    the run (rlconf.tuning.trial.TrialReporter); ``callbacks``: the user's, told of every event after the loop's
    own (loop.callbacks)."""

    def __init__(self, agent, env, make_test_env: Callable[[], object], logger: Logger, run_dir: Path,
                 loop: LoopSettings, progress: ConsoleProgress, *, on_status: Callable[..., None] | None = None,
                 videos: TrainingVideos | None = None, trial: Callable[[int, float], bool] | None = None,
                 callbacks: Sequence[Callback] = ()):
        self.agent = agent
        self.env = env
        self.make_test_env = make_test_env
        self.logger = logger
        self.run_dir = Path(run_dir)
        self.loop = loop
        self.budget = loop.steps
        self.seed = loop.seed
        self.eval_every = loop.eval_every
        self.eval_episodes = loop.eval_episodes
        self.checkpoint_every = loop.checkpoint_every
        self.progress = progress
        self.checkpoint_extra = loop.checkpoint_extra
        self.save_replay = loop.save_replay
        self.best_eval: float | None = None  # the best periodic evaluation so far: best.pt holds its weights
        self.last_evaluation: Evaluation | None = None
        # Called with "running" every STATUS_SECONDS and after each checkpoint, and while testing with
        # phase="test" (or "eval"), test_episodes_done and test_episodes (``status``).
        self.on_status = on_status
        self.pruned: Pruned | None = None  # set by a sweep's pruner after an evaluation (bookkeeping.Pruning)
        self.stop_reason: str | None = None  # a callback asked the run to end here (``Run.stop``)
        self.state = "running"  # how the run ended, for callbacks told of its end
        self.episodes = 0
        self.last_return: float | None = None
        self.best_return: float | None = None  # of any training episode so far
        self.test_details: dict[str, Any] = {}  # what the last test found besides its returns (multi-agent)
        self.test_stalled = 0  # episodes of the last test cut short for want of rewards (Atari's tests)
        self.train_seconds = 0.0
        self.eval_seconds = 0.0  # of train_seconds, those spent in periodic evaluations (summary.json says)
        self.started: float | None = None  # when this attempt's training began (perf_counter), while it trains
        self.start_steps = 0  # where this attempt began: 0, or the checkpoint's step when resumed
        self.resumes = 0  # how many times this run has been resumed from a checkpoint
        self.checkpoint_steps: int | None = None  # the step of the checkpoint on disk (None: none yet)
        self.next_eval = float(loop.eval_every or "inf")
        self.next_checkpoint = float(loop.checkpoint_every or "inf")
        self._test_env = None
        # With several data-parallel learners (``env``: a LearnerGroupEnvironment) only the first one writes the run
        # directory and evaluates; every learner takes part in checkpoints (the first writes all their states).
        self.writer = distributed.rank() == 0
        # With the alternating sampler: the agent's body for each group of copies (bodies.Body.lane).
        self.lanes = lanes_of(agent, env)
        self.learner_group = env if isinstance(env, LearnerGroupEnvironment) else None
        self.view = Run(self)
        own = bookkeeping.own(self, videos, loop.keep, loop.scalars_every, trial)
        self._videos = next((c for c in own if isinstance(c, bookkeeping.Videos)), None)
        self.callbacks = Callbacks(own, callbacks, self.failed)

    def fire(self, event: str, *args: Any) -> None:
        """Tell every callback of ``event`` (loop.callbacks.EVENTS)."""
        self.callbacks.fire(event, self.view, *args)

    # -- training ------------------------------------------------------------------------------------
    def train(self) -> None:
        env = self.env
        start = self._start_training()
        # Signals only ask the loop to stop from before the first checkpoint on: one that comes while it is
        # written is answered at the first step (a checkpoint on disk means Ctrl-C is polite: tests wait for it).
        with stop_requests() as stop, self._stop_on_divergence():
            if self.learner_group is not None:  # a group of learners agrees on the signal to stop on
                self.learner_group.stop_request = stop
            if self.checkpoint_steps is None:  # a fresh run: from now on there is always a checkpoint to go back to
                self.save_checkpoint()
            step = self._stepping(env.reset(seed=self.reset_seed()), start)
            while env.steps < self.budget and self.stop_reason is None:
                step()
                self._keep_books(stop)
        self.end_training()

    def _start_training(self) -> float:
        """The moment training starts (this attempt's clock), told to the callbacks."""
        self.started = time.perf_counter()
        self.fire("on_run_start")
        return self.started

    def _keep_books(self, stop) -> None:
        """After an iteration of the loop: the callbacks (evaluations, checkpoints, scalars, the console and
        status.json when due, then the user's); a stop signal checkpoints (with the replay) and raises
        Interrupted."""
        self.fire("on_batch")
        signum = self._stopping(stop)
        if signum is not None:
            self.progress.stop()
            try:
                self.checkpoint_in_loop(replay=True)  # the memory too: the run goes on elsewhere
            except OSError as error:  # a full disk: stopped all the same, as the signal asked
                raise self.failed(write_failure(error), 128 + signum) from None
            raise Interrupted(signum, self.env.steps)

    def end_training(self) -> None:
        """Training is over (the budget, a stop asked for, a pruner): the last video and the last checkpoint."""
        self.train_seconds += time.perf_counter() - self.started
        self.started = None
        self.logger.step = self.env.steps
        self.progress.stop()
        if self._videos is not None:  # the last video, written and with the loggers before the run's record closes
            self._videos.video(self.env.steps, last=True)
        self.save_checkpoint()

    def trained_seconds(self) -> float:
        """Seconds trained so far, across attempts, this one's included while it trains."""
        return self.train_seconds + (time.perf_counter() - self.started if self.started is not None else 0.0)

    def prune(self, evaluation: Evaluation) -> None:
        """A sweep's pruner judged the run hopeless at ``evaluation``: training ends after it (Pruned)."""
        self.pruned = Pruned(evaluation.steps, evaluation.mean)

    def request_stop(self, reason: str) -> None:
        """End the run "done" at the end of this iteration (``Run.stop``); the first reason is kept."""
        if self.learner_group is not None:  # the learners would have to agree on it, as on a signal
            raise RuntimeError("a run of several learners (hardware.learners) cannot be stopped early by a callback")
        if self.stop_reason is None:
            self.stop_reason = reason

    def end(self, state: str) -> None:
        """The run has ended (trained and tested, pruned, or stopped by a signal): the callbacks are told."""
        self.state = state
        self.fire("on_run_end")

    def _stepping(self, state, start: float) -> Callable[[], None]:
        """One iteration of the loop (``loop.stepping``): episodes that end are recorded as they come."""
        return stepping(self.env, self.agent, self.lanes, state, lambda: self._record_episodes(start))

    def _stopping(self, stop) -> int | None:
        """The signal training stops on: this process's, or the one a group of learners agreed on."""
        return stop.signum if self.learner_group is None else self.learner_group.stop

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

    def checkpoint_in_loop(self, replay: bool | None = None) -> None:
        """A checkpoint mid-training counts the seconds trained so far in this attempt."""
        elapsed = time.perf_counter() - self.started
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

    def status(self, state: str, **fields: Any) -> None:
        """status.json (``on_status``): ``state``, the run's progress so far, and ``fields``."""
        if self.on_status is not None:
            self.on_status(state, steps=self.env.steps, total_steps=self.budget, episodes=self.episodes,
                           last_return=self.last_return, resumes=self.resumes, **fields)

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
            self.fire("on_episode_end", Episode(self.env.steps, self.episodes, returns, episode.length, by_agent))

    def _episode_returns(self, episode) -> tuple[float, dict[str, float] | None]:
        """The return the run follows, and every player's (None: a single-agent episode)."""
        return episode.returns, None

    def evaluate(self) -> None:
        """A periodic evaluation, to the loggers and the callbacks (best.pt, its line, a sweep's pruner...)."""
        if not self.writer:  # the first learner evaluates; the others wait for it at their next exchange
            return
        episodes = self.eval_episodes
        start = time.perf_counter()
        try:
            returns = self.test(episodes, self._reporter("eval", episodes,
                                                         lambda done, _: self.progress.evaluating(done, episodes)))
        finally:
            self.progress.evaluating(None)
            self.eval_seconds += time.perf_counter() - start
        self.logger.add_evaluation(self.env.steps, returns)
        self.last_evaluation = Evaluation(self.env.steps, tuple(float(r) for r in returns))
        self.fire("on_evaluation", self.last_evaluation)

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
                self.status("running", phase=phase, test_episodes_done=done, test_episodes=episodes)

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
            "train_seconds": self.train_seconds, "eval_seconds": self.eval_seconds, "best_eval": self.best_eval,
            "next_eval": self.next_eval, "next_checkpoint": self.next_checkpoint, "resumes": self.resumes,
            "logger": self.logger.state_dict(), **self._loop_state(), **self.checkpoint_extra}
        if callbacks := self.callbacks.state_dict():  # the user's that keep a state (stop.patience's)
            state["callbacks"] = callbacks
        if len(learners) > 1:  # the other learners' agents, generators (and replay), in rank order
            state["learners"] = learners[1:]
        atomic_write(self.run_dir / CHECKPOINT, lambda tmp: write_checkpoint(state, tmp))
        self.checkpoint_steps = self.env.steps
        self.fire("on_checkpoint", self.run_dir / CHECKPOINT)

    def save_best(self, mean: float) -> None:
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
        self.eval_seconds = state.get("eval_seconds", 0.0)  # checkpoints before it was kept: none counted
        self.next_eval = state["next_eval"]
        self.next_checkpoint = state["next_checkpoint"]
        self.resumes = state["resumes"] + 1
        rng.restore(mine["rng"])
        self._load_loop_state(state)
        self.callbacks.load_state_dict(state.get("callbacks", {}))
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
        if self._videos is not None:
            self._videos.videos.close()
