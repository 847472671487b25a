"""Faults: a full disk, a checkpoint of another agent, two resumes of one directory, temporary files a killed
run left, a read-only run directory. Each says what happened in one line and keeps the last good state."""

from __future__ import annotations

import contextlib
import csv
import json
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
import yaml
from conftest import (
    FAST_RUN,
    cli_env,
    one_error_line,
    only_run_dir,
    run_cli_in,
    run_dirs,
    tagged_env,
    tree_digest,
    wait_until_gone,
)

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
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.is_file()}


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


# -- sweeps: a directory of their own, stopped with their runs, resumed in place ----------------------------
# A sweep of runs that train until stopped, a checkpoint every 500 steps (and one at the start).
ENDLESS_SWEEP = ["-m", "agent=dqn", "env=classic/cartpole", "approximation.hidden=[8]", "agent.replay_start_size=100",
                 "steps=1000000", "checkpoint_every=500", "eval_every=0", "test_episodes=2", "quiet=true"]


def start_tagged(args: list[str], cwd: Path, tag: str) -> subprocess.Popen:
    """``rlconf run ARGS`` whose every process carries ``tag`` (conftest.tagged_processes finds them)."""
    return subprocess.Popen([sys.executable, "-m", "rlconf", "run", *args], cwd=cwd, env=tagged_env(tag),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def state(run_dir: Path) -> str:
    return json.loads((run_dir / "status.json").read_text())["state"]


def test_two_sweeps_started_at_once_each_run_their_own_job_in_a_directory_of_their_own(workdir, tmp_path):
    logdir = tmp_path / "runs"
    # Every name a sweep could take in the next ten minutes is taken already, as a sweep started in the same
    # second takes it: each new sweep must make a directory of its own rather than share one.
    now = time.time()
    taken = {logdir / time.strftime("sweep_%Y%m%d-%H%M%S", time.localtime(now + second)) for second in range(600)}
    for folder in taken:
        folder.mkdir(parents=True)
        (folder / "multirun.yaml").write_text("another sweep's\n")
    before = tree_digest(logdir)
    short = [arg if arg != "steps=1000000" else "steps=300" for arg in ENDLESS_SWEEP]
    sweeps = [start([*short, f"seed={seed}", f"logdir={logdir}"], workdir) for seed in (1, 2)]
    for sweep in sweeps:
        _, stderr = sweep.communicate(timeout=600)
        assert sweep.returncode == 0, stderr
    made = sorted(set(logdir.iterdir()) - taken)
    assert len(made) == 2, made
    seeds = set()
    for sweep_dir in made:
        task = yaml.safe_load((sweep_dir / "multirun.yaml").read_text())["hydra"]["overrides"]["task"]
        seed = next(int(o.split("=")[1]) for o in task if o.startswith("seed="))
        runs = run_dirs(sweep_dir)
        assert [json.loads((r / "summary.json").read_text())["seed"] for r in runs] == [seed], (sweep_dir, runs)
        seeds.add(seed)
    assert seeds == {1, 2}, "each sweep ran its own job, in its own directory, with its own multirun.yaml"
    assert {k: v for k, v in tree_digest(logdir).items() if k in before} == before, "no taken directory touched"


def test_sigterm_to_a_sweep_stops_its_runs_at_a_checkpoint_and_a_longer_resume_continues_them_in_place(
        workdir, tmp_path):
    logdir = tmp_path / "runs"
    tag = f"sigterm-{tmp_path.name}"
    sweep = start_tagged([*ENDLESS_SWEEP, "seed=0,1", "hydra.launcher.parallel=2", f"logdir={logdir}"], workdir, tag)
    wait_for(lambda: len(list(logdir.glob("sweep_*/*/checkpoint.pt"))) == 2, sweep, "both runs' first checkpoint")
    sweep.send_signal(signal.SIGTERM)
    wait_until_gone(tag, sweep)  # the sweep waits for its runs: none is left training
    _, stderr = sweep.communicate()
    sweep_dir = next(logdir.glob("sweep_*"))
    assert sweep.returncode == 143 and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines()[-1] == ("rlconf: sweep stopped by SIGTERM; 2 running run(s) stopped at a "
                                               f"checkpoint; continue it with: rlconf run -m resume={sweep_dir}")
    runs = run_dirs(sweep_dir)
    assert len(runs) == 2 and [state(r) for r in runs] == ["stopped", "stopped"]

    # What would change what the runs compute is refused, and the sweep is left as it was.
    before = tree_digest(sweep_dir)
    line = one_error_line(run_cli_in("run", "-m", f"resume={sweep_dir}", "agent.lr=0.5", cwd=workdir))
    assert "agent.lr=0.5" in line and "would change what the sweep's runs compute" in line
    assert tree_digest(sweep_dir) == before

    budget = max(checkpoint_step(r) for r in runs) + 300
    resumed = run_cli_in("run", "-m", f"resume={sweep_dir}", f"steps={budget}", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    assert run_dirs(sweep_dir) == runs, "each run continued in its own directory"
    for run_dir in runs:
        summary = json.loads((run_dir / "summary.json").read_text())
        assert (summary["steps"], summary["resumes"]) == (budget, 1), run_dir
    with open(sweep_dir / "sweep.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert sorted((row["run"], int(row["steps"])) for row in rows) == [(r.name, budget) for r in runs]


def test_kill_9_of_a_sweep_stops_its_run_at_a_checkpoint_and_an_immediate_resume_continues_it(workdir, tmp_path):
    logdir = tmp_path / "runs"
    tag = f"kill-{tmp_path.name}"
    sweep = start_tagged([*ENDLESS_SWEEP, "seed=0", f"logdir={logdir}"], workdir, tag)
    wait_for(lambda: list(logdir.glob("sweep_*/*/checkpoint.pt")), sweep, "the run's first checkpoint")
    sweep.kill()
    wait_until_gone(tag, sweep)  # its run, sent SIGTERM by the kernel as the sweep died, checkpoints and ends
    sweep_dir = next(logdir.glob("sweep_*"))
    run_dir = only_run_dir(sweep_dir)
    assert state(run_dir) == "stopped"
    budget = checkpoint_step(run_dir) + 300
    resumed = run_cli_in("run", "-m", f"resume={sweep_dir}", f"steps={budget}", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    assert only_run_dir(sweep_dir) == run_dir
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["steps"], summary["resumes"]) == (budget, 1)


# -- a resume keeps the earlier result until it has its own; a run stopped while it is set up says so ---------
def finished_run(logdir: Path, workdir: Path) -> Path:
    """A small finished DQN CartPole run: 300 steps, tested, its summary.json written."""
    done = run_cli_in("run", "agent=dqn", "env=classic/cartpole", "steps=300", "agent.replay_start_size=100",
                      *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert done.returncode == 0, done.stderr
    return only_run_dir(logdir)


def shown_as(run_dir: Path) -> str:
    """The state ``rlconf status`` shows for the run."""
    from rlconf.launch.status import collect

    return collect(run_dir)[0].state


def test_resume_of_a_read_only_run_is_one_line(tmpfs, workdir, tmp_path):
    run_dir = finished_run(tmp_path / "runs", workdir)
    disk = tmpfs("16m")
    shutil.copytree(run_dir, disk / "run")
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    line = one_error_line(run_cli_in("run", f"resume={disk / 'run'}", "steps=400", cwd=workdir))
    assert line.startswith(f"rlconf: error: {disk / 'run'} is not writable (read-only file system); "), line
    assert list(workdir.iterdir()) == []


def test_a_killed_resume_keeps_the_earlier_summary_and_is_not_shown_finished_while_it_trains(workdir, tmp_path):
    from rlconf.experiments.rundir.directory import finished_summary

    run_dir = finished_run(tmp_path / "runs", workdir)
    earlier = (run_dir / "summary.json").read_bytes()
    resumed = start([f"resume={run_dir}", "steps=1000000", "quiet=true"], workdir)
    wait_for(lambda: state(run_dir) == "running", resumed, "the resumed run to train")
    assert shown_as(run_dir) == "running", "a longer budget: not finished while it trains"
    assert finished_summary(run_dir, 1_000_000) is None
    resumed.kill()
    resumed.communicate()
    assert (run_dir / "summary.json").read_bytes() == earlier, "the earlier test result is kept"
    assert finished_summary(run_dir, 300) == json.loads(earlier)
    assert shown_as(run_dir) == "failed"  # its process is gone; resume= continues it


# A user's logger (a plugin) that takes a minute to open: the run's setup, caught in the act.
SLOW_START = '''
import time
from dataclasses import dataclass
from pathlib import Path

import rlconf
from rlconf.logging import Logger


@rlconf.register("logger", "slow_start", "a logger that takes a minute to open, and says when it begins")
class SlowStart(Logger):
    @dataclass
    class Config:
        seconds: float = 60.0

    @classmethod
    def from_config(cls, config, context):
        Path("opening.txt").write_text(str(context.run_dir))
        time.sleep(config.seconds)
        return cls()
'''


def stopped_while_set_up(args: list[str], workdir: Path, site: Path) -> str:
    """``rlconf run ARGS`` with the slow logger, sent SIGTERM while it opens: exit 143; its one line."""
    (workdir / "opening.txt").unlink(missing_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "rlconf", "run", *args, "quiet=true", "plugins=[slow_start]",
                                "+logger.slow_start={}"], cwd=workdir, env=cli_env([site]),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (workdir / "opening.txt").exists(), process, "its loggers to open")
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=300)
    (workdir / "opening.txt").unlink()
    assert process.returncode == 143, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_sigterm_while_a_run_is_set_up_leaves_a_status_that_says_so(workdir, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "slow_start.py").write_text(SLOW_START)
    run_dir = finished_run(tmp_path / "runs", workdir)
    earlier = (run_dir / "summary.json").read_bytes()
    line = stopped_while_set_up([f"resume={run_dir}", "steps=600"], workdir, site)
    assert line == f"rlconf: stopped by SIGTERM before training began; continue with: rlconf run resume={run_dir}"
    status = json.loads((run_dir / "status.json").read_text())
    assert (status["state"], status["signal"], status["total_steps"]) == ("stopped", "SIGTERM", 600)
    assert shown_as(run_dir) == "stopped"
    assert (run_dir / "summary.json").read_bytes() == earlier

    # A fresh run stopped so holds nothing of value: its directory is removed, not left to look queued.
    logdir = tmp_path / "fresh"
    line = stopped_while_set_up(["agent=dqn", "env=classic/cartpole", "steps=600", f"logdir={logdir}"], workdir, site)
    assert line.startswith("rlconf: stopped by SIGTERM before training began; nothing was kept ("), line
    assert list(logdir.iterdir()) == []
