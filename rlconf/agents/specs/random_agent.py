"""The random baseline (rlconf.agents.random_agent): its schema and what it declares."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._plays import Plays
from rlconf.agents.specs._spec import AgentSpec
from rlconf.core.kinds import EnvKind


@dataclass
@agent_defaults("random")
class RandomConfig:
    """No hyperparameters."""


# Any action space, bandits too (a baseline for them); it builds no network, so any approximation will do.
registry.built_in(AgentSpec("random", "rlconf.agents.random_agent:RandomAgent", RandomConfig,
                            "uniformly random (legal) actions: a baseline, and the opponent of multi-agent tests",
                            plays=Plays(frozenset({EnvKind.SINGLE_AGENT, EnvKind.BANDIT})), recurrent="ignored"))
