"""``rlconf plot``: curves and aggregate statistics from real runs, the statistics against hand computations,
and bad input refused in one line with nothing written.

One small sweep (two agents x two seeds on CartPole) is trained once for the module and only read after.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_env, one_error_line, run_cli_in, run_dirs

from rlconf.analysis import find_run_dirs
from rlconf.analysis.curves import rolling_mean
from rlconf.analysis.figure import DPI, MATPLOTLIB_MISSING, figure_size
from rlconf.analysis.stats import (
    fraction_above,
    interquartile_mean,
    interval_estimates,
    minmax_normalize,
    performance_profile,
    stratified_resamples,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FAST = ["test_episodes=2", "eval_every=0", "quiet=true"]
SWEEP = ["run", "-m", "agent=dqn,vqn", "seed=0,1", "env=classic/cartpole", "steps=2000", "test_episodes=3",
         "eval_every=500", "eval_episodes=2", "quiet=true"]


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def summaries(sweep: Path) -> list[dict]:
    return [json.loads((run / "summary.json").read_text()) for run in run_dirs(sweep)]


def png_shape(path: Path) -> tuple[int, int]:
    """(height, width) in pixels, as matplotlib reads the file back."""
    from matplotlib import image

    return image.imread(path).shape[:2]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """Four finished runs, with evaluations, in one sweep directory."""
    root = tmp_path_factory.mktemp("plot")
    result = run_cli_in(*SWEEP, f"logdir={root / 'runs'}", cwd=root)
    assert result.returncode == 0, result.stderr
    (sweep_dir,) = (root / "runs").glob("sweep_*")
    assert len(run_dirs(sweep_dir)) == 4
    return sweep_dir


@pytest.fixture(scope="module")
def aggregate_plot(sweep, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("figures") / "nested" / "X.png"
    result = run_cli_in("plot", str(sweep), "--aggregate", "--normalize", "none", "--out", str(out), cwd=sweep)
    return result, out


# -- real runs ---------------------------------------------------------------------------------------------
def test_plot_writes_a_png_and_the_curves_of_both_agents(aggregate_plot, sweep):
    result, out = aggregate_plot
    assert result.returncode == 0, result.stderr
    written = [out, out.with_name("X_curves.csv"), out.with_name("X_aggregate.csv"), out.with_name("X_profiles.csv")]
    assert result.stdout.count("\n") == 1 and all(str(path) in result.stdout for path in written), result.stdout
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    # a curve panel above a row of 4 aggregate panels, and the figure's legend (what is shaded, then both
    # agents in one row) below them
    width, height = figure_size(envs=1, aggregate=True, legend_rows=2)
    assert png_shape(out) == (round(height * DPI), round(width * DPI))
    rows = read_rows(out.with_name("X_curves.csv"))
    assert {row["agent"] for row in rows} == {"dqn", "vqn"} and {row["env"] for row in rows} == {"classic/cartpole"}
    assert {row["config"] for row in rows} == {"dqn", "vqn"}, "nothing but the agent differs: no more in the label"
    for agent in ("dqn", "vqn"):
        mine = [row for row in rows if row["agent"] == agent]
        steps = [int(row["step"]) for row in mine]
        firsts = [int(read_rows(run / "episodes.csv")[0]["step"]) for run in run_dirs(sweep) if agent in run.name]
        # from where both seeds have finished an episode to the budget, which each run's last return holds to:
        # every point averages both seeds, as the legend says
        assert steps == sorted(steps) and len(steps) > 50 and steps[0] == max(firsts) and steps[-1] == 2000
        assert {int(row["seeds"]) for row in mine} == {2}
        assert all(float(r["lower"]) <= float(r["mean"]) <= float(r["upper"]) for r in mine)
        assert {row["spread"] for row in mine} == {"±1 std across seeds"}


def test_aggregate_iqm_is_the_hand_computed_iqm_of_the_test_returns(aggregate_plot, sweep):
    result, out = aggregate_plot
    assert result.returncode == 0, result.stderr
    rows = {(row["agent"], row["statistic"]): row for row in read_rows(out.with_name("X_aggregate.csv"))}
    assert {statistic for _, statistic in rows} == {"IQM", "median", "mean"}
    for agent in ("dqn", "vqn"):
        scores = sorted(s["test_return_mean"] for s in summaries(sweep) if s["agent"] == agent)
        cut = int(0.25 * len(scores))  # 2 runs: nothing to cut, the IQM is their mean
        by_hand = sum(scores[cut:len(scores) - cut]) / (len(scores) - 2 * cut)
        iqm = rows[(agent, "IQM")]
        assert float(iqm["value"]) == pytest.approx(by_hand, rel=1e-12)
        assert float(iqm["ci_low"]) <= float(iqm["value"]) <= float(iqm["ci_high"])
        assert (iqm["runs"], iqm["tasks"], iqm["normalize"]) == ("2", "1", "none")


def test_profiles_count_the_runs_above_each_threshold(aggregate_plot, sweep):
    result, out = aggregate_plot
    assert result.returncode == 0, result.stderr
    rows = read_rows(out.with_name("X_profiles.csv"))
    for agent in ("dqn", "vqn"):
        scores = [s["test_return_mean"] for s in summaries(sweep) if s["agent"] == agent]
        mine = [row for row in rows if row["agent"] == agent]
        assert len(mine) > 10
        for row in mine:
            tau = float(row["tau"])
            assert float(row["fraction"]) == sum(score > tau for score in scores) / len(scores)
            assert float(row["ci_low"]) <= float(row["fraction"]) <= float(row["ci_high"])


def test_eval_curves_and_a_run_without_episodes_is_skipped_with_a_note(sweep, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(sweep, runs / sweep.name, ignore=shutil.ignore_patterns("checkpoint.pt"))
    empty = runs / "dqn_just_started"
    empty.mkdir()
    shutil.copy(run_dirs(sweep)[0] / "config.yaml", empty)
    (empty / "episodes.csv").write_text("step,episode,return,length,wall_seconds\n")
    result = run_cli_in("plot", str(runs), "--metric", "eval", "--agents", "dqn", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "rlconf plot: left out 1 of 5 runs: 1 with no finished episode yet: dqn_just_started\n" in result.stderr
    out = runs / "plot.png"  # the default: beside the runs
    size = figure_size(envs=1, aggregate=False, legend_rows=2)  # what is shaded, and dqn's line
    assert png_shape(out) == tuple(round(x * DPI) for x in reversed(size))
    rows = read_rows(runs / "plot_curves.csv")
    assert {row["agent"] for row in rows} == {"dqn"}
    # evaluations at 500, 1000, 1500, 2000: no invented points between
    assert [int(row["step"]) for row in rows] == [500, 1000, 1500, 2000]
    seeds = [read_rows(run / "evaluations.csv") for run in run_dirs(sweep) if "dqn" in run.name]
    first = [float(next(r for r in table if r["step"] == "500")["mean"]) for table in seeds]
    assert float(rows[0]["mean"]) == pytest.approx(np.mean(first), rel=1e-5)
    assert rows[0]["seeds"] == "2"
    # at 2,000 the final test (3 episodes, seeded as the evaluations are: it replays the 2 of the last one)
    # counts alone, its episodes not counted twice
    tests = [float(table[-1]["mean"]) for table in seeds]
    assert all(table[-1]["episodes"] == "3" and table[-2]["step"] == table[-1]["step"] for table in seeds)
    assert float(rows[-1]["mean"]) == pytest.approx(np.mean(tests), rel=1e-5)


# -- a folder of mixed budgets, agents, envs and bandits ------------------------------------------------------
MIXED_RUNS = [  # besides the module's sweep (dqn and vqn on CartPole, 2,000 steps, seeds 0 and 1)
    ["-m", "agent=dqn", "env=classic/acrobot,classic/mountain_car", "seed=0,1", "steps=2000"],
    ["agent=dqn", "env=classic/cartpole", "seed=0", "steps=3000"],  # a longer budget, sharing seed 0
    ["agent=dqn", "env=classic/acrobot", "seed=0", "steps=600"],  # one episode: a curve of one point
    ["-m", "agent=thompson", "env=bandit/bernoulli", "seed=0,1", "steps=500"],
]


@pytest.fixture(scope="module")
def mixed(sweep, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    runs = root / "runs"
    shutil.copytree(sweep, runs / sweep.name, ignore=shutil.ignore_patterns("checkpoint.pt"))
    for args in MIXED_RUNS:
        result = run_cli_in("run", *args, "test_episodes=2", "eval_every=0", "quiet=true", f"logdir={runs}", cwd=root)
        assert result.returncode == 0, result.stderr
    return runs


@pytest.fixture(scope="module")
def mixed_plot(mixed) -> tuple[subprocess.CompletedProcess, Path]:
    out = mixed.parent / "figures" / "mixed.png"
    result = run_cli_in("plot", str(mixed), "--aggregate", "--normalize", "none", "--out", str(out), cwd=mixed)
    assert result.returncode == 0, result.stderr
    return result, out


def test_a_mixed_folder_draws_one_line_per_configuration_with_each_panels_metric(mixed, mixed_plot):
    result, out = mixed_plot
    rows = read_rows(out.with_name("mixed_curves.csv"))
    lines = {(row["env"], row["config"], row["metric"]) for row in rows}
    assert lines == {("classic/cartpole", "dqn steps=2000", "return"), ("classic/cartpole", "dqn steps=3000", "return"),
                     ("classic/cartpole", "vqn steps=2000", "return"), ("classic/acrobot", "dqn steps=2000", "return"),
                     ("classic/acrobot", "dqn steps=600", "return"),
                     ("classic/mountain_car", "dqn steps=2000", "return"),
                     ("bandit/bernoulli", "thompson steps=500", "regret")}
    seeds = {(row["env"], row["config"]): max(int(r["seeds"]) for r in rows if (r["env"], r["config"]) ==
                                              (row["env"], row["config"])) for row in rows}
    assert seeds[("classic/cartpole", "dqn steps=2000")] == 2 and seeds[("classic/cartpole", "dqn steps=3000")] == 1
    assert seeds[("classic/acrobot", "dqn steps=600")] == 1
    # the 3,000-step run is its own line to its end; the 2,000-step line stops where its runs did
    ends = {config: max(int(r["step"]) for r in rows if (r["env"], r["config"]) == ("classic/cartpole", config))
            for config in ("dqn steps=2000", "dqn steps=3000")}
    assert ends["dqn steps=2000"] <= 2000 < ends["dqn steps=3000"]
    # the bandit panel draws the regret of pulls.csv, next to training returns elsewhere
    regret = [r for r in rows if r["env"] == "bandit/bernoulli"]
    finals = [json.loads((d / "summary.json").read_text())["cumulative_regret"]
              for d in mixed.glob("sweep_*/thompson_*")]
    assert int(regret[-1]["step"]) == 500 and float(regret[-1]["mean"]) == pytest.approx(np.mean(finals), rel=1e-4)
    assert "rlconf plot: 12 runs (3 agents, 4 envs, 7 configurations)" in result.stdout
    assert "left out" not in result.stderr


def test_the_aggregate_median_of_real_runs_is_rliables(mixed, mixed_plot):
    """rliable's aggregate_median: the median over envs of each env's mean score, by hand from summary.json."""
    _, out = mixed_plot
    rows = {(row["config"], row["statistic"]): row for row in read_rows(out.with_name("mixed_aggregate.csv"))}
    tests: dict[str, list[float]] = {}
    for summary_path in mixed.rglob("summary.json"):
        summary = json.loads(summary_path.read_text())
        if summary["agent"] == "dqn" and summary["steps"] == 2000:
            tests.setdefault(summary["env"], []).append(summary["test_return_mean"])
    assert sorted(tests) == ["classic/acrobot", "classic/cartpole", "classic/mountain_car"]
    assert all(len(scores) == 2 for scores in tests.values())
    by_hand = sorted(sum(scores) / len(scores) for scores in tests.values())[1]  # the middle of 3 means
    median = rows[("dqn steps=2000", "median")]
    assert float(median["value"]) == pytest.approx(by_hand, rel=1e-12)
    assert (median["agent"], median["runs"], median["tasks"]) == ("dqn", "6", "3")
    assert float(median["ci_low"]) <= float(median["value"]) <= float(median["ci_high"])


def colour_pixels(figure) -> dict[tuple[str, str], int]:
    """(panel title, line label) -> how many pixels inside the panel's axes have exactly that line's colour,
    as the figure renders (the legend lies below the panels: it does not count)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    image = np.asarray(canvas.buffer_rgba())[..., :3].astype(int)
    height = image.shape[0]
    counts = {}
    for ax in figure.get_axes():
        if not ax.get_title():
            continue
        box = ax.get_window_extent()
        inside = image[height - int(box.y1):height - int(box.y0), int(box.x0):int(box.x1)]
        for line in ax.get_lines():
            colour = np.round(np.asarray(line.get_color()[:3]) * 255).astype(int)
            counts[ax.get_title(), line.get_label()] = int((np.abs(inside - colour) <= 1).all(axis=-1).sum())
    return counts


def legends(figure) -> list:
    from matplotlib.legend import Legend

    return figure.findobj(Legend)


def test_no_line_hides_another_and_a_one_point_curve_is_drawn(sweep, tmp_path):
    from rlconf.analysis.command import compute, parse
    from rlconf.analysis.figure import draw

    # Two configurations that never train (replay starts after the budget) play the same episodes: their
    # curves are one curve. And a run of one episode has a curve of one point.
    runs = tmp_path / "runs"
    for args in (["-m", "agent=dqn", "agent.lr=0.001,0.01", "agent.replay_start_size=5000", "steps=1000"],
                 ["agent=dqn", "agent.lr=0.001", "agent.replay_start_size=5000", "env=classic/acrobot", "steps=600"]):
        result = run_cli_in("run", *args, "env=classic/cartpole" if "-m" in args else "seed=0", *FAST,
                            f"logdir={runs}", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    computed = compute(parse([str(runs)]))
    cartpole = next(panel for panel in computed.panels if panel.env == "classic/cartpole")
    first, second = cartpole.bands
    assert (first.label, second.label) == ("dqn agent.lr=0.001", "dqn agent.lr=0.01")
    np.testing.assert_array_equal(first.mean, second.mean)  # on top of each other
    acrobot = next(panel for panel in computed.panels if panel.env == "classic/acrobot").bands[0]
    (acrobot_dir,) = [run for run in run_dirs(runs) if "acrobot" in run.name]
    (episode,) = [int(row["step"]) for row in read_rows(acrobot_dir / "episodes.csv")]
    assert acrobot.steps.tolist() == [episode, 600] and acrobot.mean[0] == acrobot.mean[1]  # held to its end
    (acrobot_dir / "summary.json").unlink()  # as while it runs: its one episode is all it has
    computed = compute(parse([str(runs)]))
    acrobot = next(panel for panel in computed.panels if panel.env == "classic/acrobot").bands[0]
    assert acrobot.steps.tolist() == [episode]
    figure = draw(computed.panels, None, "t", 100)
    counts = colour_pixels(figure)
    assert len(counts) == 3 and all(count >= 20 for count in counts.values()), counts
    # one width for every line: the first drawn is not the thickest
    assert len({line.get_linewidth() for ax in figure.get_axes() for line in ax.get_lines()}) == 1
    # One seed each: nothing is shaded, and neither the figure's one legend nor the CSV say otherwise
    (legend,) = legends(figure)
    assert legend.get_title().get_text() == ""
    assert [text.get_text() for text in legend.get_texts()] == ["dqn agent.lr=0.001 (1 seed)",
                                                               "dqn agent.lr=0.01 (1 seed)"]
    result = run_cli_in("plot", str(runs), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {row["spread"] for row in read_rows(runs / "plot_curves.csv")} == {"none (1 run)"}


# -- the statistics by hand -------------------------------------------------------------------------------
def test_iqm_drops_the_lowest_and_highest_quarter():
    scores = np.random.default_rng(1).permutation(np.arange(1.0, 21.0))  # 1..20 shuffled
    assert interquartile_mean(scores) == pytest.approx(np.mean(np.arange(6.0, 16.0)))  # 5 off each end: 10.5


def test_iqm_cuts_whole_runs_rounding_the_quarter_down():
    # 10 runs: a quarter is 2.5 runs; as scipy.stats.trim_mean(x, 0.25), 2 whole runs go from each end.
    scores = np.array([100.0, 1, 2, 3, 4, 5, 6, 7, 8, -50])
    assert interquartile_mean(scores) == pytest.approx((2 + 3 + 4 + 5 + 6 + 7) / 6)
    assert interquartile_mean(np.array([1.0, 2, 9])) == pytest.approx(4.0)  # fewer than 4: nothing cut
    rows = np.array([[4.0, 1, 3, 2], [10, 40, 20, 30]])
    np.testing.assert_allclose(interquartile_mean(rows), [2.5, 25.0])  # one IQM per row (per resample)


def test_stratified_bootstrap_resamples_within_each_task():
    task_a, task_b = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0])
    resamples = stratified_resamples([task_a, task_b], reps=500, rng=np.random.default_rng(0))
    assert resamples.shape == (500, 5)
    assert np.isin(resamples[:, :3], task_a).all() and np.isin(resamples[:, 3:], task_b).all()
    assert len(np.unique(resamples, axis=0)) > 50  # really resampled, not the data repeated


def test_constant_tasks_of_unequal_size_give_a_zero_width_interval():
    # Resampled within tasks, every resample holds three 0s and one 1: every statistic is always the same.
    # Pooled resampling would draw any number of 1s and give the pooled mean an interval of 0 to 0.75.
    by_task = [np.zeros(3), np.ones(1)]
    resamples = stratified_resamples(by_task, reps=2000, rng=np.random.default_rng(0))
    estimates = interval_estimates(by_task, resamples)
    # IQM: the middle two of 0, 0, 0, 1; median and mean: of the task means 0 and 1 (the pooled mean, 0.25,
    # would let the task with three runs weigh three times as much)
    for name, value in (("mean", 0.5), ("IQM", 0.0), ("median", 0.5)):
        assert (estimates[name].value, estimates[name].ci_low, estimates[name].ci_high) == (value,) * 3, name


def test_median_is_rliables_median_of_the_task_means():
    # rliable.metrics.aggregate_median(scores), scores of shape (runs, tasks): np.median(np.mean(scores, axis=0)),
    # by hand here. The median of the 15 pooled runs (3.0) is another number.
    runs_by_task = np.array([[1.0, 2.0, 30.0], [2.0, 3.0, 40.0], [3.0, 4.0, 50.0], [4.0, 9.0, 60.0],
                             [5.0, 10.0, 70.0]])  # 5 runs x 3 tasks
    task_means = [(1 + 2 + 3 + 4 + 5) / 5, (2 + 3 + 4 + 9 + 10) / 5, (30 + 40 + 50 + 60 + 70) / 5]  # 3, 5.6, 50
    by_hand = sorted(task_means)[1]
    by_task = [runs_by_task[:, task] for task in range(3)]
    resamples = stratified_resamples(by_task, reps=1000, rng=np.random.default_rng(0))
    estimates = interval_estimates(by_task, resamples)
    assert estimates["median"].value == pytest.approx(by_hand) == 5.6 != np.median(runs_by_task)
    # each resample's median is the median of its own task means
    resampled_means = np.stack([resamples[:, 5 * t:5 * (t + 1)].mean(axis=1) for t in range(3)], axis=1)
    expected = np.percentile(np.median(resampled_means, axis=1), [2.5, 97.5])
    assert (estimates["median"].ci_low, estimates["median"].ci_high) == pytest.approx(tuple(expected))
    # IQM and mean as rliable: scipy.stats.trim_mean(scores, 0.25, axis=None) and the mean of the task means
    ordered = np.sort(runs_by_task.ravel())
    assert estimates["IQM"].value == pytest.approx(ordered[3:12].mean())
    assert estimates["mean"].value == pytest.approx(np.mean(task_means))


def test_performance_profile_is_the_fraction_of_runs_above_tau():
    by_task = [np.array([0.1, 0.4]), np.array([0.4, 0.9])]
    taus = np.array([0.0, 0.1, 0.4, 0.5, 0.9, 1.0])
    resamples = stratified_resamples(by_task, reps=200, rng=np.random.default_rng(0))
    profile = performance_profile(by_task, resamples, taus)
    np.testing.assert_array_equal(profile.fraction, [4 / 4, 3 / 4, 1 / 4, 1 / 4, 0, 0])  # strictly above tau
    assert (profile.ci_low <= profile.fraction).all() and (profile.fraction <= profile.ci_high).all()
    np.testing.assert_array_equal(fraction_above(np.array([[0.1, 0.4, 0.4, 0.9]]), taus), [profile.fraction])


def test_minmax_maps_each_envs_worst_run_to_0_and_best_to_1():
    scores = {"cartpole": {"dqn": np.array([100.0, 500.0]), "vqn": np.array([300.0])},
              "acrobot": {"dqn": np.array([-80.0]), "vqn": np.array([-500.0, -100.0])}}
    out = minmax_normalize(scores)
    np.testing.assert_allclose(out["cartpole"]["dqn"], [0.0, 1.0])
    np.testing.assert_allclose(out["cartpole"]["vqn"], [0.5])
    np.testing.assert_allclose(out["acrobot"]["dqn"], [1.0])
    np.testing.assert_allclose(out["acrobot"]["vqn"], [0.0, 400 / 420])


def test_rolling_mean_averages_what_there_is_at_the_start():
    np.testing.assert_allclose(rolling_mean(np.array([1.0, 2, 3, 4]), 2), [1.0, 1.5, 2.5, 3.5])
    np.testing.assert_allclose(rolling_mean(np.array([2.0, 4]), 100), [2.0, 3.0])


# -- human-normalised scores: the module's real runs, relabelled as Atari games -----------------------------------
# agent -> env -> the test returns its two runs (seeds 0 and 1) are given, and what they are human-normalised by
# hand from the published scores (Pong: random -20.7, human 14.6; Breakout: random 1.7, human 30.5).
HUMAN_RUNS = {
    "dqn": {"atari/pong": ([-20.7, 14.6], [0.0, 1.0]), "atari/breakout": ([16.1, 59.3], [0.5, 2.0])},
    "vqn": {"atari/pong": ([-3.05, -20.7], [0.5, 0.0]), "atari/breakout": ([1.7, 30.5], [0.0, 1.0])},
}


def relabelled(template: Path, destination: Path, env: str, test_return: float) -> None:
    """A copy of a finished run that says it ran on ``env`` and scored ``test_return`` in its final test."""
    import yaml

    shutil.copytree(template, destination, ignore=shutil.ignore_patterns("*.pt"))
    config = yaml.safe_load((destination / "config.yaml").read_text())
    config["env"]["name"] = env
    (destination / "config.yaml").write_text(yaml.safe_dump(config))
    summary = json.loads((destination / "summary.json").read_text())
    summary.update(env=env, test_return_mean=test_return)
    (destination / "summary.json").write_text(json.dumps(summary))


@pytest.fixture(scope="module")
def atari_runs(sweep, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("human") / "runs"
    for agent, by_env in HUMAN_RUNS.items():
        templates = sorted(run for run in run_dirs(sweep) if json.loads((run / "summary.json").read_text())["agent"]
                           == agent)  # seeds 0 and 1
        for env, (returns, _) in by_env.items():
            for template, test_return in zip(templates, returns, strict=True):
                relabelled(template, root / f"{agent}_{env.replace('/', '_')}_{template.name}", env, test_return)
    return root


def test_human_normalised_aggregate_and_optimality_gap(atari_runs):
    from rlconf.analysis.figure import AGGREGATE_PANEL

    out = atari_runs.parent / "figures" / "human.png"
    result = run_cli_in("plot", str(atari_runs), "--aggregate", "--normalize", "human", "--out", str(out),
                        cwd=atari_runs)
    assert result.returncode == 0, result.stderr
    rows = {(row["config"], row["statistic"]): row for row in read_rows(out.with_name("human_aggregate.csv"))}
    assert {statistic for _, statistic in rows} == {"IQM", "median", "mean", "optimality gap"}
    for agent, by_env in HUMAN_RUNS.items():
        normalised = {env: np.array(hand) for env, (_, hand) in by_env.items()}
        runs = np.sort(np.concatenate(list(normalised.values())))  # 4 runs: the IQM drops one from each end
        task_means = [values.mean() for values in normalised.values()]
        gaps = [np.maximum(1 - values, 0).mean() for values in normalised.values()]
        by_hand = {"IQM": runs[1:3].mean(), "median": np.median(task_means), "mean": np.mean(task_means),
                   "optimality gap": np.mean(gaps)}
        for statistic, value in by_hand.items():
            row = rows[(agent, statistic)]
            assert float(row["value"]) == pytest.approx(value, rel=1e-9, abs=1e-12), (agent, statistic)
            assert float(row["ci_low"]) <= float(row["value"]) <= float(row["ci_high"]), (agent, statistic)
            assert (row["runs"], row["tasks"], row["normalize"]) == ("4", "2", "human")
    # dqn: 0.75, 0.875, 0.875, 0.375 and vqn: 0.25, 0.375, 0.375, 0.625, as the hand computation above gives
    assert [round(float(rows[("dqn", s)]["value"]), 9) for s in ("IQM", "optimality gap")] == [0.75, 0.375]
    profiles = read_rows(out.with_name("human_profiles.csv"))
    assert {row["normalize"] for row in profiles} == {"human"} and len(profiles) > 20
    published = {"atari/pong": (-20.7, 14.6), "atari/breakout": (1.7, 30.5)}  # (random, human)
    for row in profiles:
        scores = np.concatenate([(np.array(returns) - published[env][0]) / (published[env][1] - published[env][0])
                                 for env, (returns, _) in HUMAN_RUNS[row["agent"]].items()])
        assert float(row["fraction"]) == np.mean(scores > float(row["tau"])), row
    # the aggregate row has a fifth panel, the optimality gap's, beside the four of raw returns
    assert png_shape(out)[1] == round(5 * AGGREGATE_PANEL[0] * DPI)


def test_human_normalisation_of_an_env_without_published_scores_is_refused_in_one_line(atari_runs, sweep, tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(atari_runs, mixed / "atari")
    shutil.copytree(sweep, mixed / "cartpole", ignore=shutil.ignore_patterns("*.pt"))
    before = sorted(p.name for p in mixed.rglob("*"))
    line = one_error_line(run_cli_in("plot", str(mixed), "--aggregate", "--normalize", "human", "--out",
                                     str(tmp_path / "out" / "X.png"), cwd=tmp_path))
    assert "--normalize human: no published human and random scores for env classic/cartpole;" in line, line
    assert "57 Atari-57 games: atari/alien, atari/amidar," in line and "atari/pong" in line, line
    assert not (tmp_path / "out").exists() and sorted(p.name for p in mixed.rglob("*")) == before


# -- bad input: one line, exit 2, nothing written ------------------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["missing"], ["missing", "no such directory"]),
    (["empty"], ["empty", "no run directory", "config.yaml", "episodes.csv"]),
    (["SWEEP", "--bogus"], ["unknown option '--bogus'", "--aggregate", "--metric"]),
    (["SWEEP", "--metric", "evl"], ["'evl'", "did you mean 'eval'", "return, eval"]),
    (["SWEEP", "--normalize", "zscore"], ["'zscore'", "auto, human, minmax, none"]),
    (["SWEEP", "--agents", "ppo"], ["unknown agent 'ppo'", "dqn, vqn"]),
    (["SWEEP", "--window", "0"], ["--window", "positive integer"]),
    (["SWEEP", "--style", "poster"], ["--style value 'poster'", "default, paper"]),
    ([], ["missing RUNS_DIR", "usage: rlconf plot"]),
])
def test_bad_input_is_one_line_and_writes_nothing(sweep, tmp_path, args, words):
    (tmp_path / "empty").mkdir()
    args = [str(sweep) if a == "SWEEP" else a for a in args]
    line = one_error_line(run_cli_in("plot", *args, "--out", str(tmp_path / "out" / "X.png"), cwd=tmp_path)
                          if args else run_cli_in("plot", cwd=tmp_path))
    for word in words:
        assert word in line, (word, line)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["empty"]
    assert not list(sweep.rglob("*.png"))


def test_without_matplotlib_the_command_says_how_to_install_it(sweep, tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; from rlconf.cli import main; "
            f"sys.exit(main(['plot', {str(sweep)!r}, '--out', {str(tmp_path / 'X.png')!r}]))")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=cli_env(), capture_output=True,
                            text=True, timeout=60)
    assert one_error_line(result) == f"rlconf: error: {MATPLOTLIB_MISSING}"
    assert list(tmp_path.iterdir()) == []


def test_listing_and_reading_runs_import_no_matplotlib(tmp_path):
    code = ("import sys; import rlconf.analysis; from rlconf.cli import main; assert main(['list', 'agent']) == 0; "
            "assert 'matplotlib' not in sys.modules, 'matplotlib was imported'")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=cli_env(), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_a_long_configuration_label_wraps_in_its_legend_instead_of_squeezing_the_panel():
    from rlconf.analysis.figure import LEGEND_CHARS, legend_entry

    label = "ppo " + " ".join(f"env.kwargs.test_setting_{i}=true" for i in range(4))
    entry = legend_entry(label, 2)
    assert entry.replace("\n    ", " ") == f"{label} (2)", "wrapped, nothing lost"
    assert entry.count("\n") >= 1 and all(len(line) <= LEGEND_CHARS for line in entry.splitlines())
    assert legend_entry("dqn", 3) == "dqn (3)"


def test_a_setting_an_older_run_lacks_does_not_split_its_seeds():
    """A run written before a setting existed has no such key in its config.yaml: it stays one configuration
    with the newer runs that have the key, while two values of the key still tell runs apart."""
    from rlconf.analysis.runs import Run, label_runs

    def run(seed: int, **settings: str) -> Run:
        return Run(Path(f"s{seed}"), "dqn", "atari/pong", seed, np.zeros(0), np.zeros(0),
                   settings={"agent.lr": "0.0001", **settings})

    older, newer = run(0), run(1, **{"agent.double_q": "true"})
    assert label_runs([older, newer]) == [] and older.label == newer.label == "dqn"
    other = run(2, **{"agent.double_q": "false"})
    label_runs([older, newer, other])
    assert newer.label == "dqn agent.double_q=true" and other.label == "dqn agent.double_q=false"


def test_runs_linked_into_a_folder_are_found_once_and_a_link_back_up_does_not_loop(sweep, tmp_path):
    """A folder of symbolic links is how runs kept in several places are compared."""
    picked = tmp_path / "picked"
    picked.mkdir()
    for run in run_dirs(sweep):
        (picked / run.name).symlink_to(run, target_is_directory=True)
    (picked / "again").symlink_to(picked, target_is_directory=True)  # a cycle
    (picked / "twice").symlink_to(run_dirs(sweep)[0], target_is_directory=True)  # the same run by another name
    found = find_run_dirs(picked)
    assert sorted(path.resolve() for path in found) == sorted(run.resolve() for run in run_dirs(sweep))


# -- figures for a paper: aligned evaluations, honest counts, one legend, vector files, the paper style --------
def hand_run(template: Path, destination: Path, seed: int, evaluations: list[tuple[int, int, float]],
             ended_at: int | None, budget: int = 4000, eval_every: int = 1000) -> Path:
    """A copy of a finished run of the module's sweep, as rlconf writes one, with ``seed``, a budget of
    ``budget`` steps evaluated every ``eval_every``, and ``evaluations`` (step, episodes, mean) as its
    evaluations.csv holds them; ``ended_at``: the steps its summary.json says it trained (None: still running)."""
    import yaml

    shutil.copytree(template, destination, ignore=shutil.ignore_patterns("*.pt"))
    config = yaml.safe_load((destination / "config.yaml").read_text())
    config.update(seed=seed, steps=budget, eval_every=eval_every)
    (destination / "config.yaml").write_text(yaml.safe_dump(config))
    rows = [f"{step},{episodes},{mean},0,{mean},{mean}" for step, episodes, mean in evaluations]
    (destination / "evaluations.csv").write_text("\n".join(["step,episodes,mean,std,min,max", *rows, ""]))
    if ended_at is None:
        (destination / "summary.json").unlink()
    else:
        summary = json.loads((destination / "summary.json").read_text())
        summary.update(seed=seed, steps=ended_at, test_return_mean=evaluations[-1][2])
        (destination / "summary.json").write_text(json.dumps(summary))
    return destination


def test_evaluations_of_seeds_that_overshoot_the_budget_share_their_points(sweep, tmp_path):
    """8 copies overshoot each evaluation and a 4,000-step budget by a few steps, differently per seed: each
    evaluation is drawn where it was due, the final test replaces the last evaluation it replays, and a seed
    still running counts only where it has got to (the legend says so)."""
    from rlconf.analysis.command import compute, parse
    from rlconf.analysis.figure import draw

    template = run_dirs(sweep)[0]
    runs = tmp_path / "runs"
    hand_run(template, runs / "s0", 0, [(1000, 3, 10.0), (2001, 3, 20.0), (3003, 3, 30.0), (4001, 3, 40.0),
                                        (4001, 10, 44.0)], ended_at=4001)
    hand_run(template, runs / "s1", 1, [(1003, 3, 12.0), (2002, 3, 22.0), (3001, 3, 32.0), (4003, 3, 42.0),
                                        (4003, 10, 46.0)], ended_at=4003)
    hand_run(template, runs / "s2", 2, [(1001, 3, 14.0), (2005, 3, 24.0), (3006, 3, 34.0)], ended_at=None)
    out = tmp_path / "figs" / "eval.png"
    result = run_cli_in("plot", str(runs), "--metric", "eval", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = read_rows(out.with_name("eval_curves.csv"))
    assert [(int(r["step"]), int(r["seeds"])) for r in rows] == [(1000, 3), (2000, 3), (3000, 3), (4000, 2)]
    assert [float(r["mean"]) for r in rows] == pytest.approx([12.0, 22.0, 32.0, 45.0])  # 45: the tests' 44, 46
    assert len({(r["env"], r["config"], r["metric"], r["step"]) for r in rows}) == len(rows), "a duplicated row"
    figure = draw(compute(parse([str(runs), "--metric", "eval"])).panels, None, None, 100)
    (legend,) = legends(figure)
    assert [text.get_text() for text in legend.get_texts()] == ["dqn (2-3 seeds)"]
    (ax,) = figure.get_axes()
    ticks = ax.get_xticks()  # whole steps, no 4.0005k between seeds' ends
    assert all(float(tick).is_integer() for tick in ticks)
    assert "4k" in [ax.xaxis.get_major_formatter()(tick) for tick in ticks]


def test_a_final_test_is_drawn_where_it_was_made_when_the_run_stopped_early(tmp_path):
    """``stop.reward`` ends a run at 2,537 of its 4,000 steps: its final test is no evaluation that was due."""
    from rlconf.analysis.curves import CurveOptions, evaluation_means
    from rlconf.analysis.runs import Run, Schedule

    (tmp_path / "evaluations.csv").write_text("step,episodes,mean,std,min,max\n1004,5,1,0,1,1\n2006,5,2,0,2,2\n"
                                              "2537,20,3,0,3,3\n")
    run = Run(tmp_path, "dqn", "classic/cartpole", 0, np.zeros(0), np.zeros(0), summary={
        "steps": 2537, "test_return_mean": 3.0}, schedule=Schedule(budget=4000, eval_every=1000))
    curve = evaluation_means(run, CurveOptions())
    assert curve.steps.tolist() == [1000, 2000, 2537] and curve.values.tolist() == [1, 2, 3]


def test_a_legend_counts_the_seeds_its_points_hold():
    from rlconf.analysis.curves import Band, seed_count

    def band(seeds: list[int], runs: int, distinct: int) -> Band:
        zeros = np.zeros(len(seeds))
        return Band("e", "dqn", "dqn", "eval", zeros, zeros, zeros, zeros, np.array(seeds), "s", runs, distinct)

    assert seed_count([band([3, 3], 3, 3)]) == "3 seeds" and seed_count([band([1], 1, 1)]) == "1 seed"
    assert seed_count([band([3, 3, 2], 3, 3)]) == "2-3 seeds"
    assert seed_count([band([2, 2], 2, 2), band([1, 1], 1, 1)]) == "1-2 seeds"  # one configuration, two envs
    assert seed_count([band([4, 4], 4, 3)]) == "4 runs, 3 seeds"


def test_one_legend_equal_lines_pulls_and_log_axes_in_a_mixed_folder(mixed, tmp_path):
    """The figure of envs, budgets and a bandit: one legend naming each configuration once with the seeds its
    points hold, lines of one width, the bandit's regret against pulls, and log axes on request."""
    from rlconf.analysis.command import compute, parse
    from rlconf.analysis.figure import draw

    computed = compute(parse([str(mixed)]))
    figure = draw(computed.panels, None, None, 100)
    assert figure._suptitle is None  # no "runs: 12 runs": each panel is titled by its env
    (legend,) = legends(figure)
    assert legend.get_title().get_text() == "shaded: ±1 std across seeds"
    assert [text.get_text() for text in legend.get_texts()] == [
        "dqn steps=2000 (2 seeds)", "dqn steps=3000 (1 seed)", "dqn steps=600 (1 seed)", "thompson steps=500 (2 seeds)",
        "vqn steps=2000 (2 seeds)"]
    assert len({line.get_linewidth() for ax in figure.get_axes() for line in ax.get_lines()}) == 1
    labels = {ax.get_title(): ax.get_xlabel() for ax in figure.get_axes() if ax.get_title()}
    assert labels["bandit/bernoulli"] == "pulls" and labels["classic/cartpole"] == "env steps"
    titled = draw(computed.panels, None, "DQN on classic control", 100)
    assert titled._suptitle.get_text() == "DQN on classic control"

    bandit = compute(parse([str(mixed), "--envs", "bandit/bernoulli", "--log-x", "--log-y"]))
    (ax,) = draw(bandit.panels, None, None, 100, log_x=True, log_y=True).get_axes()
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    steps = bandit.panels[0].bands[0].steps
    assert steps[0] < 20 and np.diff(np.log(steps))[-10:].max() < 0.05  # points spaced evenly on the log axis
    line = one_error_line(run_cli_in("plot", str(mixed), "--envs", "classic/acrobot", "--log-y", "--out",
                                     str(tmp_path / "out" / "X.png"), cwd=tmp_path))
    assert "--log-y: dqn steps=2000 on classic/acrobot has a mean return of -" in line, line
    assert "only values above 0" in line and not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["pdf", "svg"])
def test_vector_figures_are_valid_files_and_the_same_runs_give_the_same_bytes(sweep, tmp_path, kind):
    import xml.etree.ElementTree as ElementTree

    out = tmp_path / "figs" / f"cartpole.{kind}"
    result = run_cli_in("plot", str(sweep), "--out", str(out), "--title", "CartPole", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"-> {out}, {out.with_name('cartpole_curves.csv')}" in result.stdout
    data = out.read_bytes()
    if kind == "pdf":
        assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
        assert b"/FontFile2" in data and b"/Type3" not in data  # TrueType fonts embedded, as publishers ask
    else:
        root = ElementTree.fromstring(data)
        assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("width") == "360pt"  # 5 in at 72 pt
        assert "CartPole" in data.decode()  # the title, kept as text's id though drawn as paths
    again = run_cli_in("plot", str(sweep), "--out", str(out.with_name(f"again.{kind}")), "--title", "CartPole",
                       cwd=tmp_path)
    assert again.returncode == 0 and out.with_name(f"again.{kind}").read_bytes() == data


def test_the_paper_style_is_a_column_wide_with_a_papers_type_sizes(sweep, mixed, tmp_path):
    from matplotlib.text import Text

    from rlconf.analysis.command import compute, parse
    from rlconf.analysis.figure import draw
    from rlconf.analysis.styles import PAPER

    out = tmp_path / "paper.png"
    result = run_cli_in("plot", str(sweep), "--style", "paper", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert png_shape(out)[1] == round(3.3 * PAPER.dpi)  # one column
    out = tmp_path / "wide.png"
    result = run_cli_in("plot", str(mixed), "--style", "paper", "--aggregate", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert png_shape(out)[1] == round(6.9 * PAPER.dpi)  # four envs and an aggregate row: the page's width
    figure = draw(compute(parse([str(mixed), "--style", "paper"])).panels, None, "T", 100, PAPER)
    sizes = {text.get_fontsize() for text in figure.findobj(Text) if text.get_text() and text.get_visible()}
    assert sizes and min(sizes) >= 7 and max(sizes) <= 9, sizes


def test_a_figure_of_another_format_is_refused_in_one_line(sweep, tmp_path):
    line = one_error_line(run_cli_in("plot", str(sweep), "--out", str(tmp_path / "fig.jpg"), cwd=tmp_path))
    assert "fig.jpg: must name a .png, .pdf, .svg file" in line, line
    assert list(tmp_path.iterdir()) == []
