"""Shared helpers: the real ``rlconf`` command in a subprocess, and the run directories it leaves.

Nothing here hides a failure: no warning filters beyond the project's own, no retries, no skips.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
import torch

# In-process tests compute on one thread, as runs do by default (hardware.torch_threads=1): with pytest -n 2
# on 2 cores, torch's default of a thread per core would oversubscribe the machine several times over.
torch.set_num_threads(1)

# Small budgets: every real run in the fast suite finishes in a few seconds on one core.
FAST_RUN = ["test_episodes=2", "eval_every=0", "quiet=true"]


def cli_env(pythonpath: list[Path] | None = None) -> dict[str, str]:
    """The environment of a CLI subprocess: warnings off (they are not what these tests judge), and no
    user setting that would change how errors are reported."""
    env = dict(os.environ)
    env["PYTHONWARNINGS"] = "ignore"
    env.pop("HYDRA_FULL_ERROR", None)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_cli_in(*args: str, cwd: Path, pythonpath: list[Path] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m rlconf ARGS`` in ``cwd``; stdout and stderr captured as text."""
    return subprocess.run([sys.executable, "-m", "rlconf", *args], cwd=cwd, env=cli_env(pythonpath),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess]:
    """``run_cli(*args, cwd=..., pythonpath=[...])`` returns the CompletedProcess of the real CLI."""
    return run_cli_in


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty working directory for a CLI call, so tests can check that nothing was written there."""
    path = tmp_path / "cwd"
    path.mkdir()
    return path


def run_dirs(logdir: Path) -> list[Path]:
    """The run directories under ``logdir`` (each has a config.yaml), sorted by name."""
    return sorted(p.parent for p in Path(logdir).glob("*/config.yaml"))


def only_run_dir(logdir: Path) -> Path:
    dirs = run_dirs(logdir)
    assert len(dirs) == 1, f"expected one run directory under {logdir}, found {dirs}"
    return dirs[0]


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """Assert the CLI refused its input the way the design asks (exit 2, one line on stderr, no traceback,
    nothing on stdout) and return that line."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("rlconf: error: "), lines[0]
    assert result.stdout == "", result.stdout
    return lines[0]


def assert_run_refused(run_cli, args: list[str], words: list[str], workdir: Path, logdir: Path) -> None:
    """``rlconf run ARGS`` is refused in one line naming every one of ``words``, and writes nothing."""
    line = one_error_line(run_cli("run", *args, f"logdir={logdir}", cwd=workdir))
    for word in words:
        assert word in line, (word, line)
    assert not logdir.exists()
    assert list(workdir.iterdir()) == []


T = TypeVar("T")


def wait_while_running(process: subprocess.Popen, ready: Callable[[], T], what: str, timeout: float = 300) -> T:
    """Poll ``ready()`` until it returns something truthy (returned), failing if the process ends first or
    ``timeout`` seconds pass: a test waits for an event (a file, a checkpoint), the timeout only a safety net."""
    deadline = time.monotonic() + timeout
    while not (result := ready()):
        assert process.poll() is None, (f"the run ended before {what}", process.communicate())
        assert time.monotonic() < deadline, f"no {what} in {timeout:.0f} s"
        time.sleep(0.05)
    return result
