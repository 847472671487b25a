"""The async runner (hardware.runner=async): an off-policy agent acting in one process and learning in another
makes the updates per environment step it is configured for, finishes, resumes after kill -9 and after Ctrl-C
without losing a row, and a dead acting process stops the run in one line. Prioritized replay's priorities (and
R2D1's sequences) are shared by both processes, and survive a resume."""

from __future__ import annotations

import json
import multiprocessing as mp
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import FAST_RUN, assert_run_refused, only_run_dir, spawned_children, wait_for_exit
from test_resume import check_episodes, killed_after_checkpoint, resumed_to_the_budget, start_run, wait_for_checkpoint
from test_samplers import the_line_after_killing

from rlconf.experiments.loop.experiment import ProcessLost
from rlconf.memory import replay_buffer
from rlconf.memory.shared import SharedReplay, WatchedLock

ASYNC = ["hardware.runner=async"]


def updates_of(run_dir: Path, network: str) -> int:
    return int(torch.load(run_dir / "checkpoint.pt", weights_only=True)["agent"][network]["updates"])


@pytest.mark.parametrize("agent,env,network,steps,extra", [
    ("dqn", "classic/cartpole", "q", 3000, []),  # 1,000 updates (the preset's 128 every 256 steps, from 1,000)
    ("sac", "classic/pendulum", "policy", 1500, ["agent.replay_start_size=500"]),  # 1,000 updates
    # The acting process steps its copies in two groups, one act being a step of every group.
    ("dqn", "classic/cartpole", "q", 3000, ["hardware.n_envs=4", "hardware.sampler=alternating",
                                            "hardware.cpus_per_run=2"]),
], ids=["dqn", "sac", "dqn-alternating"])
def test_the_async_runner_keeps_the_replay_ratio_of_the_synchronous_agent(agent, env, network, steps, extra, run_cli,
                                                                          workdir, tmp_path):
    found = {}
    for runner in ("sync", "async"):
        logdir = tmp_path / runner
        result = run_cli("run", f"agent={agent}", f"env={env}", f"steps={steps}", f"hardware.runner={runner}",
                         *extra, *FAST_RUN, f"logdir={logdir}", cwd=workdir)
        assert result.returncode == 0, result.stderr
        run_dir = only_run_dir(logdir)
        summary = json.loads((run_dir / "summary.json").read_text())
        assert steps <= summary["steps"] < steps + 4  # 4 copies may overshoot the budget
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
    wait_for_exit(acting)
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


# DDQN's prioritized replay, tuned to learn CartPole in a few thousand steps.
QUICK_DDQN = ["agent=ddqn", "env=classic/cartpole", "agent.epsilon_decay_steps=3000",
              "agent.target_update_frequency=200", "agent.replay_start_size=500"]


def leaves(replay: dict) -> torch.Tensor:
    """A checkpointed prioritized replay's sum tree's leaves, checked to be the tree of its sums."""
    tree = replay["tree"]
    inner = torch.arange(1, len(tree) // 2)
    assert torch.allclose(tree[inner], tree[2 * inner] + tree[2 * inner + 1]), "a sum tree whose sums are its leaves'"
    return tree[len(tree) // 2:]


def learned_priorities(replay: dict) -> torch.Tensor:
    """The leaves, checked to have moved away from the priority 1 every transition enters with."""
    held = leaves(replay)
    assert replay["max_priority"] > 1 and len(held[held > 0].unique()) > 100, "the learner's updates set them"
    return held


@pytest.mark.slow  # two attempts of 6,000 steps together
def test_an_async_run_with_prioritized_replay_resumes_after_kill_9_with_its_priorities_and_learns(run_cli, workdir,
                                                                                                 tmp_path):
    logdir = tmp_path / "runs"
    args = [*QUICK_DDQN, *ASYNC, "steps=6000", "checkpoint_every=2000", "checkpoint.replay=true", "eval_every=0",
            "test_episodes=10", "quiet=true", f"logdir={logdir}"]
    run_dir, saved, before = killed_after_checkpoint(args, workdir, logdir, 2000)
    assert saved["acting"]["calls"] == saved["agent"]["calls"] > 2000
    held = learned_priorities(saved["replay"])
    summary = resumed_to_the_budget(run_cli, workdir, run_dir, saved, before, 6000)
    final = torch.load(run_dir / "checkpoint.pt", weights_only=True)["replay"]
    assert final["filled"] > saved["replay"]["filled"], "the resumed run stored after the rows it restored"
    assert (leaves(final)[: len(held)][held > 0] > 0).all(), "the restored transitions kept priorities"
    assert summary["test_return_mean"] >= 100, summary  # measured: 167.8 and 153.0 (random play: about 22)


def test_r2d1_acts_and_learns_in_two_processes_sharing_its_sequences_and_their_priorities(run_cli, workdir,
                                                                                           tmp_path):
    result = run_cli("run", "agent=r2d1", "env=classic/cartpole", "body=mask_velocity", *ASYNC, "steps=1000",
                     "hardware.n_envs=2", "agent.replay_start_size=200", "agent.batch_size=4",
                     "agent.replay_buffer_size=2000", "agent.input_priorities=true", "agent.prev_action_reward=true",
                     "checkpoint.replay=true", *FAST_RUN, f"logdir={tmp_path}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    saved = torch.load(only_run_dir(tmp_path) / "checkpoint.pt", weights_only=True)
    assert saved["agent"]["q"]["updates"] > 100
    replay = saved["replay"]
    held = leaves(replay)
    assert len(held[held > 0].unique()) > 20, "sequences entered at their input priorities, then the learner's"
    assert replay["recurrent_state"].abs().sum() > 0 and (replay["previous_action"] >= 0).any(), \
        "the acting process stored its states and actions at sequence starts into the learner's replay"


def test_the_async_runner_is_refused_where_it_cannot_split_an_agent(run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=ppo", "env=classic/cartpole", *ASYNC],
                       ["hardware.runner=async", "agent=ppo", "dqn", "r2d1", "rainbow", "sac"], workdir,
                       tmp_path / "a")
    assert_run_refused(run_cli, ["agent=dqn", "env=classic/cartpole", *ASYNC, "body.normalize_observations=true"],
                       ["hardware.runner=async", "allowed: body.normalize_observations=false"], workdir,
                       tmp_path / "b")
    assert_run_refused(run_cli, ["agent=dqn", "env=classic/cartpole", *ASYNC, "hardware.learners=2"],
                       ["hardware.runner", "learners"], workdir, tmp_path / "c")
    assert_run_refused(run_cli, ["agent=dqn", "env=classic/cartpole", "hardware.runner=threads"],
                       ["hardware.runner", "threads", "sync, async"], workdir, tmp_path / "d")


def _hold(lock, holding) -> None:
    lock.acquire()
    holding.set()
    while True:  # until killed
        time.sleep(1)


def test_a_lock_whose_holder_was_killed_fails_the_wait_for_it_rather_than_hang():
    """The learner's waits for the replay's and the weights' lock look whether the acting process lives: killed
    while it holds the lock, it never releases it."""
    context = mp.get_context("spawn")
    lock, holding = context.Lock(), context.Event()
    holder = context.Process(target=_hold, args=(lock, holding), daemon=True)
    holder.start()
    holding.wait()
    looks = []

    def check() -> None:  # as Acting.check; the holder is killed after the second look
        looks.append(holder.is_alive())
        if len(looks) == 2:
            holder.kill()
            holder.join()
        if not looks[-1]:
            raise ProcessLost("the acting process died")

    with pytest.raises(ProcessLost, match="died"), WatchedLock(lock, check):
        pass
    assert looks == [True, True, False], "the wait went on while the holder lived, and failed once it had died"


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


@pytest.mark.parametrize("n_steps", [1, 3])  # Rainbow's replay: n-step transitions of a prioritized one
def test_a_shared_prioritized_replay_keeps_one_sum_tree_that_both_sides_write(n_steps):
    from conftest import states

    def prioritized():
        return replay_buffer(16, 1, _box(), torch.float32, device="cpu", seed=0, prioritized=True, alpha=1.0,
                             beta=1.0, epsilon=0.0, n_steps=n_steps)

    reader = SharedReplay.share(prioritized())
    writer = SharedReplay.attach(prioritized(), reader.handles())
    tree, rows = reader.base.tree, reader.base.rows

    def store(t: int) -> None:
        writer.store(states(torch.full((1, 3), float(t)), [1.0], [False]), torch.tensor([0]))

    def consistent() -> bool:  # every inner node the sum of its children, in both sides' views
        inner = np.arange(1, tree.leaves)
        return (np.allclose(tree.tree[inner], tree.tree[2 * inner] + tree.tree[2 * inner + 1])
                and writer.base.tree.tree is not tree.tree and np.array_equal(writer.base.tree.tree, tree.tree))

    for t in range(6):
        store(t)
    assert tree.get(np.arange(6)).tolist() == [1.0] * 5 + [0.0], "complete transitions enter at priority 1"
    batch = reader.sample(4)
    reader.update_priorities(batch.indices, torch.full((4,), 3.0))
    assert (tree.get(batch.indices[0].numpy()) == 3.0).all() and consistent()
    store(6)
    assert tree.get(np.array([5])).item() == 3.0, "a new transition enters at the learner's largest priority"

    stale = reader.sample(4)
    for t in range(7, 7 + rows):  # the writer overwrites every row before the learner's update comes
        store(t)
    reader.update_priorities(stale.indices, torch.full((4,), 5.0))
    assert 5.0 not in tree.get(np.arange(rows)) and consistent(), "new transitions keep their own priority"
    assert reader.base.max_priority == writer.base.max_priority == 3.0

    resumed = SharedReplay.share(prioritized())  # a resumed run's: the learner loads its checkpoint's priorities
    resumed_writer = SharedReplay.attach(prioritized(), resumed.handles())
    resumed.load_state_dict(reader.state_dict())
    assert np.array_equal(resumed_writer.base.tree.tree, tree.tree), "the writer sees the priorities loaded"
    resumed_writer.store(states(torch.zeros((1, 3)), [1.0], [False]), torch.tensor([0]))
    assert resumed_writer.base.max_priority == 3.0


def _box():
    import gymnasium as gym
    import numpy as np

    return gym.spaces.Box(-1, 1, (3,), np.float32)
