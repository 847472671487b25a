"""VAC (rlconf.agents.vac): its schema and what it declares."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._plays import STOCHASTIC
from rlconf.agents.specs._policy_gradient import PolicyGradientConfig
from rlconf.agents.specs._spec import AgentSpec


@dataclass
@agent_defaults("vac")
class VACConfig(PolicyGradientConfig):
    """One-step updates need no settings beyond the shared ones."""


registry.built_in(AgentSpec("vac", "rlconf.agents.vac:VAC", VACConfig,
                            "vanilla actor-critic: one-step TD advantages every step, parallel envs", plays=STOCHASTIC))
