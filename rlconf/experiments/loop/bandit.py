"""Bandit runs: the single-agent loop, with pulls counted instead of episodes.

The loop is ``Experiment``'s own: a bandit environment answers every step with one finished one-step episode
per bandit. What differs is the bookkeeping (and callbacks are told of each row of pulls.csv as of an episode's
end). A bandit run is judged by its regret, which only a synthetic
problem (or a labelled dataset) can know: the environment reports each pull's expected regret and whether
the arm was a best one (``env.pulls``), and ``Regret`` keeps, per bandit, the cumulative expected regret and
every arm's count. Every ``logger.pulls_every`` pulls of each bandit the loggers get a row (pulls.csv,
``bandit/...`` scalars); episodes.csv stays empty (a row per pull would repeat pulls.csv at many times its
size). summary.json adds the regret, the optimal-arm rates and the arm counts; its test is the greedy agent's
mean reward over ``test_episodes`` pulls.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import torch

from rlconf.experiments.loop.callbacks import Episode
from rlconf.experiments.loop.experiment import Experiment

FINAL_PULLS = 1000  # summary.json's final_* rates: over each bandit's last this many pulls


class Regret:
    """Cumulative statistics of ``n`` bandits' pulls, and those of the current row of the log."""

    def __init__(self, n: int, arms: int):
        self.regret = np.zeros(n)  # cumulative expected regret of each bandit
        self.counts = np.zeros((n, arms), dtype=np.int64)
        self.pulls = 0  # of each bandit
        self.optimal = 0  # best-arm pulls, all bandits
        self.reward = 0.0  # total reward, all bandits
        self.recent_optimal: deque[float] = deque(maxlen=FINAL_PULLS)  # per step: fraction of bandits on a best arm
        self.recent_reward: deque[float] = deque(maxlen=FINAL_PULLS)  # per step: mean reward of the bandits
        self._recent_reward_sum = 0.0  # of recent_reward, kept as it slides (the console reads it every pull)
        self.row = np.zeros(3)  # since the last row: pulls, reward, best-arm pulls (all bandits)

    def add(self, arms: np.ndarray, rewards: np.ndarray, regrets: np.ndarray, optimal: np.ndarray) -> None:
        n = len(arms)
        self.regret += regrets
        self.counts[np.arange(n), arms] += 1
        self.pulls += 1
        self.optimal += int(optimal.sum())
        self.reward += float(rewards.sum())
        self.recent_optimal.append(float(optimal.mean()))
        if len(self.recent_reward) == FINAL_PULLS:
            self._recent_reward_sum -= self.recent_reward[0]
        self.recent_reward.append(float(rewards.mean()))
        self._recent_reward_sum += self.recent_reward[-1]
        self.row += (n, rewards.sum(), optimal.sum())

    @property
    def recent_reward_mean(self) -> float:
        """The mean reward of each bandit's last FINAL_PULLS pulls."""
        return self._recent_reward_sum / max(len(self.recent_reward), 1)

    def take_row(self) -> tuple[float, float]:
        """The mean reward and the best-arm rate since the last row; starts the next row."""
        pulls, reward, optimal = self.row
        self.row = np.zeros(3)
        return reward / max(pulls, 1), optimal / max(pulls, 1)

    def summary(self) -> dict[str, Any]:
        n = len(self.regret)
        total = max(self.pulls * n, 1)
        return {
            "pulls": self.pulls, "bandits": n,
            "cumulative_regret": float(self.regret.mean()),
            "cumulative_regret_std": float(self.regret.std()),  # across the bandits (0 with one)
            "regret_per_pull": float(self.regret.mean() / max(self.pulls, 1)),
            "reward_mean": self.reward / total,
            "optimal_arm_rate": self.optimal / total,
            "final_pulls": len(self.recent_optimal),
            "final_optimal_arm_rate": float(np.mean(self.recent_optimal)) if self.recent_optimal else None,
            "final_reward_mean": float(np.mean(self.recent_reward)) if self.recent_reward else None,
            "arm_counts": self.counts.sum(axis=0).tolist(),
        }

    def state_dict(self) -> dict[str, Any]:
        return {"regret": torch.from_numpy(self.regret.copy()), "counts": torch.from_numpy(self.counts.copy()),
                "pulls": self.pulls, "optimal": self.optimal, "reward": self.reward,
                "recent_optimal": list(self.recent_optimal), "recent_reward": list(self.recent_reward),
                "row": self.row.tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.regret = state["regret"].numpy().copy()
        self.counts = state["counts"].numpy().copy()
        self.pulls, self.optimal, self.reward = state["pulls"], state["optimal"], state["reward"]
        self.recent_optimal.clear()
        self.recent_optimal.extend(state["recent_optimal"])
        self.recent_reward.clear()
        self.recent_reward.extend(state["recent_reward"])
        self._recent_reward_sum = float(sum(self.recent_reward))
        self.row = np.asarray(state["row"], dtype=float)


class BanditExperiment(Experiment):
    """``Experiment`` for a bandit environment (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.pulls_every = self.loop.pulls_every
        self.regret = Regret(self.env.n_envs, self.env.arms)

    def _record_episodes(self, start: float) -> None:  # noqa: ARG002 - a pull's row has no wall clock
        pulls = self.env.pulls
        regret = self.regret
        regret.add(pulls.arms, pulls.rewards, pulls.regrets, pulls.optimal)
        self.episodes += len(pulls.arms)
        if regret.pulls % self.pulls_every == 0 or self.env.steps >= self.budget:
            reward, optimal_rate = regret.take_row()
            self.logger.add_pulls(self.env.steps, regret.pulls, reward, float(regret.regret.mean()), optimal_rate,
                                  regret.counts.sum(axis=0).tolist())
            # The console's "last return": the mean reward of the recent pulls
            self.last_return = regret.recent_reward_mean
            if self.best_return is None or self.last_return > self.best_return:
                self.best_return = self.last_return
            self.fire("on_episode_end", Episode(self.env.steps, self.episodes, self.last_return, 1))

    def _loop_state(self) -> dict[str, Any]:
        return {"regret": self.regret.state_dict()}

    def _load_loop_state(self, state: dict[str, Any]) -> None:
        self.regret.load_state_dict(state["regret"])

    def details(self) -> dict[str, Any]:
        return {**super().details(), **self.regret.summary()}


def regret_line(summary: dict[str, Any]) -> str:
    """The summary line's account of a bandit run."""
    final = summary.get("final_optimal_arm_rate")
    rate = f"; best arm in {final:.1%} of the last {summary['final_pulls']:,} pulls" if final is not None else ""
    return f"cumulative regret {summary['cumulative_regret']:.1f}{rate}"
