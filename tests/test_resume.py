"""Resuming a run from its checkpoint: after kill -9, after Ctrl-C, with a longer budget; and the pieces that
make it exact (loggers cut back to the checkpoint, random generators restored, replay memory cut)."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import (
    FAST_RUN,
    cli_env,
    one_error_line,
    only_run_dir,
    spawned_children,
    wait_for_exit,
    wait_while_running,
)

from rlconf.experiments.rundir.directory import finished_summary

CARTPOLE = ["agent=dqn", "env=classic/cartpole"]


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def checkpoint_steps(run_dir: Path) -> int:
    try:
        return int(torch.load(run_dir / "checkpoint.pt", weights_only=False)["steps"])
    except (OSError, EOFError, RuntimeError, KeyError):  # not written yet
        return 0


def start_run(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rlconf", "run", *args], cwd=cwd, env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_checkpoint(logdir: Path, process: subprocess.Popen, at_least: int, timeout: float = 120) -> Path:
    def checkpointed() -> Path | None:
        dirs = [p.parent for p in logdir.glob("**/config.yaml")]
        return dirs[0] if dirs and checkpoint_steps(dirs[0]) >= at_least else None

    return wait_while_running(process, checkpointed, f"a checkpoint at step {at_least:,}", timeout)


def killed_after_checkpoint(args: list[str], cwd: Path, logdir: Path, at_least: int) -> tuple[Path, dict, list]:
    """A run killed with SIGKILL (no handler, no last checkpoint) once it has checkpointed ``at_least`` steps: its
    directory, its checkpoint and the episodes.csv rows it had written."""
    process = start_run(args, cwd)
    run_dir = wait_for_checkpoint(logdir, process, at_least)
    children = spawned_children(process.pid)  # an acting process, sampler workers
    process.kill()
    process.wait()
    wait_for_exit(children)  # they end with the run, even one waiting for a lock the run held
    process.communicate()  # their ends of its pipes closed with them
    return run_dir, torch.load(run_dir / "checkpoint.pt", weights_only=True), read_rows(run_dir / "episodes.csv")


def check_episodes(run_dir: Path, summary: dict) -> list[dict[str, str]]:
    """episodes.csv after a resume: every episode once, numbered 1..N, steps in order, N the summary's."""
    rows = read_rows(run_dir / "episodes.csv")
    assert [int(r["episode"]) for r in rows] == list(range(1, len(rows) + 1)), "episodes lost or repeated"
    steps = [int(r["step"]) for r in rows]
    assert steps == sorted(steps) and steps[-1] <= summary["steps"]
    assert len(rows) == summary["episodes"]
    for row in rows:  # CartPole pays 1 per step
        assert float(row["return"]) == int(row["length"]) > 0
    walls = [float(r["wall_seconds"]) for r in rows]
    assert walls == sorted(walls), "wall_seconds continues across attempts"
    windows = read_rows(run_dir / "returns100.csv")
    assert [int(w["episode"]) for w in windows] == list(range(100, len(rows) + 1, 100))
    return rows


def resumed_to_the_budget(run_cli, workdir: Path, run_dir: Path, saved: dict, before: list, steps: int) -> dict:
    """Resume a run killed after its checkpoint (``killed_after_checkpoint``) to its budget of ``steps``: every
    episode written up to the checkpoint kept as it was, none lost or repeated after it; the summary."""
    resumed = run_cli("run", f"resume={run_dir}", "quiet=false", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] >= steps and summary["resumes"] == 1
    rows = check_episodes(run_dir, summary)
    assert rows[: saved["episodes"]] == before[: saved["episodes"]]
    return summary


def test_kill_9_then_resume_finishes_the_run_without_gaps_or_repeats(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    args = [*CARTPOLE, "steps=8000", "checkpoint_every=1000", "eval_every=2000", "eval_episodes=2",
            "test_episodes=2", "quiet=true", f"logdir={logdir}"]
    run_dir, saved, before = killed_after_checkpoint(args, workdir, logdir, 2000)
    assert len(before) >= saved["episodes"] > 0

    status = run_cli("status", str(run_dir), cwd=workdir)
    assert status.returncode == 0, status.stderr
    assert "failed" in status.stdout and "killed" in status.stdout

    resumed = run_cli("run", f"resume={run_dir}", "quiet=false", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming {run_dir} at step {saved['steps']:,}" in resumed.stderr
    assert "holds no replay memory" in resumed.stderr, "a periodic checkpoint keeps no replay by default"
    assert only_run_dir(logdir) == run_dir, "resumed in the same directory"

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 8000 and summary["resumes"] == 1
    rows = check_episodes(run_dir, summary)
    # The episodes up to the checkpoint are kept as they were; those written after it were cut and replaced.
    assert rows[: saved["episodes"]] == before[: saved["episodes"]]
    evaluations = [int(r["step"]) for r in read_rows(run_dir / "evaluations.csv")]
    assert evaluations == [2000, 4000, 6000, 8000, 8000], "each evaluation once, then the final test"
    assert torch.load(run_dir / "checkpoint.pt", weights_only=False)["steps"] == 8000
    assert "done" in run_cli("status", str(run_dir), cwd=workdir).stdout


RECURRENT = {
    "r2d1": ["agent=r2d1", "agent.replay_start_size=500", "agent.batch_size=8", "agent.update_frequency=16",
             "checkpoint.replay=true"],
    "ppo_lstm": ["agent=ppo", "approximation.recurrent=lstm"],
}


@pytest.mark.parametrize("agent", sorted(RECURRENT))
def test_kill_9_then_resume_of_a_recurrent_run_loses_no_row_and_restores_its_memory(agent, run_cli, workdir,
                                                                                   tmp_path):
    logdir = tmp_path / "runs"
    args = [*RECURRENT[agent], "env=classic/cartpole", "body=mask_velocity", "steps=3000", "checkpoint_every=1000",
            "eval_every=0", "test_episodes=2", "quiet=true", f"logdir={logdir}"]
    run_dir, saved, before = killed_after_checkpoint(args, workdir, logdir, 1000)
    carried = saved["agent"]["carried"]["state"]  # each environment's recurrent state, saved with the agent
    assert carried.shape[0] == (1 if agent == "r2d1" else 8) and carried.abs().sum() > 0
    if agent == "r2d1":  # the sequence replay with the states its sequences start from
        replay = saved["replay"]
        assert replay["filled"] > 0 and replay["recurrent_state"].abs().sum() > 0
    else:  # the rollout in progress with the states its chunks start from
        assert saved["agent"]["buffer"]["start"].shape == carried.shape

    resumed = run_cli("run", f"resume={run_dir}", "quiet=false", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming {run_dir} at step {saved['steps']:,}" in resumed.stderr
    assert "holds no replay memory" not in resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] >= 3000 and summary["resumes"] == 1
    rows = check_episodes(run_dir, summary)
    assert rows[: saved["episodes"]] == before[: saved["episodes"]]


def test_ctrl_c_checkpoint_keeps_the_replay_and_resume_reaches_the_budget(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    process = start_run([*CARTPOLE, "steps=6000", "checkpoint_every=0", *FAST_RUN, f"logdir={logdir}"], workdir)
    # The step-0 checkpoint is written once Ctrl-C has become a request to stop (not a KeyboardInterrupt): the
    # event waited for, however long a loaded machine takes (the timeout is only a safety net).
    wait_while_running(process, lambda: list(logdir.glob("*/checkpoint.pt")), "the first checkpoint", timeout=900)
    time.sleep(0.5)  # not a deadline: a few steps, so that the replay memory holds something to checkpoint
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=600)  # a checkpoint with the replay memory: seconds, generously
    assert process.returncode == 130, stderr
    run_dir = only_run_dir(logdir)
    saved = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    assert "replay" in saved and saved["replay"]["filled"] > 0, "a signal's checkpoint is complete"
    assert json.loads((run_dir / "status.json").read_text())["state"] == "stopped"
    assert "stopped" in run_cli("status", str(run_dir), cwd=workdir).stdout

    resumed = run_cli("run", f"resume={run_dir}", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    assert "holds no replay memory" not in resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 6000 and summary["resumes"] == 1
    check_episodes(run_dir, summary)


def test_resume_with_a_longer_budget_extends_a_finished_run(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    first = run_cli("run", *CARTPOLE, "steps=600", *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert first.returncode == 0, first.stderr
    run_dir = only_run_dir(logdir)
    again = run_cli("run", f"resume={run_dir}", "quiet=false", cwd=workdir)  # nothing left to do
    assert again.returncode == 0 and "has finished" in again.stderr
    longer = run_cli("run", f"resume={run_dir}", "steps=900", cwd=workdir)
    assert longer.returncode == 0, longer.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 900 and summary["resumes"] == 1
    check_episodes(run_dir, summary)
    assert [int(r["step"]) for r in read_rows(run_dir / "evaluations.csv")] == [900], "the old final test is cut"


@pytest.mark.parametrize(("extra", "words"), [
    (["agent.lr=0.5"], ["agent.lr=0.5", "may change only"]),
    (["env=classic/acrobot"], ["the run trained env=classic/cartpole", "keeps its env"]),
])
def test_resume_refuses_a_run_that_would_compute_something_else(run_cli, workdir, tmp_path, extra, words):
    logdir = tmp_path / "runs"
    assert run_cli("run", *CARTPOLE, "steps=300", *FAST_RUN, f"logdir={logdir}", cwd=workdir).returncode == 0
    run_dir = only_run_dir(logdir)
    files = sorted((p.name, p.stat().st_mtime_ns) for p in run_dir.iterdir())
    line = one_error_line(run_cli("run", f"resume={run_dir}", *extra, cwd=workdir))
    for word in words:
        assert word in line, line
    assert sorted((p.name, p.stat().st_mtime_ns) for p in run_dir.iterdir()) == files, "nothing written"


@pytest.mark.parametrize(("make", "multirun", "words"), [
    (lambda tmp: tmp / "no" / "such", False, ["no such directory"]),
    (lambda tmp: tmp, False, ["not a run directory"]),
    (lambda tmp: tmp, True, ["not a sweep directory"]),
])
def test_bad_resume_path_is_one_line(run_cli, workdir, tmp_path, make, multirun, words):
    line = one_error_line(run_cli("run", *(["-m"] if multirun else []), *CARTPOLE, f"resume={make(tmp_path)}",
                                  cwd=workdir))
    assert all(word in line for word in words), line
    assert list(workdir.iterdir()) == []


# -- the pieces --------------------------------------------------------------------------------------------
def test_csv_logger_cuts_back_to_its_state(tmp_path):
    from rlconf.logging import CSVLogger

    logger = CSVLogger(tmp_path, window=2)
    for episode in range(1, 4):
        logger.add_episode(episode * 10, episode, float(episode), episode, 0.1)
    logger.add_scalar("loss", 1.0, 30)
    state = logger.state_dict()
    for episode in range(4, 7):  # written after the checkpoint, by an attempt that was then killed
        logger.add_episode(episode * 10, episode, float(episode), episode, 0.2)
    logger.add_evaluation(60, [1.0, 2.0])
    logger.close()

    resumed = CSVLogger(tmp_path, window=2)
    resumed.load_state_dict(state)
    resumed.add_episode(40, 4, 40.0, 40, 0.3)
    resumed.close()
    episodes = read_rows(tmp_path / "episodes.csv")
    assert [(r["episode"], r["return"]) for r in episodes] == [("1", "1"), ("2", "2"), ("3", "3"), ("4", "40")]
    assert [r["episode"] for r in read_rows(tmp_path / "returns2.csv")] == ["2", "4"]
    assert read_rows(tmp_path / "returns2.csv")[-1]["mean"] == "21.5", "the window holds episode 3 from before"
    assert read_rows(tmp_path / "evaluations.csv") == []
    assert len(read_rows(tmp_path / "scalars.csv")) == 1

    fresh = CSVLogger(tmp_path, window=2)
    fresh.load_state_dict(None)  # start over: headers only
    fresh.close()
    assert read_rows(tmp_path / "episodes.csv") == [] and (tmp_path / "episodes.csv").read_text().startswith("step,")


def test_components_save_their_own_generators_and_the_globals_are_captured_apart():
    from rlconf.core import rng
    from rlconf.memory import PrioritizedReplayBuffer, ReplayBuffer

    def replays():
        uniform = ReplayBuffer(8, 1, (2,), torch.float32, generator=torch.Generator().manual_seed(2))
        return uniform, PrioritizedReplayBuffer(8, 1, (2,), torch.float32, generator=torch.Generator().manual_seed(3),
                                                seed=4)

    uniform, prioritized = replays()
    torch.rand(5, generator=uniform.generator)
    prioritized.rng.random(5)
    saved = torch.load(_saved({"uniform": uniform.generator_state(), "prioritized": prioritized.generator_state(),
                               "rng": rng.capture()}), weights_only=True)
    assert set(saved["prioritized"]) == {"torch", "numpy"}  # the contents are not in it
    expected = (torch.rand(2, generator=uniform.generator), prioritized.rng.random(3),
                torch.rand(2, generator=prioritized.generator), torch.rand(2), np.random.rand(2))
    uniform, prioritized = replays()
    uniform.load_generator_state(saved["uniform"])
    prioritized.load_generator_state(saved["prioritized"])
    rng.restore(saved["rng"])
    again = (torch.rand(2, generator=uniform.generator), prioritized.rng.random(3),
             torch.rand(2, generator=prioritized.generator), torch.rand(2), np.random.rand(2))
    for a, b in zip(expected, again, strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_a_generator_saved_on_another_device_keeps_its_seeded_stream():
    """A GPU run's policy generator is CUDA's Philox (16 bytes: seed and offset); ``rlconf eval --device cpu``
    builds a CPU generator (Mersenne Twister, 5,056 bytes) that cannot take that state. It draws from its seed,
    and the generators whose states do fit are still restored."""
    from rlconf.core.generators import generators_state, load_generators_state

    cuda_state = torch.zeros(16, dtype=torch.uint8)  # the layout torch.cuda's generators save
    policy, replay = torch.Generator().manual_seed(5), torch.Generator().manual_seed(6)
    saved_replay = generators_state({"replay": replay})
    expected_replay = torch.rand(3, generator=replay)
    expected_policy = torch.rand(3, generator=torch.Generator().manual_seed(5))

    load_generators_state({"policy": policy, "replay": replay}, {"policy": cuda_state, **saved_replay})
    assert torch.equal(torch.rand(3, generator=policy), expected_policy)
    assert torch.equal(torch.rand(3, generator=replay), expected_replay)


def _saved(state: dict):
    """``state`` through torch.save, as a checkpoint writes it."""
    import io

    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return buffer


def test_a_restored_replay_never_samples_the_transition_cut_by_the_resume():
    from rlconf.core import StateArray
    from rlconf.memory import ReplayBuffer

    def state(value: float) -> StateArray:
        return StateArray({"observation": torch.tensor([[value]]), "reward": torch.tensor([1.0]),
                           "done": torch.tensor([False]), "mask": torch.tensor([1.0])}, (1,))

    buffer = ReplayBuffer(16, 1, (1,), torch.float32, generator=torch.Generator().manual_seed(0))
    for t in range(4):
        buffer.store(state(float(t)), torch.tensor([0]))
    resumed = ReplayBuffer(16, 1, (1,), torch.float32, generator=torch.Generator().manual_seed(0))
    resumed.load_state_dict(buffer.state_dict())
    resumed.store(state(100.0), torch.tensor([0]))  # the first state after the resume's reset
    batch = resumed.sample(500)
    pairs = set(zip(batch.observation[:, 0].tolist(), batch.next_observation[:, 0].tolist(), strict=True))
    assert pairs == {(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)}, "state 3 -> the reset state is not a transition"


def test_episodes_reach_the_disk_as_the_run_goes_and_a_resume_still_cuts_them_back(run_cli, workdir, tmp_path):
    """episodes.csv is flushed every few seconds of wall time, not only at evaluations and checkpoints (here
    none after step 0) or when a file buffer fills: MountainCar's 2,000-step episodes write a row every
    second or so, 8 KB of them would take minutes. The rows flushed after the checkpoint are cut on resume."""
    logdir = tmp_path / "runs"
    process = start_run(["agent=dqn", "env=classic/mountain_car", "env.max_episode_steps=2000", "steps=10000000",
                         "checkpoint_every=0", "eval_every=0", "quiet=true", f"logdir={logdir}"], workdir)
    def episodes_on_disk() -> Path | None:
        files = list(logdir.glob("**/episodes.csv"))
        return files[0] if files and len(read_rows(files[0])) >= 2 else None

    episodes = wait_while_running(process, episodes_on_disk, "episode rows on disk")
    process.kill()
    process.communicate(timeout=60)
    run_dir = episodes.parent
    assert episodes.stat().st_size < 4096, "flushed by the clock, not by a full buffer"
    assert checkpoint_steps(run_dir) == 0, "only the step-0 checkpoint: the rows came from the periodic flush"

    resumed = run_cli("run", f"resume={run_dir}", "steps=4000", "test_episodes=1", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    rows = read_rows(run_dir / "episodes.csv")
    assert [int(r["episode"]) for r in rows] == [1, 2], "cut back to the step-0 checkpoint, then 2 episodes"
    assert [int(r["step"]) for r in rows] == [2000, 4000]


def test_a_run_has_finished_once_its_summary_reaches_the_budget(tmp_path: Path):
    """One decision, shared by a resumed run and a launcher's skipping of finished sweep jobs."""
    assert finished_summary(tmp_path, 100) is None  # no summary.json: never finished
    (tmp_path / "summary.json").write_text(json.dumps({"steps": 100, "test_return_mean": 1.5}))
    assert finished_summary(tmp_path, 100) == {"steps": 100, "test_return_mean": 1.5}
    assert finished_summary(tmp_path, 99) is not None  # a vector env may step past its budget
    assert finished_summary(tmp_path, 101) is None  # resumed with a longer budget: not finished any more
