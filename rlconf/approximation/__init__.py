"""Approximations: models with their optimiser, target network, clipping, schedules and checkpoint state."""

from rlconf.approximation.approximation import (
    Approximation,
    FeatureNetwork,
    Identity,
    NonFinite,
    QNetwork,
    RecurrentFeatureNetwork,
    VNetwork,
    check_finite,
    reinforce_together,
)
from rlconf.approximation.optimizers import (
    NatureRMSprop,
    ScheduledLearningRate,
    learning_rate,
    make_optimizer,
    training,
)
from rlconf.approximation.q_continuous import QContinuous
from rlconf.approximation.qdist import QDist
from rlconf.approximation.target import FixedTarget, PolyakTarget, TargetNetwork, TrivialTarget, make_target

__all__ = [
    "Approximation",
    "FeatureNetwork",
    "FixedTarget",
    "Identity",
    "NatureRMSprop",
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
    "check_finite",
    "learning_rate",
    "make_optimizer",
    "make_target",
    "reinforce_together",
    "training",
]
