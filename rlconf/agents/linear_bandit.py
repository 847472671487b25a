"""Linear contextual bandit agents: a linear model of each arm's reward in the context, one per bandit.

``linear_posterior`` (Thompson sampling with Bayesian linear regression, Riquelme et al. 2018, section 3)
and ``linucb`` (ridge regression plus an upper confidence bound, Li et al. 2010) keep the same sufficient
statistics of each arm's pulls, vectorised over the ``n`` bandits: the inverse of the precision
``A = lambda I + X^T X`` (updated by Sherman-Morrison after every pull, no solve), ``X^T y``, ``y^T y`` and the
count.
A pull costs O(arms d^2) per bandit: 5,000 pulls of 10 features take a fraction of a second.

Test agents pull the arm of the best estimate, ties to the first: they draw nothing from the agent's
generator, so evaluating does not change the training run.

The neural-linear agent (rlconf.agents.neural_bandit) runs the same posterior on a network's features.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch

from rlconf.agents._agent import BuildContext, arrays_state, load_arrays
from rlconf.agents._bandit import BanditAgent, argmax_random_ties
from rlconf.agents.specs.linear_bandit import LinearPosteriorConfig, LinUCBConfig
from rlconf.optim import Clock


class RidgeStatistics:
    """Each bandit's and arm's regression statistics: ``covariance`` (n, arms, d, d), the inverse of the
    precision lambda I + sum x x^T, ``xy`` (n, arms, d) = sum r x, ``yy`` (n, arms) = sum r^2, ``counts``."""

    def __init__(self, n: int, arms: int, features: int, lambda_prior: float):
        self.lambda_prior = lambda_prior
        eye = np.eye(features)
        self.covariance = np.tile(eye / lambda_prior, (n, arms, 1, 1))
        self.xy = np.zeros((n, arms, features))
        self.yy = np.zeros((n, arms))
        self.counts = np.zeros((n, arms), dtype=np.int64)

    def add(self, x: np.ndarray, arms: np.ndarray, y: np.ndarray) -> None:
        """One pull per bandit: contexts (n, d), arms (n,), rewards (n,). Sherman-Morrison on the pulled arm:
        (A + x x^T)^-1 = A^-1 - (A^-1 x)(A^-1 x)^T / (1 + x^T A^-1 x)."""
        rows = np.arange(len(arms))
        covariance = self.covariance[rows, arms]  # (n, d, d)
        cx = np.einsum("nij,nj->ni", covariance, x)
        denominator = 1.0 + (x * cx).sum(1)
        self.covariance[rows, arms] = covariance - cx[:, :, None] * cx[:, None, :] / denominator[:, None, None]
        self.xy[rows, arms] += y[:, None] * x
        self.yy[rows, arms] += y * y
        self.counts[rows, arms] += 1

    def refit(self, x: torch.Tensor, arms: torch.Tensor, y: torch.Tensor) -> None:
        """The statistics of every pull so far from scratch: contexts (n, N, d), arms (n, N), rewards (n, N).
        In torch, whose matrix products keep to the run's hardware.torch_threads (numpy's BLAS would take
        every core it finds)."""
        n, n_arms, d = self.xy.shape
        x, y = x.double(), y.double()
        precision = torch.empty(n, n_arms, d, d, dtype=torch.float64, device=x.device)
        xy = torch.empty(n, n_arms, d, dtype=torch.float64, device=x.device)
        yy = torch.empty(n, n_arms, dtype=torch.float64, device=x.device)
        eye = self.lambda_prior * torch.eye(d, dtype=torch.float64, device=x.device)
        for bandit in range(n):
            for arm in range(n_arms):
                mine = arms[bandit] == arm
                xa, ya = x[bandit, mine], y[bandit, mine]
                precision[bandit, arm] = eye + xa.T @ xa
                xy[bandit, arm] = xa.T @ ya
                yy[bandit, arm] = ya @ ya
        self.xy, self.yy = xy.cpu().numpy(), yy.cpu().numpy()
        self.covariance = torch.linalg.inv(precision).cpu().numpy()
        self.counts = torch.nn.functional.one_hot(arms, n_arms).sum(1).cpu().numpy().astype(np.int64)

    @property
    def precision(self) -> np.ndarray:
        """lambda I + sum x x^T, (n, arms, d, d): derived when asked (nothing on the per-pull path needs it)."""
        return np.linalg.inv(self.covariance)

    def mean(self) -> np.ndarray:
        """The ridge solution (the posterior mean) of every arm, (n, arms, d): A^-1 X^T y."""
        return np.einsum("naij,naj->nai", self.covariance, self.xy)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Every arm's mean reward in each bandit's context x (n, d): (n, arms)."""
        return np.einsum("nai,ni->na", self.mean(), x)

    def spread(self, x: np.ndarray) -> np.ndarray:
        """x^T A^-1 x for every arm, (n, arms): the variance of the estimate at x, in units of the noise's."""
        return np.maximum(np.einsum("ni,naij,nj->na", x, self.covariance, x), 0.0)

    def noise_posterior(self, a0: float, b0: float) -> tuple[np.ndarray, np.ndarray]:
        """The inverse-gamma posterior (a, b) of each arm's noise variance, with the prior IG(a0, b0):
        a = a0 + N / 2, b = b0 + (y^T y - mu^T A mu) / 2, where mu^T A mu = (X^T y)^T A^-1 X^T y."""
        fitted = np.einsum("nai,naij,naj->na", self.xy, self.covariance, self.xy)
        return a0 + self.counts / 2.0, b0 + np.maximum(self.yy - fitted, 0.0) / 2.0

    _ARRAYS: ClassVar[tuple[str, ...]] = ("covariance", "xy", "yy", "counts")

    def state_dict(self) -> dict:
        return arrays_state(self, self._ARRAYS)

    def load_state_dict(self, state: dict) -> None:
        load_arrays(self, self._ARRAYS, state)


def with_intercept(x: np.ndarray, intercept: bool) -> np.ndarray:
    """The contexts with a constant 1 appended (an intercept in the regression), or as they are."""
    return np.concatenate([x, np.ones((*x.shape[:-1], 1))], axis=-1) if intercept else x


def thompson_scores(stats: RidgeStatistics, x: np.ndarray, a0: float, b0: float,
                    rng: np.random.Generator) -> np.ndarray:
    """Each arm's x . beta for beta drawn from its Normal-Inverse-Gamma posterior: sigma^2 ~ IG(a, b), then
    beta ~ N(mu, sigma^2 A^-1). Only x . beta is used, and for a given x it is N(x . mu, sigma^2 x^T A^-1 x):
    drawn as that scalar, the same law as drawing beta, at O(d^2) per arm and no factorisation."""
    a, b = stats.noise_posterior(a0, b0)
    variance = b / rng.gamma(a)  # 1 / sigma^2 ~ Gamma(a, rate b)
    return stats.predict(x) + np.sqrt(variance * stats.spread(x)) * rng.standard_normal(a.shape)


class LinearBandit(BanditAgent):
    """Ridge statistics per bandit and arm, learnt from every pull; the test agent pulls the best estimate.
    Subclasses choose how to explore."""

    name: ClassVar[str]  # as configs and error messages call the agent

    def __init__(self, config, n_bandits: int, arms: int, features: int, clock: Clock,
                 rng: np.random.Generator | None = None):
        super().__init__(n_bandits, arms, clock, config.init_pulls)
        self.config = config
        self.stats = RidgeStatistics(n_bandits, arms, features + config.intercept, config.lambda_prior)
        self.rng = rng or np.random.default_rng()

    def state_dict(self) -> dict:
        return super().state_dict() | {"stats": self.stats.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.stats.load_state_dict(state["stats"])

    def generators(self) -> dict[str, Any]:
        return {"rng": self.rng}

    @classmethod
    def from_config(cls, config, context: BuildContext) -> LinearBandit:
        arms = cls.check_context(context, cls.name)
        return cls(config, context.n_envs, arms, context.observation_space.shape[0], Clock(),
                   context.generator("linear_bandit"))

    def learn(self, contexts, arms, rewards):
        self.stats.add(with_intercept(contexts, self.config.intercept), arms, rewards)

    def greedy(self, contexts):
        return self.stats.predict(with_intercept(contexts, self.config.intercept)).argmax(axis=1)


class LinearPosterior(LinearBandit):
    """Thompson sampling from each arm's Normal-Inverse-Gamma posterior; the test agent pulls the best
    posterior mean."""

    Config = LinearPosteriorConfig
    name = "linear_posterior"

    def choose(self, contexts):
        x = with_intercept(contexts, self.config.intercept)
        return argmax_random_ties(thompson_scores(self.stats, x, self.config.a0, self.config.b0, self.rng), self.rng)


class LinUCB(LinearBandit):
    """The arm of the largest upper bound (its generator breaks ties only); the test agent pulls the best
    ridge estimate."""

    Config = LinUCBConfig
    name = "linucb"

    def upper_bounds(self, contexts: np.ndarray) -> np.ndarray:
        x = with_intercept(contexts, self.config.intercept)
        return self.stats.predict(x) + self.config.alpha * np.sqrt(self.stats.spread(x))

    def choose(self, contexts):
        return argmax_random_ties(self.upper_bounds(contexts), self.rng)
