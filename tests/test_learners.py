"""Data-parallel learners (hardware.learners): two gloo learners on this CPU, each updating on its half of a fixed
batch, end with the weights of one learner updated on the whole batch; a run of two learners finishes, resumes
after kill -9 without losing a row, stops on Ctrl-C with both learners' states in its checkpoint, and reports a
lost learner in one line."""

from __future__ import annotations

import json
import multiprocessing as mp
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import assert_run_refused, build, only_run_dir, spawned_children, wait_for_exit
from test_resume import (
    check_episodes,
    killed_after_checkpoint,
    read_rows,
    resumed_to_the_budget,
    start_run,
    wait_for_checkpoint,
)
from test_samplers import the_line_after_killing

from rlconf import distributed
from rlconf.experiments.loop.learner_group import learner_group_weights
from rlconf.memory import Rollout, Transitions

UPDATES = 3
BATCH = 64


def fixed_batch(agent: str):
    """A batch of BATCH made-up samples for ``agent``'s update, always the same."""
    g = torch.Generator().manual_seed(7)
    if agent == "ppo":  # CartPole: 4 observations, 2 actions
        return Rollout(torch.randn(BATCH, 4, generator=g), torch.randint(0, 2, (BATCH,), generator=g),
                       -torch.rand(BATCH, generator=g), torch.randn(BATCH, generator=g),
                       torch.randn(BATCH, generator=g))
    observations, actions = (torch.randn(BATCH, 4, generator=g), torch.randint(0, 2, (BATCH,), generator=g)) \
        if agent == "dqn" else (torch.randn(BATCH, 3, generator=g), torch.rand(BATCH, 1, generator=g) * 4 - 2)
    next_observations = observations + 0.1 * torch.randn(observations.shape, generator=g)
    return Transitions(observations, actions, torch.randn(BATCH, generator=g), next_observations,
                       (torch.rand(BATCH, generator=g) > 0.1).float())


def half(batch, part: int, parts: int):
    """Learner ``part``'s share of ``batch``: a contiguous slice of every field."""
    size = BATCH // parts
    return type(batch)(*(None if x is None else x[part * size:(part + 1) * size] for x in batch))


OVERRIDES = {"dqn": ["agent=dqn", "env=classic/cartpole"], "ppo": ["agent=ppo", "env=classic/cartpole"],
             "ddpg": ["agent=ddpg", "env=classic/pendulum"]}


def updated_weights(agent_name: str, part: int, parts: int) -> dict[str, torch.Tensor]:
    """The agent built as a run builds it (the same seed everywhere), after UPDATES updates on its share of the
    fixed batch; its weights."""
    _, env, body = build(*OVERRIDES[agent_name], "seed=3")
    agent = body.agent
    batch = half(fixed_batch(agent_name), part, parts)
    for _ in range(UPDATES):
        if agent_name == "ppo":
            agent._update(batch, agent.features(batch.observation))
        else:
            agent._update(batch)
    env.close()
    return {name: tensor.clone() for name, tensor in learner_group_weights(agent.state_dict()).items()}


def learner(rank: int, port: int, agent_name: str, out: str) -> None:
    """One of two learners in a gloo group on this machine."""
    torch.set_num_threads(1)
    distributed.join(rank, 2, f"tcp://127.0.0.1:{port}", "cpu")
    try:
        torch.save(updated_weights(agent_name, rank, 2), Path(out) / f"learner{rank}.pt")
    finally:
        distributed.leave()


@pytest.mark.parametrize("agent_name", ["dqn", "ppo", "ddpg"])
def test_two_learners_on_halves_of_a_batch_reach_the_weights_of_one_learner_on_all_of_it(agent_name, tmp_path):
    port = distributed.free_port()
    context = mp.get_context("spawn")
    processes = [context.Process(target=learner, args=(rank, port, agent_name, str(tmp_path))) for rank in (0, 1)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(300)
        assert process.exitcode == 0, f"learner exited with {process.exitcode}"
    alone = updated_weights(agent_name, 0, 1)
    first, second = (torch.load(tmp_path / f"learner{rank}.pt") for rank in (0, 1))
    assert first.keys() == alone.keys() and len(alone) >= 4
    before = learner_group_weights_built(agent_name)
    moved = 0
    for name, weight in alone.items():
        assert torch.equal(first[name], second[name]), f"{name}: the learners differ"
        torch.testing.assert_close(first[name], weight, rtol=1e-5, atol=1e-6, msg=lambda m, n=name: f"{n}: {m}")
        moved += not torch.equal(before[name], weight)
    assert moved >= len(alone) // 2, "the updates moved the weights"


def learner_group_weights_built(agent_name: str) -> dict[str, torch.Tensor]:
    _, env, body = build(*OVERRIDES[agent_name], "seed=3")
    env.close()
    return learner_group_weights(body.agent.state_dict())


PPO_LEARNERS = ["agent=ppo", "env=classic/cartpole", "hardware.learners=2"]


def test_two_learners_train_resume_after_kill_9_and_lose_no_row(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    args = [*PPO_LEARNERS, "steps=12000", "checkpoint_every=2048", "eval_every=4096", "eval_episodes=2",
            "test_episodes=5", "quiet=true", f"logdir={logdir}"]
    run_dir, saved, before = killed_after_checkpoint(args, workdir, logdir, 2048)
    assert len(saved["learners"]) == 1, "the second learner's state is in the checkpoint"
    mine, theirs = learner_group_weights(saved["agent"]), learner_group_weights(saved["learners"][0]["agent"])
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[name], theirs[name]) for name in mine)
    assert not torch.equal(saved["agent"]["generators"]["generator"],
                           saved["learners"][0]["agent"]["generators"]["generator"]), "each learner draws its own"
    summary = resumed_to_the_budget(run_cli, workdir, run_dir, saved, before, 12000)
    assert summary["hardware"]["learners"] == 2
    evaluations = [int(r["step"]) for r in read_rows(run_dir / "evaluations.csv")]
    assert len(evaluations) == 2 + 1 and evaluations == sorted(evaluations), "evaluations once each, then the test"
    assert summary["test_return_mean"] > 100, "two learners learn CartPole as one does"


def test_ctrl_c_stops_every_learner_with_one_checkpoint_and_resume_finishes(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    process = start_run([*PPO_LEARNERS, "steps=1000000", "checkpoint_every=2048", "eval_every=0",
                         "test_episodes=2", "quiet=true", f"logdir={logdir}"], workdir)
    run_dir = wait_for_checkpoint(logdir, process, 2048)
    process.send_signal(signal.SIGINT)  # to the first learner alone: the others hear it at the next exchange
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGINT, stderr
    assert "stopped by SIGINT" in stderr and "Traceback" not in stderr, stderr
    saved = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert len(saved["learners"]) == 1 and saved["steps"] > 2048
    resumed = run_cli("run", f"resume={run_dir}", "steps=8000", "quiet=true", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    check_episodes(run_dir, summary)


def test_a_lost_learner_stops_the_run_in_one_line(workdir, tmp_path):
    logdir = tmp_path / "runs"
    process = start_run([*PPO_LEARNERS, "steps=1000000", "checkpoint_every=2048", "quiet=true",
                         f"logdir={logdir}"], workdir)
    run_dir = wait_for_checkpoint(logdir, process, 2048)
    children = spawned_children(process.pid)
    assert len(children) == 1
    assert "lost the others" in the_line_after_killing(process, children[0])
    assert json.loads((run_dir / "status.json").read_text())["state"] == "failed"
    wait_for_exit(children)


def test_learners_are_refused_where_they_cannot_step_together(run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=vpg", "env=classic/cartpole", "hardware.learners=2"],
                       ["hardware.learners=2", "agent=vpg", "ppo", "dqn"], workdir, tmp_path / "a")
    assert_run_refused(run_cli, [*PPO_LEARNERS, "approximation.recurrent=lstm"],
                       ["hardware.learners=2", "recurrent", "allowed"], workdir, tmp_path / "b")
    assert_run_refused(run_cli, [*PPO_LEARNERS, "hardware.nodes=3"], ["hardware.nodes", "3", "divisor"],
                       workdir, tmp_path / "c")
    assert_run_refused(run_cli, ["agent=dqn", "env=classic/cartpole", "hardware.learners=0"],
                       ["hardware.learners", "at least 1"], workdir, tmp_path / "d")


def test_one_learner_run_is_unchanged_by_the_learner_machinery(run_cli, workdir, tmp_path):
    """hardware.learners=1 is the single-process run: its checkpoint has no other learners' states."""
    logdir = tmp_path / "runs"
    result = run_cli("run", "agent=ppo", "env=classic/cartpole", "steps=2048", "test_episodes=2", "eval_every=0",
                     "quiet=true", f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    saved = torch.load(only_run_dir(logdir) / "checkpoint.pt", weights_only=True)
    assert "learners" not in saved and saved["steps"] >= 2048


def test_torchrun_starts_the_learners_of_one_run(workdir, tmp_path):
    """``torchrun --nproc-per-node 2 -m rlconf run ... hardware.learners=2``: torchrun's two processes are the run's
    two learners (they meet in torchrun's store): one run directory, one checkpoint holding both, CartPole learnt."""
    logdir = tmp_path / "runs"
    torchrun = Path(sys.executable).parent / "torchrun"
    result = subprocess.run(
        [str(torchrun), "--standalone", "--nproc-per-node", "2", "-m", "rlconf", "run", *PPO_LEARNERS, "steps=12000",
         "eval_every=0", "test_episodes=10", "quiet=true", f"logdir={logdir}"],
        cwd=workdir, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = only_run_dir(logdir)
    saved = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert len(saved["learners"]) == 1 and saved["steps"] >= 12000
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["hardware"]["learners"] == 2
    assert summary["test_return_mean"] > 100, "two learners under torchrun learn CartPole"
    check_episodes(run_dir, summary)


def test_a_backends_error_is_said_in_a_few_words():
    gloo = RuntimeError("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed "
                        "by peer [127.0.0.1]:29359. This is typically caused by a remote worker crashing. Check the "
                        "logs of the remote worker before reporting an error. GLHF!")
    assert distributed.why(gloo) == "Connection closed by peer [127.0.0.1]:29359"
    assert distributed.why(ConnectionResetError()) == "ConnectionResetError"
    nccl = RuntimeError("NCCL error: remote process exited\nmore")
    assert distributed.why(nccl) == "NCCL error: remote process exited"


LEAVE_SCRIPT = """
import os
from rlconf import distributed
def threads():
    return len(os.listdir("/proc/self/task"))
before = threads()
distributed.join(0, 1, f"tcp://127.0.0.1:{distributed.free_port()}", "cpu")
during = threads()
import torch._dynamo  # what torch.optim imports on its first use, as every learner's optimiser does
distributed.leave()
print(before, during, threads())
"""


def test_leaving_the_group_ends_its_threads():
    """After ``distributed.leave`` the process group is gone, its gloo threads with it, even when torch modules that
    take the group as a default argument (torch.distributed.nn, imported by torch.optim's first use) are imported
    while it exists. A group kept alive into the interpreter's exit made a learner abort as it ended, now and
    then ("terminate called without an active exception": a gloo thread releasing tensors after Python's end)."""
    result = subprocess.run([sys.executable, "-c", LEAVE_SCRIPT], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    before, during, after = map(int, result.stdout.split())
    assert during > before, "the group runs threads of its own"
    assert after == before, f"{after - before} threads of the group outlived leave()"
