"""The bandit protocol, written once for every bandit agent (multi-armed and contextual).

A bandit environment (rlconf.environments.bandit) returns, for each of its ``n`` bandits, a state whose
reward is the last pull's and whose observation is the next context (the constant 1 for multi-armed
bandits); ``done`` says a pull just ended. A bandit agent therefore does two things per call of ``act``:
learn from the pull that just paid (the context it saw, the arm it pulled, the reward now in the state),
then choose the next arms. Subclasses write only those two, as ``learn`` and ``choose``, on numpy arrays:

    learn(contexts (n, d), arms (n,), rewards (n,))     choose(contexts (n, d)) -> arms (n,)

and ``greedy(contexts)``, the arms their test agent pulls: the best by the current estimates, no exploration.

``init_pulls``: each bandit first pulls every arm this many times in turn, whatever the agent would choose.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
import torch

from rlconf.agents._agent import Buildable, BuildContext, Checkpointed, ParallelAgent, TestAgent
from rlconf.core import StateArray
from rlconf.errors import ConfigError
from rlconf.optim import Clock


class BanditAgent(Checkpointed, ParallelAgent, Buildable):
    """An agent for ``n_envs`` bandits at once (see the module's docstring)."""

    def __init__(self, n_bandits: int, arms: int, clock: Clock, init_pulls: int = 0):
        self.n_bandits = n_bandits
        self.arms = arms
        self.clock = clock
        self.init_pulls = init_pulls
        self.pulls = 0  # pulls of each bandit so far
        self._contexts: np.ndarray | None = None  # what the last pull saw and did, until its reward arrives
        self._arms: np.ndarray | None = None

    def state_dict(self) -> dict:
        return super().state_dict() | {"pulls": self.pulls}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.pulls = state["pulls"]

    @staticmethod
    def check_context(context: BuildContext, agent: str) -> int:
        """The number of arms; a bandit agent needs Discrete arms and flat contexts (one clear line if not)."""
        arms = context.n_actions(agent)
        if len(context.observation_space.shape) != 1:
            raise ConfigError(f"agent={agent}: needs flat contexts, not {context.observation_space}; "
                              "allowed: env=bandit/<problem> (rlconf list env)")
        return arms

    def act(self, states: StateArray) -> torch.Tensor:
        contexts = states["observation"].cpu().numpy().astype(np.float64)
        if self._arms is not None and bool(states["done"].all()):
            self.learn(self._contexts, self._arms, states["reward"].cpu().numpy().astype(np.float64))
        if self.pulls < self.arms * self.init_pulls:  # every arm in turn, init_pulls times
            arms = np.full(len(contexts), self.pulls % self.arms, dtype=np.int64)
        else:
            arms = self.choose(contexts)
        self._contexts, self._arms = contexts, arms
        self.pulls += 1
        self.clock.tick(len(contexts))
        return torch.from_numpy(arms).to(states.device)

    @abstractmethod
    def learn(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Update the estimates with one pull of each bandit."""

    @abstractmethod
    def choose(self, contexts: np.ndarray) -> np.ndarray:
        """The arm each bandit pulls next (int64, one per bandit), exploring as the algorithm does."""

    @abstractmethod
    def greedy(self, contexts: np.ndarray) -> np.ndarray:
        """The arm each bandit's estimates rate best: what the test agent pulls."""

    def test_agent(self) -> TestAgent:
        return BanditTestAgent(self)


class BanditTestAgent(TestAgent):
    """Pulls the agent's greedy arms; learns nothing."""

    def __init__(self, agent: BanditAgent):
        self.agent = agent

    def act(self, states: StateArray) -> torch.Tensor:
        contexts = states["observation"].cpu().numpy().astype(np.float64)
        return torch.from_numpy(np.asarray(self.agent.greedy(contexts), dtype=np.int64)).to(states.device)


def argmax_random_ties(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The index of each row's largest value, ties broken at random (untried arms, equal estimates)."""
    noise = rng.random(values.shape)
    best = values >= values.max(axis=-1, keepdims=True) - 1e-12
    return np.where(best, noise, -1.0).argmax(axis=-1)
