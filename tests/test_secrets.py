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


# -- what redaction recognises: a key named like a secret, or a token of a known format; never a random-looking
# path component (rlconf.settings.redact, rlconf.errors.TOKEN) ------------------------------------------------
MD5_NAME = "24f503adf78046dc63a62192853418d1"
WANDB_KEY = "0123456789abcdef0123456789abcdef01234567"  # 40 hex digits, as wandb's keys are


@pytest.mark.parametrize("token", [TOKEN, "github_pat_11ABCDEFG0123456789_abcdefghijkl", "sk-proj-abcdefghij1234567890",
                                   "xoxb-1234567890-abcdefghij", "AKIAIOSFODNN7EXAMPLE", "glpat-abcdefghij0123456789",
                                   "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"])
def test_a_token_of_a_known_format_is_redacted_wherever_it_appears(token):
    from rlconf.settings import redact

    assert redact({"notes": f"see {token} here", "path": f"/data/{token}/x.csv"}) == {
        "notes": "see *** here", "path": "/data/***/x.csv"}


def test_a_path_that_merely_looks_random_is_kept_and_a_key_named_like_a_secret_is_not():
    from rlconf.settings import redact

    config = {"env": {"kwargs": {"path": f"/data/{MD5_NAME}.csv"}}, "logdir": f"runs/{MD5_NAME}/{WANDB_KEY}",
              "logger": {"wandb": {"api_key": WANDB_KEY, "notes": "skateboard_competition_results_2024"}}}
    assert redact(config) == {**config, "logger": {"wandb": {"api_key": "***",
                                                             "notes": "skateboard_competition_results_2024"}}}


def test_a_data_file_named_by_its_md5_keeps_its_name_and_the_run_evaluates(tmp_path):
    """config.yaml once held ``.../***.csv`` for such a file, after which eval, resume and rerun failed."""
    from conftest import only_run_dir

    data = tmp_path / "data" / f"{MD5_NAME}.csv"
    data.parent.mkdir()
    data.write_text("x,y,label\n" + "".join(f"{i % 7},{i % 3},{'ab'[i % 2]}\n" for i in range(40)))
    result = run_cli_in("run", "agent=linucb", "env=bandit/dataset", f"env.kwargs.path={data}", "steps=200",
                        "test_episodes=10", "quiet=true", f"logdir={tmp_path / 'runs'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    assert str(data) in (run_dir / "config.yaml").read_text()
    evaluated = run_cli_in("eval", str(run_dir), "--episodes", "5", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr


def test_an_error_line_does_not_repeat_a_token_typed(capsys):
    from conftest import one_error_line, run_main

    line = one_error_line(run_main(["run", "agent=dqn", "env=classic/cartpole", f"agent.lr={TOKEN}"], capsys))
    assert TOKEN not in line and "agent.lr=***" in line


def test_a_token_in_logdir_is_in_no_file_of_the_run_and_not_printed(tmp_path):
    import json

    from conftest import only_run_dir

    logdir = tmp_path / f"key-{TOKEN}" / "runs"
    result = run_cli_in("run", *BASE[:4], *FAST_RUN, "logger=csv", f"logdir={logdir}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(logdir) / "summary.json").read_text())
    assert summary["run_dir"].endswith(only_run_dir(logdir).name) and "key-***" in summary["run_dir"]
    assert files_holding_a_secret(logdir) == []
    assert TOKEN not in result.stdout + result.stderr
