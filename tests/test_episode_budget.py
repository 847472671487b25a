"""``episodes=N``, an episode budget beside ``steps``: the run ends "done" once N training episodes of all its
copies together have finished (or at ``steps``, whichever first), with its final test; a resumed run counts on
from its checkpoint's count; bad budgets are one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import FAST_RUN, one_error_line, only_run_dir, run_main

CARTPOLE = ["agent=dqn", "env=classic/cartpole", *FAST_RUN]


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def _episode_rows(run_dir: Path) -> int:
    with open(run_dir / "episodes.csv", newline="") as f:
        return sum(1 for _ in csv.DictReader(f))


def test_the_run_ends_after_its_episodes_and_is_tested(tmp_path, capsys):
    result = run_main(["run", *CARTPOLE, "episodes=5", f"logdir={tmp_path}"], capsys)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(tmp_path)
    summary = _summary(run_dir)
    assert summary["state"] == "done" and summary["episodes"] == 5 == _episode_rows(run_dir)
    assert summary["steps"] < 1000  # long before the step budget (100,000)
    assert summary["stop_reason"].startswith("episodes=5: 5 training episodes finished")
    assert summary["test_episodes"] == 2 and "test_return_mean" in summary  # the final test ran


def test_copies_count_together_and_may_end_a_few_over(tmp_path, capsys):
    result = run_main(["run", *CARTPOLE, "episodes=6", "hardware.n_envs=4", f"logdir={tmp_path}"], capsys)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(tmp_path)
    episodes = _summary(run_dir)["episodes"]
    assert 6 <= episodes <= 6 + 3 and episodes == _episode_rows(run_dir)  # the last step's other copies add theirs


def test_the_step_budget_ends_the_run_when_it_comes_first_and_a_resume_counts_on(tmp_path, capsys):
    result = run_main(["run", *CARTPOLE, "steps=60", "episodes=1000", f"logdir={tmp_path}"], capsys)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(tmp_path)
    first = _summary(run_dir)
    assert first["steps"] >= 60 and "stop_reason" not in first and 0 < first["episodes"] < 1000
    goal = first["episodes"] + 3
    result = run_main(["run", f"resume={run_dir}", "steps=100000", f"episodes={goal}"], capsys)
    assert result.returncode == 0, result.stderr
    resumed = _summary(run_dir)
    assert resumed["episodes"] == goal == _episode_rows(run_dir) and resumed["resumes"] == 1
    assert resumed["stop_reason"].startswith(f"episodes={goal}:")


@pytest.mark.parametrize(("override", "words"), [
    ("episodes=0", ("episodes=0", "positive integer")),
    ("episodes=-3", ("episodes=-3", "positive integer")),
    ("episodes=many", ("episodes", "many")),
    ("hardware.learners=2", ("episodes=5", "hardware.learners=2", "allowed")),
])
def test_a_bad_episode_budget_is_one_line(override, words, tmp_path, capsys):
    extra = ["episodes=5"] if override.startswith("hardware") else []
    line = one_error_line(run_main(["run", *CARTPOLE, override, *extra, f"logdir={tmp_path}/runs"], capsys))
    for word in words:
        assert word in line, line
    assert not (tmp_path / "runs").exists()


def test_help_shows_the_episode_budget(capsys):
    result = run_main(["run", "--help"], capsys)
    assert result.returncode == 0
    assert any(line.split()[:1] == ["episodes=null"] and "steps" in line for line in result.stdout.splitlines())
