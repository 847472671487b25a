"""Replay buffers and on-policy rollout storage."""

from rlconf.memory.advantage import GeneralizedAdvantageBuffer, Rollout
from rlconf.memory.replay import ReplayBuffer, Transitions

__all__ = ["GeneralizedAdvantageBuffer", "ReplayBuffer", "Rollout", "Transitions"]
