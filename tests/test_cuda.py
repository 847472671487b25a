"""The GPU paths, where a CUDA device is visible (a GPU machine; CI's machine has none, so they are skipped there).

Each family of agents trains with ``hardware=gpu`` and its networks on the GPU, and the checkpoint it leaves is
evaluated on the CPU (``rlconf eval --device cpu``) with the returns it gives on the GPU; a run killed on the GPU
resumes there without a lost or repeated episode; ``launcher=local_gpus`` gives each run its GPU; the quick start's
DQN learns CartPole on the GPU as it does on the CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import FAST_RUN, only_run_dir
from test_resume import check_episodes, read_rows, start_run, wait_for_checkpoint

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device is visible here")]

# One agent of each kind of update: value-based (replay, target network), distributional with noisy nets and
# prioritised replay, on-policy over parallel envs, and the three actor-critics on continuous actions.
AGENTS = [
    ("dqn", "classic/cartpole"),
    ("rainbow", "classic/cartpole"),
    ("ppo", "classic/cartpole"),
    ("a2c", "classic/cartpole"),
    ("sac", "classic/pendulum"),
    ("td3", "classic/pendulum"),
    ("ddpg", "classic/pendulum"),
]


def summary_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.mark.parametrize(("agent", "env"), AGENTS, ids=[a for a, _ in AGENTS])
def test_an_agent_trains_on_the_gpu_and_its_checkpoint_plays_the_same_on_the_cpu(agent, env, run_cli, workdir,
                                                                                  tmp_path):
    logdir = tmp_path / "runs"
    trained = run_cli("run", f"agent={agent}", f"env={env}", "hardware=gpu", "steps=3000", *FAST_RUN,
                      f"logdir={logdir}", cwd=workdir)
    assert trained.returncode == 0, trained.stderr
    run_dir = only_run_dir(logdir)
    summary = summary_of(run_dir)
    assert summary["steps"] >= 3000 and np.isfinite(summary["test_return_mean"])
    assert summary["hardware"]["device"] == "cuda"
    assert summary["gpu_memory_peak_bytes"] > 0, "the networks and their updates were on the GPU"

    def evaluated(*device: str) -> list[float]:
        result = run_cli("eval", str(run_dir), "--episodes", "3", "--seed", "7", *device, cwd=workdir)
        assert result.returncode == 0, result.stderr
        return json.loads((run_dir / "eval.json").read_text())["returns"]

    on_gpu = evaluated()
    on_cpu = evaluated("--device", "cpu")
    assert json.loads((run_dir / "eval.json").read_text())["device"] == "cpu"
    # The same weights and seeds: the same games, up to float rounding between the two devices' kernels.
    assert on_cpu == pytest.approx(on_gpu, rel=0.02, abs=1.0)


def test_a_run_killed_on_the_gpu_resumes_there_without_a_lost_or_repeated_episode(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    args = ["agent=dqn", "env=classic/cartpole", "hardware=gpu", "steps=6000", "checkpoint_every=1000",
            *FAST_RUN, f"logdir={logdir}"]
    process = start_run(args, workdir)
    run_dir = wait_for_checkpoint(logdir, process, 2000, timeout=900)
    process.kill()
    process.communicate(timeout=60)
    saved = torch.load(run_dir / "checkpoint.pt", map_location="cpu", weights_only=False)
    before = read_rows(run_dir / "episodes.csv")

    resumed = run_cli("run", f"resume={run_dir}", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    summary = summary_of(run_dir)
    assert summary["steps"] == 6000 and summary["resumes"] == 1
    rows = check_episodes(run_dir, summary)
    assert rows[: saved["episodes"]] == before[: saved["episodes"]]
    assert summary["gpu_memory_peak_bytes"] > 0


def test_local_gpus_runs_two_runs_on_one_gpu_each_on_it(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", "agent=dqn", "env=classic/cartpole", "seed=0,1", "steps=2000", *FAST_RUN,
                     f"logdir={logdir}", "launcher=local_gpus", "hardware=gpus", "hydra.launcher.gpus=[0]",
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    summaries = [summary_of(p.parent) for p in logdir.glob("sweep_*/*/summary.json")]
    assert len(summaries) == 2
    assert [s["cuda_visible_devices"] for s in summaries] == ["0", "0"], "runs_per_gpu=2: both on GPU 0"
    assert all(s["gpu_memory_peak_bytes"] > 0 for s in summaries)
    a, b = summaries
    assert a["started_at"] < b["finished_at"] and b["started_at"] < a["finished_at"], "the two ran at once"


@pytest.mark.slow
def test_the_quick_start_learns_cartpole_on_the_gpu(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "agent=dqn", "env=classic/cartpole", "hardware=gpu", "quiet=true", f"logdir={logdir}",
                     cwd=workdir, timeout=1800)
    assert result.returncode == 0, result.stderr
    assert summary_of(only_run_dir(logdir))["test_return_mean"] >= 475
