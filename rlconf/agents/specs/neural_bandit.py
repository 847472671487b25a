"""The neural contextual bandit agents (rlconf.agents.neural_bandit): their schemas and what they declare."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._plays import BANDITS
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require


@dataclass
class NeuralConfig:
    """What every neural bandit agent takes (GenRL's DCBAgent options, renamed as rlconf's other agents)."""

    init_pulls: int
    update_every: int
    gradient_steps: int
    batch_size: int
    lr: float
    lr_decay: float
    lr_reset: bool
    clip_grad: float
    dropout_p: float
    eval_with_dropout: bool

    def __post_init__(self):
        require(self.init_pulls >= 0, "agent.init_pulls", self.init_pulls, "must be 0 or more")
        for key in ("update_every", "gradient_steps", "batch_size"):
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        require(self.lr_decay >= 0, "agent.lr_decay", self.lr_decay, "must be 0 or more")
        require(self.clip_grad >= 0, "agent.clip_grad", self.clip_grad, "must be 0 or more (0: no clipping)")
        require(0 <= self.dropout_p < 1, "agent.dropout_p", self.dropout_p, "must lie in [0, 1) (0: no dropout)")
        require(not self.eval_with_dropout or self.dropout_p > 0, "agent.eval_with_dropout", self.eval_with_dropout,
                "drops hidden units when choosing arms, and agent.dropout_p=0 drops none; set agent.dropout_p > 0")


@dataclass
@agent_defaults("neural_greedy")
class NeuralGreedyConfig(NeuralConfig):
    """A network's predicted rewards, epsilon-greedy."""

    epsilon: float

    def __post_init__(self):
        super().__post_init__()
        require(0 <= self.epsilon <= 1, "agent.epsilon", self.epsilon, "must lie in [0, 1]")


@dataclass
@agent_defaults("neural_linear")
class NeuralLinearConfig(NeuralConfig):
    """Bayesian linear regression on the network's last hidden features, Thompson sampling."""

    lambda_prior: float
    a0: float
    b0: float
    intercept: bool

    def __post_init__(self):
        super().__post_init__()
        require(self.lambda_prior > 0, "agent.lambda_prior", self.lambda_prior, "must be positive")
        require(self.a0 > 0, "agent.a0", self.a0, "must be positive")
        require(self.b0 > 0, "agent.b0", self.b0, "must be positive")


@dataclass
@agent_defaults("bootstrap_neural")
class BootstrapNeuralConfig(NeuralConfig):
    """An ensemble of networks on bootstrapped data; each pull follows one drawn at random."""

    ensemble: int
    add_probability: float

    def __post_init__(self):
        super().__post_init__()
        require(self.ensemble >= 1, "agent.ensemble", self.ensemble, "must be at least 1")
        require(0 < self.add_probability <= 1, "agent.add_probability", self.add_probability, "must lie in (0, 1]")


@dataclass
@agent_defaults("noise_sampling")
class NoiseSamplingConfig(NeuralConfig):
    """Greedy under the network with Gaussian noise on its weights."""

    noise_std: float
    resample: str
    noise_target: float | None
    noise_measure: str
    noise_adapt: float
    noise_batch_size: int

    def __post_init__(self):
        super().__post_init__()
        require(self.noise_std > 0, "agent.noise_std", self.noise_std, "must be positive")
        require(self.resample in ("pull", "round"), "agent.resample", self.resample, "allowed: pull, round")
        require(self.noise_target is None or 0 < self.noise_target < 1, "agent.noise_target", self.noise_target,
                "must lie in (0, 1), or be null for a fixed noise_std")
        require(self.noise_measure in ("disagreement", "kl"), "agent.noise_measure", self.noise_measure,
                "allowed: disagreement, kl")
        require(self.noise_adapt > 1, "agent.noise_adapt", self.noise_adapt, "must be greater than 1")
        require(self.noise_batch_size >= 1, "agent.noise_batch_size", self.noise_batch_size, "must be at least 1")


@dataclass
@agent_defaults("variational")
class VariationalConfig(NeuralConfig):
    """Bayes by backprop (Blundell et al. 2015): a Gaussian posterior over every weight, Thompson sampling."""

    noise_std: float
    prior_std: float
    init_std: float

    def __post_init__(self):
        super().__post_init__()
        for key in ("noise_std", "prior_std", "init_std"):
            require(getattr(self, key) > 0, f"agent.{key}", getattr(self, key), "must be positive")


AGENT = "rlconf.agents.neural_bandit"
for spec in (
    AgentSpec("neural_greedy", f"{AGENT}:NeuralGreedy", NeuralGreedyConfig,
              "contextual bandit: a network predicts each arm's reward, epsilon-greedy", plays=BANDITS),
    AgentSpec("neural_linear", f"{AGENT}:NeuralLinear", NeuralLinearConfig,
              "contextual bandit: Bayesian linear regression on a network's last features", plays=BANDITS),
    AgentSpec("bootstrap_neural", f"{AGENT}:BootstrapNeural", BootstrapNeuralConfig,
              "contextual bandit: an ensemble of networks on bootstrapped data, one drawn per pull", plays=BANDITS),
    AgentSpec("noise_sampling", f"{AGENT}:NoiseSampling", NoiseSamplingConfig,
              "contextual bandit: greedy under a network with noise added to its weights", plays=BANDITS),
    AgentSpec("variational", "rlconf.agents.variational_bandit:Variational", VariationalConfig,
              "contextual bandit: a Bayesian network by Bayes by backprop, one posterior sample per pull",
              plays=BANDITS),
):
    registry.built_in(spec)
