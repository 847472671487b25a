"""Learning tests: the default command of each agent solves CartPole-v1 within its budget (DQN's is the quick
start's, run and checked as written by tests/test_docs.py).

They run exactly what a user types (``rlconf run agent=X env=classic/cartpole``, default seed and preset)
and assert the greedy test return over 100 episodes that summary.json reports. Minutes, so marked slow;
CI runs them. The value-based presets' 100k steps of replayed updates (DDQN, C51, Rainbow) take 6 to 15 minutes
of a core each on CI's machine, more on a slow day: they are the ``long`` tier (``pytest -n 2 -m long``), run
before a release and when an agent changes, not in CI.
"""

from __future__ import annotations

import csv
import json

import pytest
from conftest import only_run_dir


@pytest.mark.slow
@pytest.mark.parametrize(("agent", "budget", "target"), [
    ("ppo", 100_000, 475),
    *(pytest.param(agent, 100_000, 475, marks=pytest.mark.long) for agent in ("ddqn", "c51", "rainbow")),
    ("vqn", 100_000, 200), ("vsarsa", 100_000, 200),
])
def test_default_preset_solves_cartpole(run_cli, workdir, agent, budget, target):
    result = run_cli("run", f"agent={agent}", "env=classic/cartpole", "quiet=true", cwd=workdir, timeout=3600)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(workdir / "runs")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert budget <= summary["steps"] < budget + 8  # the last step of 8 envs may overshoot
    assert summary["test_episodes"] == 100
    assert summary["test_return_mean"] >= target, summary

    # A long run also fills the window statistics: one row per 100 training episodes.
    with open(run_dir / "returns100.csv") as f:
        windows = list(csv.DictReader(f))
    assert [int(row["episode"]) for row in windows] == [100 * (i + 1) for i in range(summary["episodes"] // 100)]
    assert all(float(row["min"]) <= float(row["mean"]) <= float(row["max"]) for row in windows)
