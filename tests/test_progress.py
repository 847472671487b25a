"""What a run says while it goes: a first line at once, its directory, training progress, the final test as a
phase of its own, the summary line, and how to continue after Ctrl-C. Real runs, off a terminal (stderr is a
pipe here, so the plain lines are what is judged)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import pytest
from conftest import cli_env, only_run_dir, wait_while_running

CARTPOLE = ["agent=dqn", "env=classic/cartpole"]


def test_a_run_says_when_it_tests_and_how_long_it_took(run_cli, workdir, tmp_path):
    """Off a terminal (a log): the run directory first (a log says where the run is before anything else), then
    training lines, then the test as its own phase (a line when it starts, with how many copies play, and one
    per third of its episodes, with the time to go), then the summary line, which says how long the test took.
    Nothing else: no line for a terminal's blank first seconds."""
    logdir = tmp_path / "runs"
    result = run_cli("run", *CARTPOLE, "steps=1000", "test_episodes=30", "eval_every=0", f"logdir={logdir}",
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    first, *lines = result.stderr.splitlines()
    assert first == f"rlconf: run directory {only_run_dir(logdir)}"
    assert all(line.startswith("dqn classic/cartpole: ") for line in lines), lines
    testing = lines.index("dqn classic/cartpole: testing 30 episodes (15 environments at once) ...")
    assert testing > 0 and all(" steps (" in line and "to go" in line for line in lines[:testing])
    thirds = lines[testing + 1:-1]
    assert thirds and all(re.fullmatch(r"dqn classic/cartpole: test \d+/30 episodes \(\d+%\) in \S+, \S+ to go", line)
                          for line in thirds), lines
    summary = lines[-1]
    assert summary.startswith("dqn classic/cartpole: 1,000 steps in ") and "; tested in " in summary
    assert str(only_run_dir(logdir)) in summary
    assert "past the budget" not in summary  # one environment stops exactly at its budget


def test_one_episode_is_counted_in_the_singular(run_cli, workdir, tmp_path):
    """A count of one reads "1 episode" wherever a run prints one: its evaluation, its test and its summary."""
    logdir = tmp_path / "runs"
    result = run_cli("run", *CARTPOLE, "steps=200", "eval_every=200", "eval_episodes=1", "test_episodes=1",
                     f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    evaluation = json.loads((only_run_dir(logdir) / "summary.json").read_text())
    assert re.fullmatch(r"eval at 200 steps: return (\S+) ± 0\.0 over 1 episode \(min \1, max \1\)",
                        next(line for line in lines if line.startswith("eval at"))), lines
    assert "dqn classic/cartpole: testing 1 episode (one game at a time) ..." in lines
    assert f"test return {evaluation['test_return_mean']:.1f} ± 0.0 over 1 episode; tested in " in lines[-1]
    assert " 1 episodes" not in result.stderr


def test_counted_names_one_in_the_singular():
    from rlconf.text import counted

    assert [counted(n, "run") for n in (0, 1, 2, 1200)] == ["0 runs", "1 run", "2 runs", "1,200 runs"]
    assert counted(1, "process", "processes") == "1 process" and counted(3, "process", "processes") == "3 processes"


def test_on_a_terminal_the_first_line_comes_before_the_imports_and_gives_way(tmp_path):
    """On a terminal: "building ..." at once (before torch is imported), erased when the run speaks, then the
    run directory, a bar with an ETA for training and one for the test, and the summary line."""
    logdir = tmp_path / "runs"
    status, output = run_on_a_terminal([*CARTPOLE, "steps=2000", "test_episodes=10", "eval_every=0",
                                        f"logdir={logdir}"], tmp_path)
    assert status == 0, output
    run_dir = only_run_dir(logdir)
    building = output.index("rlconf: building dqn for classic/cartpole (seed 0) ...\r\x1b[K")
    assert output.index(f"rlconf: run directory {run_dir}") > building
    assert "ETA" in output and "episodes" in output
    assert visible_lines(output)[-1].startswith("dqn classic/cartpole: 2,000 steps in ")


def test_on_a_terminal_bad_input_is_still_one_line(tmp_path):
    status, output = run_on_a_terminal(["agent=dqn", "env=pettingzoo/tictactoe", f"logdir={tmp_path / 'runs'}"],
                                       tmp_path)
    assert status == 2, output
    lines = visible_lines(output)
    assert len(lines) == 1 and lines[0].startswith("rlconf: error: "), output


def run_on_a_terminal(args: list[str], cwd, timeout: float = 600) -> tuple[int, str]:
    """``rlconf run ARGS`` with stdout and stderr on a pseudo-terminal; its exit status and all it wrote."""
    import os
    import pty
    import select
    import time

    master, slave = pty.openpty()
    wide = {**cli_env(), "COLUMNS": "400"}  # a long path stays on one line, as on a wide terminal
    process = subprocess.Popen([sys.executable, "-m", "rlconf", "run", *args], cwd=cwd, env=wide,
                               stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout  # a safety net: the loop ends when the run closes the pty
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 1.0)[0]:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the run has gone and the pty is closed
                    break
                if not data:
                    break
                chunks.append(data)
    finally:
        os.close(master)
    return process.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def visible_lines(output: str) -> list[str]:
    """The lines a terminal shows at the end, roughly: of each line what follows its last erase (\\r, ESC[K,
    ESC[2K), other control sequences (cursor moves, colours) dropped."""
    lines = [re.split(r"\r|\x1b\[2?K", line)[-1] for line in output.replace("\r\n", "\n").split("\n")]
    lines = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line) for line in lines]
    return [line for line in lines if line.strip()]


def test_a_quiet_run_prints_nothing(run_cli, workdir, tmp_path):
    result = run_cli("run", *CARTPOLE, "steps=300", "test_episodes=3", "quiet=true", f"logdir={tmp_path / 'runs'}",
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_steps_past_the_budget_are_reported_and_explained(run_cli, workdir, tmp_path):
    """Eight CartPoles step together: the run stops at the first step that reaches its budget, which may pass
    it by up to seven. The summary says so rather than claiming the budget."""
    logdir = tmp_path / "runs"
    result = run_cli("run", "agent=ppo", "env=classic/cartpole", "steps=1000", "test_episodes=2", "eval_every=0",
                     f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    steps = json.loads((only_run_dir(logdir) / "summary.json").read_text())["steps"]
    assert 1000 < steps < 1008  # seed 0 ends at 1,001: the 100,001 of 100,000 that looked like a bug
    assert f"{steps:,} steps ({steps - 1000} past the budget of 1,000: 8 environments step together)" in result.stderr


def test_ctrl_c_says_how_to_continue(tmp_path, workdir):
    """After Ctrl-C the run writes its checkpoint and prints the exact command that continues it, which does."""
    logdir = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, "-m", "rlconf", "run", *CARTPOLE, "steps=1000000", "eval_every=0",
                                "checkpoint_every=0", "test_episodes=2", f"logdir={logdir}"], cwd=workdir,
                               env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The step-0 checkpoint is written once Ctrl-C has become a request to stop: the event waited for (on a
    # loaded machine startup alone may take a minute; the timeout is only a safety net).
    wait_while_running(process, lambda: list(logdir.glob("*/checkpoint.pt")), "the first checkpoint", timeout=600)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=600)  # a checkpoint with the replay memory: seconds, generously
    assert process.returncode == 130, stderr
    run_dir = only_run_dir(logdir)
    command = f"rlconf run resume={run_dir}"
    assert f"; continue with: {command}" in stderr, stderr
    # The command continues the run (with a budget it has passed, it only tests and writes its summary).
    resumed = subprocess.run([sys.executable, "-m", "rlconf", "run", f"resume={run_dir}", "steps=1", "quiet=true"],
                             cwd=workdir, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert (run_dir / "summary.json").exists()


# -- the test phase in process ------------------------------------------------------------------------------
def test_the_final_test_reports_to_status_json_as_it_goes(tmp_path):
    """status.json says a run is testing (phase, episodes done of N) from the test's first step, so rlconf
    status and a sweep's progress tell a long test from a dead run."""
    from rlconf.config import compose
    from rlconf.experiments.build.agent import build_agent
    from rlconf.experiments.build.environment import eval_env_count, make_env
    from rlconf.experiments.build.setup import prepare
    from rlconf.experiments.console.progress import ConsoleProgress
    from rlconf.experiments.loop.experiment import Experiment, LoopSettings
    from rlconf.logging import LoggerGroup

    settings = prepare(compose([*CARTPOLE, "steps=100", "test_episodes=6", "hardware.eval_envs=4"], []))
    env = make_env(settings, 1)
    calls: list[tuple[str, dict]] = []
    experiment = Experiment(
        build_agent(settings, env, LoggerGroup([])), env,
        lambda: make_env(settings, eval_env_count(settings, 6), test=True), LoggerGroup([]), tmp_path,
        LoopSettings(steps=100), ConsoleProgress("", 100, quiet=True),
        on_status=lambda state, **extra: calls.append((state, extra)))
    try:
        returns = experiment.final_test(6)
    finally:
        experiment.close()
    assert len(returns) == 6
    assert experiment.test_env().n_envs == 3  # 6 episodes in 4 copies take two rounds, which 3 copies play
    state, fields = calls[0]  # with the run's progress (steps, episodes, ...) beside them
    assert state == "running"
    assert fields.items() >= {"phase": "test", "test_episodes_done": 0, "test_episodes": 6}.items()


@pytest.mark.parametrize(("episodes", "eval_envs", "copies"), [(30, 16, 15), (5, 16, 5), (100, 16, 15),
                                                                (1, 16, 1), (0, 16, 1), (32, 16, 16)])
def test_tests_use_as_few_copies_as_play_their_episodes_in_as_few_rounds(episodes, eval_envs, copies):
    from rlconf.config import compose
    from rlconf.experiments.build.environment import eval_env_count
    from rlconf.experiments.build.setup import prepare

    settings = prepare(compose([*CARTPOLE, f"hardware.eval_envs={eval_envs}"], []))
    assert eval_env_count(settings, episodes) == copies
