"""Bandits: multi-armed (Bernoulli, Gaussian) and contextual (synthetic linear, a CSV of features and labels,
the UCI data sets of rlconf.environments.uci).

A bandit is reinforcement learning with episodes of one step: the agent sees a context, pulls an arm, gets
a reward, and the episode is over. The adapter keeps the loop's protocol with no reset step in between: the
state a pull returns carries that pull's reward, ``done`` (its one-step episode ended) and, as its
observation, the next context. Multi-armed bandits have no context: their observation is the constant 1
(so a contextual agent's intercept turns it into a multi-armed one).

``n_envs`` bandits are pulled at once (``hardware.n_envs``), each an independent problem: when the arms'
parameters are drawn (Bernoulli probabilities and Gaussian means left ``null``, a linear bandit's weights)
each bandit draws its own, from ``problem_seed`` (default: the run's seed), so that a run, its test and a
resumed attempt face the same problem; rewards and contexts come from the stream ``reset(seed)`` starts.

What a pull was worth is known to the environment, never shown to the agent: ``pulls`` holds the arms,
the rewards, the expected regrets (the best arm's expected reward minus the pulled arm's) and whether the
pulled arm was a best one. The bandit experiment reads it for regret curves.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf import registry
from rlconf.core import EnvKind, StateArray
from rlconf.environments import uci
from rlconf.environments.bandit_rewards import LabelPays, RewardRule
from rlconf.environments.base import Environment
from rlconf.environments.gym import Episode
from rlconf.errors import ConfigError, require

# Tags mixed into the seeds of the problem's and the rewards' generators, so that neither stream is the one
# another component draws from the same seed.
PROBLEM_STREAM = 0xBA4D17
REWARD_STREAM = 0x9E3779B9


@dataclass
class Pulls:
    """The pulls of one step, one per bandit."""

    arms: np.ndarray  # int64 (n,)
    rewards: np.ndarray  # float (n,)
    regrets: np.ndarray  # float (n,): expected reward of a best arm minus the pulled arm's
    optimal: np.ndarray  # bool (n,): the pulled arm was a best one


class BanditProblem:
    """The arms of ``n`` bandits: contexts to show, each arm's expected reward in them, rewards to draw (by
    default the pulled arm's expected reward plus normal noise of ``noise_std``)."""

    arms: int
    features: int
    reward_range: tuple[float, float] = (-np.inf, np.inf)
    noise_std: float = 0.0

    def contexts(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """The next context of every bandit, (n, features): the constant 1 for multi-armed bandits."""
        return np.ones((n, 1), dtype=np.float32)

    def expected(self, contexts: np.ndarray) -> np.ndarray:
        """Every arm's expected reward in each bandit's context, (n, arms)."""
        raise NotImplementedError

    def rewards(self, rng: np.random.Generator, expected: np.ndarray, arms: np.ndarray) -> np.ndarray:
        """A reward for each bandit's pulled arm."""
        return self.draw(rng, expected[np.arange(len(arms)), arms]).astype(np.float32)

    def draw(self, rng: np.random.Generator, chosen: np.ndarray) -> np.ndarray:
        """Rewards around the pulled arms' expected rewards ``chosen``."""
        return chosen + self.noise_std * rng.standard_normal(len(chosen))


class BernoulliArms(BanditProblem):
    """Arm a pays 1 with probability p[a], else 0."""

    reward_range = (0.0, 1.0)

    def __init__(self, probabilities: np.ndarray):
        self.probabilities = probabilities  # (n, arms)
        self.arms = probabilities.shape[1]
        self.features = 1

    def expected(self, contexts):
        return self.probabilities

    def draw(self, rng, chosen):
        return rng.random(len(chosen)) < chosen


class GaussianArms(BanditProblem):
    """Arm a pays a normal draw around its mean mu[a], with a common standard deviation."""

    def __init__(self, means: np.ndarray, std: float):
        self.means = means  # (n, arms)
        self.noise_std = std
        self.arms = means.shape[1]
        self.features = 1

    def expected(self, contexts):
        return self.means


class LinearArms(BanditProblem):
    """Contexts x ~ N(0, I); arm a pays x . theta[a] plus normal noise. Each theta[a] ~ N(0, I / features),
    so that every arm's expected reward is a standard normal variable over contexts."""

    def __init__(self, weights: np.ndarray, noise_std: float):
        self.weights = weights  # (n, arms, features)
        self.noise_std = noise_std
        self.arms, self.features = weights.shape[1:]

    def contexts(self, rng, n):
        return rng.standard_normal((n, self.features)).astype(np.float32)

    def expected(self, contexts):
        return np.einsum("naf,nf->na", self.weights, contexts)


class LabelledRows(BanditProblem):
    """A labelled data set as a bandit: the context is a row's features; its reward rule (``env.kwargs.reward``,
    rlconf.environments.bandit_rewards) says what the arms are and what each pays for a row of its label (by
    default each label is an arm that pays 1 for its rows). Rows are drawn uniformly, with replacement."""

    def __init__(self, features: np.ndarray, labels: np.ndarray, label_names: list[str],
                 rule: RewardRule | None = None):
        self.table = features  # (rows, features) float32
        self.labels = labels  # (rows,) int64 in [0, len(label_names))
        self.label_names = label_names
        self.rule = rule if rule is not None else LabelPays(label_names)
        self.arms = self.rule.arms
        self.reward_range = self.rule.reward_range
        self.features = features.shape[1]
        self._rows: np.ndarray | None = None

    def contexts(self, rng, n):
        self._rows = rng.integers(len(self.table), size=n)
        return self.table[self._rows]

    def expected(self, contexts):
        return self.rule.expected(self.labels[self._rows])

    def rewards(self, rng, expected, arms):
        return self.rule.draw(rng, self.labels[self._rows], arms, expected).astype(np.float32)


class BanditEnvironment(Environment):
    """``n_envs`` bandits pulled together behind the loop's ``reset`` / ``step`` of StateArrays. Its arms'
    parameters are drawn from the ``seed`` it is built with (the run's)."""

    kind = EnvKind.BANDIT
    problems: dict[str, Any] = {}  # env.id -> builder(kwargs, n, rng) -> BanditProblem

    def __init__(self, env_id: str, n_envs: int = 1, *, kwargs: dict | None = None, seed: int = 0,
                 device: str | torch.device = "cpu", name: str | None = None, **unused: Any):
        # ``unused``: vectorization and max_episode_steps, which the gymnasium adapters take, mean nothing here.
        self.name = name or env_id
        self.n_envs = n_envs
        self.device = torch.device(device)
        kwargs = dict(kwargs or {})
        problem_seed = kwargs.pop("problem_seed", None)
        problem_seed = seed if problem_seed is None else problem_seed
        require(isinstance(problem_seed, int) and problem_seed >= 0, "env.kwargs.problem_seed", problem_seed,
                "must be a non-negative integer, or null for the run's seed")
        if env_id not in self.problems:
            raise ConfigError(f"env.id={env_id}: not a {type(self).__name__.lower()}; "
                              f"allowed: {', '.join(self.problems)}")
        builder = self.problems[env_id]
        rng = np.random.default_rng(np.random.SeedSequence([problem_seed, PROBLEM_STREAM]))
        self.problem: BanditProblem = builder(kwargs, n_envs, rng)
        self.arms = self.problem.arms
        self.reward_range = self.problem.reward_range
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (self.problem.features,), np.float32)
        self.action_space = gym.spaces.Discrete(self.arms)
        self.steps = 0  # pulls, summed over the bandits
        self.completed: list[Episode] = []  # every pull is a finished one-step episode
        self.pulls: Pulls | None = None  # what the last step's pulls were worth
        self._rng = np.random.default_rng(np.random.SeedSequence([0, REWARD_STREAM]))
        self._contexts = self.problem.contexts(self._rng, n_envs)

    def reset(self, seed: int | None = None) -> StateArray:
        # Not default_rng(seed): agents seed their generators from the run's seed too, and a shared stream
        # would line an agent's coin flips up with the rewards it gets.
        self._rng = np.random.default_rng(None if seed is None else np.random.SeedSequence([seed, REWARD_STREAM]))
        self._contexts = self.problem.contexts(self._rng, self.n_envs)
        self.completed, self.pulls = [], None
        return self._state(np.zeros(self.n_envs, np.float32), done=False)

    def step(self, actions: torch.Tensor) -> StateArray:
        arms = actions.cpu().numpy().astype(np.int64).reshape(self.n_envs)
        if arms.min() < 0 or arms.max() >= self.arms:
            raise ValueError(f"arm {arms.min() if arms.min() < 0 else arms.max()} pulled; arms are 0..{self.arms - 1}")
        expected = self.problem.expected(self._contexts)
        rewards = self.problem.rewards(self._rng, expected, arms)
        chosen = expected[np.arange(self.n_envs), arms]
        best = expected.max(axis=1)
        self.pulls = Pulls(arms, rewards, best - chosen, chosen >= best - 1e-9)
        self.steps += self.n_envs
        self.completed = [Episode(i, float(rewards[i]), 1) for i in range(self.n_envs)]
        self._contexts = self.problem.contexts(self._rng, self.n_envs)
        return self._state(rewards, done=True)

    def _state(self, rewards: np.ndarray, done: bool) -> StateArray:
        n = self.n_envs
        return StateArray({
            "observation": torch.from_numpy(np.ascontiguousarray(self._contexts, dtype=np.float32)),
            "reward": torch.from_numpy(rewards),
            "done": torch.full((n,), done),
            "mask": torch.zeros(n),  # nothing follows a pull within its episode
        }, (n,)).to(self.device)

    def close(self) -> None:
        pass


# -- multi-armed ------------------------------------------------------------------------------------------
def _arm_values(kwargs: dict, key: str, n: int, draw) -> np.ndarray:
    """Per-arm values given in ``kwargs[key]`` (the same for every bandit; they set the number of arms), or
    ``arms`` values drawn per bandit by ``draw``."""
    arms = kwargs.pop("arms", 10)
    given = kwargs.pop(key, None)
    if given is not None:
        try:
            values = np.asarray(given, dtype=np.float64)
        except (TypeError, ValueError):
            raise ConfigError(f"env.kwargs.{key}={given}: expected a list of numbers, one per arm") from None
        require(values.ndim == 1 and len(values) >= 2, f"env.kwargs.{key}", given, "a list of at least 2 arms")
        return np.tile(values, (n, 1))
    require(isinstance(arms, int) and arms >= 2, "env.kwargs.arms", arms, "must be an integer of at least 2")
    return draw((n, arms))


def _no_more(kwargs: dict, allowed: str) -> None:
    if kwargs:
        key = next(iter(kwargs))
        raise ConfigError(f"env.kwargs.{key}: not an option of this bandit; allowed: {allowed}")


def bernoulli(kwargs: dict, n: int, rng: np.random.Generator) -> BernoulliArms:
    probabilities = _arm_values(kwargs, "probabilities", n, rng.random)
    require(((probabilities >= 0) & (probabilities <= 1)).all(), "env.kwargs.probabilities",
            probabilities[0].tolist(), "must lie in [0, 1]")
    _no_more(kwargs, "arms, probabilities, problem_seed")
    return BernoulliArms(probabilities)


def gaussian(kwargs: dict, n: int, rng: np.random.Generator) -> GaussianArms:
    means = _arm_values(kwargs, "means", n, rng.standard_normal)
    std = kwargs.pop("std", 1.0)
    require(isinstance(std, (int, float)) and std > 0, "env.kwargs.std", std, "must be positive")
    _no_more(kwargs, "arms, means, std, problem_seed")
    return GaussianArms(means, float(std))


class MultiArmedBandit(BanditEnvironment):
    """Bernoulli (``env.id: bernoulli``) or Gaussian (``gaussian``) arms, no context."""

    problems = {"bernoulli": bernoulli, "gaussian": gaussian}


# -- contextual -------------------------------------------------------------------------------------------
def linear(kwargs: dict, n: int, rng: np.random.Generator) -> LinearArms:
    arms, features, noise_std = kwargs.pop("arms", 5), kwargs.pop("features", 10), kwargs.pop("noise_std", 0.1)
    require(isinstance(arms, int) and arms >= 2, "env.kwargs.arms", arms, "must be an integer of at least 2")
    require(isinstance(features, int) and features >= 1, "env.kwargs.features", features,
            "must be a positive integer")
    require(isinstance(noise_std, (int, float)) and noise_std >= 0, "env.kwargs.noise_std", noise_std,
            "must be 0 or more")
    _no_more(kwargs, "arms, features, noise_std, problem_seed")
    weights = rng.standard_normal((n, arms, features)) / np.sqrt(features)
    return LinearArms(weights, float(noise_std))


def dataset(kwargs: dict, n: int, rng: np.random.Generator) -> LabelledRows:
    path, label = kwargs.pop("path", None), kwargs.pop("label", None)
    normalize, reward = kwargs.pop("normalize", True), kwargs.pop("reward", "label")
    _no_more(kwargs, "path, label, normalize, reward, problem_seed")
    if not path:
        raise ConfigError("env.kwargs.path: not set; allowed: a CSV file of feature columns and a label column, "
                          "e.g. env.kwargs.path=data.csv env.kwargs.label=class")
    rows = read_labelled_csv(Path(path), label, bool(normalize))
    return LabelledRows(rows.table, rows.labels, rows.label_names, reward_rule(reward, rows.label_names))


def reward_rule(name: object, label_names: list[str]) -> RewardRule:
    """The reward rule ``env.kwargs.reward`` names (a built-in one, or a plugin's), built for these labels."""
    try:
        rule = registry.get("reward", str(name))
    except registry.UnknownComponent as error:
        raise ConfigError(f"env.kwargs.reward={name}: {error}") from None
    return rule(label_names)


def read_labelled_csv(path: Path, label: str | None, normalize: bool) -> LabelledRows:
    """A CSV with a header row: numeric columns are features as they are (standardised with ``normalize``),
    any other column is one-hot encoded; ``label`` names the label column (default: the last one). Labels
    become arms in sorted order."""
    if not path.is_file():
        raise ConfigError(f"env.kwargs.path={path}: no such file")
    with open(path, newline="") as f:
        rows = [row for row in csv.reader(f) if row]
    require(len(rows) >= 2, "env.kwargs.path", path, "needs a header row and at least one row of data")
    header, data = [name.strip() for name in rows[0]], rows[1:]
    label = header[-1] if label is None else str(label)
    require(label in header, "env.kwargs.label", label, f"no such column; columns: {', '.join(header)}")
    bad = next((i for i, row in enumerate(data) if len(row) != len(header)), None)
    if bad is not None:
        raise ConfigError(f"env.kwargs.path={path}: row {bad + 2} has {len(data[bad])} fields, the header "
                          f"{len(header)}")
    columns = list(zip(*data, strict=True))
    label_index = header.index(label)
    label_names = sorted({value.strip() for value in columns[label_index]})
    require(len(label_names) >= 2, "env.kwargs.label", label, "needs at least 2 distinct labels (arms)")
    labels = np.array([label_names.index(v.strip()) for v in columns[label_index]], dtype=np.int64)
    blocks = [_feature_block(column, normalize) for i, column in enumerate(columns) if i != label_index]
    require(bool(blocks), "env.kwargs.path", path, "has no feature columns besides the label")
    return LabelledRows(np.concatenate(blocks, axis=1).astype(np.float32), labels, label_names)


def _feature_block(column: tuple[str, ...], normalize: bool) -> np.ndarray:
    try:
        values = np.array([float(v) for v in column])[:, None]
    except ValueError:  # a categorical column: one indicator per value
        return uci.one_hot([v.strip() for v in column])
    if normalize:
        values = (values - values.mean()) / (values.std() or 1.0)
    return values


def uci_data(name: str):
    """The builder of the UCI data bandit ``name`` (rlconf.environments.uci): the file at ``env.path``, at most
    ``rows`` of its rows (null: all), paid by the data set's reward rule unless ``reward`` names another."""
    data = uci.DATA_SETS[name]

    def build(kwargs: dict, n: int, rng: np.random.Generator) -> LabelledRows:
        path, rows, reward = kwargs.pop("path", None), kwargs.pop("rows", None), kwargs.pop("reward", data.reward)
        _no_more(kwargs, "path, rows, reward, problem_seed")
        require(rows is None or (isinstance(rows, int) and rows >= 2), "env.kwargs.rows", rows,
                "must be an integer of at least 2, or null for every row")
        table = uci.read(data, path, rows)
        return LabelledRows(table.features, table.labels, table.label_names, reward_rule(reward, table.label_names))

    return build


class ContextualBandit(BanditEnvironment):
    """A synthetic linear bandit (``env.id: linear``), labelled rows of a CSV (``dataset``) or of a UCI data
    set (``covertype``, ``statlog``, ``adult``, ``census``, ``magic``, ``mushroom``: rlconf.environments.uci)."""

    problems = {"linear": linear, "dataset": dataset, **{name: uci_data(name) for name in uci.DATA_SETS}}
