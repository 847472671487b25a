"""The one place where continuous actions meet the environment's Box bounds.

Policies think in a normalised action space, [-1, 1] per dimension; ``ActionBounds`` maps it to the env's
``[low, high]`` (``scale``), back (``normalize``), and clips. Policies that squash with tanh, Gaussian policies
and exploration noise all go through it, so no agent rescales actions on its own.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch


class ActionBounds:
    """The affine map between [-1, 1]^d and a Box ``[low, high]``, as tensors on ``device``."""

    def __init__(self, space: gym.spaces.Box, device: torch.device | str = "cpu"):
        if not isinstance(space, gym.spaces.Box):
            raise TypeError(f"continuous policies need a Box action space, not {type(space).__name__}")
        low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
        if not (np.isfinite(low).all() and np.isfinite(high).all()):
            raise ValueError(f"the action space {space} is unbounded; continuous policies need finite bounds")
        self.shape = space.shape
        self.low = torch.as_tensor(low, dtype=torch.float32, device=device)
        self.high = torch.as_tensor(high, dtype=torch.float32, device=device)
        self.center = (self.high + self.low) / 2
        self.half_range = (self.high - self.low) / 2

    @property
    def dim(self) -> int:
        return int(np.prod(self.shape))

    def scale(self, normalized: torch.Tensor) -> torch.Tensor:
        """[-1, 1] -> [low, high]."""
        return self.center + self.half_range * normalized

    def normalize(self, actions: torch.Tensor) -> torch.Tensor:
        """[low, high] -> [-1, 1]."""
        return (actions - self.center) / self.half_range

    def clip(self, actions: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(actions, self.high), self.low)
