"""Test environments with structured observations: a Dict (nested one level) or a Tuple of an image, a float
vector and a discrete value, where the reward needs all three, so an agent that reaches the optimum has read
every key. Importable as a plugin (``plugins=[structured_envs]`` with tests/ on PYTHONPATH), or from tests.

Each step shows a fresh puzzle of three hidden bits of information:

- ``image`` (uint8, 12x12x3, channels last): the left or the right half is lit, ``side`` (0 left, 1 right);
- ``vector`` (float32, 3): the sign of its first component is ``sign`` (0 negative, 1 positive); the other two
  components are noise;
- ``k`` (Discrete(4)): a value 0..3.

The answer is ``(side + 2 * sign + k) % 4``: changing any one part changes it, so an agent blind to one key
is right at most half the time (a quarter, blind to ``k``). Episodes last ``LENGTH`` steps.

Ids (gymnasium), all with that puzzle:

- ``StructuredDict-v0``: Dict ``{image, state: {vector, k}}``, Discrete(4) actions, reward 1 for the answer:
  optimum ``LENGTH`` a episode, uniform random ``LENGTH / 4``;
- ``StructuredTuple-v0``: the same as a Tuple ``(image, (vector, k))``;
- ``StructuredMultiDiscrete-v0``: the Dict, MultiDiscrete([2, 2, 4]) actions: each dimension names one part
  (``[side, sign, k]``), reward 1/3 for each part named right: optimum ``LENGTH``, random ``LENGTH * 5 / 12``;
- ``StructuredContinuous-v0``: the Dict, Box(-1, 1, (3,)) actions aiming at ``[±1 by side, ±1 by sign,
  (k - 1.5) / 1.5]``, reward ``1 - mean |action - aim| / 2``: optimum ``LENGTH``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

LENGTH = 8  # steps an episode
IMAGE_SHAPE = (12, 12, 3)
K = 4
OPTIMUM = float(LENGTH)
RANDOM_DISCRETE = LENGTH / 4  # the return of uniformly random Discrete actions, in expectation

IDS = {"dict": "StructuredDict-v0", "tuple": "StructuredTuple-v0", "multidiscrete": "StructuredMultiDiscrete-v0",
       "continuous": "StructuredContinuous-v0"}


def _image_space() -> gym.spaces.Box:
    return gym.spaces.Box(0, 255, IMAGE_SHAPE, np.uint8)


def _vector_space() -> gym.spaces.Box:
    return gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


class StructuredEnv(gym.Env):
    """The puzzle with observations of ``structure`` (``dict`` or ``tuple``) and actions ``actions``
    (``discrete``, ``multidiscrete`` or ``continuous``)."""

    metadata = {"render_modes": []}

    def __init__(self, structure: str = "dict", actions: str = "discrete"):
        image, vector, k = _image_space(), _vector_space(), gym.spaces.Discrete(K)
        if structure == "dict":
            self.observation_space = gym.spaces.Dict({"image": image,
                                                      "state": gym.spaces.Dict({"vector": vector, "k": k})})
        elif structure == "tuple":
            self.observation_space = gym.spaces.Tuple((image, gym.spaces.Tuple((vector, k))))
        else:
            raise ValueError(f"structure={structure!r}: allowed: dict, tuple")
        self.action_space = {"discrete": gym.spaces.Discrete(K),
                             "multidiscrete": gym.spaces.MultiDiscrete([2, 2, K]),
                             "continuous": gym.spaces.Box(-1.0, 1.0, (3,), np.float32)}[actions]
        self.structure, self.actions = structure, actions
        self._t = 0
        self._puzzle = (0, 0, 0)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._t = 0
        return self._observe(), {}

    def step(self, action):
        reward = self.reward(self._puzzle, action)
        self._t += 1
        return self._observe(), reward, self._t >= LENGTH, False, {}

    def reward(self, puzzle: tuple[int, int, int], action) -> float:
        """The reward of ``action`` for the puzzle ``(side, sign, k)``."""
        side, sign, k = puzzle
        if self.actions == "discrete":
            return float(int(action) == answer(side, sign, k))
        if self.actions == "multidiscrete":
            return float(np.mean(np.asarray(action).reshape(-1) == (side, sign, k)))
        aim = np.array([2 * side - 1, 2 * sign - 1, (k - 1.5) / 1.5], np.float32)
        return float(1.0 - np.abs(np.clip(np.asarray(action, np.float32), -1, 1) - aim).mean() / 2)

    def _observe(self):
        side, sign, k = (int(self.np_random.integers(2)), int(self.np_random.integers(2)),
                         int(self.np_random.integers(K)))
        self._puzzle = (side, sign, k)
        image = self.np_random.integers(0, 40, IMAGE_SHAPE, dtype=np.uint8)  # dim noise everywhere
        half = IMAGE_SHAPE[1] // 2
        image[:, half * side:half * (side + 1)] += 200  # the lit half
        vector = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        vector[0] = (1 if sign else -1) * self.np_random.uniform(0.2, 1.0)
        if self.structure == "dict":
            return {"image": image, "state": {"vector": vector, "k": k}}
        return image, (vector, k)


def answer(side: int, sign: int, k: int) -> int:
    """The Discrete action that earns the reward."""
    return (side + 2 * sign + k) % K


def puzzle_of(observation) -> tuple[int, int, int]:
    """``(side, sign, k)`` read back from an observation of either structure (a nested dict of the Dict
    variant, rlconf's nested dict of a Tuple, ``{"0": ..., "1": {"0": ..., "1": ...}}``, or the tuple itself)."""
    if isinstance(observation, tuple):
        image, (vector, k) = observation
    elif "image" in observation:
        image, vector, k = observation["image"], observation["state"]["vector"], observation["state"]["k"]
    else:
        image, vector, k = observation["0"], observation["1"]["0"], observation["1"]["1"]
    image = np.asarray(image)
    half = IMAGE_SHAPE[1] // 2
    side = int(image[:, half:].astype(np.int64).sum() > image[:, :half].astype(np.int64).sum())
    return side, int(np.asarray(vector).reshape(-1)[0] > 0), int(np.asarray(k).reshape(()))


def register() -> None:
    """Register the ids (string entry points: a subprocess that makes copies imports this module itself)."""
    variants = {IDS["dict"]: ("dict", "discrete"), IDS["tuple"]: ("tuple", "discrete"),
                IDS["multidiscrete"]: ("dict", "multidiscrete"), IDS["continuous"]: ("dict", "continuous")}
    for env_id, (structure, actions) in variants.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=f"{__name__}:StructuredEnv",
                         kwargs={"structure": structure, "actions": actions})


register()
