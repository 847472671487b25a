"""A test environment that only an agent seeing its previous action and reward can solve, registered as a
gymnasium id when imported: a plugin module (``plugins=[recall_envs]`` with tests/ on PYTHONPATH).

``HiddenArm-v0``: each episode hides one of two arms as the good one, drawn at its reset; the observation never
changes (a single 1.0). Pulling the good arm pays 1, the other 0, for ``LENGTH`` steps. An agent that reads its
previous action and reward (R2D1's ``agent.prev_action_reward``) pulls again an arm that paid and switches from
one that did not: ``OPTIMUM`` on average (only its first pull is a guess). One that reads only the observation
acts the same whichever arm is good: ``LENGTH / 2`` on average, whatever it learns.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

LENGTH = 10  # steps of every episode
OPTIMUM = LENGTH - 0.5  # a guess, then the good arm every step


class HiddenArm(gym.Env):
    """Two arms, one paying 1 per pull, which one hidden (see the module docstring)."""

    def __init__(self):
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        self._good = 0
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._good = int(self.np_random.integers(2))
        self._t = 0
        return np.ones(1, np.float32), {}

    def step(self, action):
        self._t += 1
        reward = float(int(action) == self._good)
        return np.ones(1, np.float32), reward, self._t >= LENGTH, False, {}


gym.register("HiddenArm-v0", entry_point=HiddenArm)
