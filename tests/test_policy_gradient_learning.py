"""Learning tests of the policy-gradient agents: the default command of each solves its task in budget.

They run exactly what a user types (``rlconf run agent=X env=Y``, default seed and preset) and assert the
greedy test return that summary.json reports. Each takes seconds to a minute on one core; marked slow.
"""

from __future__ import annotations

import json

import pytest
from conftest import only_run_dir


@pytest.mark.slow
@pytest.mark.parametrize(("agent", "env", "extra", "budget", "target"), [
    ("a2c", "classic/cartpole", [], 200_000, 475),  # 100 greedy episodes
    ("vac", "classic/cartpole", [], 200_000, 195),
    ("vpg", "classic/cartpole", [], 200_000, 195),
    ("ppo", "classic/pendulum", ["test_episodes=20"], 200_000, -400),
])
def test_default_preset_learns(run_cli, workdir, agent, env, extra, budget, target):
    result = run_cli("run", f"agent={agent}", f"env={env}", "quiet=true", *extra, cwd=workdir, timeout=600)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(workdir / "runs") / "summary.json").read_text())
    assert summary["steps"] <= budget + summary["n_envs"]  # the last step of n envs may overshoot
    assert summary["test_episodes"] == (20 if extra else 100)
    assert summary["test_return_mean"] >= target, summary
