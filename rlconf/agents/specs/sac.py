"""SAC (rlconf.agents.sac): its schema and what it declares."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._off_policy import CONTINUOUS_OFF_POLICY, OffPolicyConfig
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require


@dataclass
@agent_defaults("sac")
class SACConfig(OffPolicyConfig):
    lr_temperature: float
    temperature_initial: float
    temperature: float | None
    entropy_target: float | None

    def __post_init__(self):
        super().__post_init__()
        require(self.lr_temperature > 0, "agent.lr_temperature", self.lr_temperature, "must be positive")
        fixed = self.temperature
        require(fixed is None or (math.isfinite(fixed) and fixed > 0), "agent.temperature", fixed,
                "must be a positive finite number (a fixed alpha) or null (tuned)")
        require(self.temperature_initial > 0, "agent.temperature_initial", self.temperature_initial,
                "must be positive")



registry.built_in(AgentSpec("sac", "rlconf.agents.sac:SAC", SACConfig,
                            "Soft Actor-Critic: squashed Gaussian, twin critics, tuned temperature",
                            **CONTINUOUS_OFF_POLICY))
