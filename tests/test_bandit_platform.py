"""Bandits on the platform: the environments, the regret bookkeeping, its files, resume, plot, eval and the
one-line refusals. The agents' own tests are in test_multi_armed.py and test_contextual_bandits.py."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import assert_run_refused, one_error_line, only_run_dir

from rlconf.config import compose
from rlconf.environments.bandit import ContextualBandit, MultiArmedBandit, read_labelled_csv
from rlconf.errors import ConfigError
from rlconf.experiments.run import run


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run_in_process(tmp_path: Path, *overrides: str) -> tuple[dict, Path]:
    logdir = tmp_path / "runs"
    summary = run(compose([*overrides, f"logdir={logdir}", "quiet=true"], []))
    return summary, Path(summary["run_dir"])


def write_csv(path: Path, header: list[str], body: list[list]) -> Path:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(body)
    return path


# -- environments -----------------------------------------------------------------------------------------
def test_bernoulli_pulls_pay_their_probability_and_report_expected_regret():
    env = MultiArmedBandit("bernoulli", 2, kwargs={"arms": 3, "probabilities": [0.1, 0.5, 0.9]}, seed=0)
    state = env.reset(seed=1)
    assert state["observation"].tolist() == [[1.0], [1.0]]  # no context: the constant 1
    assert not state["done"].any() and state["reward"].tolist() == [0.0, 0.0]
    wins = np.zeros(3)
    for _ in range(4000):
        for arm in range(3):
            state = env.step(torch.tensor([arm, 2]))
            wins[arm] += state["reward"][0].item()
            assert state["done"].all()
            assert env.pulls.regrets.tolist() == pytest.approx([0.9 - [0.1, 0.5, 0.9][arm], 0.0])
            assert env.pulls.optimal.tolist() == [arm == 2, True]
    assert wins / 4000 == pytest.approx([0.1, 0.5, 0.9], abs=0.03)
    assert env.steps == 4000 * 3 * 2 and [e.length for e in env.completed] == [1, 1]


def test_drawn_problems_follow_the_seed_and_differ_between_bandits():
    def probabilities(seed, n=3, **kwargs):
        return MultiArmedBandit("bernoulli", n, kwargs={"arms": 5, **kwargs}, seed=seed).problem.probabilities

    assert np.array_equal(probabilities(4), probabilities(4))  # a run, its test env and a resumed attempt agree
    assert not np.array_equal(probabilities(4), probabilities(5))
    assert not np.array_equal(probabilities(4)[0], probabilities(4)[1])  # each bandit its own problem
    assert np.array_equal(probabilities(4, problem_seed=9), probabilities(5, problem_seed=9))


def test_linear_bandit_regret_is_the_gap_to_the_best_arm_in_this_context():
    env = ContextualBandit("linear", 1, kwargs={"arms": 4, "features": 3, "noise_std": 0.0}, seed=0)
    state = env.reset(seed=0)
    x = state["observation"][0].numpy().astype(float)
    values = env.problem.weights[0] @ x
    state = env.step(torch.tensor([0]))
    assert state["reward"].item() == pytest.approx(values[0], abs=1e-5)  # no noise: the expected reward
    assert env.pulls.regrets[0] == pytest.approx(values.max() - values[0])
    assert env.pulls.optimal[0] == (values.argmax() == 0)


def test_csv_rows_become_contexts_and_labels_become_arms(tmp_path):
    path = write_csv(tmp_path / "d.csv", ["size", "colour", "kind"],
                     [[1, "red", "b"], [3, "blue", "a"], [5, "red", "c"], [3, "green", "a"]])
    problem = read_labelled_csv(path, None, normalize=True)
    assert problem.label_names == ["a", "b", "c"] and problem.labels.tolist() == [1, 0, 2, 0]
    size, colours = problem.table[:, 0], problem.table[:, 1:]
    assert size.mean() == pytest.approx(0, abs=1e-6) and size.std() == pytest.approx(1, abs=1e-5)
    assert colours.tolist() == [[0, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 0]]  # blue, green, red one-hot
    env = ContextualBandit("dataset", 1, kwargs={"path": str(path), "label": "kind"}, seed=0)
    env.reset(seed=3)
    row = env.problem._rows[0]
    state = env.step(torch.tensor([problem.labels[row]]))  # the row's own label pays 1
    assert state["reward"].item() == 1.0 and env.pulls.regrets[0] == 0.0
    state = env.step(torch.tensor([(env.problem.labels[env.problem._rows[0]] + 1) % 3]))
    assert state["reward"].item() == 0.0 and env.pulls.regrets[0] == 1.0


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"probabilities": [0.2, "x"]}, ["env.kwargs.probabilities", "a list of numbers"]),
    ({"probabilities": [0.2, 1.4]}, ["env.kwargs.probabilities", "[0, 1]"]),
    ({"arms": 1}, ["env.kwargs.arms=1", "at least 2"]),
    ({"armz": 3}, ["env.kwargs.armz", "allowed: arms, probabilities, problem_seed"]),
])
def test_bad_bandit_options_are_one_line(kwargs, words):
    with pytest.raises(ConfigError) as error:
        MultiArmedBandit("bernoulli", 1, kwargs=kwargs, seed=0)
    assert all(word in str(error.value) for word in words), str(error.value)


def test_bad_csvs_are_one_line(tmp_path):
    good = write_csv(tmp_path / "d.csv", ["x", "y"], [[1, "a"], [2, "b"]])
    cases = [
        (tmp_path / "missing.csv", None, "no such file"),
        (good, "z", "no such column; columns: x, y"),
        (write_csv(tmp_path / "one.csv", ["x", "y"], [[1, "a"], [2, "a"]]), None, "at least 2 distinct labels"),
        (write_csv(tmp_path / "ragged.csv", ["x", "y"], [[1, "a"], [2]]), None, "row 3 has 1 fields"),
    ]
    for path, label, words in cases:
        with pytest.raises(ConfigError) as error:
            read_labelled_csv(path, label, True)
        assert words in str(error.value) and "\n" not in str(error.value)


# -- a run: pulls.csv, summary.json, eval, resume -----------------------------------------------------------
def test_a_bandit_run_logs_every_pull_its_regret_and_arm_counts(tmp_path):
    summary, run_dir = run_in_process(tmp_path, "agent=random", "env=bandit/bernoulli", "steps=3000",
                                      "hardware.n_envs=3", "test_episodes=300")
    table = rows(run_dir / "pulls.csv")
    assert len(table) == 1000 and [int(r["pull"]) for r in table] == list(range(1, 1001))
    assert [int(r["step"]) for r in table] == [3 * i for i in range(1, 1001)]  # steps count every bandit's pull
    regret = np.array([float(r["regret"]) for r in table])
    assert (np.diff(regret) >= -1e-3).all() and regret[-1] == pytest.approx(summary["cumulative_regret"], rel=1e-4)
    counts = np.array([[int(r[f"arm/{a}"]) for a in range(10)] for r in table])
    assert (counts.sum(axis=1) == 3 * np.arange(1, 1001)).all() and counts[-1].tolist() == summary["arm_counts"]
    assert summary["pulls"] == 1000 and summary["bandits"] == 3 and summary["final_pulls"] == 1000
    optimal = np.mean([float(r["optimal_rate"]) for r in table])
    assert summary["optimal_arm_rate"] == pytest.approx(optimal) and 0.02 < optimal < 0.25  # random: about 1/10
    assert summary["test_episodes"] == 300 and summary["episodes"] == 3000
    assert rows(run_dir / "episodes.csv") == []  # pulls are not repeated as one-step episode rows


def test_rows_every_n_pulls_average_what_they_cover(tmp_path):
    _, run_dir = run_in_process(tmp_path, "agent=random", "env=bandit/gaussian", "steps=1000",
                                "logger.pulls_every=100", "test_episodes=0")
    table = rows(run_dir / "pulls.csv")
    assert [int(r["pull"]) for r in table] == list(range(100, 1001, 100))
    assert all(float(r["optimal_rate"]) in {i / 100 for i in range(101)} for r in table)


def test_a_longer_budget_resumes_the_regret_without_losing_or_repeating_a_row(tmp_path):
    first, run_dir = run_in_process(tmp_path, "agent=random", "env=bandit/bernoulli", "steps=2000",
                                    "test_episodes=10")
    second = run(compose(["agent=random", "env=bandit/bernoulli", "test_episodes=10", f"resume={run_dir}",
                          "steps=5000", "quiet=true"], []))
    table = rows(run_dir / "pulls.csv")
    assert [int(r["pull"]) for r in table] == list(range(1, 5001))
    regret = np.array([float(r["regret"]) for r in table])
    assert regret[1999] == pytest.approx(first["cumulative_regret"], rel=1e-4)
    assert (np.diff(regret) >= -1e-3).all()  # the cumulative regret continues from the checkpoint
    assert second["pulls"] == 5000 and second["resumes"] == 1
    assert sum(second["arm_counts"]) == 5000


def test_eval_replays_the_greedy_pulls_and_watch_refuses_in_one_line(run_cli, workdir):
    result = run_cli("run", "agent=random", "env=bandit/bernoulli", "steps=500", "test_episodes=200", "quiet=true",
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(workdir / "runs")
    summary = json.loads((run_dir / "summary.json").read_text())
    again = run_cli("eval", str(run_dir), cwd=workdir)
    assert again.returncode == 0, again.stderr
    assert "over 200 pulls" in again.stdout
    evaluation = json.loads((run_dir / "eval.json").read_text())
    assert evaluation["mean"] == pytest.approx(summary["test_return_mean"]) and evaluation["episodes"] == 200
    line = one_error_line(run_cli("watch", str(run_dir), "--video", str(workdir / "x.mp4"), cwd=workdir))
    assert "is a bandit" in line and "rlconf eval" in line
    assert not (workdir / "x.mp4").exists()


def test_tensorboard_gets_the_bandit_scalars(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, run_dir = run_in_process(tmp_path, "agent=random", "env=bandit/bernoulli", "steps=200",
                                "logger=[csv,tensorboard]", "test_episodes=0", "env.kwargs.arms=3")
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0}).Reload()  # 0: keep every event
    tags = set(events.Tags()["scalars"])
    assert {"bandit/reward", "bandit/regret", "bandit/optimal_arm_rate", "bandit/arm_count/2"} <= tags
    table = rows(run_dir / "pulls.csv")
    regret = [e.value for e in events.Scalars("bandit/regret")]
    assert regret == pytest.approx([float(r["regret"]) for r in table], rel=1e-4)


# -- bad input ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "words"), [
    (["agent=dqn", "env=bandit/bernoulli"], ["agent=dqn", "is a bandit", "agent=random"]),
    (["agent=random", "env=bandit/dataset"], ["env.kwargs.path", "not set"]),
    (["agent=random", "env=bandit/dataset", "env.kwargs.path=nope.csv"], ["env.kwargs.path=nope.csv", "no such file"]),
    (["agent=random", "env=bandit/bernoulli", "env.kwargs.arms=1"], ["env.kwargs.arms=1", "at least 2"]),
    (["agent=random", "env=bandit/bernoulli", "logger.pulls_every=0"], ["logger.pulls_every=0", "from 1 to"]),
])
def test_bad_bandit_runs_are_refused_in_one_line(run_cli, workdir, tmp_path, args, words):
    assert_run_refused(run_cli, args, words, workdir, tmp_path / "runs")


# -- plot ----------------------------------------------------------------------------------------------------
def test_plot_draws_regret_by_default_for_bandit_runs(tmp_path):
    pytest.importorskip("matplotlib")
    from rlconf.analysis.command import plot

    finals = {}
    for seed in (0, 1):
        summary, _ = run_in_process(tmp_path, "agent=random", "env=bandit/bernoulli", "steps=1000",
                                    f"seed={seed}", "test_episodes=10")
        finals[seed] = summary["cumulative_regret"]
    assert plot([str(tmp_path / "runs"), "--out", str(tmp_path / "p.png")]) == 0
    curve = rows(tmp_path / "p_curves.csv")
    assert {r["agent"] for r in curve} == {"random"} and {r["env"] for r in curve} == {"bandit/bernoulli"}
    last = curve[-1]
    assert int(float(last["step"])) == 1000 and int(last["seeds"]) == 2
    assert float(last["mean"]) == pytest.approx(np.mean(list(finals.values())), rel=1e-4)  # the regret's mean
    assert plot([str(tmp_path / "runs"), "--metric", "optimal", "--out", str(tmp_path / "o.png")]) == 0
    assert all(0 <= float(r["mean"]) <= 1 for r in rows(tmp_path / "o_curves.csv"))
