"""Run directories written by an older rlconf (before issue 34 restructured the code above the agents) are read
back as they were: their checkpoints load, ``rlconf eval`` replays the same greedy episodes as the rlconf that
wrote them did, and a resume continues them without losing a row.

tests/data/before_issue34/ holds three short seeded runs (PPO on CartPole, Q-learning on FrozenLake, an
epsilon-greedy bandit) written at commit 2405656. The expected returns are what that commit's ``rlconf eval RUN
--episodes 3 --seed 0`` printed for each.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import yaml

DATA = Path(__file__).parent / "data" / "before_issue34"
# What ``rlconf eval RUN --episodes 3 --seed 0`` gave at commit 2405656, for each run.
EVAL_RETURNS = {"ppo": [52.0, 59.0, 81.0], "q_learning": [0.0, 0.0, 0.0], "epsilon_greedy": [1.0, 1.0, 1.0]}


def _copy(name: str, tmp_path: Path) -> Path:
    run = tmp_path / name
    shutil.copytree(DATA / name, run)
    return run


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


@pytest.mark.parametrize("name", sorted(EVAL_RETURNS))
def test_an_older_run_evaluates_to_the_returns_it_gave(run_cli, workdir, tmp_path, name):
    run = _copy(name, tmp_path)
    result = run_cli("eval", str(run), "--episodes", "3", "--seed", "0", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert json.loads((run / "eval.json").read_text())["returns"] == pytest.approx(EVAL_RETURNS[name])


@pytest.mark.parametrize("name", ["ppo", "q_learning"])
def test_an_older_run_resumes_without_losing_a_row(run_cli, workdir, tmp_path, name):
    run = _copy(name, tmp_path)
    before = _rows(run / "episodes.csv")
    result = run_cli("run", f"resume={run}", "steps=900", cwd=workdir)
    assert result.returncode == 0, result.stderr
    after = _rows(run / "episodes.csv")
    assert after[:len(before)] == before
    assert len(after) > len(before)
    assert int(after[-1]["step"]) >= 900 - 200  # the resumed episodes reach into the new budget
    status = json.loads((run / "status.json").read_text())
    assert (status["state"], status["resumes"]) == ("done", 1)


def test_an_older_run_takes_keys_newer_than_it_at_their_defaults_and_refuses_them_given(run_cli, workdir, tmp_path):
    """Keys added to rlconf after the run began (the optimiser's choice) are absent from its config.yaml: their
    defaults are the behaviour it had, so a resume takes them; set on the command line, they would change what
    it computes, and the resume is refused in one line."""
    run = _copy("ppo", tmp_path)
    assert "optimizer" not in yaml.safe_load((run / "config.yaml").read_text())["approximation"]
    refused = run_cli("run", f"resume={run}", "steps=900", "approximation.optimizer=adamw", cwd=workdir)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"rlconf: error: resume={run}: approximation.optimizer=adamw but the run has approximation.optimizer=<unset>; "
        "a resumed run may change only steps, episodes, quiet, verbose, logdir, resume, ... (not what it computes)"]
