"""Faults: a full disk, a checkpoint of another agent, two resumes of one directory, temporary files a killed
run left, a read-only run directory. Each says what happened in one line and keeps the last good state."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from conftest import FAST_RUN, cli_env, one_error_line, only_run_dir, run_cli_in

# Small networks and a replay saved with every checkpoint: the checkpoint grows as the run goes on.
GROWING = ["agent=dqn", "env=classic/cartpole", "approximation.hidden=[8]", "agent.replay_start_size=100",
           "checkpoint.replay=true", "eval_every=0", "test_episodes=2", "quiet=true"]


def start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rlconf", "run", *args], cwd=cwd, env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition, process: subprocess.Popen | None = None, what: str = "") -> None:
    """Until ``condition()``; a process that ends first fails the test with its output."""
    while not condition():
        if process is not None and process.poll() is not None:
            pytest.fail(f"the run ended before {what}: {process.communicate()}")
        time.sleep(0.05)


def checkpoint_step(run_dir: Path) -> int | None:
    try:
        return int(torch.load(run_dir / "checkpoint.pt", weights_only=True)["steps"])
    except Exception:  # not there yet, or being replaced
        return None


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.is_file() and p.name != ".lock"}


@pytest.fixture
def tmpfs(tmp_path) -> Iterator[callable]:
    """``tmpfs(size)`` mounts a small filesystem of its own and returns its folder (root only)."""
    if os.geteuid() != 0:
        pytest.skip("a full disk is made with a small tmpfs, which only root can mount")
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        path = tmp_path / f"disk{len(mounted)}"
        path.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
        mounted.append(path)
        return path

    yield mount
    for path in mounted:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path, leave: int = 0) -> None:
    """Fill ``disk`` but for about ``leave`` bytes."""
    free = shutil.disk_usage(disk).free - leave
    with contextlib.suppress(OSError), open(disk / "filler", "wb") as f:
        f.write(b"\0" * max(free, 0))


# -- a full disk ------------------------------------------------------------------------------------------
def test_a_full_disk_stops_the_run_in_one_line_and_keeps_the_last_checkpoint(tmpfs, workdir):
    disk = tmpfs("4m")
    fill(disk, leave=400_000)  # the checkpoint (with its replay) outgrows what is left within a few thousand steps
    result = run_cli_in("run", *GROWING, "steps=1000000", "checkpoint_every=1000", f"logdir={disk}", cwd=workdir)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    line = result.stderr.strip().splitlines()[-1]
    run_dir = only_run_dir(disk)  # the kept checkpoint plays back, moved where eval.json fits
    kept = checkpoint_step(run_dir)
    assert kept is not None and kept >= 1000
    assert line.startswith(f"rlconf: error: no space left on device writing {run_dir / 'checkpoint.pt'} at step ")
    assert line.endswith(f"; the checkpoint of step {kept:,} is kept ({run_dir / 'checkpoint.pt'})")
    assert '"state": "failed"' in (run_dir / "status.json").read_text()
    assert (run_dir / "error.txt").read_text().strip() == line.removeprefix("rlconf: error: ")
    assert not [p for p in run_dir.iterdir() if ".tmp-" in p.name], "no half-written file is left"
    shutil.move(str(run_dir), str(workdir / "run"))
    again = run_cli_in("eval", str(workdir / "run"), "--episodes", "1", cwd=workdir)
    assert again.returncode == 0, again.stderr


def test_sigterm_on_a_full_disk_still_exits_143_in_one_line(tmpfs, workdir):
    disk = tmpfs("8m")
    process = start([*GROWING, "steps=1000000", "checkpoint_every=0", f"logdir={disk}"], workdir)
    wait_for(lambda: any(disk.glob("*/checkpoint.pt")) and checkpoint_step(next(disk.glob("*_s0"))) == 0,
             process, "its first checkpoint")
    run_dir = next(disk.glob("*_s0"))
    wait_for(lambda: "steps" in (run_dir / "status.json").read_text() and
             '"steps": 0' not in (run_dir / "status.json").read_text(), process, "it trained")
    fill(disk, leave=16_384)  # room for status.json and error.txt, not for a checkpoint with its replay
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("rlconf: error: no space left on device writing ")
    assert checkpoint_step(run_dir) == 0, "the checkpoint of step 0 is intact"


def test_a_run_started_on_a_full_disk_leaves_nothing(tmpfs, workdir):
    disk = tmpfs("1m")
    (disk / "runs").mkdir()
    fill(disk)
    result = run_cli_in("run", *GROWING, "steps=500", f"logdir={disk / 'runs'}", cwd=workdir)
    assert result.returncode in (1, 2), result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "no space left on device" in result.stderr
    assert list((disk / "runs").iterdir()) == []


# -- a checkpoint of another agent -----------------------------------------------------------------------
def test_a_mismatched_checkpoint_is_refused_before_anything_is_touched(workdir, tmp_path):
    runs = tmp_path / "runs"
    for agent in ("dqn", "ppo"):
        done = run_cli_in("run", f"agent={agent}", "env=classic/cartpole", "steps=300", "agent.replay_start_size=100"
                          if agent == "dqn" else "agent.n_steps=32", *FAST_RUN, f"logdir={runs / agent}", cwd=workdir)
        assert done.returncode == 0, done.stderr
    dqn, ppo = only_run_dir(runs / "dqn"), only_run_dir(runs / "ppo")
    shutil.copy(ppo / "checkpoint.pt", dqn / "checkpoint.pt")
    before = snapshot(dqn)
    line = one_error_line(run_cli_in("run", f"resume={dqn}", "steps=600", cwd=workdir))
    assert f"cannot resume {dqn / 'checkpoint.pt'}" in line
    assert snapshot(dqn) == before, "summary.json, config.yaml and status.json are as they were"


# -- one writer a run directory ---------------------------------------------------------------------------
def test_a_second_resume_of_a_running_directory_is_refused_and_kill_9_frees_it(workdir, tmp_path):
    logdir = tmp_path / "runs"
    first = start(["agent=dqn", "env=classic/cartpole", "steps=1000000", "checkpoint_every=500",
                   "agent.replay_start_size=100", "eval_every=0", "quiet=true", f"logdir={logdir}"], workdir)
    wait_for(lambda: any(logdir.glob("*/checkpoint.pt")) and (checkpoint_step(next(logdir.glob("*_s0"))) or 0) >= 500,
             first, "its second checkpoint")
    run_dir = only_run_dir(logdir)
    line = one_error_line(run_cli_in("run", f"resume={run_dir}", "steps=2000000", cwd=workdir))
    assert f"{run_dir} is being written by rlconf pid {first.pid}" in line
    first.kill()  # kill -9: the kernel releases the lock; nothing stale is left
    first.wait()
    kept = checkpoint_step(run_dir)
    resumed = run_cli_in("run", f"resume={run_dir}", f"steps={kept + 300}", "test_episodes=1", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    episodes = [int(line.split(",")[1]) for line in (run_dir / "episodes.csv").read_text().splitlines()[1:]]
    assert episodes == list(range(1, len(episodes) + 1)), "no episode lost or repeated"


def test_temporary_files_a_killed_run_left_are_removed_on_resume(workdir, tmp_path):
    logdir = tmp_path / "runs"
    done = run_cli_in("run", "agent=dqn", "env=classic/cartpole", "steps=300", "agent.replay_start_size=100",
                      *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(logdir)
    orphans = [run_dir / ".checkpoint.pt.tmp-k1ll3d9x", run_dir / ".checkpoint.pt.a8f2k1z0",
               run_dir / ".status.json.tmp-0a1b2c3d"]
    for orphan in orphans:
        orphan.write_bytes(b"\0" * 1000)
    resumed = run_cli_in("run", f"resume={run_dir}", "steps=400", "quiet=true", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    assert not [p for p in orphans if p.exists()]


# -- a read-only run directory ---------------------------------------------------------------------------
def test_eval_of_a_read_only_run_prints_the_result_then_says_eval_json_was_not_kept(tmpfs, workdir, tmp_path):
    logdir = tmp_path / "runs"
    done = run_cli_in("run", "agent=dqn", "env=classic/cartpole", "steps=300", "agent.replay_start_size=100",
                      *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert done.returncode == 0, done.stderr
    disk = tmpfs("16m")
    shutil.copytree(only_run_dir(logdir), disk / "run")
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    result = run_cli_in("eval", str(disk / "run"), "--episodes", "2", cwd=workdir)
    assert result.returncode == 1
    assert result.stdout.startswith("dqn classic/cartpole")
    assert result.stderr.strip() == (f"rlconf: error: read-only file system writing {disk / 'run' / 'eval.json'}; "
                                     "the result above was not kept")
