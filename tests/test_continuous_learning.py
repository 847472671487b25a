"""Learning tests of the off-policy continuous-control agents: the default command of each solves
Pendulum-v1 within its budget.

They run exactly what a user types (``rlconf run agent=X env=classic/pendulum``, default seed and preset,
20 greedy test episodes) and assert the mean test return that summary.json reports. Pendulum's returns run
from about -1500 (hanging down, spinning) to 0; a policy that swings up and balances from every start
scores about -150 on average. Tens of seconds each, so marked slow; CI runs them.
"""

from __future__ import annotations

import json

import pytest
from conftest import only_run_dir


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize(("agent", "budget", "target"), [
    ("sac", 20_000, -200), ("td3", 30_000, -300), ("ddpg", 30_000, -300),
])
def test_default_preset_solves_pendulum(run_cli, workdir, agent, budget, target):
    result = run_cli("run", f"agent={agent}", "env=classic/pendulum", "test_episodes=20", "quiet=true", cwd=workdir,
                     timeout=600)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(workdir / "runs") / "summary.json").read_text())
    assert summary["steps"] <= budget
    assert summary["test_episodes"] == 20
    assert summary["test_return_mean"] >= target, summary
