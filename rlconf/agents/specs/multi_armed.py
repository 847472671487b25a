"""The multi-armed bandit agents (rlconf.agents.multi_armed) and the fixed-arm baseline (rlconf.agents.fixed_arm):
their schemas and what they declare."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._plays import BANDITS
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require

PRIORS = ("auto", "beta", "gaussian")  # the posteriors of the multi-armed bandit agents


@dataclass
class ArmConfig:
    init_pulls: int

    def __post_init__(self):
        require(isinstance(self.init_pulls, int) and self.init_pulls >= 0, "agent.init_pulls", self.init_pulls,
                "must be an integer of at least 0")


@dataclass
@agent_defaults("epsilon_greedy")
class EpsilonGreedyConfig(ArmConfig):
    epsilon: float
    epsilon_final: float | None
    epsilon_decay_steps: int

    def __post_init__(self):
        super().__post_init__()
        require(0 <= self.epsilon <= 1, "agent.epsilon", self.epsilon, "must be in [0, 1]")
        require(self.epsilon_final is None or 0 <= self.epsilon_final <= 1, "agent.epsilon_final",
                self.epsilon_final, "must be in [0, 1], or null for a constant epsilon")
        require(self.epsilon_decay_steps >= 1, "agent.epsilon_decay_steps", self.epsilon_decay_steps,
                "must be at least 1")


@dataclass
@agent_defaults("ucb")
class UCBConfig(ArmConfig):
    confidence: float

    def __post_init__(self):
        super().__post_init__()
        require(self.confidence >= 0, "agent.confidence", self.confidence, "must be 0 or more")


@dataclass
@agent_defaults("thompson")
class PosteriorConfig(ArmConfig):
    prior: str
    alpha: float
    beta: float
    prior_mean: float
    prior_std: float
    reward_std: float

    def __post_init__(self):
        super().__post_init__()
        require(self.prior in PRIORS, "agent.prior", self.prior, f"allowed: {', '.join(PRIORS)}")
        for key in ("alpha", "beta", "prior_std", "reward_std"):
            require(getattr(self, key) > 0, f"agent.{key}", getattr(self, key), "must be positive")


@dataclass
@agent_defaults("bayesian_ucb")
class BayesianUCBConfig(PosteriorConfig):
    quantile: float | None
    c: float

    def __post_init__(self):
        super().__post_init__()
        require(self.quantile is None or 0 < self.quantile < 1, "agent.quantile", self.quantile,
                "must be in (0, 1), or null for 1 - 1/(t (ln T)^c)")
        require(self.c >= 0, "agent.c", self.c, "must be 0 or more")


@dataclass
@agent_defaults("gradient_bandit")
class GradientBanditConfig(ArmConfig):
    alpha: float
    baseline: bool
    temperature: float

    def __post_init__(self):
        super().__post_init__()
        require(self.alpha > 0, "agent.alpha", self.alpha, "must be positive")
        require(isinstance(self.baseline, bool), "agent.baseline", self.baseline, "must be true or false")
        require(self.temperature > 0, "agent.temperature", self.temperature, "must be positive")


@dataclass
@agent_defaults("fixed")
class FixedConfig:
    """Always the same arm (GenRL's FixedAgent): the baseline of a regret plot."""

    arm: int

    def __post_init__(self):
        require(isinstance(self.arm, int) and self.arm >= 0, "agent.arm", self.arm, "must be an integer of at least 0")


AGENT = "rlconf.agents.multi_armed"
for spec in (
    AgentSpec("epsilon_greedy", f"{AGENT}:EpsilonGreedy", EpsilonGreedyConfig,
              "multi-armed bandit: the best mean so far, a random arm with probability epsilon", plays=BANDITS),
    AgentSpec("ucb", f"{AGENT}:UCB", UCBConfig, "multi-armed bandit: UCB1, the mean plus an optimism bonus",
              plays=BANDITS),
    AgentSpec("bayesian_ucb", f"{AGENT}:BayesianUCB", BayesianUCBConfig,
              "multi-armed bandit: an upper quantile of each arm's posterior (Beta or Gaussian)", plays=BANDITS),
    AgentSpec("thompson", f"{AGENT}:Thompson", PosteriorConfig,
              "multi-armed bandit: Thompson sampling from Beta-Bernoulli or Gaussian posteriors", plays=BANDITS),
    AgentSpec("gradient_bandit", f"{AGENT}:GradientBandit", GradientBanditConfig,
              "multi-armed bandit: softmax over learned preferences, reward baseline", plays=BANDITS),
    AgentSpec("fixed", "rlconf.agents.fixed_arm:FixedArm", FixedConfig,
              "bandit baseline: always the same arm (agent.arm), for regret plots", plays=BANDITS),
):
    registry.built_in(spec)
