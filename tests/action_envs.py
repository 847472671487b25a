"""Test environments for multi-dimensional and masked actions, registered as gymnasium ids when imported: a
plugin module (``plugins=[action_envs]`` with tests/ on PYTHONPATH), as a user's own environments are.

Each has a known optimum, so that learning tests can assert a return:

- ``MatchTargets-v0``: MultiDiscrete([3, 3, 3]) actions; the observation is a one-hot target value per dimension
  and the reward the fraction of dimensions whose action matches its target. ``LENGTH`` steps an episode, new
  targets every step: the optimum return is ``LENGTH`` (a random policy's ``LENGTH / 3``). With ``masked=True``
  (``MatchTargetsMasked-v0``) ``info["action_mask"]`` makes one wrong value of each dimension illegal
  (sum(nvec) booleans, dimension after dimension).
- ``MatchBits-v0``: the same over MultiBinary(4) actions and target bits.
- ``MaskedChoice-v0``: Discrete(4) actions worth ``VALUES`` (the best first); the observation is the step's phase
  (one-hot of ``t % 4``), and ``info["action_mask"]`` makes the best actions illegal in some phases
  (``LEGAL``), so the best-looking action is illegal half of the time. The optimum takes the best legal action:
  ``MASKED_OPTIMUM``. ``MaskedChoiceDict-v0``: the same with the mask as the ``action_mask`` key of a Dict
  observation (``{"phase": ..., "action_mask": ...}``).

Every masked environment raises ``IllegalAction`` when it is given an illegal action, so a run that ever takes
one fails: a test that runs to its end has proved that none was taken.

``BadMask-v0`` hands over a faulty ``info["action_mask"]`` from its first state (``fault``: ``shape``, ``dtype``
or ``empty``, all False), for the one-line refusals.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

LENGTH = 8  # steps of every episode
NVEC = (3, 3, 3)
BITS = 4
VALUES = (1.0, 0.5, 0.2, 0.0)  # MaskedChoice's reward of each action
LEGAL = np.array([[1, 1, 1, 1], [0, 1, 1, 1], [1, 0, 1, 1], [0, 0, 1, 1]], dtype=bool)  # by phase t % 4
MASKED_OPTIMUM = LENGTH / 4 * sum(max(v for v, ok in zip(VALUES, legal, strict=True) if ok) for legal in LEGAL)


class IllegalAction(RuntimeError):
    """An action the environment's mask did not allow."""


class MatchTargets(gym.Env):
    """Match each dimension's target (see the module docstring); ``masked``: one wrong value of each dimension
    illegal, in ``info["action_mask"]``."""

    def __init__(self, masked: bool = False):
        self.action_space = gym.spaces.MultiDiscrete(NVEC)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (sum(NVEC),), np.float32)
        self.masked = masked
        self._targets = np.zeros(len(NVEC), dtype=np.int64)
        self._mask = np.ones(sum(NVEC), dtype=bool)
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._observe()

    def step(self, action):
        action = np.asarray(action).reshape(-1)
        offsets = np.cumsum((0, *NVEC[:-1]))
        if self.masked and not self._mask[offsets + action].all():
            raise IllegalAction(f"MatchTargets: action {action.tolist()} with mask {self._mask.astype(int).tolist()}")
        reward = float(np.mean(action == self._targets))
        self._t += 1
        observation, info = self._observe()
        return observation, reward, self._t >= LENGTH, False, info

    def _observe(self):
        self._targets = self.np_random.integers(0, NVEC)
        observation = np.zeros(sum(NVEC), dtype=np.float32)
        offsets = np.cumsum((0, *NVEC[:-1]))
        observation[offsets + self._targets] = 1.0
        if not self.masked:
            return observation, {}
        self._mask = np.ones(sum(NVEC), dtype=bool)
        for offset, n, target in zip(offsets, NVEC, self._targets, strict=True):
            wrong = (target + 1 + self.np_random.integers(n - 1)) % n
            self._mask[offset + wrong] = False
        return observation, {"action_mask": self._mask.copy()}


class MatchBits(gym.Env):
    """Match each target bit (see the module docstring)."""

    def __init__(self):
        self.action_space = gym.spaces.MultiBinary(BITS)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (BITS,), np.float32)
        self._targets = np.zeros(BITS, dtype=np.int8)
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._observe(), {}

    def step(self, action):
        reward = float(np.mean(np.asarray(action).reshape(-1) == self._targets))
        self._t += 1
        return self._observe(), reward, self._t >= LENGTH, False, {}

    def _observe(self) -> np.ndarray:
        self._targets = self.np_random.integers(0, 2, BITS).astype(np.int8)
        return self._targets.astype(np.float32)


class MaskedChoice(gym.Env):
    """Take the best legal action (see the module docstring); ``in_observation``: the mask as a Dict key."""

    def __init__(self, in_observation: bool = False):
        self.action_space = gym.spaces.Discrete(len(VALUES))
        phase = gym.spaces.Box(0.0, 1.0, (len(LEGAL),), np.float32)
        self.in_observation = in_observation
        self.observation_space = gym.spaces.Dict({"phase": phase, "action_mask": gym.spaces.MultiBinary(len(VALUES))}) \
            if in_observation else phase
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._observe()

    def step(self, action):
        action = int(action)
        if not LEGAL[self._t % len(LEGAL)][action]:
            raise IllegalAction(f"MaskedChoice: action {action} in phase {self._t % len(LEGAL)}")
        reward = VALUES[action]
        self._t += 1
        observation, info = self._observe()
        return observation, reward, self._t >= LENGTH, False, info

    def _observe(self):
        phase = np.zeros(len(LEGAL), dtype=np.float32)
        phase[self._t % len(LEGAL)] = 1.0
        mask = LEGAL[self._t % len(LEGAL)].copy()
        if self.in_observation:
            return {"phase": phase, "action_mask": mask.astype(np.int8)}, {}
        return phase, {"action_mask": mask}


class BadMask(MaskedChoice):
    """MaskedChoice whose mask has the wrong shape, the wrong dtype, or no legal action (``fault``)."""

    def __init__(self, fault: str):
        super().__init__()
        self.fault = fault

    def _observe(self):
        phase, _ = super()._observe()
        mask = {"shape": np.ones(len(VALUES) + 1, dtype=bool), "dtype": np.full(len(VALUES), 0.5, np.float32),
                "empty": np.zeros(len(VALUES), dtype=bool)}[self.fault]
        return phase, {"action_mask": mask}


gym.register("BadMask-v0", entry_point=BadMask)
for name, kwargs in (("MatchTargets-v0", {}), ("MatchTargetsMasked-v0", {"masked": True})):
    gym.register(name, entry_point=MatchTargets, kwargs=kwargs)
gym.register("MatchBits-v0", entry_point=MatchBits)
for name, kwargs in (("MaskedChoice-v0", {}), ("MaskedChoiceDict-v0", {"in_observation": True})):
    gym.register(name, entry_point=MaskedChoice, kwargs=kwargs)
