"""The linear contextual bandit agents (rlconf.agents.linear_bandit): their schemas and what they declare."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._plays import BANDITS
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require


@dataclass
@agent_defaults("linear_posterior")
class LinearPosteriorConfig:
    """Bayesian linear regression per arm, Thompson sampling (the options of GenRL's LinearPosteriorAgent)."""

    init_pulls: int
    lambda_prior: float
    a0: float
    b0: float
    intercept: bool

    def __post_init__(self):
        require(self.init_pulls >= 0, "agent.init_pulls", self.init_pulls, "must be 0 or more")
        require(self.lambda_prior > 0, "agent.lambda_prior", self.lambda_prior, "must be positive")
        require(self.a0 > 0, "agent.a0", self.a0, "must be positive")
        require(self.b0 > 0, "agent.b0", self.b0, "must be positive")


@dataclass
@agent_defaults("linucb")
class LinUCBConfig:
    """Ridge regression per arm and an upper confidence bound (Li et al. 2010, disjoint LinUCB)."""

    init_pulls: int
    alpha: float
    lambda_prior: float
    intercept: bool

    def __post_init__(self):
        require(self.init_pulls >= 0, "agent.init_pulls", self.init_pulls, "must be 0 or more")
        require(self.alpha >= 0, "agent.alpha", self.alpha, "must be 0 or more")
        require(self.lambda_prior > 0, "agent.lambda_prior", self.lambda_prior, "must be positive")


registry.built_in(AgentSpec("linear_posterior", "rlconf.agents.linear_bandit:LinearPosterior", LinearPosteriorConfig,
                            "contextual bandit: Bayesian linear regression per arm, Thompson sampling",
                            plays=BANDITS))
registry.built_in(AgentSpec("linucb", "rlconf.agents.linear_bandit:LinUCB", LinUCBConfig,
                            "contextual bandit: ridge regression per arm, upper confidence bound", plays=BANDITS))
