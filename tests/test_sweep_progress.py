"""What a sweep shows while its launcher waits: the sweep directory, runs done / running / queued / failed, the
running runs' progress, an ETA, and a closing table with the path of sweep.csv; and how to continue a sweep
stopped with Ctrl-C. Real sweeps of tiny CartPole runs with the default (local) launcher."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env, run_dirs, wait_while_running
from test_progress import run_on_a_terminal, visible_lines

CARTPOLE = ["agent=dqn", "env=classic/cartpole"]
TINY = ["steps=500", "test_episodes=3", "eval_every=0"]


def the_sweep(logdir: Path) -> Path:
    (sweep,) = logdir.glob("sweep_*")
    return sweep


def test_a_sweep_off_a_terminal_says_what_it_does_in_plain_lines_and_ends_with_a_table(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", *CARTPOLE, "seed=0,1", *TINY, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    sweep = the_sweep(logdir)
    lines = result.stderr.splitlines()
    assert lines[0] == (f"rlconf: sweep {sweep}: 2 runs, 1 at a time on this machine; rlconf status {sweep} "
                        "shows them too")
    summaries = {d.name: json.loads((d / "summary.json").read_text()) for d in run_dirs(sweep)}
    assert len(summaries) == 2
    for name, summary in summaries.items():
        assert any(line.startswith(f"rlconf: sweep: started {name}; ") for line in lines), lines
        done = f"rlconf: sweep: {name} done, test return {summary['test_return_mean']:.1f}; "
        assert any(line.startswith(done) for line in lines), lines
    assert "rlconf: sweep: " in lines[1] and "0 done, 1 running, 1 queued, 0 failed; ETA" in lines[1]
    # The closing table: one line per run, its state, steps and final test return, then sweep.csv.
    start = next(i for i, line in enumerate(lines) if re.fullmatch(
        rf"rlconf: sweep {re.escape(str(sweep))}: 2 runs in \d+:\d\d:\d\d, 2 done", line))
    assert lines[start + 1].split() == ["run", "state", "steps", "test", "return"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[start + 2:start + 4]}
    assert rows == {name: ["done", "500", f"{s['test_return_mean']:.1f}"] for name, s in summaries.items()}
    assert lines[start + 4] == f"rlconf: results: {sweep / 'sweep.csv'}"
    assert (sweep / "sweep.csv").exists()


def test_a_basic_launcher_sweep_ends_with_the_same_summary(run_cli, workdir, tmp_path):
    """launcher=basic (the runs in this process, each printing its own progress) says the sweep directory first,
    a line as each run starts and ends, and closes with the table and the path of sweep.csv, as launcher=local."""
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", "agent=random,ucb", "env=bandit/bernoulli", "steps=300", "test_episodes=3",
                     "launcher=basic", f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    sweep = the_sweep(logdir)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith(("rlconf:", "  "))]
    assert lines[0] == (f"rlconf: sweep {sweep}: 2 runs, one after another in this process; rlconf status {sweep} "
                        "shows them too")
    names = sorted(d.name for d in run_dirs(sweep))
    assert [line.split(";")[0] for line in lines if line.startswith("rlconf: sweep: started")] == [
        f"rlconf: sweep: started {name}" for name in names]
    assert re.fullmatch(rf"rlconf: sweep {re.escape(str(sweep))}: 2 runs in \d+:\d\d:\d\d, 2 done", lines[-5])
    assert lines[-4].split() == ["run", "state", "steps", "test", "return"]
    assert [line.split()[:3] for line in lines[-3:-1]] == [[name, "done", "300"] for name in names]
    assert lines[-1] == f"rlconf: results: {sweep / 'sweep.csv'}"
    assert all(json.loads((sweep / name / "job.json").read_text())["launcher"] == "basic" for name in names)


def test_a_quiet_sweep_prints_nothing(run_cli, workdir, tmp_path):
    result = run_cli("run", "-m", *CARTPOLE, "seed=0,1", *TINY, "quiet=true", f"logdir={tmp_path / 'runs'}",
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_a_sweep_on_a_terminal_shows_a_live_block_and_ends_with_the_table(tmp_path):
    logdir = tmp_path / "runs"
    status, output = run_on_a_terminal(["-m", *CARTPOLE, "seed=0,1", *TINY, f"logdir={logdir}"], tmp_path)
    assert status == 0, output
    sweep = the_sweep(logdir)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output)
    assert re.search(rf"sweep {re.escape(str(sweep))}: \d done, \d running, \d queued, 0 failed; ETA", plain), plain
    shown = visible_lines(output)
    assert shown[-1] == f"rlconf: results: {sweep / 'sweep.csv'}"
    rows = [line.split() for line in shown[-3:-1]]
    assert sorted(row[0] for row in rows) == sorted(d.name for d in run_dirs(sweep))
    assert all(row[1:3] == ["done", "500"] for row in rows), shown


def test_a_failed_run_is_a_line_of_the_table_and_of_the_progress(run_cli, workdir, tmp_path):
    """A run that fails (a learning rate of 1e30 diverges at its first updates) is counted and tabulated as
    failed, with its log named."""
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", *CARTPOLE, "seed=0", "agent.lr=1e30", "agent.replay_start_size=200",
                     "steps=2000", "test_episodes=3", "eval_every=0", f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 1, result.stderr
    sweep = the_sweep(logdir)
    (run_dir,) = [p.parent for p in sweep.glob("*/job.json")]
    assert re.search(rf"rlconf: sweep: {run_dir.name} failed: exited with status 1 \(log: {re.escape(str(run_dir))}"
                     r"/log.txt\); 0 done, 0 running, 0 queued, 1 failed", result.stderr), result.stderr
    assert re.search(rf"\n  {run_dir.name}\s+failed\s", result.stderr), result.stderr
    assert "rlconf: no run finished: no sweep.csv" in result.stderr


def test_ctrl_c_stops_a_sweep_and_says_how_to_continue_it(tmp_path, workdir):
    logdir = tmp_path / "runs"
    launcher = subprocess.Popen([sys.executable, "-m", "rlconf", "run", "-m", *CARTPOLE, "seed=0,1", "steps=1000000",
                                 "checkpoint_every=0", "eval_every=0", f"logdir={logdir}"], cwd=workdir,
                                env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The first run's step-0 checkpoint is written once Ctrl-C has become a request to stop: the event waited
    # for (the timeout is a safety net for a loaded machine, where startup alone may take a minute).
    wait_while_running(launcher, lambda: list(logdir.glob("sweep_*/*/checkpoint.pt")), "a run's first checkpoint",
                       timeout=600)
    launcher.send_signal(signal.SIGINT)
    try:
        _, stderr = launcher.communicate(timeout=600)  # the run writes its checkpoint with its replay memory
    except subprocess.TimeoutExpired:
        launcher.kill()
        pytest.fail(f"the sweep did not stop after Ctrl-C; its stderr: {launcher.communicate()[1]}")
    assert launcher.returncode == 130, stderr
    sweep = the_sweep(logdir)
    assert f"rlconf: sweep stopped; continue it with: rlconf run -m resume={sweep}" in stderr, stderr
