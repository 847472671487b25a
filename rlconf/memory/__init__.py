"""Replay buffers and on-policy rollout storage."""

from rlconf.memory.advantage import GeneralizedAdvantageBuffer, RecurrentAdvantageBuffer, Rollout, SequenceRollout
from rlconf.memory.episodes import CompleteEpisodeBuffer, EpisodeSteps
from rlconf.memory.factory import replay_buffer
from rlconf.memory.prioritized import PrioritizedReplayBuffer, SumTree
from rlconf.memory.replay import NStepReplayBuffer, ReplayBuffer, Transitions

__all__ = ["CompleteEpisodeBuffer", "EpisodeSteps", "GeneralizedAdvantageBuffer", "NStepReplayBuffer",
           "PrioritizedReplayBuffer", "RecurrentAdvantageBuffer", "ReplayBuffer", "Rollout", "SequenceRollout",
           "SumTree", "Transitions", "replay_buffer"]
