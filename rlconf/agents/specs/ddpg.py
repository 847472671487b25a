"""DDPG (rlconf.agents.ddpg): its schema and what it declares."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._off_policy import CONTINUOUS_OFF_POLICY, OffPolicyConfig
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require


@dataclass
@agent_defaults("ddpg")
class DDPGConfig(OffPolicyConfig):
    noise: float

    def __post_init__(self):
        super().__post_init__()
        require(self.noise >= 0, "agent.noise", self.noise, "must be non-negative")


registry.register(AgentSpec("ddpg", "rlconf.agents.ddpg:DDPG", DDPGConfig,
                            "Deep Deterministic Policy Gradient: continuous actions, Gaussian noise",
                            **CONTINUOUS_OFF_POLICY))
