"""The async runner (hardware.runner=async): an off-policy agent acting in one process and learning in another
makes the updates per environment step it is configured for, finishes, resumes after kill -9 and after Ctrl-C
without losing a row, and a dead acting process stops the run in one line."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
import torch
from conftest import FAST_RUN, assert_run_refused, only_run_dir
from test_resume import check_episodes, killed_after_checkpoint, resumed_to_the_budget, start_run, wait_for_checkpoint
from test_samplers import spawned_children, the_line_after_killing, wait_until_gone

from rlconf.memory import replay_buffer
from rlconf.memory.shared import SharedReplay

ASYNC = ["hardware.runner=async"]


def updates_of(run_dir: Path, network: str) -> int:
    return int(torch.load(run_dir / "checkpoint.pt", weights_only=True)["agent"][network]["updates"])


@pytest.mark.parametrize("agent,env,network,extra", [
    ("dqn", "classic/cartpole", "q", []),
    ("sac", "classic/pendulum", "policy", ["agent.replay_start_size=500"]),
])
def test_the_async_runner_keeps_the_replay_ratio_of_the_synchronous_agent(agent, env, network, extra, run_cli,
                                                                          workdir, tmp_path):
    steps = 3000
    found = {}
    for runner in ("sync", "async"):
        logdir = tmp_path / runner
        result = run_cli("run", f"agent={agent}", f"env={env}", f"steps={steps}", f"hardware.runner={runner}",
                         *extra, *FAST_RUN, f"logdir={logdir}", cwd=workdir)
        assert result.returncode == 0, result.stderr
        run_dir = only_run_dir(logdir)
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["steps"] == steps
        check_episodes(run_dir, summary) if env == "classic/cartpole" else None
        found[runner] = updates_of(run_dir, network)
    assert found["sync"] > 100
    assert abs(found["async"] - found["sync"]) <= 0.05 * found["sync"], found


def test_an_async_run_resumes_after_kill_9_and_loses_no_row(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    args = ["agent=dqn", "env=classic/cartpole", *ASYNC, "steps=8000", "checkpoint_every=2000", "eval_every=4000",
            "eval_episodes=2", "test_episodes=2", "quiet=true", f"logdir={logdir}"]
    run_dir, saved, before = killed_after_checkpoint(args, workdir, logdir, 2000)
    acting, learning = saved["acting"], saved["agent"]
    assert acting["steps"] == learning["steps"] and acting["calls"] == learning["calls"] > 2000, \
        "the learner caught up with the acting process before the checkpoint"
    summary = resumed_to_the_budget(run_cli, workdir, run_dir, saved, before, 8000)
    assert summary["steps"] == 8000


def test_ctrl_c_stops_both_processes_with_the_replay_and_resume_finishes(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    process = start_run(["agent=dqn", "env=classic/cartpole", *ASYNC, "steps=1000000", "checkpoint_every=2000",
                         "eval_every=0", "test_episodes=2", "quiet=true", f"logdir={logdir}"], workdir)
    run_dir = wait_for_checkpoint(logdir, process, 2000)
    acting = spawned_children(process.pid)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGINT and "stopped by SIGINT" in stderr, stderr
    wait_until_gone(acting)
    saved = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert saved["replay"]["filled"] > 0 and saved["acting"]["calls"] == saved["agent"]["calls"]
    resumed = run_cli("run", f"resume={run_dir}", "steps=6000", "quiet=true", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] >= 6000
    check_episodes(run_dir, summary)


def test_a_dead_acting_process_stops_the_run_in_one_line(workdir, tmp_path):
    logdir = tmp_path / "runs"
    process = start_run(["agent=dqn", "env=classic/cartpole", *ASYNC, "steps=1000000", "checkpoint_every=2000",
                         "quiet=true", f"logdir={logdir}"], workdir)
    run_dir = wait_for_checkpoint(logdir, process, 2000)
    (acting,) = spawned_children(process.pid)
    assert "the acting process died (exit code -9)" in the_line_after_killing(process, acting)
    assert json.loads((run_dir / "status.json").read_text())["state"] == "failed"


def test_the_async_runner_is_refused_where_it_cannot_split_an_agent(run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=ppo", "env=classic/cartpole", *ASYNC],
                       ["hardware.runner=async", "agent=ppo", "dqn", "sac"], workdir, tmp_path / "a")
    assert_run_refused(run_cli, ["agent=rainbow", "env=classic/cartpole", *ASYNC],
                       ["agent.replay=prioritized", "allowed: agent.replay=uniform"], workdir, tmp_path / "b")
    assert_run_refused(run_cli, ["agent=dqn", "env=classic/cartpole", *ASYNC, "hardware.learners=2"],
                       ["hardware.runner", "learners"], workdir, tmp_path / "c")
    assert_run_refused(run_cli, ["agent=dqn", "env=classic/cartpole", "hardware.runner=threads"],
                       ["hardware.runner", "threads", "sync, async"], workdir, tmp_path / "d")


def test_a_shared_replay_reads_what_the_other_side_wrote_and_keeps_untouched_pages_free():
    from conftest import states

    replay = replay_buffer(1000, 2, _box(), torch.float32, device="cpu", seed=0)
    shared = SharedReplay.share(replay)
    writer_side = replay_buffer(1000, 2, _box(), torch.float32, device="cpu", seed=0)
    writer = SharedReplay.attach(writer_side, shared.handles())
    for t in range(5):
        writer.store(states(torch.full((2, 3), float(t)), [1.0, 1.0], [False, False]), torch.tensor([0, 1]))
    assert shared.holds(8) and len(shared) == 8, "the reader sees the rows the writer completed"
    batch = shared.sample(16)
    assert ((batch.next_observation - batch.observation) == 1).all()
    assert replay.observation.is_shared()


def _box():
    import gymnasium as gym
    import numpy as np

    return gym.spaces.Box(-1, 1, (3,), np.float32)
