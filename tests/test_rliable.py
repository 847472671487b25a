"""rlconf plot's aggregate statistics against rliable (Agarwal et al. 2021, the library whose definitions
rlconf.analysis.stats follows) on the same score matrices: point estimates, 95% intervals and performance
profiles; and the published reference scores that human-normalised scores are measured against.

rliable draws its bootstrap resamples from numpy's global generator (``np.random.choice`` of run indices, per
task, in ``StratifiedBootstrap.update_indices``). The tests seed that generator, draw the very same indices to
build rlconf's resamples (runs x tasks -> rlconf's layout: each task's runs side by side), then reseed and let
rliable draw again: both compute on identical resamples, so their intervals must agree to rounding, not merely
within Monte Carlo error. A second test lets each library draw its own resamples and bounds the difference by
the Monte Carlo error of a bootstrap percentile.
"""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
import pytest

from rlconf.analysis.references import der_atari100k_reference, human_normalize, human_references
from rlconf.analysis.stats import (
    STATISTICS,
    TARGET_STATISTICS,
    fraction_above,
    interval_estimates,
    performance_profile,
    stratified_resamples,
    task_columns,
)

ATARI_100K = ["alien", "amidar", "assault", "asterix", "bank_heist", "battle_zone", "boxing", "breakout",
              "chopper_command", "crazy_climber", "demon_attack", "freeway", "frostbite", "gopher", "hero",
              "jamesbond", "kangaroo", "krull", "kung_fu_master", "ms_pacman", "pong", "private_eye", "qbert",
              "road_runner", "seaquest", "up_n_down"]
ROUNDING = 1e-12  # relative: the same numbers summed in another order (scipy's trim_mean, np.mean of a matrix)


def rliable_modules() -> tuple[types.ModuleType, types.ModuleType]:
    """rliable's ``metrics`` and ``library``. rliable 1.2 needs arch < 8, whose package ``__init__`` imports its
    ARCH models, which fail to import under pandas 3 (a pandas decorator changed its signature); rliable uses
    only ``arch.bootstrap``, which does not need them. So when the whole package cannot be imported, ``arch`` is
    entered as a bare namespace over its own folder and ``arch.bootstrap`` is imported from it unchanged."""
    pytest.importorskip("rliable", reason="rliable is in the dev extra: pip install -e '.[dev]'")
    try:
        import arch.bootstrap  # noqa: F401
    except TypeError:
        for name in [name for name in sys.modules if name == "arch" or name.startswith("arch.")]:
            del sys.modules[name]
        spec = importlib.util.find_spec("arch")
        namespace = types.ModuleType("arch")
        namespace.__path__ = list(spec.submodule_search_locations)
        sys.modules["arch"] = namespace
        import arch.bootstrap  # noqa: F401
    # rliable imports absl's logging, whose handler keeps the stderr of the moment it is imported: under pytest,
    # this test's capture, which its end closes; every later test of the process that logs (rlconf run's Hydra
    # does) then fails with "I/O operation on closed file". Imported beside the process's own stderr, it keeps
    # that one.
    captured, sys.stderr = sys.stderr, sys.__stderr__
    try:
        from rliable import library, metrics
    finally:
        sys.stderr = captured
    return metrics, library


def score_matrix(runs: int, tasks: int, seed: int) -> np.ndarray:
    """Human-normalised-like scores (runs x tasks): tasks of different difficulty, some above 1 (clipped by
    the optimality gap), some below 0, and a heavy upper tail (the mean and the IQM part ways)."""
    rng = np.random.default_rng(seed)
    difficulty = rng.uniform(-0.1, 1.2, size=tasks)
    return difficulty + rng.lognormal(-1.5, 0.9, size=(runs, tasks)) - 0.2


def by_task(matrix: np.ndarray) -> list[np.ndarray]:
    return [matrix[:, task] for task in range(matrix.shape[1])]


def rliable_statistics(metrics) -> dict:
    return {"IQM": metrics.aggregate_iqm, "median": metrics.aggregate_median, "mean": metrics.aggregate_mean,
            "optimality gap": metrics.aggregate_optimality_gap}


def resamples_as_rliable_draws(matrix: np.ndarray, reps: int, seed: int) -> np.ndarray:
    """rlconf's (reps, runs) resamples from the run indices rliable draws after ``np.random.seed(seed)``: per rep
    one (runs x tasks) matrix of indices, column t resampling task t's runs."""
    runs, tasks = matrix.shape
    np.random.seed(seed)
    rows = []
    for _ in range(reps):
        indices = np.random.choice(runs, (runs, tasks), replace=True)
        rows.append(matrix[indices, np.arange(tasks)].T.ravel())  # task by task, as rlconf pools them
    return np.stack(rows)


@pytest.mark.parametrize("runs, tasks", [(5, 26), (3, 7), (10, 4)])
def test_point_estimates_are_rliables(runs, tasks):
    metrics, _ = rliable_modules()
    matrix = score_matrix(runs, tasks, seed=runs * tasks)
    columns = task_columns(by_task(matrix))
    pooled = matrix.T.ravel()
    for name, statistic in TARGET_STATISTICS.items():
        ours, theirs = float(statistic(pooled, columns)), float(rliable_statistics(metrics)[name](matrix))
        assert ours == pytest.approx(theirs, rel=ROUNDING, abs=ROUNDING), name
    assert list(STATISTICS) == ["IQM", "median", "mean"] and list(TARGET_STATISTICS)[-1] == "optimality gap"


def test_intervals_on_the_same_resamples_are_rliables():
    metrics, library = rliable_modules()
    matrix, reps, seed = score_matrix(5, 26, seed=1), 300, 7
    ours = interval_estimates(by_task(matrix), resamples_as_rliable_draws(matrix, reps, seed), TARGET_STATISTICS)
    funcs = rliable_statistics(metrics)
    np.random.seed(seed)
    points, intervals = library.get_interval_estimates(
        {"x": matrix}, lambda s: np.array([funcs[name](s) for name in TARGET_STATISTICS]), reps=reps)
    for i, name in enumerate(TARGET_STATISTICS):
        assert ours[name].value == pytest.approx(points["x"][i], rel=ROUNDING, abs=ROUNDING), name
        # The percentiles of identical samples: only the 2.5 written as (1 - 0.95) / 2 * 100 or 100 * 0.05 / 2
        # differs, in its last bit, which moves an interpolated percentile by far less than 1e-9.
        assert ours[name].ci_low == pytest.approx(intervals["x"][0, i], rel=1e-9, abs=1e-12), name
        assert ours[name].ci_high == pytest.approx(intervals["x"][1, i], rel=1e-9, abs=1e-12), name
        assert ours[name].ci_low < ours[name].value < ours[name].ci_high, name


def test_intervals_from_each_librarys_own_resamples_agree_within_monte_carlo_error():
    """Each draws its own 4,000 resamples. A bootstrap percentile's Monte Carlo standard error is
    sqrt(p (1 - p) / B) / f(q), f the density of the bootstrap distribution at the quantile q: with p = 0.025
    and B = 4,000, 0.0025 / f. The bound below is 4 such errors of both draws (sqrt(2) * 4 * 0.0025 / f = 0.014 / f,
    f read off our own resamples as the fraction of them within 0.05 of the quantile, / 0.1), so a
    different resampling scheme (runs mixed across tasks, or fewer runs drawn) fails it and chance does not."""
    metrics, library = rliable_modules()
    matrix, reps = score_matrix(5, 26, seed=2), 4000
    resamples = stratified_resamples(by_task(matrix), reps, np.random.default_rng(3))
    ours = interval_estimates(by_task(matrix), resamples, TARGET_STATISTICS)
    funcs = rliable_statistics(metrics)
    np.random.seed(4)
    _, intervals = library.get_interval_estimates(
        {"x": matrix}, lambda s: np.array([funcs[name](s) for name in TARGET_STATISTICS]), reps=reps)
    columns = task_columns(by_task(matrix))
    for i, (name, statistic) in enumerate(TARGET_STATISTICS.items()):
        samples = statistic(resamples, columns)
        for ends, theirs in ((ours[name].ci_low, intervals["x"][0, i]), (ours[name].ci_high, intervals["x"][1, i])):
            density = np.mean(np.abs(samples - ends) < 0.05) / 0.1
            assert abs(ends - theirs) < 0.014 / density, (name, ends, theirs)


def test_performance_profile_is_rliables_at_each_tau():
    _, library = rliable_modules()
    matrix, reps, seed = score_matrix(5, 26, seed=5), 200, 11
    taus = np.array([-0.25, 0.0, 0.25, 0.5, 1.0, 2.0])
    ours = performance_profile(by_task(matrix), resamples_as_rliable_draws(matrix, reps, seed), taus)
    np.random.seed(seed)
    profiles, cis = library.create_performance_profile({"x": matrix}, taus, reps=reps)
    assert ours.fraction.tolist() == profiles["x"].tolist()  # counts over the same 130 runs: exact
    assert ours.fraction.tolist() == fraction_above(matrix.ravel(), taus).tolist()
    np.testing.assert_allclose(ours.ci_low, cis["x"][0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.ci_high, cis["x"][1], rtol=1e-9, atol=1e-12)


# -- the published reference scores -------------------------------------------------------------------------------
def test_human_references_cover_atari_57_under_rlconfs_env_names():
    from rlconf.paths import config_dir

    references = human_references()
    assert len(references) == 57 and all(env.startswith("atari/") for env in references)
    assert all((config_dir() / "env" / f"{env}.yaml").is_file() for env in references), "an env rlconf lacks"
    assert set(ATARI_100K) <= {env.removeprefix("atari/") for env in references}
    assert all(ref.human > ref.random for ref in references.values())
    pong, pacman = references["atari/pong"], references["atari/ms_pacman"]
    assert (pong.game, pong.random, pong.human) == ("Pong", -20.7, 14.6)
    assert (pacman.game, pacman.random, pacman.human) == ("MsPacman", 307.3, 6951.6)


def test_ders_published_means_give_its_published_median_and_mean():
    """van Hasselt et al. (2019) report DER's human-normalised median 0.161 and mean 0.285 over the 26 games:
    the per-game table and the reference scores shipped together must give them back."""
    der = der_atari100k_reference()
    assert sorted(der.per_game) == sorted(f"atari/{game}" for game in ATARI_100K)
    normalised = human_normalize({env: {"der": np.array([score])} for env, score in der.per_game.items()})
    scores = np.array([by_label["der"][0] for by_label in normalised.values()])
    paper = next(a for a in der.aggregates if a.runs_per_game is None)
    assert round(float(np.median(scores)), 3) == paper.statistics["median"].value == 0.161
    assert round(float(np.mean(scores)), 3) == paper.statistics["mean"].value == 0.285
    rerun = next(a for a in der.aggregates if a.runs_per_game == 100)
    assert set(rerun.statistics) == set(TARGET_STATISTICS)
