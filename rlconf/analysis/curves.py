"""Learning curves: one per run from a named source, then per env a panel with, per configuration, a mean
and a band across seeds.

The sources are a table (``CURVE_SOURCES``): a metric is a name, an axis label and a function that reads
a run's curve, so a new one (a bandit's regret from pulls.csv) is one entry and no change elsewhere. Each
panel has its own metric: the one asked for, or its env's default (regret for bandits, training returns for
the others). A configuration is the runs of one env with one label (``runs.label_runs``): the same settings,
seeds apart. Seeds rarely log at the same steps, so every seed's curve is interpolated onto a grid of env
steps of its configuration; a seed counts only within the steps it has reached, and each point says how many
seeds it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rlconf.analysis.runs import Run, read_table

GRID_POINTS = 150
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Curve:
    """Values at increasing env steps (one value per step)."""

    steps: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class CurveOptions:
    """What a source may need besides the run; new sources add their settings here."""

    window: int = 100


@dataclass(frozen=True)
class CurveSource:
    name: str
    label: str  # the y axis; may name {window}
    read: Callable[[Run, CurveOptions], Curve | None]  # None: this run has no such curve
    missing: str  # why a run may have none, for the note that skips it


def rolling_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over ``window`` values (all of them when there are fewer); the first points average
    what there is so far, so a curve starts with the run's first episode rather than its 100th."""
    window = max(1, min(window, len(values)))
    sums = np.concatenate([[0.0], np.cumsum(values, dtype=float)])
    ends = np.arange(1, len(values) + 1)
    starts = np.maximum(0, ends - window)
    return (sums[ends] - sums[starts]) / (ends - starts)


def last_per_step(steps: np.ndarray, values: np.ndarray) -> Curve:
    """Keep the last value logged at each step: parallel envs can finish several episodes in one step."""
    reversed_steps = steps[::-1]
    unique, first_from_end = np.unique(reversed_steps, return_index=True)
    return Curve(unique, values[::-1][first_from_end])


def training_returns(run: Run, options: CurveOptions) -> Curve:
    """The rolling mean of training returns; a bandit's episodes are single pulls, so its return is the
    reward (pulls.csv's rows, each a mean over the pulls it covers)."""
    if run.bandit:
        return last_per_step(run.pulls["step"], rolling_mean(run.pulls["reward"], options.window))
    return last_per_step(run.episode_steps, rolling_mean(run.episode_returns, options.window))


def bandit_regret(run: Run, options: CurveOptions) -> Curve | None:
    """Cumulative expected regret (the mean over a run's bandits), as pulls.csv logs it."""
    return Curve(run.pulls["step"], run.pulls["regret"]) if run.bandit else None


def bandit_optimal_rate(run: Run, options: CurveOptions) -> Curve | None:
    """How often the pulled arm was a best one: a rolling mean over ``window`` rows of pulls.csv."""
    if not run.bandit:
        return None
    return Curve(run.pulls["step"], rolling_mean(run.pulls["optimal_rate"], options.window))


def evaluation_means(run: Run, options: CurveOptions) -> Curve | None:
    """Greedy evaluations; rows at the same step (the final test joins the last evaluation) are pooled,
    each weighted by its number of episodes."""
    table = read_table(run.path / "evaluations.csv")
    if len(table.get("mean", ())) == 0:
        return None
    steps, where = np.unique(table["step"], return_inverse=True)
    weights = np.maximum(table["episodes"], 1)
    means = np.bincount(where, weights=table["mean"] * weights) / np.bincount(where, weights=weights)
    return Curve(steps, means)


CURVE_SOURCES: dict[str, CurveSource] = {
    "return": CurveSource("return", "training return (rolling mean of {window} episodes)", training_returns,
                          "no finished episode"),
    "eval": CurveSource("eval", "greedy evaluation return", evaluation_means,
                        "no evaluation yet (evaluations.csv is empty: set eval_every)"),
    "regret": CurveSource("regret", "cumulative expected regret", bandit_regret,
                          "not a bandit run (no pulls.csv)"),
    "optimal": CurveSource("optimal", "best-arm rate (rolling mean of {window} rows)", bandit_optimal_rate,
                           "not a bandit run (no pulls.csv)"),
}


def default_metric(runs: list[Run]) -> str:
    """What ``rlconf plot`` draws for an env's runs unless told: regret for a bandit's, else training returns."""
    return "regret" if runs and all(run.bandit for run in runs) else "return"


# -- across seeds -------------------------------------------------------------------------------------------
def spread_std(values: np.ndarray, reps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    mean, std = np.nanmean(values, axis=0), np.nanstd(values, axis=0)
    return mean - std, mean + std


def spread_minmax(values: np.ndarray, reps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return np.nanmin(values, axis=0), np.nanmax(values, axis=0)


def spread_bootstrap(values: np.ndarray, reps: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of the mean, from the seeds present at each point resampled with replacement."""
    tail = 100 * (1 - CONFIDENCE) / 2
    bounds = []
    for column in values.T:
        seeds = column[~np.isnan(column)]
        means = seeds[rng.integers(0, len(seeds), (reps, len(seeds)))].mean(axis=1)
        bounds.append(np.percentile(means, [tail, 100 - tail]))
    low, high = np.asarray(bounds).T
    return low, high


# name -> (what the band shows, for the legend and the CSV; how to compute it from seeds x points)
SPREADS: dict[str, tuple[str, Callable[..., tuple[np.ndarray, np.ndarray]]]] = {
    "std": ("±1 std across seeds", spread_std),
    "minmax": ("min to max across seeds", spread_minmax),
    "ci": (f"{CONFIDENCE:.0%} bootstrap CI of the mean", spread_bootstrap),
}
NO_SPREAD = "none (1 run)"  # a point of one run has no band, whatever --spread asks


@dataclass
class Band:
    """The curves of one configuration on one env across its seeds."""

    env: str
    agent: str
    label: str  # the configuration (``Run.label``)
    metric: str
    steps: np.ndarray
    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    seeds: np.ndarray  # how many runs each point averages
    spread: str
    runs: int
    distinct_seeds: int

    @property
    def shaded(self) -> bool:
        """Whether any point has a band: one averaging two runs or more."""
        return bool((self.seeds > 1).any())

    def point_spread(self, i: int) -> str:
        return self.spread if self.seeds[i] > 1 else NO_SPREAD

    @property
    def count(self) -> str:
        """``3 seeds``, ``1 seed``, or ``4 runs, 3 seeds`` when runs share a seed."""
        seeds = f"{self.distinct_seeds} seed{'s' * (self.distinct_seeds != 1)}"
        return seeds if self.runs == self.distinct_seeds else f"{self.runs} runs, {seeds}"


@dataclass
class Panel:
    """One env: its metric and a band per configuration, by label."""

    env: str
    source: CurveSource
    bands: list[Band]


def step_grid(curves: list[Curve], points: int = GRID_POINTS) -> np.ndarray:
    """The steps the curves were logged at when they are few (evaluations: nothing is invented between
    them), else ``points`` evenly spaced whole steps from the earliest first point to the longest run's last,
    plus each curve's own first and last step (so every run's final value is a point of the grid)."""
    logged = np.unique(np.concatenate([curve.steps for curve in curves]))
    if len(logged) <= points:
        return logged
    ends = [step for curve in curves for step in (curve.steps[0], curve.steps[-1])]
    return np.union1d(np.round(np.linspace(logged[0], logged[-1], points)), ends)


def on_grid(curve: Curve, grid: np.ndarray) -> np.ndarray:
    """The curve interpolated at the grid's steps; NaN outside the steps the run has reached."""
    values = np.interp(grid, curve.steps, curve.values)
    values[(grid < curve.steps[0]) | (grid > curve.steps[-1])] = np.nan
    return values


def seed_band(runs: list[Run], curves: list[Curve], metric: str, spread: str, reps: int,
              rng: np.random.Generator) -> Band:
    grid = step_grid(curves)
    values = np.stack([on_grid(curve, grid) for curve in curves])
    seeds = (~np.isnan(values)).sum(axis=0)
    covered = seeds > 0  # a gap between seeds' ranges holds no one
    values, grid, seeds = values[:, covered], grid[covered], seeds[covered]
    lower, upper = SPREADS[spread][1](values, reps, rng)
    first = runs[0]
    return Band(first.env, first.agent, first.label, metric, grid, np.nanmean(values, axis=0), lower, upper, seeds,
                SPREADS[spread][0], len(runs), len({run.seed for run in runs}))


def panels(runs: list[Run], metric: str | None, options: CurveOptions, spread: str, reps: int, seed: int,
           left_out: dict[str, list]) -> list[Panel]:
    """One panel per env with a curve (envs sorted by name), its bands by label; ``metric`` None: each env's
    default. Runs without the panel's curve are added to ``left_out`` under the reason."""
    rng = np.random.default_rng(seed)
    out = []
    for env in sorted({run.env for run in runs}):
        env_runs = [run for run in runs if run.env == env]
        source = CURVE_SOURCES[metric or default_metric(env_runs)]
        groups: dict[str, list[tuple[Run, Curve]]] = {}
        for run in env_runs:
            curve = source.read(run, options)
            if curve is None:
                left_out.setdefault(f"with no {source.name} curve, {source.missing}", []).append(run.path)
            else:
                groups.setdefault(run.label, []).append((run, curve))
        bands = [seed_band([run for run, _ in group], [curve for _, curve in group], source.name, spread, reps, rng)
                 for _, group in sorted(groups.items())]
        if bands:
            out.append(Panel(env, source, bands))
    return out
