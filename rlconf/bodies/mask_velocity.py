"""Partially observable control: the agent sees an environment's observations without their velocities.

CartPole without the cart's and the pole's velocities, Pendulum without its angular velocity: a single
observation no longer says where the system is going, but two successive ones do. A feed-forward agent that
sees one observation at a time cannot act well; an agent with memory (``approximation.recurrent``) can. This
is the usual first test of memory in deep RL (the "no velocity" tasks of Stable-Baselines3's RL Zoo, Meng et
al. 2021's POMDP benchmarks).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from rlconf.bodies.body import Body, refuse_structured
from rlconf.core import StateArray


class MaskVelocity(Body):
    """Drops the observation components ``masked`` names (``body.masked``; by default the environment's
    velocities, ``rlconf.settings.VELOCITY_COMPONENTS``): vector observations ``(n, k)`` become
    ``(n, k - len(masked))``, in the same order."""

    def __init__(self, agent, masked: list[int] | tuple[int, ...] = ()):
        super().__init__(agent)
        self.masked = tuple(masked)
        self._kept: torch.Tensor | None = None  # the indices kept, on the observations' device

    @classmethod
    def transform_space(cls, space: gym.Space, masked: list[int] | tuple[int, ...] = ()) -> gym.Space:
        refuse_structured(space, "a vector (Box) observation")
        if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
            raise TypeError(f"it masks components of vector observations, not of {space}")
        kept = _kept(space.shape[0], masked)
        return gym.spaces.Box(space.low[kept], space.high[kept], dtype=space.dtype)

    def process_state(self, states: StateArray) -> StateArray:
        return states.update("observation", self.transform_observation(states.observation))

    def transform_observation(self, observations: torch.Tensor) -> torch.Tensor:
        if self._kept is None:
            self._kept = torch.as_tensor(_kept(observations.shape[-1], self.masked), device=observations.device)
        return observations.index_select(-1, self._kept)


def _kept(size: int, masked) -> np.ndarray:
    """The indices of ``size`` components that ``masked`` leaves; an index out of range is a TypeError (the
    user's choice of body for these observations: run.py makes it one line)."""
    wrong = [i for i in masked if not 0 <= i < size]
    if wrong:
        raise TypeError(f"body.masked={list(masked)}: observations have {size} components (0 .. {size - 1})")
    kept = np.array([i for i in range(size) if i not in set(masked)], dtype=np.int64)
    if len(kept) == 0:
        raise TypeError(f"body.masked={list(masked)} hides every component of the observations")
    return kept
