"""A secret typed on the command line (a key named like one, a token pasted into any value, ``api_key=...``
inside a value) is in no file a run or a sweep writes: rlconf's own files, Hydra's multirun.yaml, wandb's
offline run (its config, its metadata with the command line) and TensorBoard's event files."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FAST_RUN, run_cli_in

TOKEN = "ghp_Zq8vTnR3kLm2Pw9XyB4cD7eF"  # shaped like a GitHub token, valid nowhere
ASSIGNED = "hunter2hunter2"
BASE = ["agent=dqn", "env=classic/cartpole", "steps=300", "agent.replay_start_size=100", *FAST_RUN,
        "logger=[csv,tensorboard,wandb]", "logger.wandb.mode=offline", f"logger.wandb.notes={TOKEN}",
        f"logger.wandb.tags=[smoke,{TOKEN},'api_key={ASSIGNED}']"]


def files_holding_a_secret(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {secret}" for secret in (TOKEN, ASSIGNED) if secret.encode() in data]
    return found


@pytest.mark.parametrize("sweep", [False, True], ids=["run", "sweep"])
def test_no_file_of_a_run_or_a_sweep_holds_a_secret_typed_on_the_command_line(tmp_path, sweep):
    logdir = tmp_path / "runs"
    args = ["-m", *BASE, "seed=0,1", "launcher=basic"] if sweep else BASE
    result = run_cli_in("run", *args, f"logdir={logdir}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = [p for p in logdir.rglob("*") if p.is_file()]
    assert any(p.name == "config.yaml" for p in written) and any("wandb" in p.parts for p in written)
    if sweep:
        assert any(p.name == "multirun.yaml" for p in written)
    assert files_holding_a_secret(logdir) == []
    assert TOKEN not in result.stdout + result.stderr
