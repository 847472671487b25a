"""The experiment loop: one loop for one or many environments, with evaluation and checkpoints.

    state = env.reset()
    while env.steps < budget:
        state = env.step(agent.act(state))

Everything else here is bookkeeping around that line: episode statistics to the loggers, periodic
greedy evaluation, periodic checkpoints, the progress bar, and the final test.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import torch

from rlconf.experiments.evaluate import evaluate
from rlconf.experiments.progress import ConsoleProgress
from rlconf.experiments.rundir import atomic_write
from rlconf.logging import Logger


class Experiment:
    def __init__(self, agent, env, make_test_env: Callable[[], object], logger: Logger, run_dir: Path,
                 *, steps: int, seed: int, eval_every: int, eval_episodes: int, checkpoint_every: int,
                 progress: ConsoleProgress, checkpoint_extra: dict | None = None):
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
        while env.steps < self.budget:
            state = env.step(agent.act(state))
            if env.completed:
                self._record_episodes(start)
            if env.steps >= next_eval:
                next_eval += self.eval_every
                self._evaluate(start)
            if env.steps >= next_checkpoint:
                next_checkpoint += self.checkpoint_every
                self.save_checkpoint()
            self.progress.update(env.steps, self.episodes, self.last_return,
                                 env.steps / max(time.perf_counter() - start, 1e-9))
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

    def _evaluate(self, start: float) -> None:
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
        atomic_write(self.run_dir / "checkpoint.pt", lambda tmp: torch.save(state, tmp))

    def close(self) -> None:
        self.env.close()
        if self._test_env is not None:
            self._test_env.close()
