"""A2C (rlconf.agents.a2c): its schema and what it declares."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._plays import STOCHASTIC
from rlconf.agents.specs._policy_gradient import PolicyGradientConfig, StateDependentExploration
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require


@dataclass
@agent_defaults("a2c")
class A2CConfig(PolicyGradientConfig, StateDependentExploration):
    n_steps: int
    lam: float
    normalize_advantages: bool

    def __post_init__(self):
        super().__post_init__()
        require(self.n_steps >= 1, "agent.n_steps", self.n_steps, "must be at least 1")
        require(0 <= self.lam <= 1, "agent.lam", self.lam, "must be in [0, 1]")


# One update per rollout of n_steps steps (data-parallel learners step together); a rollout's columns are
# acted on a group at a time (the alternating sampler); with or without a recurrent core.
ROLLOUT = {"plays": STOCHASTIC, "recurrent": "optional", "data_parallel": True, "alternates": True}
registry.built_in(AgentSpec("a2c", "rlconf.agents.a2c:A2C", A2CConfig,
                            "Advantage Actor-Critic: n-step returns, entropy bonus, parallel envs", **ROLLOUT))
