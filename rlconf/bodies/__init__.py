"""Bodies wrap agents: what happens to states before the agent sees them and to actions after."""

from rlconf.bodies.atari import ClipRewards, DeepmindAtariBody, EpisodicLives, FrameStack
from rlconf.bodies.body import Body, Lane, body_options
from rlconf.bodies.mask_velocity import MaskVelocity
from rlconf.bodies.normalize import (
    NormalizeObservations,
    NormalizeRewards,
    PackedStatistics,
    RunningMeanStd,
    observation_statistics,
)
from rlconf.bodies.stack import StackImageKeys
from rlconf.bodies.time_feature import TimeFeature

__all__ = ["Body", "ClipRewards", "Lane", "DeepmindAtariBody", "EpisodicLives", "FrameStack", "MaskVelocity",
           "NormalizeObservations", "NormalizeRewards", "PackedStatistics", "RunningMeanStd", "StackImageKeys",
           "TimeFeature", "body_options", "observation_statistics"]
