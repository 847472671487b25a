"""Checkpoints kept on purpose: numbered ones (checkpoint.keep), best.pt, and ``rlconf eval --checkpoint``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import torch
from conftest import assert_run_refused, one_error_line, only_run_dir

KEEPING = ["agent=dqn", "env=classic/cartpole", "steps=6000", "eval_every=1000", "eval_episodes=5",
           "checkpoint_every=1000", "checkpoint.keep=3", "test_episodes=5", "quiet=true"]


def periodic_evaluations(run_dir: Path) -> list[tuple[int, float]]:
    """(step, mean) of each periodic evaluation: evaluations.csv without its last row, the final test."""
    with open(run_dir / "evaluations.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    return [(int(r["step"]), float(r["mean"])) for r in rows[:-1]]


def test_keep_best_and_eval_of_either(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", *KEEPING, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    # The three newest checkpoints, each the one written at its step; the last is checkpoint.pt itself.
    assert sorted(p.name for p in run_dir.glob("checkpoint-*.pt")) == [
        "checkpoint-4000.pt", "checkpoint-5000.pt", "checkpoint-6000.pt"]
    for step in (4000, 5000, 6000):
        assert torch.load(run_dir / f"checkpoint-{step}.pt", weights_only=True)["steps"] == step
    assert (run_dir / "checkpoint-6000.pt").read_bytes() == (run_dir / "checkpoint.pt").read_bytes()
    # best.pt: the agent of the best periodic evaluation; played again with that evaluation's seed and
    # episodes, it returns what the evaluation measured.
    evaluations = periodic_evaluations(run_dir)
    best_step, best_mean = max(evaluations, key=lambda e: (e[1], -e[0]))
    best = torch.load(run_dir / "best.pt", weights_only=True)
    assert best["steps"] == best_step and best["eval_return"] == best_mean
    played = run_cli("eval", str(run_dir), "--checkpoint", "best", "--episodes", "5", cwd=workdir)
    assert played.returncode == 0, played.stderr
    kept = json.loads((run_dir / "eval-best.json").read_text())
    assert kept["checkpoint"] == "best" and kept["checkpoint_step"] == best_step
    assert abs(kept["mean"] - best_mean) < 1e-6
    assert f"at step {best_step:,} (best)" in played.stdout
    played = run_cli("eval", str(run_dir), "--checkpoint", "4000", "--episodes", "2", cwd=workdir)
    assert played.returncode == 0, played.stderr
    assert json.loads((run_dir / "eval-4000.json").read_text())["checkpoint_step"] == 4000
    line = one_error_line(run_cli("eval", str(run_dir), "--checkpoint", "1000", cwd=workdir))
    assert "no checkpoint of step 1,000" in line and "allowed: best, last, 4000, 5000, 6000" in line
    line = one_error_line(run_cli("eval", str(run_dir), "--checkpoint", "first", cwd=workdir))
    assert "--checkpoint first: allowed: best, last" in line


def test_a_resumed_run_keeps_its_best_evaluation(run_cli, workdir, tmp_path):
    """The best evaluation is part of the checkpoint: after a resume, best.pt still holds the best of all the
    run's evaluations, not the best of the resumed attempt's."""
    logdir = tmp_path / "runs"
    first = [o for o in KEEPING if not o.startswith("steps=")]
    assert run_cli("run", *first, "steps=3000", f"logdir={logdir}", cwd=workdir).returncode == 0
    run_dir = only_run_dir(logdir)
    saved = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert saved["best_eval"] == max(mean for _, mean in periodic_evaluations(run_dir))
    result = run_cli("run", f"resume={run_dir}", "steps=6000", cwd=workdir)
    assert result.returncode == 0, result.stderr
    best_step, _ = max(periodic_evaluations(run_dir), key=lambda e: (e[1], -e[0]))
    assert torch.load(run_dir / "best.pt", weights_only=True)["steps"] == best_step


def test_no_best_without_evaluations_and_keep_is_checked(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    assert run_cli("run", "agent=dqn", "env=classic/cartpole", "steps=1000", "eval_every=0", "test_episodes=2",
                   "quiet=true", f"logdir={logdir}", cwd=workdir).returncode == 0
    run_dir = only_run_dir(logdir)
    assert not (run_dir / "best.pt").exists() and not list(run_dir.glob("checkpoint-*.pt"))
    line = one_error_line(run_cli("eval", str(run_dir), "--checkpoint", "best", cwd=workdir))
    assert "no best.pt" in line and "eval_every=0" in line
    assert_run_refused(run_cli, ["agent=dqn", "env=classic/cartpole", "checkpoint.keep=-1"],
                       ["checkpoint.keep", "-1"], workdir, tmp_path / "refused")
