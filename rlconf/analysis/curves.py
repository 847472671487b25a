"""Learning curves: one per run from a named source, then per env a panel with, per configuration, a mean
and a band across seeds.

The sources are a table (``CURVE_SOURCES``): a metric is a name, an axis label and a function that reads
a run's curve, so a new one (a bandit's regret from pulls.csv) is one entry and no change elsewhere. Each
panel has its own metric: the one asked for, or its env's default (regret for bandits, training returns for
the others). A configuration is the runs of one env with one label (``runs.label_runs``): the same settings,
seeds apart. Seeds rarely log at the same steps, so every seed's curve is interpolated onto a grid of env
steps of its configuration; a seed counts only within the steps it has reached, and each point says how many
seeds it holds.

Where seeds part only because of how steps are counted, they are put back together: several env copies step
together, so a run overshoots its budget and each due evaluation by up to a batch (seeds end at 4,002 and
4,007 steps of a 4,000-step budget). A point past the budget is drawn at the budget, an evaluation at the step
it was due (``runs.Schedule``), a training return is held from a run's last episode to where its training
ended, and a band of training returns starts where each of its seeds has finished an episode. So a point
averages fewer seeds only where a run really has not got there (still running, stopped early).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rlconf.analysis.runs import Run, read_table
from rlconf.text import counted

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
    together: bool = False  # seeds start where their first episode ended, steps apart: the band starts
    #                         where all have one (before, a point would average fewer than the legend says)


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
    reward (pulls.csv's rows, each a mean over the pulls it covers). The return at a step is that of the
    episodes finished by then: a finished run's last one holds to the step its training ended at."""
    if run.bandit:
        return last_per_step(run.pulls["step"], rolling_mean(run.pulls["reward"], options.window))
    curve = last_per_step(run.episode_steps, rolling_mean(run.episode_returns, options.window))
    end = run.ended_at
    if end is None or end <= curve.steps[-1]:
        return curve
    return Curve(np.append(curve.steps, end), np.append(curve.values, curve.values[-1]))


def within_budget(curve: Curve, budget: int) -> Curve:
    """The curve with its points past ``budget`` (the overshoot of the last batch) replaced by one at the
    budget holding the last value (0: no budget known, the curve as it is)."""
    if not budget or curve.steps[-1] <= budget:
        return curve
    inside = curve.steps < budget
    return Curve(np.append(curve.steps[inside], budget), np.append(curve.values[inside], curve.values[-1]))


def bandit_regret(run: Run, options: CurveOptions) -> Curve | None:
    """Cumulative expected regret (the mean over a run's bandits), as pulls.csv logs it."""
    return Curve(run.pulls["step"], run.pulls["regret"]) if run.bandit else None


def bandit_optimal_rate(run: Run, options: CurveOptions) -> Curve | None:
    """How often the pulled arm was a best one: a rolling mean over ``window`` rows of pulls.csv."""
    if not run.bandit:
        return None
    return Curve(run.pulls["step"], rolling_mean(run.pulls["optimal_rate"], options.window))


def evaluation_means(run: Run, options: CurveOptions) -> Curve | None:
    """Greedy evaluations, each at the step it was due (``Schedule.due``: the seeds of a configuration share
    their points). Of the rows at one point the one of most episodes counts, never two pooled: the final
    test is seeded as every evaluation is, so it replays the last evaluation's episodes and more (the
    evaluation's row would count them twice). The final test of a run stopped early (``stop.*``) is drawn
    where it was made: nothing was due there."""
    table = read_table(run.path / "evaluations.csv")
    if len(table.get("mean", ())) == 0:
        return None
    made = table["step"].astype(np.int64)
    due = np.array([run.schedule.due(int(step)) for step in made], dtype=np.int64)
    if run.tested and made[-1] < run.schedule.budget and (len(made) == 1 or made[-2] != made[-1]):
        due[-1] = made[-1]
    order = np.lexsort((np.arange(len(due)), table["episodes"], due))  # by point, then episodes, then row
    kept = order[np.append(due[order][1:] != due[order][:-1], True)]  # the last of each point's rows
    return Curve(due[kept].astype(float), table["mean"][kept])


CURVE_SOURCES: dict[str, CurveSource] = {
    "return": CurveSource("return", "training return (rolling mean of {window} episodes)", training_returns,
                          "no finished episode", together=True),
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


def seed_count(bands: list[Band]) -> str:
    """What the points of ``bands`` (one configuration's, in one panel or several) average, as its legend says
    it: ``3 seeds``, ``1 seed``, ``2-3 seeds`` where some points hold fewer runs than others, and ``4 runs, 3
    seeds`` when runs share a seed."""
    low, high = min(int(b.seeds.min()) for b in bands), max(int(b.seeds.max()) for b in bands)
    noun = "seed" if all(b.runs == b.distinct_seeds for b in bands) else "run"
    held = counted(low, noun) if low == high else f"{low}-{high} {noun}s"
    return held if noun == "seed" else f"{held}, {counted(max(b.distinct_seeds for b in bands), 'seed')}"


@dataclass
class Panel:
    """One env: its metric and a band per configuration, by label; ``x_label`` says what its steps count."""

    env: str
    source: CurveSource
    bands: list[Band]
    x_label: str = "env steps"


def step_grid(curves: list[Curve], points: int = GRID_POINTS, log: bool = False) -> np.ndarray:
    """The steps the curves were logged at when they are few (evaluations: nothing is invented between
    them), else ``points`` evenly spaced whole steps from the earliest first point to the longest run's last
    (``log``: evenly on a log axis, so its first decades are drawn as finely as its last), plus each curve's own
    first and last step (so every run's final value is a point of the grid)."""
    logged = np.unique(np.concatenate([curve.steps for curve in curves]))
    if len(logged) <= points:
        return logged
    ends = [step for curve in curves for step in (curve.steps[0], curve.steps[-1])]
    spaced = np.geomspace if log and logged[0] > 0 else np.linspace
    return np.union1d(np.round(spaced(logged[0], logged[-1], points)), ends)


def on_grid(curve: Curve, grid: np.ndarray) -> np.ndarray:
    """The curve interpolated at the grid's steps; NaN outside the steps the run has reached."""
    values = np.interp(grid, curve.steps, curve.values)
    values[(grid < curve.steps[0]) | (grid > curve.steps[-1])] = np.nan
    return values


def seed_band(runs: list[Run], curves: list[Curve], source: CurveSource, spread: str, reps: int,
              rng: np.random.Generator, log_steps: bool = False) -> Band:
    grid = step_grid(curves, log=log_steps)
    if source.together:
        grid = grid[grid >= max(curve.steps[0] for curve in curves)]
    values = np.stack([on_grid(curve, grid) for curve in curves])
    seeds = (~np.isnan(values)).sum(axis=0)
    covered = seeds > 0  # a gap between seeds' ranges holds no one
    values, grid, seeds = values[:, covered], grid[covered], seeds[covered]
    lower, upper = SPREADS[spread][1](values, reps, rng)
    first = runs[0]
    return Band(first.env, first.agent, first.label, source.name, grid, np.nanmean(values, axis=0), lower, upper,
                seeds, SPREADS[spread][0], len(runs), len({run.seed for run in runs}))


def panels(runs: list[Run], metric: str | None, options: CurveOptions, spread: str, reps: int, seed: int,
           left_out: dict[str, list], log_steps: bool = False) -> list[Panel]:
    """One panel per env with a curve (envs sorted by name), its bands by label; ``metric`` None: each env's
    default; ``log_steps``: points spaced for a log step axis. Runs without the panel's curve are added to
    ``left_out`` under the reason."""
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
                groups.setdefault(run.label, []).append((run, within_budget(curve, run.schedule.budget)))
        bands = [seed_band([run for run, _ in group], [curve for _, curve in group], source, spread, reps, rng,
                           log_steps) for _, group in sorted(groups.items())]
        if bands:
            pulls = all(run.bandit for run in env_runs)  # a bandit counts pulls, each a one-step episode
            out.append(Panel(env, source, bands, "pulls" if pulls else "env steps"))
    return out
