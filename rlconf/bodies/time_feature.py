"""The time feature of the Autonomous Learning Library's MuJoCo benchmark: the agent sees how far into the
episode it is.

MuJoCo tasks end at a time limit that the observation does not show, so the same state is worth less near
the end of an episode than at its start; a value function that cannot see the time has to average the two,
which adds variance to its targets (Pardo et al. 2018, "Time limits in reinforcement learning").
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from rlconf.bodies.body import Body, refuse_structured
from rlconf.core import StateArray


class TimeFeature(Body):
    """Appends ``t * time_feature_scale`` to each vector observation, ``t`` the steps since the episode began
    (0 on its first state).

    An environment starts a new episode on the step after a ``done`` state (a terminal state or a
    time-limit truncation), so that is where ``t`` returns to 0. Observations ``(n, k)`` become ``(n, k + 1)``.
    """

    def __init__(self, agent, time_feature_scale: float = 0.001):
        super().__init__(agent)
        self.scale = time_feature_scale
        self._time: torch.Tensor | None = None  # steps since each environment's episode began
        self._done: torch.Tensor | None = None  # done flags of the last state: who starts anew now

    @classmethod
    def transform_space(cls, space: gym.Space, time_feature_scale: float = 0.001) -> gym.Space:
        refuse_structured(space, "a vector (Box) observation to append the time to")
        if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
            raise TypeError(f"TimeFeature appends to vector observations, not {space}")
        low = np.append(space.low, 0.0).astype(space.dtype)
        high = np.append(space.high, np.inf).astype(space.dtype)
        return gym.spaces.Box(low, high, dtype=space.dtype)

    def process_state(self, states: StateArray) -> StateArray:
        observation = states.observation
        if self._time is None:
            self._time = torch.zeros(len(states), dtype=observation.dtype, device=observation.device)
        else:
            self._time = torch.where(self._done, 0.0, self._time + 1)
        self._done = states.done
        feature = (self._time * self.scale).unsqueeze(-1)
        return states.update("observation", torch.cat((observation, feature), dim=-1))

    def exported_feeding(self) -> tuple[str, Callable[[gym.Space], gym.Space]]:
        return (f"observations end with the time feature t * {self.scale:g}, t the steps since the episode began "
                "(0 on its first observation)", lambda space: self.transform_space(space, self.scale))

    def _forget(self) -> None:
        self._time = self._done = None
