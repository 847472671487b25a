"""The hyperparameters of every built-in agent: the dataclass each ``configs/agent/<name>.yaml`` is checked
against (``rlconf.config.validate``), with the checks of their values. Each agent's file (``dqn.py``, ...) names
its own as ``Config``; they live here, apart from the algorithms, because checking a config must not import
torch: ``rlconf run ... --cfg job`` and every refusal of bad input answer in a fraction of a second. The
registry names each agent's config (``registry.agent_config``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rlconf import registry
from rlconf.config import check
from rlconf.errors import ConfigError, require

LOSSES = ("mse", "huber")  # DQN's TD losses (dqn.LOSS_FUNCTIONS)
REPLAYS = ("uniform", "prioritized")
TARGETS = ("fixed", "polyak", "trivial")
OPPONENTS = ("random",)  # what agent.test_against may name (independent)
PRIORS = ("auto", "beta", "gaussian")  # the posteriors of the multi-armed bandit agents
TRACE_KINDS = ("replacing", "accumulating")  # SARSA(lambda)'s eligibility traces



def require_epsilon_schedule(config) -> None:
    """An epsilon-greedy schedule's settings: probabilities (start, end, test), decaying over at least a step."""
    require(config.epsilon_decay_steps >= 1, "agent.epsilon_decay_steps", config.epsilon_decay_steps,
            "must be at least 1")
    for key in ("epsilon", "epsilon_final", "eval_epsilon"):
        require(0 <= getattr(config, key) <= 1, f"agent.{key}", getattr(config, key), "must be in [0, 1]")

# -- value-based: DQN and its kin (dqn.py, ddqn.py, c51.py, vqn.py) --------------------------------------------
@dataclass
class DQNConfig:
    discount_factor: float = 0.99
    lr: float = 1e-3
    lr_final: float | None = None  # decay the learning rate linearly to this over the run
    adam_eps: float = 1e-8
    loss: str = "mse"  # mse or huber
    clip_grad: float = 0.0  # max gradient norm; 0 disables
    batch_size: int = 64
    replay_buffer_size: int = 100_000
    replay_start_size: int = 1_000  # environment steps before the first update
    update_frequency: int = 4  # environment steps between bursts of updates
    gradient_steps: int = 1  # minibatch updates per burst
    target: str = "fixed"  # fixed, polyak or trivial
    target_update_frequency: int = 1_000  # environment steps (fixed target)
    target_rate: float = 0.005  # polyak target
    epsilon: float = 1.0  # exploration: start ...
    epsilon_final: float = 0.02  # ... end ...
    epsilon_decay_steps: int = 10_000  # ... after this many environment steps
    eval_epsilon: float = 0.0  # exploration of the test agent
    replay: str = "uniform"  # uniform or prioritized
    n_steps: int = 1  # n-step returns
    alpha: float = 0.5  # prioritized replay: how much priorities count ...
    beta: float = 0.5  # ... and the importance correction, annealed to 1 over the run
    priority_epsilon: float = 1e-5  # added to |TD error| so no transition becomes undrawable

    def __post_init__(self):
        require(self.loss in LOSSES, "agent.loss", self.loss, f"allowed: {', '.join(LOSSES)}")
        require(self.target in TARGETS, "agent.target", self.target, f"allowed: {', '.join(TARGETS)}")
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        for key in ("batch_size", "replay_buffer_size", "update_frequency", "gradient_steps",
                    "target_update_frequency", "epsilon_decay_steps"):
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")
        require(self.replay in REPLAYS, "agent.replay", self.replay, f"allowed: {', '.join(REPLAYS)}")
        require(self.n_steps >= 1, "agent.n_steps", self.n_steps, "must be at least 1")
        for key in ("epsilon", "epsilon_final", "eval_epsilon", "target_rate", "alpha", "beta"):
            require(0 <= getattr(self, key) <= 1, f"agent.{key}", getattr(self, key), "must be in [0, 1]")


@dataclass
class DDQNConfig(DQNConfig):
    replay: str = "prioritized"


@dataclass
class C51Config(DQNConfig):
    atoms: int = 51
    v_min: float = -10.0
    v_max: float = 10.0
    double_q: bool = False  # the online network picks the next action, the target network values it

    def __post_init__(self):
        super().__post_init__()
        require(self.atoms >= 2, "agent.atoms", self.atoms, "must be at least 2")
        require(self.v_min < self.v_max, "agent.v_min", self.v_min, f"must be below agent.v_max ({self.v_max})")


@dataclass
class RainbowConfig(C51Config):
    replay: str = "prioritized"
    n_steps: int = 3
    double_q: bool = True
    epsilon: float = 0.0  # noisy layers explore
    epsilon_final: float = 0.0


@dataclass
class VQNConfig:
    discount_factor: float = 0.99
    lr: float = 1e-2
    lr_final: float | None = None
    adam_eps: float = 1e-5
    clip_grad: float = 0.0
    epsilon: float = 1.0  # exploration: start ...
    epsilon_final: float = 0.02  # ... end ...
    epsilon_decay_steps: int = 10_000  # ... after this many environment steps
    eval_epsilon: float = 0.0

    def __post_init__(self):
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require_epsilon_schedule(self)


# -- policy gradient (_policy_gradient.py, vpg.py, vac.py, a2c.py, ppo.py) ------------------------------------
@dataclass
class PolicyGradientConfig:
    discount_factor: float = 0.99
    lr: float = 3e-4
    lr_final: float | None = None  # decay the learning rate linearly to this over the run
    lr_v: float | None = None  # the value head's learning rate (null: lr); it decays in proportion to lr
    adam_eps: float = 1e-5
    clip_grad: float = 0.5  # max gradient norm of policy and value head together (and of the features); 0: off
    entropy_loss_scaling: float = 0.0  # weight of the entropy bonus, which keeps the policy exploring
    value_loss_scaling: float = 0.5  # weight of the value loss against the policy loss
    log_std_init: float = 0.0  # Box actions: the Gaussian's initial log std, in actions normalised to [-1, 1]

    def __post_init__(self):
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        require(self.lr_v is None or self.lr_v > 0, "agent.lr_v", self.lr_v, "must be positive or null")
        require(self.lr_final is None or self.lr_final >= 0, "agent.lr_final", self.lr_final,
                "must be non-negative or null")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require(self.adam_eps > 0, "agent.adam_eps", self.adam_eps, "must be positive")
        for key in ("clip_grad", "entropy_loss_scaling", "value_loss_scaling"):
            require(getattr(self, key) >= 0, f"agent.{key}", getattr(self, key), "must be non-negative")


@dataclass
class VPGConfig(PolicyGradientConfig):
    lr: float = 1e-3
    min_batch_size: int = 500  # steps of ended episodes that trigger an update (all ended episodes are used)

    def __post_init__(self):
        super().__post_init__()
        require(self.min_batch_size >= 1, "agent.min_batch_size", self.min_batch_size, "must be at least 1")


@dataclass
class VACConfig(PolicyGradientConfig):
    """One-step updates need no settings beyond the shared ones."""

    lr: float = 1e-3


@dataclass
class A2CConfig(PolicyGradientConfig):
    lr: float = 7e-4
    n_steps: int = 5  # steps per environment in each rollout: one update per rollout
    entropy_loss_scaling: float = 0.01
    lam: float = 1.0  # GAE lambda: 1 gives n-step returns
    normalize_advantages: bool = False  # mean 0, std 1 over each rollout

    def __post_init__(self):
        super().__post_init__()
        require(self.n_steps >= 1, "agent.n_steps", self.n_steps, "must be at least 1")
        require(0 <= self.lam <= 1, "agent.lam", self.lam, "must be in [0, 1]")


@dataclass
class PPOConfig(PolicyGradientConfig):
    lam: float = 0.95  # GAE lambda
    clip: float = 0.2  # surrogate clipping range ...
    clip_final: float | None = None  # ... optionally decayed linearly to this over the run
    n_steps: int = 128  # steps per environment in each rollout
    epochs: int = 4
    batch_size: int = 64  # minibatch size
    normalize_advantages: bool = True

    def __post_init__(self):
        super().__post_init__()
        require(0 <= self.lam <= 1, "agent.lam", self.lam, "must be in [0, 1]")
        for key in ("n_steps", "epochs", "batch_size"):
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")
        require(self.clip > 0, "agent.clip", self.clip, "must be positive")


# -- continuous control (ddpg.py, td3.py, sac.py) ---------------------------------------------------------
OFF_POLICY_COUNTS = ("batch_size", "replay_buffer_size", "update_frequency", "gradient_steps")


def check_off_policy(config) -> None:
    """The checks every off-policy actor-critic config needs (the fields DDPGConfig starts with)."""
    for key in ("lr_q", "lr_pi"):
        require(getattr(config, key) > 0, f"agent.{key}", getattr(config, key), "must be positive")
    require(0 <= config.discount_factor <= 1, "agent.discount_factor", config.discount_factor, "must be in [0, 1]")
    require(0 < config.polyak_rate <= 1, "agent.polyak_rate", config.polyak_rate, "must be in (0, 1]")
    require(config.replay_start_size >= 0, "agent.replay_start_size", config.replay_start_size,
            "must be non-negative")
    for key in OFF_POLICY_COUNTS:
        require(getattr(config, key) >= 1, f"agent.{key}", getattr(config, key), "must be at least 1")


@dataclass
class DDPGConfig:
    discount_factor: float = 0.99
    lr_q: float = 1e-3  # the critic's learning rate
    lr_pi: float = 1e-3  # the policy's learning rate
    adam_eps: float = 1e-8
    batch_size: int = 100
    replay_buffer_size: int = 1_000_000
    replay_start_size: int = 5_000  # environment steps of uniformly random actions before the first update
    update_frequency: int = 1  # environment steps between bursts of updates
    gradient_steps: int = 1  # minibatch updates per burst
    polyak_rate: float = 0.005  # targets move this fraction of the way to their networks after each update
    noise: float = 0.1  # exploration: std of the Gaussian added to actions, in half-widths of the Box

    def __post_init__(self):
        check_off_policy(self)
        require(self.noise >= 0, "agent.noise", self.noise, "must be non-negative")


@dataclass
class TD3Config(DDPGConfig):
    replay_start_size: int = 10_000  # random steps first: Fujimoto et al. 2018 start with 10k (DDPG's 5k is ALL's)
    target_noise: float = 0.2  # smoothing: std of the noise on target actions, in half-widths of the Box ...
    target_noise_clip: float = 0.5  # ... clipped to +-this
    policy_delay: int = 2  # critic updates per policy (and target) update

    def __post_init__(self):
        super().__post_init__()
        for key in ("target_noise", "target_noise_clip"):
            require(getattr(self, key) >= 0, f"agent.{key}", getattr(self, key), "must be non-negative")
        require(self.policy_delay >= 1, "agent.policy_delay", self.policy_delay, "must be at least 1")


@dataclass
class SACConfig:
    discount_factor: float = 0.99
    lr_q: float = 3e-4  # the critics' learning rate
    lr_pi: float = 3e-4  # the policy's learning rate
    lr_temperature: float = 3e-4  # the temperature's learning rate (on log alpha)
    adam_eps: float = 1e-8
    batch_size: int = 256
    replay_buffer_size: int = 1_000_000
    replay_start_size: int = 10_000  # environment steps of uniformly random actions before the first update
    update_frequency: int = 1  # environment steps between bursts of updates
    gradient_steps: int = 1  # minibatch updates per burst
    polyak_rate: float = 0.005  # targets move this fraction of the way to their networks after each update
    temperature_initial: float = 1.0  # alpha, the weight of the entropy bonus, to start with (tuned)
    temperature: float | None = None  # a fixed alpha, never tuned; None: tuned from temperature_initial
    entropy_target: float | None = None  # the entropy alpha steers towards; None: -dim(A)

    def __post_init__(self):
        check_off_policy(self)
        require(self.lr_temperature > 0, "agent.lr_temperature", self.lr_temperature, "must be positive")
        fixed = self.temperature
        require(fixed is None or (math.isfinite(fixed) and fixed > 0), "agent.temperature", fixed,
                "must be a positive finite number (a fixed alpha) or null (tuned)")
        require(self.temperature_initial > 0, "agent.temperature_initial", self.temperature_initial,
                "must be positive")


# -- baselines and multi-agent (random_agent.py, independent.py) -------------------------------------------
@dataclass
class RandomConfig:
    """No hyperparameters."""


@dataclass
class IndependentConfig:
    """Which agent each player uses, and the hyperparameters of each agent under its name: ``agent.dqn.lr``
    (configs/agent/independent.yaml composes each agent's own config there, so every key can be overridden
    as it is typed and a misspelt one is refused). Other agents (ppo, ...) play with their defaults."""

    base: str = "dqn"  # the agent every player uses (unless named in players)
    players: dict[str, str] | None = None  # player -> agent name, for players not using base
    shared: bool = False  # one set of parameters for every player using base (self-play)
    test_against: str | None = None  # null: the test is self-play; random: each trained seat vs random moves
    test_seat: str | None = None  # with test_against: the seat tested (null: every learning seat, games shared)
    dqn: dict[str, Any] = field(default_factory=dict)
    ddqn: dict[str, Any] = field(default_factory=dict)
    c51: dict[str, Any] = field(default_factory=dict)
    rainbow: dict[str, Any] = field(default_factory=dict)
    random: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        self.players = dict(self.players or {})  # null in YAML, so that agent.players={...} can replace it
        require(self.test_against is None or self.test_against in OPPONENTS, "agent.test_against",
                self.test_against, f"allowed: null, {', '.join(OPPONENTS)}")
        require(self.test_seat is None or self.test_against is not None, "agent.test_seat", self.test_seat,
                "chooses the seat tested against agent.test_against; set that too, e.g. agent.test_against=random")
        for name in {self.base, *self.players.values()}:
            self.config_of(name)  # every agent named, and its hyperparameters, checked now

    def config_of(self, name: str) -> Any:
        """The Config of agent ``name`` from ``agent.<name>`` (its defaults where there is none), without
        importing the agent. A bad key or value is one line naming it as it was written."""
        where = "agent.base" if name == self.base else "agent.players"
        try:
            config_class = registry.agent_config(name)
        except registry.UnknownComponent as error:
            raise ConfigError(f"{where}: {error}") from None
        if registry.declared("agent", name, "plays.multiagent", False):
            raise ConfigError(f"{where}={name}: is itself a multi-agent agent; allowed: single-agent agents such "
                              "as dqn, ddqn, c51, rainbow, random")
        values = {k: v for k, v in (getattr(self, name, None) or {}).items() if k != "name"}
        return _checked(config_class, values, f"agent.{name}.")

    def agent_config(self, name: str) -> tuple[type, Any]:
        """The agent class ``name`` (imported) and its Config (``config_of``)."""
        config = self.config_of(name)
        return registry.get("agent", name), config


def _checked(config_class: type, values: dict, prefix: str) -> Any:
    """``values`` as the agent's Config. Its own checks name keys as ``agent.<key>``; here they live under
    ``prefix``, so the message says so."""
    try:
        return check(config_class, values, prefix)
    except ConfigError as error:
        message = str(error)
        if message.startswith("agent.") and not message.startswith(prefix):
            message = prefix + message.removeprefix("agent.")
        raise ConfigError(message) from None


# -- multi-armed bandits (multi_armed.py) ------------------------------------------------------------------
@dataclass
class ArmConfig:
    init_pulls: int = 0  # pull every arm this many times in turn before the algorithm chooses

    def __post_init__(self):
        require(isinstance(self.init_pulls, int) and self.init_pulls >= 0, "agent.init_pulls", self.init_pulls,
                "must be an integer of at least 0")


@dataclass
class EpsilonGreedyConfig(ArmConfig):
    epsilon: float = 0.1  # probability of a uniformly random arm ...
    epsilon_final: float | None = None  # ... decaying linearly to this (null: constant) ...
    epsilon_decay_steps: int = 10_000  # ... over this many environment steps (pulls summed over the bandits)

    def __post_init__(self):
        super().__post_init__()
        require(0 <= self.epsilon <= 1, "agent.epsilon", self.epsilon, "must be in [0, 1]")
        require(self.epsilon_final is None or 0 <= self.epsilon_final <= 1, "agent.epsilon_final",
                self.epsilon_final, "must be in [0, 1], or null for a constant epsilon")
        require(self.epsilon_decay_steps >= 1, "agent.epsilon_decay_steps", self.epsilon_decay_steps,
                "must be at least 1")


@dataclass
class UCBConfig(ArmConfig):
    confidence: float = 1.0  # scales the bonus: 1 is UCB1 for rewards in [0, 1]; about 2 sigma for sigma-noisy ones

    def __post_init__(self):
        super().__post_init__()
        require(self.confidence >= 0, "agent.confidence", self.confidence, "must be 0 or more")


@dataclass
class PosteriorConfig(ArmConfig):
    prior: str = "auto"  # auto (beta for rewards in [0, 1], else gaussian), beta or gaussian
    alpha: float = 1.0  # beta prior: pseudo-successes ...
    beta: float = 1.0  # ... and pseudo-failures of every arm (1, 1: uniform)
    prior_mean: float = 0.0  # gaussian prior on each arm's mean: its mean ...
    prior_std: float = 1.0  # ... and standard deviation
    reward_std: float = 1.0  # gaussian: the (known) standard deviation of an arm's rewards around its mean

    def __post_init__(self):
        super().__post_init__()
        require(self.prior in PRIORS, "agent.prior", self.prior, f"allowed: {', '.join(PRIORS)}")
        for key in ("alpha", "beta", "prior_std", "reward_std"):
            require(getattr(self, key) > 0, f"agent.{key}", getattr(self, key), "must be positive")


@dataclass
class BayesianUCBConfig(PosteriorConfig):
    quantile: float | None = None  # a fixed posterior quantile; null: 1 - 1/(t (ln T)^c), T the pulls per bandit
    c: float = 0.0  # the exponent above (Kaufmann et al.: 0 works best in practice, 5 for their proof)

    def __post_init__(self):
        super().__post_init__()
        require(self.quantile is None or 0 < self.quantile < 1, "agent.quantile", self.quantile,
                "must be in (0, 1), or null for 1 - 1/(t (ln T)^c)")
        require(self.c >= 0, "agent.c", self.c, "must be 0 or more")


@dataclass
class GradientBanditConfig(ArmConfig):
    alpha: float = 0.1  # step size of the preferences
    baseline: bool = True  # subtract the average reward so far from each reward (false: the reward as it is)
    temperature: float = 1.0  # pi = softmax(H / temperature)

    def __post_init__(self):
        super().__post_init__()
        require(self.alpha > 0, "agent.alpha", self.alpha, "must be positive")
        require(isinstance(self.baseline, bool), "agent.baseline", self.baseline, "must be true or false")
        require(self.temperature > 0, "agent.temperature", self.temperature, "must be positive")


# -- contextual bandits (linear_bandit.py, neural_bandit.py) -------------------------------------------------
@dataclass
class LinearPosteriorConfig:
    """Bayesian linear regression per arm, Thompson sampling (the options of GenRL's LinearPosteriorAgent)."""

    init_pulls: int = 3  # each bandit first pulls every arm this many times in turn
    lambda_prior: float = 0.25  # prior precision of the weights, beta | sigma^2 ~ N(0, sigma^2 / lambda_prior I)
    a0: float = 6.0  # inverse-gamma prior of the reward noise variance sigma^2: shape ...
    b0: float = 6.0  # ... and scale
    intercept: bool = True  # append a constant feature, so each arm's reward has an offset

    def __post_init__(self):
        require(self.init_pulls >= 0, "agent.init_pulls", self.init_pulls, "must be 0 or more")
        require(self.lambda_prior > 0, "agent.lambda_prior", self.lambda_prior, "must be positive")
        require(self.a0 > 0, "agent.a0", self.a0, "must be positive")
        require(self.b0 > 0, "agent.b0", self.b0, "must be positive")


@dataclass
class LinUCBConfig:
    """Ridge regression per arm and an upper confidence bound (Li et al. 2010, disjoint LinUCB)."""

    init_pulls: int = 1  # each bandit first pulls every arm this many times in turn
    alpha: float = 1.0  # width of the bound: theta . x + alpha sqrt(x^T A^-1 x)
    lambda_prior: float = 1.0  # ridge penalty: A = lambda I + sum x x^T
    intercept: bool = True  # append a constant feature, so each arm's reward has an offset

    def __post_init__(self):
        require(self.init_pulls >= 0, "agent.init_pulls", self.init_pulls, "must be 0 or more")
        require(self.alpha >= 0, "agent.alpha", self.alpha, "must be 0 or more")
        require(self.lambda_prior > 0, "agent.lambda_prior", self.lambda_prior, "must be positive")


@dataclass
class NeuralConfig:
    """What every neural bandit agent takes (GenRL's DCBAgent options, renamed as rlconf's other agents)."""

    init_pulls: int = 3  # each bandit first pulls every arm this many times in turn
    update_every: int = 50  # pulls between training rounds
    gradient_steps: int = 20  # minibatch updates per round (GenRL's train_epochs)
    batch_size: int = 64  # pulls per minibatch, drawn with replacement from the store
    lr: float = 0.01  # Adam's learning rate at the start of a round ...
    lr_decay: float = 0.1  # ... divided by (1 + lr_decay * t), t the updates so far (of the round: lr_reset)
    lr_reset: bool = True  # restart the decay every round
    clip_grad: float = 0.5  # max gradient norm of each network; 0 disables clipping

    def __post_init__(self):
        require(self.init_pulls >= 0, "agent.init_pulls", self.init_pulls, "must be 0 or more")
        for key in ("update_every", "gradient_steps", "batch_size"):
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        require(self.lr_decay >= 0, "agent.lr_decay", self.lr_decay, "must be 0 or more")
        require(self.clip_grad >= 0, "agent.clip_grad", self.clip_grad, "must be 0 or more (0: no clipping)")


@dataclass
class NeuralGreedyConfig(NeuralConfig):
    """A network's predicted rewards, epsilon-greedy."""

    epsilon: float = 0.02  # probability of a uniformly random arm

    def __post_init__(self):
        super().__post_init__()
        require(0 <= self.epsilon <= 1, "agent.epsilon", self.epsilon, "must lie in [0, 1]")


@dataclass
class NeuralLinearConfig(NeuralConfig):
    """Bayesian linear regression on the network's last hidden features, Thompson sampling."""

    lambda_prior: float = 0.25  # prior precision of the weights, beta | sigma^2 ~ N(0, sigma^2 / lambda_prior I)
    a0: float = 3.0  # inverse-gamma prior of the reward noise variance sigma^2: shape ...
    b0: float = 3.0  # ... and scale
    intercept: bool = True  # append a constant feature to the network's

    def __post_init__(self):
        super().__post_init__()
        require(self.lambda_prior > 0, "agent.lambda_prior", self.lambda_prior, "must be positive")
        require(self.a0 > 0, "agent.a0", self.a0, "must be positive")
        require(self.b0 > 0, "agent.b0", self.b0, "must be positive")


@dataclass
class BootstrapNeuralConfig(NeuralConfig):
    """An ensemble of networks on bootstrapped data; each pull follows one drawn at random."""

    ensemble: int = 10  # networks per bandit
    add_probability: float = 0.95  # chance that a pull joins each network's data

    def __post_init__(self):
        super().__post_init__()
        require(self.ensemble >= 1, "agent.ensemble", self.ensemble, "must be at least 1")
        require(0 < self.add_probability <= 1, "agent.add_probability", self.add_probability, "must lie in (0, 1]")


@dataclass
class NoiseSamplingConfig(NeuralConfig):
    """Greedy under the network with Gaussian noise on its weights."""

    noise_std: float = 0.05  # standard deviation of the noise added to every weight (the start, if it adapts)
    resample: str = "pull"  # draw fresh noise every pull, or every round (training round)
    noise_target: float | None = 0.05  # adapt noise_std after each round towards this disagreement between
    #   the noisy and the clean network (see noise_measure); null: noise_std stays fixed
    noise_measure: str = "disagreement"  # disagreement: the share of contexts whose arm the noise changes;
    #   kl: softmax KL as far as epsilon-greedy's with epsilon=noise_target (GenRL, Plappert et al.)
    noise_adapt: float = 1.01  # the factor noise_std is multiplied or divided by at each adaptation
    noise_batch_size: int = 256  # stored contexts the disagreement is measured on

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


# -- tabular (tabular.py) ------------------------------------------------------------------------------------
@dataclass
class TabularConfig:
    """What every tabular agent takes."""

    alpha: float = 0.1  # step size (learning rate) of each update ...
    alpha_final: float | None = None  # ... decayed linearly to this over the run (None: constant)
    discount_factor: float = 0.99
    epsilon: float = 1.0  # exploration: start ...
    epsilon_final: float = 0.05  # ... end ...
    epsilon_decay_steps: int = 10_000  # ... after this many environment steps
    eval_epsilon: float = 0.0  # exploration of the test agent
    initial_value: float = 0.0  # every q[s, a] before learning (optimistic values explore)

    def __post_init__(self):
        require(0 < self.alpha <= 1, "agent.alpha", self.alpha, "must be in (0, 1]")
        require(self.alpha_final is None or 0 <= self.alpha_final <= 1, "agent.alpha_final", self.alpha_final,
                "must be null or in [0, 1]")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require_epsilon_schedule(self)


@dataclass
class QLearningConfig(TabularConfig):
    """Q-learning has no options of its own."""


@dataclass
class SarsaLambdaConfig(TabularConfig):
    lam: float = 0.9  # lambda: how far back each TD error reaches (0: one-step SARSA)
    traces: str = "replacing"  # replacing (a visit sets the trace to 1) or accumulating (adds 1)

    def __post_init__(self):
        super().__post_init__()
        require(0 <= self.lam <= 1, "agent.lam", self.lam, "must be in [0, 1]")
        require(self.traces in TRACE_KINDS, "agent.traces", self.traces, f"allowed: {', '.join(TRACE_KINDS)}")


@dataclass
class DynaQConfig(TabularConfig):
    planning_steps: int = 10  # imagined updates from the learned model after each environment step

    def __post_init__(self):
        super().__post_init__()
        require(self.planning_steps >= 0, "agent.planning_steps", self.planning_steps, "must be at least 0")
