"""Learning curves: one per run from a named source, then per (env, agent) a mean and a band across seeds.

The sources are a table (``CURVE_SOURCES``): a metric is a name, an axis label and a function that reads
a run's curve, so a new one (a bandit's regret from pulls.csv) is one entry and no change elsewhere.
Seeds rarely log at the same steps, so every seed's curve is interpolated onto a common grid of env steps
per env; a seed counts only within the steps it has reached, and each point says how many seeds it holds.
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
    """What ``rlconf plot`` draws unless told: regret when every run is a bandit's, else training returns."""
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


@dataclass
class Band:
    """The curves of one agent on one env across its seeds, on the env's grid of steps."""

    env: str
    agent: str
    steps: np.ndarray
    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    seeds: np.ndarray  # how many seeds each point averages
    spread: str


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


def seed_band(env: str, agent: str, curves: list[Curve], grid: np.ndarray, spread: str, reps: int,
              rng: np.random.Generator) -> Band:
    values = np.stack([on_grid(curve, grid) for curve in curves])
    seeds = (~np.isnan(values)).sum(axis=0)
    covered = seeds > 0  # a gap between seeds' ranges holds no one
    values, grid, seeds = values[:, covered], grid[covered], seeds[covered]
    lower, upper = SPREADS[spread][1](values, reps, rng)
    return Band(env, agent, grid, np.nanmean(values, axis=0), lower, upper, seeds, SPREADS[spread][0])


def seed_bands(runs: list[Run], source: CurveSource, options: CurveOptions, spread: str, reps: int, seed: int,
               notes: list[str]) -> list[Band]:
    """One band per (env, agent), envs and agents sorted by name; runs without this curve are noted."""
    curves: dict[str, dict[str, list[Curve]]] = {}
    for run in runs:
        curve = source.read(run, options)
        if curve is None:
            notes.append(f"no {source.name} curve for {run.path}: {source.missing}")
            continue
        curves.setdefault(run.env, {}).setdefault(run.agent, []).append(curve)
    rng = np.random.default_rng(seed)
    bands = []
    for env in sorted(curves):
        grid = step_grid([c for agent_curves in curves[env].values() for c in agent_curves])
        for agent in sorted(curves[env]):
            bands.append(seed_band(env, agent, curves[env][agent], grid, spread, reps, rng))
    return bands
