"""What every off-policy actor-critic's schema holds (rlconf.agents._off_policy: DDPG, TD3, SAC), and what
they declare."""

from __future__ import annotations

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

    def __post_init__(self):
        for key in ("lr_q", "lr_pi"):
            require(getattr(self, key) > 0, f"agent.{key}", getattr(self, key), "must be positive")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require(0 < self.polyak_rate <= 1, "agent.polyak_rate", self.polyak_rate, "must be in (0, 1]")
        require(self.replay_start_size >= 0, "agent.replay_start_size", self.replay_start_size,
                "must be non-negative")
        for key in OFF_POLICY_COUNTS:
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")


# Bursts of gradient_steps updates every update_frequency steps (data-parallel learners step together); uniform
# replay, so acting and learning can be two processes.
CONTINUOUS_OFF_POLICY = {"plays": CONTINUOUS, "data_parallel": True, "runs_async": True}
