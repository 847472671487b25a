"""The experiment loop: one loop for one or many environments, with evaluation and checkpoints.

    state = env.reset()
    while env.steps < budget:
        state = env.step(agent.act(state))

Everything else here is bookkeeping around that line: episode statistics to the loggers, periodic
greedy evaluation, periodic checkpoints, the progress bar, and the final test.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from rlconf.experiments.evaluate import evaluate
from rlconf.experiments.progress import ConsoleProgress
from rlconf.experiments.rundir import atomic_write
from rlconf.logging import Logger


class Interrupted(Exception):
    """Training stopped on a signal, at a step boundary, after writing a checkpoint."""

    def __init__(self, signum: int, steps: int):
        self.signum = signum
        self.steps = steps
        super().__init__(f"{signal.Signals(signum).name} at step {steps:,}")


class _StopRequest:
    def __init__(self):
        self.signum: int | None = None


@contextlib.contextmanager
def stop_requests(signals=(signal.SIGINT, signal.SIGTERM)) -> Iterator[_StopRequest]:
    """While training, SIGINT and SIGTERM only ask the loop to stop: it finishes the current step, writes
    a checkpoint and raises Interrupted, so nothing is left half-updated. A second signal acts at once."""
    request = _StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def ask(signum, frame):
        request.signum = signum
        for s in signals:  # the next one is not polite any more
            signal.signal(s, previous[s])

    previous = {s: signal.signal(s, ask) for s in signals}
    try:
        yield request
    finally:
        for s in signals:
            signal.signal(s, previous[s])


class Experiment:
    def __init__(self, agent, env, make_test_env: Callable[[], object], logger: Logger, run_dir: Path,
                 *, steps: int, seed: int, eval_every: int, eval_episodes: int, checkpoint_every: int,
                 progress: ConsoleProgress, checkpoint_extra: dict | None = None, save_replay: bool = False):
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
        self.episodes = 0
        self.last_return: float | None = None
        self.train_seconds = 0.0
        self._test_env = None

    # -- training ------------------------------------------------------------------------------------
    def train(self) -> None:
        env, agent = self.env, self.agent
        next_eval = self.eval_every or float("inf")
        next_checkpoint = self.checkpoint_every or float("inf")
        start = time.perf_counter()
        state = env.reset(seed=self.seed)
        with stop_requests() as stop:
            while env.steps < self.budget:
                state = env.step(agent.act(state))
                if env.completed:
                    self._record_episodes(start)
                if env.steps >= next_eval:
                    next_eval += self.eval_every
                    self._evaluate()
                if env.steps >= next_checkpoint:
                    next_checkpoint += self.checkpoint_every
                    self.save_checkpoint()
                self.progress.update(env.steps, self.episodes, self.last_return, start)
                if stop.signum is not None:
                    self.train_seconds += time.perf_counter() - start
                    self.progress.stop()
                    self.save_checkpoint()
                    raise Interrupted(stop.signum, env.steps)
        self.train_seconds += time.perf_counter() - start
        self.logger.step = env.steps
        self.progress.stop()
        self.save_checkpoint()

    def _record_episodes(self, start: float) -> None:
        wall = time.perf_counter() - start
        self.logger.step = self.env.steps
        for episode in self.env.completed:
            self.episodes += 1
            self.last_return = episode.returns
            self.logger.add_episode(self.env.steps, self.episodes, episode.returns, episode.length, wall)

    def _evaluate(self) -> None:
        returns = self.test(self.eval_episodes)
        self.logger.add_evaluation(self.env.steps, returns)

    # -- testing -------------------------------------------------------------------------------------
    def test(self, episodes: int) -> list[float]:
        if self._test_env is None:
            self._test_env = self.make_test_env()
        return evaluate(self.agent.test_agent(), self._test_env, episodes, seed=self.seed + 1_000_003)

    # -- checkpoints ---------------------------------------------------------------------------------
    def save_checkpoint(self) -> None:
        """Models, optimisers and counters, written to a temporary file and renamed into place."""
        self.logger.flush()
        state = {"agent": self.agent.state_dict(), "steps": self.env.steps, "episodes": self.episodes,
                 **self.checkpoint_extra}
        if self.save_replay:
            state["replay"] = self.agent.replay_state_dict()
        atomic_write(self.run_dir / "checkpoint.pt", lambda tmp: torch.save(state, tmp))

    def close(self) -> None:
        self.env.close()
        if self._test_env is not None:
            self._test_env.close()
