"""Approximations: models with their optimiser, target network, clipping, schedules and checkpoint state."""

from rlconf.approximation.approximation import (
    Approximation,
    FeatureNetwork,
    Identity,
    QNetwork,
    VNetwork,
    adam,
    linear_lr_schedule,
    reinforce_together,
)
from rlconf.approximation.target import FixedTarget, PolyakTarget, TargetNetwork, TrivialTarget, make_target

__all__ = [
    "Approximation",
    "FeatureNetwork",
    "FixedTarget",
    "Identity",
    "PolyakTarget",
    "QNetwork",
    "TargetNetwork",
    "TrivialTarget",
    "VNetwork",
    "adam",
    "linear_lr_schedule",
    "make_target",
    "reinforce_together",
]
