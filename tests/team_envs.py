"""A tiny PettingZoo parallel game for tests of the team environments (rlconf.environments.pettingzoo_parallel).

Two agents, ``agent_0`` and ``agent_1`` (one group): ``agent_1``'s episode ends after 3 steps (terminated),
``agent_0``'s after 5 (truncated), so the game holds one agent for its last 2 steps. Each agent sees
``[its index, the step, the last action it took]`` and is rewarded its index + 1 on every step; its infos hold
an action mask allowing action 0 only, from the step on which only it is left. ``reset(seed)`` draws the step
number's start (0 or 10) from the seed, so seeds show in the observations. Options make the refused games:
``odd_space`` gives ``agent_1`` a longer observation, ``images`` frames for observations.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

ENDS = {"agent_0": 5, "agent_1": 3}  # the step each agent's episode ends on
TERMINATES = {"agent_0": False, "agent_1": True}  # agent_0's end is a truncation


class Tiny(ParallelEnv):
    metadata = {"name": "tiny_v0", "render_modes": []}

    def __init__(self, odd_space: bool = False, images: bool = False, render_mode: str | None = None):
        self.possible_agents = list(ENDS)
        self.render_mode = render_mode
        size = {agent: 3 + (odd_space and agent == "agent_1") for agent in self.possible_agents}
        self._spaces = {agent: gym.spaces.Box(0, 255, (8, 8, 3), np.uint8) if images else
                        gym.spaces.Box(-np.inf, np.inf, (size[agent],), np.float32) for agent in self.possible_agents}
        self.agents: list[str] = []
        self._step = 0
        self._start = 0

    def observation_space(self, agent: str) -> gym.Space:
        return self._spaces[agent]

    def action_space(self, agent: str) -> gym.Space:
        return gym.spaces.Discrete(2)

    def _observe(self, agent: str, action: int = 0) -> np.ndarray:
        space = self._spaces[agent]
        if space.dtype == np.uint8:
            return np.zeros(space.shape, np.uint8)
        values = np.zeros(space.shape, np.float32)
        values[:3] = [int(agent[-1]), self._start + self._step, action]
        return values

    def _infos(self) -> dict[str, dict]:
        alone = len(self.agents) == 1
        return {agent: {"action_mask": np.array([1, 0 if alone else 1], np.int8)} for agent in self.agents}

    def reset(self, seed: int | None = None, options: dict | None = None):
        self.agents = list(self.possible_agents)
        self._step = 0
        self._start = int(np.random.default_rng(seed).integers(2)) * 10
        return {agent: self._observe(agent) for agent in self.agents}, self._infos()

    def step(self, actions: dict):
        self._step += 1
        observations = {agent: self._observe(agent, int(actions[agent])) for agent in self.agents}
        rewards = {agent: float(int(agent[-1]) + 1) for agent in self.agents}
        ended = {agent: self._step >= ENDS[agent] for agent in self.agents}
        terminations = {agent: ended[agent] and TERMINATES[agent] for agent in self.agents}
        truncations = {agent: ended[agent] and not TERMINATES[agent] for agent in self.agents}
        self.agents = [agent for agent in self.agents if not ended[agent]]
        infos = {agent: self._infos().get(agent, {}) for agent in observations}
        return observations, rewards, terminations, truncations, infos


def parallel_env(**kwargs) -> Tiny:
    return Tiny(**kwargs)
