"""What every off-policy actor-critic's schema holds (rlconf.agents._off_policy: DDPG, TD3, SAC), and what
they declare."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rlconf.agents.specs._plays import CONTINUOUS
from rlconf.errors import require

OFF_POLICY_COUNTS = ("batch_size", "replay_buffer_size", "update_frequency", "gradient_steps")


@dataclass
class OffPolicyConfig:
    """What every off-policy actor-critic (DDPG, TD3, SAC) takes, with its checks."""

    discount_factor: float
    lr_q: float
    lr_pi: float
    adam_eps: float
    batch_size: int
    replay_buffer_size: int
    replay_start_size: int
    update_frequency: int
    gradient_steps: int
    polyak_rate: float
    n_steps: int
    reward_scale: float
    q_target_clip: float | None

    def __post_init__(self):
        for key in ("lr_q", "lr_pi"):
            require(getattr(self, key) > 0, f"agent.{key}", getattr(self, key), "must be positive")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require(0 < self.polyak_rate <= 1, "agent.polyak_rate", self.polyak_rate, "must be in (0, 1]")
        require(self.replay_start_size >= 0, "agent.replay_start_size", self.replay_start_size,
                "must be non-negative")
        for key in (*OFF_POLICY_COUNTS, "n_steps"):
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")
        require(math.isfinite(self.reward_scale) and self.reward_scale > 0, "agent.reward_scale", self.reward_scale,
                "must be a positive finite number")
        clip = self.q_target_clip
        require(clip is None or clip > 0, "agent.q_target_clip", clip,
                "must be positive (targets clipped to +-it) or null (no clip)")


# What the team actor-critics (MADDPG, MASAC: rlconf.agents._team_off_policy) inherit from DDPG's and SAC's
# schemas but do not implement, with the one value they take.
SINGLE_AGENT_ONLY = {"n_steps": 1, "reward_scale": 1.0, "q_target_clip": None, "noise_process": "gaussian"}


def refuse_single_agent_options(config) -> None:
    """A team agent given one of ``SINGLE_AGENT_ONLY``'s options off its value: one line, not a silent no-op."""
    for key, value in SINGLE_AGENT_ONLY.items():
        if hasattr(config, key):
            require(getattr(config, key) == value, f"agent.{key}", getattr(config, key),
                    f"is an option of ddpg, td3 and sac; allowed with a team's agent (maddpg, masac, ...): {value}")


# Bursts of gradient_steps updates every update_frequency steps (data-parallel learners step together); uniform
# replay, so acting and learning can be two processes; acting on a group of copies at a time (the alternating
# sampler) stores each step once every group has acted on it.
CONTINUOUS_OFF_POLICY = {"plays": CONTINUOUS, "data_parallel": True, "runs_async": True, "alternates": True}
