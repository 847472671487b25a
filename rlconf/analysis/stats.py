"""Aggregate statistics of final scores across runs and tasks, with the uncertainty a handful of seeds leaves.

After Agarwal et al. (2021), "Deep RL at the edge of the statistical precipice": point estimates alone
mislead at a few runs per task, so each statistic comes with a 95% percentile interval from a *stratified*
bootstrap (runs are resampled with replacement within each task, never across tasks, so every resample
keeps the study's design), and the interquartile mean (IQM) is preferred to the mean (outlier runs sway it
less) and to the median (it uses half of the runs, not one or two). Performance profiles show the whole
distribution: the fraction of runs scoring above each threshold.

Everything works on numpy arrays whose last axis holds runs, so one call scores the data and every
bootstrap resample at once. Scores are given per task as a list of 1-D arrays (runs of unequal count); pooled,
the runs of each task stay together, and a statistic is told where each task's runs lie (``tasks``).

The statistics are rliable's (``rliable.metrics``, the library of that paper): the IQM is the trimmed mean of
all runs pooled (``aggregate_iqm``), the median is the median of the tasks' mean scores (``aggregate_median``:
not the median of the pooled runs), the mean is the mean of the tasks' mean scores (``aggregate_mean``; with
as many runs in every task, as rliable requires, the mean of the pooled runs, and otherwise no task weighs
more for having more seeds). The optimality gap (``aggregate_optimality_gap``) is how far scores fall short of a
target ``gamma`` = 1, on average: it means something only where 1 is a target, so it is reported for
human-normalised scores alone (1: a human tester's score), not for raw returns or min-max scores (whose 1 is the
best run in the plot, not a goal).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
PROFILE_POINTS = 101


def interquartile_mean(scores: np.ndarray, tasks: list[slice] | None = None) -> np.ndarray:
    """The mean of the middle 50% of the scores along the last axis.

    Definition: that of ``scipy.stats.trim_mean(x, 0.25)``, which rliable uses: sort, drop ``int(0.25 * n)``
    whole scores from each end (rounded down: with 10 runs, 2 from each end, keeping 6), average the rest.
    No score is weighted fractionally, and with fewer than 4 runs nothing is dropped (IQM = mean).
    """
    ordered = np.sort(np.asarray(scores, dtype=float), axis=-1)
    n = ordered.shape[-1]
    cut = int(0.25 * n)
    return ordered[..., cut : n - cut].mean(axis=-1)


def task_means(scores: np.ndarray, tasks: list[slice] | None = None) -> np.ndarray:
    """Each task's mean score (its runs, in ``tasks``' columns of the last axis), along a new last axis.
    ``tasks`` None: every run is its own task."""
    scores = np.asarray(scores, dtype=float)
    if tasks is None:
        return scores
    return np.stack([scores[..., columns].mean(axis=-1) for columns in tasks], axis=-1)


def median_of_task_means(scores: np.ndarray, tasks: list[slice] | None = None) -> np.ndarray:
    """rliable's ``aggregate_median``: the median of the tasks' mean scores. One task: its mean."""
    return np.median(task_means(scores, tasks), axis=-1)


def mean_of_task_means(scores: np.ndarray, tasks: list[slice] | None = None) -> np.ndarray:
    """rliable's ``aggregate_mean``: the mean of the tasks' mean scores."""
    return np.mean(task_means(scores, tasks), axis=-1)


def optimality_gap(scores: np.ndarray, tasks: list[slice] | None = None, gamma: float = 1.0) -> np.ndarray:
    """rliable's ``aggregate_optimality_gap``: the mean of max(gamma - score, 0), so a score above the target
    counts as the target. Averaged per task, then over tasks (as ``mean_of_task_means``), which with as many runs
    in every task is rliable's mean over all runs."""
    return mean_of_task_means(np.maximum(gamma - np.asarray(scores, dtype=float), 0.0), tasks)


Statistic = Callable[[np.ndarray, list[slice]], np.ndarray]

# The statistics reported, in order: name -> function of runs along the last axis (pooled over tasks, each
# task's runs in the columns of its slice).
STATISTICS: dict[str, Statistic] = {"IQM": interquartile_mean, "median": median_of_task_means,
                                    "mean": mean_of_task_means}
# Of scores normalised to a target of 1 (human-normalised): the optimality gap too.
TARGET_STATISTICS: dict[str, Statistic] = {**STATISTICS, "optimality gap": optimality_gap}


@dataclass(frozen=True)
class Estimate:
    value: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Profile:
    """Fraction of runs with a score above each ``tau``, with its interval at each tau."""

    taus: np.ndarray
    fraction: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray


def pooled(scores_by_task: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.asarray(task, dtype=float) for task in scores_by_task])


def task_columns(scores_by_task: list[np.ndarray]) -> list[slice]:
    """Where each task's runs lie in ``pooled`` (and in ``stratified_resamples``' columns)."""
    ends = np.cumsum([len(task) for task in scores_by_task])
    return [slice(int(end - len(task)), int(end)) for task, end in zip(scores_by_task, ends, strict=True)]


def stratified_resamples(scores_by_task: list[np.ndarray], reps: int, rng: np.random.Generator) -> np.ndarray:
    """``reps`` bootstrap resamples, shape (reps, runs): each task's runs drawn with replacement from that
    task alone, as many as it has, then pooled (the columns stay grouped by task as in ``pooled``)."""
    draws = []
    for task in scores_by_task:
        task = np.asarray(task, dtype=float)
        draws.append(task[rng.integers(0, len(task), size=(reps, len(task)))])
    return np.concatenate(draws, axis=1)


def percentile_interval(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The central ``CONFIDENCE`` interval of bootstrap samples along the first axis."""
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(samples, [tail, 100 - tail], axis=0)
    return low, high


def interval_estimates(scores_by_task: list[np.ndarray], resamples: np.ndarray,
                       statistics: dict[str, Statistic] = STATISTICS) -> dict[str, Estimate]:
    """Every statistic of ``statistics`` on the scores, with its percentile interval."""
    estimates = {}
    tasks = task_columns(scores_by_task)
    for name, statistic in statistics.items():
        low, high = percentile_interval(statistic(resamples, tasks))
        estimates[name] = Estimate(float(statistic(pooled(scores_by_task), tasks)), float(low), float(high))
    return estimates


def fraction_above(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Fraction of scores (last axis) strictly above each tau: shape (..., len(taus))."""
    return (scores[..., :, None] > taus).mean(axis=-2)


def performance_profile(scores_by_task: list[np.ndarray], resamples: np.ndarray, taus: np.ndarray) -> Profile:
    low, high = percentile_interval(fraction_above(resamples, taus))
    return Profile(taus, fraction_above(pooled(scores_by_task), taus), low, high)


def tau_grid(all_scores: np.ndarray, points: int = PROFILE_POINTS) -> np.ndarray:
    """Thresholds spanning every score shown, so each profile falls from its start to zero."""
    low, high = float(np.min(all_scores)), float(np.max(all_scores))
    return np.linspace(low, high if high > low else low + 1.0, points)


# -- normalisation: pooling tasks whose returns are on different scales -------------------------------------
def minmax_normalize(scores: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, np.ndarray]]:
    """task -> agent -> scores, rescaled per task so the worst run of that task (over all agents given)
    scores 0 and the best 1. A task whose runs all score the same maps to 0."""
    out = {}
    for task, by_agent in scores.items():
        every = np.concatenate(list(by_agent.values()))
        low, span = every.min(), every.max() - every.min()
        out[task] = {agent: (values - low) / span if span > 0 else np.zeros_like(values)
                     for agent, values in by_agent.items()}
    return out


NORMALIZATIONS = ("auto", "human", "minmax", "none")


def resolve_normalization(name: str, tasks: int) -> str:
    """``auto``: raw returns for one task (they keep their meaning), min-max as soon as tasks are pooled
    (raw returns of different tasks are not comparable). ``human`` (published reference scores per game,
    ``references.human_normalize``) is only ever asked for by name."""
    if name == "auto":
        return "none" if tasks == 1 else "minmax"
    return name
