"""Replay buffers and on-policy rollout storage."""

from rlconf.memory.advantage import GeneralizedAdvantageBuffer, Rollout
from rlconf.memory.episodes import CompleteEpisodeBuffer, EpisodeSteps
from rlconf.memory.prioritized import PrioritizedReplayBuffer, SumTree
from rlconf.memory.replay import NStepReplayBuffer, ReplayBuffer, Transitions, replay_buffer

__all__ = ["CompleteEpisodeBuffer", "EpisodeSteps", "GeneralizedAdvantageBuffer", "NStepReplayBuffer",
           "PrioritizedReplayBuffer", "ReplayBuffer", "Rollout", "SumTree", "Transitions", "replay_buffer"]
