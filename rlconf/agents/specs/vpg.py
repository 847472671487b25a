"""VPG (rlconf.agents.vpg): its schema and what it declares."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._plays import STOCHASTIC
from rlconf.agents.specs._policy_gradient import PolicyGradientConfig
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require


@dataclass
@agent_defaults("vpg")
class VPGConfig(PolicyGradientConfig):
    min_batch_size: int

    def __post_init__(self):
        super().__post_init__()
        require(self.min_batch_size >= 1, "agent.min_batch_size", self.min_batch_size, "must be at least 1")


registry.built_in(AgentSpec("vpg", "rlconf.agents.vpg:VPG", VPGConfig,
                            "REINFORCE with a value baseline: complete episodes, parallel envs", plays=STOCHASTIC))
