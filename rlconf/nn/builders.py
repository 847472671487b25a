"""Model builders named by the approximation group's ``model`` key.

A builder turns the group's settings into a feature trunk for a given observation space; agents add their
heads (one output per action, one value, ...) on top. Each builder has a typed settings dataclass that the
config is checked against before anything is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np
from torch import nn

from rlconf.config import require
from rlconf.nn.models import ACTIVATIONS, Flatten, mlp


@dataclass
class MLPSettings:
    """Fully connected layers on the flattened observation."""

    model: str = "mlp"
    hidden: list[int] = field(default_factory=lambda: [64, 64])
    activation: str = "relu"
    # PPO and other actor-critics: one trunk shared by policy and value heads, or a trunk each.
    shared: bool = False
    # Orthogonal initialisation (hidden gain sqrt 2, small policy head), as PPO implementations use.
    ortho_init: bool = False

    def __post_init__(self):
        require(self.activation in ACTIVATIONS, "approximation.activation", self.activation,
                f"allowed: {', '.join(ACTIVATIONS)}")
        require(all(size >= 1 for size in self.hidden), "approximation.hidden", self.hidden,
                "layer sizes must be at least 1")


def flat_size(space: gym.Space) -> int:
    return int(np.prod(space.shape))


def _flat_stack(space: gym.Space, layers: nn.Sequential) -> nn.Sequential:
    # One flat Sequential: every nested module costs a Python call per forward, and small networks on
    # the per-step path are dominated by such overhead. Vector observations need no Flatten.
    prefix = [Flatten()] if len(space.shape) > 1 else []
    return nn.Sequential(*prefix, *layers)


def mlp_head(settings: MLPSettings, space: gym.Space, outputs: int, out_gain: float = 1.0) -> nn.Module:
    """Trunk and head in one stack: observation -> hidden layers -> ``outputs``."""
    return _flat_stack(space, mlp(flat_size(space), settings.hidden, outputs, settings.activation,
                                  out_gain=out_gain, ortho_init=settings.ortho_init))


def mlp_trunk(settings: MLPSettings, space: gym.Space) -> tuple[nn.Module, int]:
    """The hidden layers alone, and their output width, for heads to share."""
    trunk = _flat_stack(space, mlp(flat_size(space), settings.hidden, None, settings.activation,
                                   ortho_init=settings.ortho_init))
    width = settings.hidden[-1] if settings.hidden else flat_size(space)
    return trunk, width


def head(width: int, outputs: int, settings: MLPSettings, gain: float = 1.0) -> nn.Module:
    layer = nn.Linear(width, outputs)
    if settings.ortho_init:
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
    return layer
