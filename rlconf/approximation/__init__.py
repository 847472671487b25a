"""Approximations: models with their optimiser, target network, clipping, schedules and checkpoint state."""

from rlconf.approximation.approximation import (
    Approximation,
    FeatureNetwork,
    Identity,
    NonFinite,
    QNetwork,
    RecurrentFeatureNetwork,
    ScheduledLearningRate,
    VNetwork,
    adam,
    check_finite,
    reinforce_together,
)
from rlconf.approximation.q_continuous import QContinuous
from rlconf.approximation.qdist import QDist
from rlconf.approximation.target import FixedTarget, PolyakTarget, TargetNetwork, TrivialTarget, make_target

__all__ = [
    "Approximation",
    "FeatureNetwork",
    "FixedTarget",
    "Identity",
    "NonFinite",
    "PolyakTarget",
    "QContinuous",
    "QDist",
    "QNetwork",
    "RecurrentFeatureNetwork",
    "ScheduledLearningRate",
    "TargetNetwork",
    "TrivialTarget",
    "VNetwork",
    "adam",
    "check_finite",
    "make_target",
    "reinforce_together",
]
