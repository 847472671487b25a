"""Small PettingZoo parallel games for the team agents' tests (env=mpe/simple_spread env.id=team_games.<game>):
fast to play and with a known best return, so a learning test can assert it."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

ROUNDS = 8


class Coordination(ParallelEnv):
    """Two agents see one of three targets each round (one-hot, the same for both) and are rewarded together,
    1 each, when both choose it; the target changes every round. A round's best return is 1 for each agent,
    chance's 1/9: an episode of ``ROUNDS`` rounds returns 8 at best and about 0.9 at random."""

    metadata = {"name": "coordination_v0"}

    def __init__(self, rounds: int = ROUNDS):
        self.possible_agents = ["agent_0", "agent_1"]
        self.rounds = rounds
        self._rng = np.random.default_rng()
        self._observation_space = spaces.Box(0.0, 1.0, (3,), np.float32)  # one space object for every agent
        self._action_space = spaces.Discrete(3)

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_space

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.round = 0
        self.target = int(self._rng.integers(3))
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: dict):
        hit = all(int(actions[agent]) == self.target for agent in self.agents)
        rewards = {agent: float(hit) for agent in self.agents}
        self.round += 1
        self.target = int(self._rng.integers(3))
        over = self.round >= self.rounds
        observations = self._observations()
        infos = {agent: {} for agent in self.agents}
        truncations = {agent: over for agent in self.agents}
        terminations = {agent: False for agent in self.agents}
        if over:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def _observations(self) -> dict[str, np.ndarray]:
        seen = np.eye(3, dtype=np.float32)[self.target]
        return {agent: seen.copy() for agent in self.possible_agents}


def parallel_env(**kwargs) -> Coordination:
    return Coordination(**kwargs)
