"""DDPG (rlconf.agents.ddpg): its schema and what it declares."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._off_policy import CONTINUOUS_OFF_POLICY, OffPolicyConfig
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require

NOISE_PROCESSES = ("gaussian", "ou")  # independent draws, or an Ornstein-Uhlenbeck process per copy


@dataclass
@agent_defaults("ddpg")
class DDPGConfig(OffPolicyConfig):
    noise: float
    noise_process: str
    ou_theta: float
    ou_dt: float

    def __post_init__(self):
        super().__post_init__()
        require(self.noise >= 0, "agent.noise", self.noise, "must be non-negative")
        require(self.noise_process in NOISE_PROCESSES, "agent.noise_process", self.noise_process,
                f"allowed: {', '.join(NOISE_PROCESSES)}")
        require(self.ou_dt > 0, "agent.ou_dt", self.ou_dt, "must be positive")
        # The discretised process reverts towards 0 only where 0 < theta * dt <= 1.
        require(0 < self.ou_theta * self.ou_dt <= 1, "agent.ou_theta", self.ou_theta,
                f"must be positive with ou_theta * ou_dt <= 1 (ou_dt = {self.ou_dt})")


registry.built_in(AgentSpec("ddpg", "rlconf.agents.ddpg:DDPG", DDPGConfig,
                            "Deep Deterministic Policy Gradient: continuous actions, Gaussian or OU noise",
                            **CONTINUOUS_OFF_POLICY))
