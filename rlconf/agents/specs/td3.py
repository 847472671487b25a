"""TD3 (rlconf.agents.td3): its schema and what it declares."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._off_policy import CONTINUOUS_OFF_POLICY
from rlconf.agents.specs._spec import AgentSpec
from rlconf.agents.specs.ddpg import DDPGConfig
from rlconf.errors import require


@dataclass
@agent_defaults("td3")
class TD3Config(DDPGConfig):
    target_noise: float
    target_noise_clip: float
    policy_delay: int

    def __post_init__(self):
        super().__post_init__()
        for key in ("target_noise", "target_noise_clip"):
            require(getattr(self, key) >= 0, f"agent.{key}", getattr(self, key), "must be non-negative")
        require(self.policy_delay >= 1, "agent.policy_delay", self.policy_delay, "must be at least 1")


registry.built_in(AgentSpec("td3", "rlconf.agents.td3:TD3", TD3Config,
                            "DDPG + twin critics, target policy smoothing, delayed policy updates",
                            **CONTINUOUS_OFF_POLICY))
