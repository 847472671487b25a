"""The hyperparameters of every built-in agent: the dataclass each ``configs/agent/<name>.yaml`` is checked
against (``rlconf.config.validate``), with the checks of their values. Each agent's file (``dqn.py``, ...) names
its own as ``Config``; they live here, apart from the algorithms, because checking a config must not import
torch: ``rlconf run ... --cfg job`` and every refusal of bad input answer in a fraction of a second. The
registry names each agent's config (``registry.agent_config``).

A default is written once, in configs/agent/<name>.yaml beside what the key means (BenchMARL's split: values
in YAML, the schema in the dataclass). ``@agent_defaults(name)`` reads that file when this module is imported
and makes its values the dataclass's defaults, so ``DQNConfig()`` in code and ``agent=dqn`` on the command line
start from the same numbers; a class writes only each field's type and the checks of its values.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import yaml

from rlconf import registry
from rlconf.errors import ConfigError, require
from rlconf.paths import config_dir
from rlconf.schema import check

LOSSES = ("mse", "huber")  # DQN's TD losses (dqn.LOSS_FUNCTIONS)
REPLAYS = ("uniform", "prioritized")
TARGETS = ("fixed", "polyak", "trivial")
OPPONENTS = ("random",)  # what agent.test_against may name (independent)
PRIORS = ("auto", "beta", "gaussian")  # the posteriors of the multi-armed bandit agents
TRACE_KINDS = ("replacing", "accumulating")  # SARSA(lambda)'s eligibility traces
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where PyYAML was built with it
NOT_SETTINGS = ("name", "_target_")  # what an agent's YAML tells Hydra and the registry, not the agent


def agent_yaml_values(name: str) -> dict[str, Any]:
    """configs/agent/<name>.yaml's keys and values, with the agent files its defaults list names merged in
    where they stand (ddqn.yaml: dqn.yaml's, then its own), as Hydra composes the file. A defaults entry that
    places another agent under a key of its own (independent's ``/agent@dqn: dqn``) is that agent's section,
    not a value of this one's. Read with PyYAML's C loader, 30 times faster than OmegaConf's: every check of a
    config imports this module (tests/test_agent_defaults.py checks Hydra reads the same values)."""
    own = yaml.load((config_dir() / "agent" / f"{name}.yaml").read_text(), Loader=YAML_LOADER)
    entries = own.pop("defaults", ["_self_"])
    values: dict[str, Any] = {}
    for entry in entries if "_self_" in entries else [*entries, "_self_"]:
        if entry == "_self_":
            values.update(own)
        elif isinstance(entry, str):
            values.update(agent_yaml_values(entry))
    return values


def agent_defaults(name: str):
    """A class decorator, under ``@dataclass``: every field's default from configs/agent/<name>.yaml (inherited
    fields too, so ddqn.yaml's ``replay: prioritized`` is DDQNConfig's). A key the class does not declare, a field
    the file leaves out, or a default also written in the class is a mistake in this module: it fails on import."""

    def decorate(cls: type) -> type:
        types = {f.name: f.type for base in reversed(cls.__mro__[1:]) if dataclasses.is_dataclass(base)
                 for f in dataclasses.fields(base)}
        own = dict(cls.__dict__.get("__annotations__", {}))
        types.update(own)
        values = {k: v for k, v in agent_yaml_values(name).items() if k not in NOT_SETTINGS}
        for key, value in values.items():
            if key not in types:
                raise TypeError(f"configs/agent/{name}.yaml: {key} is not a field of {cls.__name__}")
            if key in cls.__dict__:
                raise TypeError(f"{cls.__name__}.{key}: its default is written in configs/agent/{name}.yaml, "
                                "not in the class")
            own[key] = types[key]
            setattr(cls, key, _field_default(types[key], value))
        unset = [k for k in types if k not in values and k not in cls.__dict__ and not _inherited_default(cls, k)]
        if unset:
            raise TypeError(f"configs/agent/{name}.yaml has no value for {', '.join(unset)} ({cls.__name__})")
        cls.__annotations__ = own
        return cls

    return decorate


def _field_default(kind: Any, value: Any) -> Any:
    """``value`` as a dataclass default: a float field's whole number as a float (YAML's ``0`` for
    ``clip_grad: float`` is 0.0, as OmegaConf makes it), a list or mapping behind a factory."""
    if isinstance(value, int) and not isinstance(value, bool) and "float" in str(kind):
        return float(value)
    if isinstance(value, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(value))
    return value


def _inherited_default(cls: type, key: str) -> bool:
    """Whether a base dataclass already gives the field ``key`` a default (a default factory counts)."""
    for base in cls.__mro__[1:]:
        fields = getattr(base, "__dataclass_fields__", {})
        if key in fields:
            return (fields[key].default is not dataclasses.MISSING
                    or fields[key].default_factory is not dataclasses.MISSING)
    return False


def require_epsilon_schedule(config) -> None:
    """An epsilon-greedy schedule's settings: probabilities (start, end, test), decaying over at least a step."""
    require(config.epsilon_decay_steps >= 1, "agent.epsilon_decay_steps", config.epsilon_decay_steps,
            "must be at least 1")
    for key in ("epsilon", "epsilon_final", "eval_epsilon"):
        require(0 <= getattr(config, key) <= 1, f"agent.{key}", getattr(config, key), "must be in [0, 1]")


# -- value-based: DQN and its kin (dqn.py, ddqn.py, c51.py, vqn.py) --------------------------------------------
@dataclass
@agent_defaults("dqn")
class DQNConfig:
    discount_factor: float
    lr: float
    lr_final: float | None
    adam_eps: float
    loss: str
    clip_grad: float
    batch_size: int
    replay_buffer_size: int
    replay_start_size: int
    update_frequency: int
    gradient_steps: int
    target: str
    target_update_frequency: int
    target_rate: float
    epsilon: float
    epsilon_final: float
    epsilon_decay_steps: int
    eval_epsilon: float
    replay: str
    n_steps: int
    alpha: float
    beta: float
    priority_epsilon: float
    double_q: bool

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
@agent_defaults("ddqn")
class DDQNConfig(DQNConfig):
    """DQN's settings; ddqn.yaml turns on double Q-learning and prioritized replay."""


@dataclass
@agent_defaults("c51")
class C51Config(DQNConfig):
    atoms: int
    v_min: float
    v_max: float

    def __post_init__(self):
        super().__post_init__()
        require(self.atoms >= 2, "agent.atoms", self.atoms, "must be at least 2")
        require(self.v_min < self.v_max, "agent.v_min", self.v_min, f"must be below agent.v_max ({self.v_max})")


@dataclass
@agent_defaults("rainbow")
class RainbowConfig(C51Config):
    """C51's settings; rainbow.yaml changes replay, returns, targets and exploration."""


@dataclass
@agent_defaults("r2d1")
class R2D1Config(DQNConfig):
    sequence_length: int
    burn_in: int
    period: int
    value_rescaling: bool
    rescale_epsilon: float
    eta: float

    def __post_init__(self):
        super().__post_init__()
        require(self.sequence_length >= 1, "agent.sequence_length", self.sequence_length, "must be at least 1")
        require(self.burn_in >= 0, "agent.burn_in", self.burn_in, "must be at least 0")
        span = self.burn_in + self.sequence_length
        require(1 <= self.period <= span, "agent.period", self.period,
                f"must be in [1, burn_in + sequence_length = {span}]: sequences start every period rows")
        require(self.rescale_epsilon > 0, "agent.rescale_epsilon", self.rescale_epsilon, "must be positive")
        require(0 <= self.eta <= 1, "agent.eta", self.eta, "must be in [0, 1]")


@dataclass
@agent_defaults("vqn")
class VQNConfig:
    discount_factor: float
    lr: float
    lr_final: float | None
    adam_eps: float
    clip_grad: float
    epsilon: float
    epsilon_final: float
    epsilon_decay_steps: int
    eval_epsilon: float

    def __post_init__(self):
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require_epsilon_schedule(self)


# -- policy gradient (_policy_gradient.py, vpg.py, vac.py, a2c.py, ppo.py) ------------------------------------
@dataclass
class PolicyGradientConfig:
    discount_factor: float
    lr: float
    lr_final: float | None
    lr_v: float | None
    adam_eps: float
    clip_grad: float
    entropy_loss_scaling: float
    value_loss_scaling: float
    log_std_init: float

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
@agent_defaults("vpg")
class VPGConfig(PolicyGradientConfig):
    min_batch_size: int

    def __post_init__(self):
        super().__post_init__()
        require(self.min_batch_size >= 1, "agent.min_batch_size", self.min_batch_size, "must be at least 1")


@dataclass
@agent_defaults("vac")
class VACConfig(PolicyGradientConfig):
    """One-step updates need no settings beyond the shared ones."""


@dataclass
@agent_defaults("a2c")
class A2CConfig(PolicyGradientConfig):
    n_steps: int
    lam: float
    normalize_advantages: bool

    def __post_init__(self):
        super().__post_init__()
        require(self.n_steps >= 1, "agent.n_steps", self.n_steps, "must be at least 1")
        require(0 <= self.lam <= 1, "agent.lam", self.lam, "must be in [0, 1]")


@dataclass
@agent_defaults("ppo")
class PPOConfig(PolicyGradientConfig):
    lam: float
    clip: float
    clip_final: float | None
    n_steps: int
    epochs: int
    batch_size: int
    normalize_advantages: bool

    def __post_init__(self):
        super().__post_init__()
        require(0 <= self.lam <= 1, "agent.lam", self.lam, "must be in [0, 1]")
        for key in ("n_steps", "epochs", "batch_size"):
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")
        require(self.clip > 0, "agent.clip", self.clip, "must be positive")


# -- continuous control (ddpg.py, td3.py, sac.py) ---------------------------------------------------------
OFF_POLICY_COUNTS = ("batch_size", "replay_buffer_size", "update_frequency", "gradient_steps")


@dataclass
class OffPolicyConfig:
    """What every off-policy actor-critic (DDPG, TD3, SAC) takes, with its checks."""

    discount_factor: float
    lr_q: float
    lr_pi: float
    adam_eps: float
    batch_size: int
    replay_buffer_size: int
    replay_start_size: int
    update_frequency: int
    gradient_steps: int
    polyak_rate: float

    def __post_init__(self):
        for key in ("lr_q", "lr_pi"):
            require(getattr(self, key) > 0, f"agent.{key}", getattr(self, key), "must be positive")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require(0 < self.polyak_rate <= 1, "agent.polyak_rate", self.polyak_rate, "must be in (0, 1]")
        require(self.replay_start_size >= 0, "agent.replay_start_size", self.replay_start_size,
                "must be non-negative")
        for key in OFF_POLICY_COUNTS:
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")


@dataclass
@agent_defaults("ddpg")
class DDPGConfig(OffPolicyConfig):
    noise: float

    def __post_init__(self):
        super().__post_init__()
        require(self.noise >= 0, "agent.noise", self.noise, "must be non-negative")


@dataclass
@agent_defaults("td3")
class TD3Config(DDPGConfig):
    target_noise: float
    target_noise_clip: float
    policy_delay: int

    def __post_init__(self):
        super().__post_init__()
        for key in ("target_noise", "target_noise_clip"):
            require(getattr(self, key) >= 0, f"agent.{key}", getattr(self, key), "must be non-negative")
        require(self.policy_delay >= 1, "agent.policy_delay", self.policy_delay, "must be at least 1")


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


# -- baselines and multi-agent (random_agent.py, independent.py) -------------------------------------------
@dataclass
@agent_defaults("random")
class RandomConfig:
    """No hyperparameters."""


@dataclass
@agent_defaults("independent")
class IndependentConfig:
    """Which agent each player uses, and the hyperparameters of each agent under its name: ``agent.dqn.lr``
    (configs/agent/independent.yaml composes each agent's own config there, so every key can be overridden
    as it is typed and a misspelt one is refused). Other agents (a2c, ...) play with their defaults."""

    base: str
    players: dict[str, str] | None
    shared: bool
    test_against: str | None
    test_seat: str | None
    dqn: dict[str, Any] = field(default_factory=dict)
    ddqn: dict[str, Any] = field(default_factory=dict)
    c51: dict[str, Any] = field(default_factory=dict)
    rainbow: dict[str, Any] = field(default_factory=dict)
    r2d1: dict[str, Any] = field(default_factory=dict)
    ppo: dict[str, Any] = field(default_factory=dict)
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


# -- contextual bandits (linear_bandit.py, neural_bandit.py) -------------------------------------------------
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

    def __post_init__(self):
        require(self.init_pulls >= 0, "agent.init_pulls", self.init_pulls, "must be 0 or more")
        for key in ("update_every", "gradient_steps", "batch_size"):
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        require(self.lr_decay >= 0, "agent.lr_decay", self.lr_decay, "must be 0 or more")
        require(self.clip_grad >= 0, "agent.clip_grad", self.clip_grad, "must be 0 or more (0: no clipping)")


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


# -- tabular (tabular.py) ------------------------------------------------------------------------------------
@dataclass
class TabularConfig:
    """What every tabular agent takes."""

    alpha: float
    alpha_final: float | None
    discount_factor: float
    epsilon: float
    epsilon_final: float
    epsilon_decay_steps: int
    eval_epsilon: float
    initial_value: float

    def __post_init__(self):
        require(0 < self.alpha <= 1, "agent.alpha", self.alpha, "must be in (0, 1]")
        require(self.alpha_final is None or 0 <= self.alpha_final <= 1, "agent.alpha_final", self.alpha_final,
                "must be null or in [0, 1]")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require_epsilon_schedule(self)


@dataclass
@agent_defaults("q_learning")
class QLearningConfig(TabularConfig):
    """Q-learning has no options of its own."""


@dataclass
@agent_defaults("sarsa_lambda")
class SarsaLambdaConfig(TabularConfig):
    lam: float
    traces: str

    def __post_init__(self):
        super().__post_init__()
        require(0 <= self.lam <= 1, "agent.lam", self.lam, "must be in [0, 1]")
        require(self.traces in TRACE_KINDS, "agent.traces", self.traces, f"allowed: {', '.join(TRACE_KINDS)}")


@dataclass
@agent_defaults("dyna_q")
class DynaQConfig(TabularConfig):
    planning_steps: int

    def __post_init__(self):
        super().__post_init__()
        require(self.planning_steps >= 0, "agent.planning_steps", self.planning_steps, "must be at least 0")
