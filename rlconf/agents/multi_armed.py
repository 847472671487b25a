"""Multi-armed bandit agents: epsilon-greedy, UCB1, Bayesian UCB, Thompson sampling and the gradient bandit.

Each plays ``n`` independent bandits at once (``hardware.n_envs``) through the protocol of
``rlconf.agents._bandit``: ``learn`` from the last pull of every bandit, ``choose`` the next arms, and
``greedy`` for the test agent. They ignore the context (the constant 1 of a multi-armed bandit). Every
statistic is an array of shape (bandits, arms), updated for all bandits in one numpy operation, and saved
in checkpoints (each agent's ``state_dict`` names its own); each agent's generator comes from the run's seed,
and resumes where it was.

The shared base, ArmStatistics, keeps each arm's pull count and mean reward. On top of it:

- EpsilonGreedy: a random arm with probability epsilon (optionally decaying), else the best mean.
- UCB: UCB1, the mean plus ``confidence * sqrt(2 ln t / n_a)``; arms never pulled first.
- BayesianUCB (Kaufmann, Cappe and Garivier 2012): the ``1 - 1/(t (ln T)^c)`` quantile of each arm's
  posterior, or a fixed ``quantile``.
- Thompson: one draw from each arm's posterior, the largest wins.
- GradientBandit (Sutton and Barto, section 2.8): a softmax over learned preferences, moved by
  ``alpha (R - baseline) (1[a = A] - pi(a)) / temperature`` after each pull.

The posteriors (PosteriorAgent) are Beta-Bernoulli for rewards in [0, 1] (a reward r that is neither 0
nor 1 counts as a success with probability r) and, otherwise, normal with a known reward standard
deviation and a normal prior on each arm's mean. ``prior: auto`` picks Beta when the environment says its
rewards lie in [0, 1] (``BuildContext.reward_range``).

Time ``t`` is per bandit: the pull about to be made, counting from 1. Epsilon's decay, like every schedule,
counts environment steps: pulls summed over the bandits.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import torch

from rlconf.agents._agent import BuildContext, arrays_state, load_arrays
from rlconf.agents._bandit import BanditAgent, argmax_random_ties
from rlconf.agents.specs.multi_armed import (
    ArmConfig,
    BayesianUCBConfig,
    EpsilonGreedyConfig,
    GradientBanditConfig,
    PosteriorConfig,
    UCBConfig,
)
from rlconf.errors import ConfigError
from rlconf.optim import Clock, schedule


# -- the statistics every agent keeps -----------------------------------------------------------------------
class ArmStatistics(BanditAgent):
    """Per bandit and arm: how often it was pulled (``counts``) and its mean reward (``means``)."""

    Config: ClassVar[type] = ArmConfig
    name: ClassVar[str]  # the registry's name, for error messages

    def __init__(self, n_bandits: int, arms: int, clock: Clock, config: ArmConfig, rng: np.random.Generator):
        super().__init__(n_bandits, arms, clock, config.init_pulls)
        self.config = config
        self.rng = rng
        self.counts = np.zeros((n_bandits, arms))
        self.means = np.zeros((n_bandits, arms))
        self._rows = np.arange(n_bandits)

    def state_dict(self) -> dict:
        return super().state_dict() | arrays_state(self, ("counts", "means"))

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        load_arrays(self, ("counts", "means"), state)

    def generators(self) -> dict[str, Any]:
        return {"rng": self.rng}

    @classmethod
    def from_config(cls, config: ArmConfig, context: BuildContext) -> ArmStatistics:
        arms = cls.check_context(context, cls.name)
        return cls(context.n_envs, arms, Clock(), config, context.generator("multi_armed"))

    def learn(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        pulled = (self._rows, arms)
        self.counts[pulled] += 1
        self.means[pulled] += (rewards - self.means[pulled]) / self.counts[pulled]

    @property
    def t(self) -> np.ndarray:
        """The pull each bandit is about to make, from 1: shape (bandits, 1), to broadcast over arms."""
        return self.counts.sum(axis=1, keepdims=True) + 1

    def estimates(self) -> np.ndarray:
        """Each arm's estimated expected reward, (bandits, arms): what ``greedy`` maximises."""
        return self.means

    def greedy(self, contexts: np.ndarray) -> np.ndarray:
        # Ties are broken by numpy's global generator, which evaluation seeds: the agent's own stays untouched.
        return argmax_random_ties(self.estimates(), np.random.default_rng(np.random.randint(2**31)))


# -- epsilon-greedy -----------------------------------------------------------------------------------------
class EpsilonGreedy(ArmStatistics):
    """The arm of the best mean reward (ties at random); a uniformly random arm with probability epsilon."""

    Config = EpsilonGreedyConfig
    name = "epsilon_greedy"

    def __init__(self, n_bandits, arms, clock, config: EpsilonGreedyConfig, rng):
        super().__init__(n_bandits, arms, clock, config, rng)
        self.epsilon = schedule(config.epsilon, config.epsilon_final, config.epsilon_decay_steps, clock, "epsilon")

    def choose(self, contexts: np.ndarray) -> np.ndarray:
        explore = self.rng.random(self.n_bandits) < float(self.epsilon)
        random_arms = self.rng.integers(self.arms, size=self.n_bandits)
        return np.where(explore, random_arms, argmax_random_ties(self.means, self.rng))


# -- UCB1 ---------------------------------------------------------------------------------------------------
class UCB(ArmStatistics):
    """UCB1 (Auer, Cesa-Bianchi and Fischer 2002): the arm of the largest ``mean + c sqrt(2 ln t / n_a)``,
    where ``t`` counts this bandit's pulls and ``n_a`` the arm's; an arm never pulled comes first."""

    Config = UCBConfig
    name = "ucb"

    def index(self) -> np.ndarray:
        """Each arm's upper confidence bound, (bandits, arms); +inf for arms never pulled."""
        tried = self.counts > 0
        bonus = np.sqrt(2 * np.log(self.t) / np.where(tried, self.counts, 1.0))
        return np.where(tried, self.means + self.config.confidence * bonus, np.inf)

    def choose(self, contexts: np.ndarray) -> np.ndarray:
        return argmax_random_ties(self.index(), self.rng)


# -- posteriors: Beta-Bernoulli or normal -------------------------------------------------------------------
def posterior_kind(config: PosteriorConfig, reward_range: tuple[float, float] | None, agent: str) -> str:
    """``beta`` or ``gaussian``: the configured prior, or for ``auto`` the one the rewards' range calls for."""
    in_unit = reward_range is not None and reward_range[0] >= 0 and reward_range[1] <= 1
    if config.prior == "auto":
        return "beta" if in_unit else "gaussian"
    if config.prior == "beta" and not in_unit:
        shown = "unknown" if reward_range is None else f"in [{reward_range[0]}, {reward_range[1]}]"
        raise ConfigError(f"agent.prior=beta: needs rewards in [0, 1], and agent={agent}'s environment gives "
                          f"rewards {shown}; allowed: auto, gaussian")
    return config.prior


class PosteriorAgent(ArmStatistics):
    """Keeps each arm's posterior: Beta(alpha + successes, beta + failures), or for normal rewards of known
    standard deviation sigma and a N(m0, s0^2) prior, N(m, s^2) with ``1/s^2 = 1/s0^2 + n/sigma^2`` and
    ``m = s^2 (m0/s0^2 + n mean/sigma^2)``."""

    Config = PosteriorConfig

    def __init__(self, n_bandits, arms, clock, config: PosteriorConfig, rng, kind: str = "beta"):
        super().__init__(n_bandits, arms, clock, config, rng)
        self.kind = kind
        self.successes = np.zeros((n_bandits, arms))  # beta: pulls counted as successes

    def state_dict(self) -> dict:
        return super().state_dict() | arrays_state(self, ("successes",))

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        load_arrays(self, ("successes",), state)

    @classmethod
    def from_config(cls, config: PosteriorConfig, context: BuildContext) -> PosteriorAgent:
        arms = cls.check_context(context, cls.name)
        kind = posterior_kind(config, context.reward_range, cls.name)
        return cls(context.n_envs, arms, Clock(), config, context.generator("multi_armed"), kind)

    def learn(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        super().learn(contexts, arms, rewards)
        if self.kind == "beta":  # the Bernoulli trick: r in [0, 1] is a success with probability r
            self.successes[self._rows, arms] += self.rng.random(self.n_bandits) < rewards

    def beta_parameters(self) -> tuple[np.ndarray, np.ndarray]:
        return self.config.alpha + self.successes, self.config.beta + self.counts - self.successes

    def normal_parameters(self) -> tuple[np.ndarray, np.ndarray]:
        config = self.config
        precision = 1 / config.prior_std**2 + self.counts / config.reward_std**2
        mean = (config.prior_mean / config.prior_std**2 + self.counts * self.means / config.reward_std**2) / precision
        return mean, 1 / np.sqrt(precision)

    def estimates(self) -> np.ndarray:
        """The posterior means."""
        if self.kind == "beta":
            a, b = self.beta_parameters()
            return a / (a + b)
        return self.normal_parameters()[0]


# -- Bayesian UCB -------------------------------------------------------------------------------------------
class BayesianUCB(PosteriorAgent):
    """The arm whose posterior has the largest upper quantile."""

    Config = BayesianUCBConfig
    name = "bayesian_ucb"

    def __init__(self, n_bandits, arms, clock, config: BayesianUCBConfig, rng, kind: str = "beta",
                 horizon: int = 10_000):
        super().__init__(n_bandits, arms, clock, config, rng, kind)
        self.horizon = horizon  # T, pulls per bandit
        # Beta posteriors: the last quantiles and their first guesses (NaN: none yet). The guesses' errors change
        # little from one pull to the next: the next search starts from the new guess corrected by the last error.
        self.quantiles = np.full((n_bandits, arms), np.nan)
        self.guesses = np.full((n_bandits, arms), np.nan)

    def state_dict(self) -> dict:
        return super().state_dict() | arrays_state(self, ("quantiles", "guesses"))

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        load_arrays(self, ("quantiles", "guesses"), state)

    @classmethod
    def from_config(cls, config: BayesianUCBConfig, context: BuildContext) -> BayesianUCB:
        agent = super().from_config(config, context)
        agent.horizon = max(context.total_steps // max(context.n_envs, 1), 1)
        return agent

    def level(self) -> np.ndarray:
        """The quantile each bandit takes, (bandits, 1): 1 - 1/(t (ln T)^c), at least the median."""
        if self.config.quantile is not None:
            return np.full((self.n_bandits, 1), self.config.quantile)
        log_horizon = max(math.log(self.horizon), 1.0)
        return np.maximum(1 - 1 / (self.t * log_horizon**self.config.c), 0.5)

    def index(self) -> np.ndarray:
        """Each arm's posterior quantile, (bandits, arms)."""
        level = self.level()
        if self.kind == "beta":
            a, b = self.beta_parameters()
            guesses = beta_quantile_guess(a, b, level)
            self.quantiles = beta_quantile(a, b, level, guess=guesses + (self.quantiles - self.guesses))
            self.guesses = guesses
            return self.quantiles
        mean, std = self.normal_parameters()
        return mean + std * normal_quantile(level)

    def choose(self, contexts: np.ndarray) -> np.ndarray:
        return argmax_random_ties(self.index(), self.rng)


# -- Thompson sampling --------------------------------------------------------------------------------------
class Thompson(PosteriorAgent):
    """Draws one expected reward per arm from its posterior and pulls the arm of the largest draw."""

    Config = PosteriorConfig
    name = "thompson"

    def choose(self, contexts: np.ndarray) -> np.ndarray:
        if self.kind == "beta":
            draws = self.rng.beta(*self.beta_parameters())
        else:
            mean, std = self.normal_parameters()
            draws = mean + std * self.rng.standard_normal(mean.shape)
        return argmax_random_ties(draws, self.rng)


# -- the gradient bandit ------------------------------------------------------------------------------------
class GradientBandit(ArmStatistics):
    """Stochastic gradient ascent on the expected reward of pi = softmax(H / tau): after pulling A and
    getting R, every arm's preference moves by ``alpha (R - baseline) (1[a = A] - pi(a)) / tau``. The
    baseline is the average of the bandit's earlier rewards (the first pull's own reward at the first pull).
    The test agent pulls the most preferred arm."""

    Config = GradientBanditConfig
    name = "gradient_bandit"

    def __init__(self, n_bandits, arms, clock, config: GradientBanditConfig, rng):
        super().__init__(n_bandits, arms, clock, config, rng)
        self.preferences = np.zeros((n_bandits, arms))  # H
        self.baseline = np.zeros(n_bandits)  # the average reward of each bandit so far

    def state_dict(self) -> dict:
        return super().state_dict() | arrays_state(self, ("preferences", "baseline"))

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        load_arrays(self, ("preferences", "baseline"), state)

    def policy(self) -> np.ndarray:
        """pi, (bandits, arms)."""
        scaled = self.preferences / self.config.temperature
        weights = np.exp(scaled - scaled.max(axis=1, keepdims=True))
        return weights / weights.sum(axis=1, keepdims=True)

    def learn(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        pulls_before = self.counts.sum(axis=1)
        pi = self.policy()  # the policy the pull was drawn from: preferences change only here
        super().learn(contexts, arms, rewards)
        if self.config.baseline:
            baseline = np.where(pulls_before == 0, rewards, self.baseline)
            self.baseline = baseline + (rewards - baseline) / (pulls_before + 1)
        else:
            baseline = np.zeros(self.n_bandits)
        chosen = np.zeros_like(pi)
        chosen[self._rows, arms] = 1.0
        advantage = (rewards - baseline)[:, None]
        self.preferences += self.config.alpha * advantage * (chosen - pi) / self.config.temperature

    def choose(self, contexts: np.ndarray) -> np.ndarray:
        cumulative = self.policy().cumsum(axis=1)
        draws = self.rng.random((self.n_bandits, 1)) * cumulative[:, -1:]
        return (draws < cumulative).argmax(axis=1)

    def estimates(self) -> np.ndarray:
        return self.preferences


# -- quantiles ----------------------------------------------------------------------------------------------
def normal_quantile(q: np.ndarray) -> np.ndarray:
    """Phi^-1(q), elementwise."""
    return torch.special.ndtri(torch.tensor(q, dtype=torch.float64)).numpy()


def log_beta_function(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ln B(a, b), elementwise."""
    a, b = torch.from_numpy(a), torch.from_numpy(b)
    return (torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b)).numpy()


def beta_cdf(a: np.ndarray, b: np.ndarray, x: np.ndarray, log_beta: np.ndarray | None = None) -> np.ndarray:
    """The regularized incomplete beta function I_x(a, b), elementwise: the continued fraction of Numerical
    Recipes (section 6.4), evaluated where it converges fast (for x above (a + 1) / (a + b + 2), through
    I_x(a, b) = 1 - I_{1-x}(b, a)), continued until every element has converged."""
    a, b, x = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(a, b, x))
    log_beta = log_beta_function(a, b) if log_beta is None else log_beta
    x = np.clip(x, 1e-300, 1 - 1e-16)
    swap = x > (a + 1) / (a + b + 2)
    p, r, y = np.where(swap, b, a), np.where(swap, a, b), np.where(swap, 1 - x, x)
    front = np.exp(a * np.log(x) + b * np.log1p(-x) - log_beta)
    fraction = _beta_continued_fraction(p.ravel(), r.ravel(), y.ravel()).reshape(x.shape)
    return np.where(swap, 1 - front * fraction / p, front * fraction / p)


def _beta_continued_fraction(a: np.ndarray, b: np.ndarray, x: np.ndarray, eps: float = 1e-10,
                             block: int = 8, max_terms: int = 100_000) -> np.ndarray:
    """The continued fraction of I_x(a, b), 1 / (1 + c_1 / (1 + c_2 / (1 + ...))), for 1-d arrays, all elements
    at once: its convergents A_n / B_n by the forward recurrence (A_n = A_{n-1} + c_n A_{n-2}, the same for
    B; A and B are the rows of one array), rescaled after every ``block`` terms, until every element has
    converged. The coefficients of a block are computed together."""
    first = -(a + b) * x / (a + 1)  # c_1
    older = np.ones((2, len(x)))  # (A, B) of the convergent 1 / 1 ...
    newer = np.stack([np.ones_like(x), 1 + first])  # ... and of 1 / (1 + c_1)
    value = newer[0] / newer[1]
    for start in range(1, max_terms + 1, block):
        m = np.arange(start, start + block, dtype=np.float64)[:, None]
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))  # c_2m
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))  # c_2m+1
        for c in np.stack([even, odd], axis=1).reshape(2 * block, -1):
            older, newer = newer, newer + c * older
        older, newer = older / newer[1], newer / newer[1]  # rescaled: A_n / B_n stays, nothing overflows
        converged = np.abs(newer[0] - value) <= eps * np.abs(newer[0])
        value = newer[0]
        if converged.all():
            break
    return value


def beta_quantile(a: np.ndarray, b: np.ndarray, q: np.ndarray, guess: np.ndarray | None = None,
                  tolerance: float = 1e-3) -> np.ndarray:
    """x with I_x(a, b) = q, elementwise (a, b > 0, 0 < q < 1): Halley steps on the exact CDF from ``guess``
    (where it is NaN or not given: ``beta_quantile_guess``). An element is done after a step below
    ``tolerance`` times its scale, the smallest of its standard deviation, x and 1 - x (the tails): Halley's
    cubic convergence leaves it within about (z^2 + 2) / 12 tolerance^3 scales of the root (z = Phi^-1(q)),
    1e-9 of them with the default tolerance."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(q))
    a, b, q = (np.array(v, dtype=np.float64).ravel() for v in np.broadcast_arrays(a, b, q))
    x = np.full(len(a), np.nan) if guess is None else np.array(np.broadcast_to(guess, shape), np.float64).ravel()
    missing = ~np.isfinite(x)
    if missing.any():
        x[missing] = beta_quantile_guess(a[missing], b[missing], q[missing])
    x = np.clip(x, 1e-300, 1 - 1e-16)
    log_beta = log_beta_function(a, b)
    sigma = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    active = np.arange(len(x))  # the elements still moving
    for _ in range(50):
        pa, pb, px = a[active], b[active], x[active]
        error = beta_cdf(pa, pb, px, log_beta[active]) - q[active]
        density = np.maximum(np.exp((pa - 1) * np.log(px) + (pb - 1) * np.log1p(-px) - log_beta[active]), 1e-300)
        step = error / density
        step = step / (1 - 0.5 * np.minimum(1.0, step * ((pa - 1) / px - (pb - 1) / (1 - px))))
        new = px - step
        x[active] = np.where(new <= 0, 0.5 * px, np.where(new >= 1, 0.5 * (px + 1), new))  # stay inside (0, 1)
        scale = np.minimum(sigma[active], np.minimum(x[active], 1 - x[active]))  # tails: the distance to 0 or 1
        active = active[np.abs(step) >= tolerance * scale]
        if active.size == 0:
            break
    return x.reshape(shape)


def beta_quantile_guess(a: np.ndarray, b: np.ndarray, q: np.ndarray) -> np.ndarray:
    """A first guess at the Beta(a, b) quantile q: Abramowitz and Stegun 26.5.22 for a, b >= 1, the tails'
    power laws otherwise (as Numerical Recipes' invbetai); within a few posterior standard deviations."""
    with np.errstate(all="ignore"):  # each branch is computed everywhere and kept where it applies
        y = -normal_quantile(q)
        lam = (y**2 - 3) / 6
        h = 2 / (1 / (2 * a - 1) + 1 / (2 * b - 1))
        w = y * np.sqrt(h + lam) / h - (1 / (2 * b - 1) - 1 / (2 * a - 1)) * (lam + 5 / 6 - 2 / (3 * h))
        normal_guess = a / (a + b * np.exp(2 * w))
        lower = np.exp(a * np.log(a / (a + b))) / a  # the tails' weights
        upper = np.exp(b * np.log(b / (a + b))) / b
        total = lower + upper
        tail_guess = np.where(q < lower / total, (a * total * q) ** (1 / a), 1 - (b * total * (1 - q)) ** (1 / b))
        guess = np.where((a >= 1) & (b >= 1) & np.isfinite(normal_guess), normal_guess, tail_guess)
    return np.clip(guess, 1e-300, 1 - 1e-16)
