"""Shared helpers: the real ``rlconf`` command (in a subprocess or in this process), the run directories it
leaves and its one-line refusals; agents built as a run builds them and driven by their environments; states
as an environment adapter hands them over.

Nothing here hides a failure: no warning filters beyond the project's own, no retries, no skips.
"""

from __future__ import annotations

import atexit
import functools
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
import torch
from warm_cli import WarmCLI, process_stat

from rlconf.core import StateArray

# In-process tests compute on one thread, as runs do by default (hardware.torch_threads=1): with pytest -n 2
# on 2 cores, torch's default of a thread per core would oversubscribe the machine several times over.
torch.set_num_threads(1)

# Small budgets: every real run in the fast suite finishes in a few seconds on one core.
FAST_RUN = ["test_episodes=2", "eval_every=0", "quiet=true"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow learning tests first (in their order), then the rest. pytest-xdist hands the work out one test at
    a time in this order (pyproject's addopts: ``--dist loadgroup``, whose groups are set below, makes every other
    test a unit of its own, and ``--no-loadscope-reorder`` keeps the collection's order): the minutes-long tests
    start at once on both workers and the many short ones fill the gaps, rather than a learning test handed out
    last keeping one worker busy while the other idles. (xdist's plain ``load`` hands out the first quarter of
    each worker's share at once, which gave one worker every learning test.)"""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# Modules whose module-scoped fixtures train runs (test_plot's sweeps, test_eval_watch's trained agents ...): each
# goes to one worker whole, so its fixtures are built once instead of once on each worker that gets one of its
# tests (test_plot's alone cost ~140 s of a core twice over).
ONE_WORKER_MODULES = frozenset({
    "tests/test_eval_watch.py", "tests/test_export.py", "tests/test_export_recurrent.py", "tests/test_logging.py",
    "tests/test_plot.py", "tests/test_untrusted_run_dirs.py", "tests/test_video.py", "tests/test_warmstart.py",
})


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """pytest-xdist's ``loadgroup`` scheduling with the modules above as groups: every other test stays a unit of
    its own, handed out in the collection's order. (xdist's own ``xdist_group`` marker does nothing with pytest 9.2,
    which no longer reads the node id xdist rewrites to carry the group.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class ModuleGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_WORKER_MODULES else nodeid

    return ModuleGroups(config, log)


def cli_env(pythonpath: list[Path] | None = None) -> dict[str, str]:
    """The environment of a CLI subprocess: warnings off (they are not what these tests judge), and no
    user setting that would change how errors are reported."""
    env = dict(os.environ)
    env["PYTHONWARNINGS"] = "ignore"
    env.pop("HYDRA_FULL_ERROR", None)
    env.pop("RLCONF_COMMAND", None)  # set by an in-process call of rlconf.cli.main: each call says its own
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), *filter(None, [env.get("PYTHONPATH")])])
    return env


def run_cli_in(*args: str, cwd: Path, pythonpath: list[Path] | None = None,
               timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m rlconf ARGS`` in ``cwd``; stdout and stderr captured as text. The process is a fork of a warm
    server (tests/warm_cli.py: the same command, without seconds of imports each time), except where a
    PYTHONPATH is set (``pythonpath``, or the test's environment: only a fresh interpreter reads it), or
    RLCONF_TESTS_COLD=1 is, which starts a fresh interpreter."""
    env = cli_env(pythonpath)
    if "PYTHONPATH" in env or env.get("RLCONF_TESTS_COLD") == "1":
        return run_cli_cold(list(args), cwd, env, timeout)
    return warm_cli().run(list(args), cwd, env, timeout)


def run_cli_cold(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m rlconf ARGS`` in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "rlconf", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@functools.cache
def warm_cli() -> WarmCLI:
    """This pytest process's warm rlconf server, started at its first use, stopped when the process ends."""
    server = WarmCLI(cli_env())
    atexit.register(server.close)
    return server


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


def run_main(args: list[str], capsys: pytest.CaptureFixture) -> subprocess.CompletedProcess:
    """``rlconf ARGS`` in this process (``rlconf.cli.main``): its exit status and what it printed, as
    ``run_cli`` returns them, so ``one_error_line`` judges both alike."""
    from rlconf.cli import main

    try:
        code = main(args)
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["rlconf", *args], code, out, err)


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


# -- agents built as a run builds them, and driven by their environments ------------------------------------
def build(*overrides: str, logger=None) -> tuple:
    """What ``rlconf run OVERRIDES`` builds before it trains: the checked settings, the training environments
    and the agent inside its body, with the process seeded as a run seeds it (``OVERRIDES`` name the env);
    ``logger``: what the agent logs to (by default, nowhere)."""
    from rlconf.config import compose
    from rlconf.experiments.build.agent import build_agent
    from rlconf.experiments.build.environment import make_env
    from rlconf.experiments.build.setup import prepare
    from rlconf.logging import LoggerGroup

    settings = prepare(compose(list(overrides), []))
    env = make_env(settings, settings.hardware.n_envs)
    return settings, env, build_agent(settings, env, LoggerGroup([]) if logger is None else logger)


def recording_logger(verbose: bool = False, debug_every: int = 100):
    """A Logger that keeps every group of scalars it is given, in order (``.rows``), and their names
    (``.names``); verbose, it gets the debug scalars every ``debug_every`` updates."""
    from rlconf.logging.base import Logger

    class Recording(Logger):
        def __init__(self):
            super().__init__(verbose, debug_every)
            self.rows: list[dict[str, float]] = []

        @property
        def names(self) -> list[str]:
            return [name for row in self.rows for name in row]

        def add_scalars(self, values: dict[str, float], step: int | None = None) -> None:
            self.rows.append(dict(values))

    return Recording()


def drive(env, agent, steps: int, seed: int = 0) -> StateArray:
    """``agent`` acting in ``env`` from a reset with ``seed`` until the environments have taken ``steps``
    steps in all; the last states."""
    state = env.reset(seed=seed)
    while env.steps < steps:
        state = env.step(agent.act(state))
    return state


def parameters(agent) -> torch.Tensor:
    """Every weight of the agent's networks, flattened into one tensor: has it learned?"""
    state = agent.state_dict()
    tensors = [v for approx in state.values() if isinstance(approx, dict) and "model" in approx
               for v in approx["model"].values()]
    return torch.cat([t.flatten() for t in tensors])


def states(observation, reward, done, mask=None, **extra) -> StateArray:
    """States as an environment adapter hands them over, a row per environment: ``mask`` is 0 where an
    episode terminated (by default wherever one is done); ``extra`` fields ride along (``life_lost``, ...)."""
    done = torch.as_tensor(done, dtype=torch.bool)
    mask = (~done).float() if mask is None else torch.as_tensor(mask, dtype=torch.float32)
    fields = {"observation": torch.as_tensor(observation), "reward": torch.as_tensor(reward, dtype=torch.float32),
              "done": done, "mask": mask, **extra}
    return StateArray(fields, (len(done),))


def plain_gradient_steps(*learning_rates: str) -> tuple[str, ...]:
    """Overrides that make an agent's first update a plain gradient step of size 1, so that a test can read
    what the update learned from off the weights it moved. Adam's first step moves each weight by
    lr * g / (|g| + eps); with lr = eps = 1e8, |g| is lost in eps and the step is g itself. ``learning_rates``:
    the agent's keys for them (``lr``, ``lr_q``, ...)."""
    return (*(f"agent.{key}=1e8" for key in learning_rates), "agent.adam_eps=1e8")


# -- hostile input: nothing outside the run directory touched, no process left behind ------------------------
def tree_digest(root: Path) -> dict[str, tuple[str, int]]:
    """Every file and link below ``root`` (links read, never followed) with a hash of its bytes and its mode:
    a decoy tree is digested before and after a command, and must be unchanged."""
    import hashlib

    digest = {}
    for path in sorted(Path(root).rglob("*")):
        if path.is_symlink():
            digest[str(path.relative_to(root))] = ("link:" + os.readlink(path), 0)
        elif path.is_file():
            digest[str(path.relative_to(root))] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
    return digest


@pytest.fixture
def decoy(tmp_path: Path) -> Path:
    """A folder of files a crafted run directory may point at (``decoy / 'episodes.csv'``, ...), each holding
    2,000 lines; a test links to them and checks ``tree_digest(decoy)`` is what it was."""
    path = tmp_path / "decoy"
    path.mkdir()
    for name in ("episodes.csv", "scalars.csv", "lock", "results.yaml", "journal", "other.txt"):
        (path / name).write_text("".join(f"decoy line {i}\n" for i in range(2000)))
    return path


def tagged_env(tag: str, pythonpath: list[Path] | None = None) -> dict[str, str]:
    """``cli_env`` with ``RLCONF_TEST_TAG=tag``: every process the command starts inherits it, so
    ``tagged_processes(tag)`` finds any it leaves behind, orphans included."""
    return {**cli_env(pythonpath), "RLCONF_TEST_TAG": tag}


def tagged_processes(tag: str) -> list[int]:
    """The live (not zombie) processes whose environment holds ``RLCONF_TEST_TAG=tag``."""
    marker = f"RLCONF_TEST_TAG={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if running(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_until_gone(tag: str, process: subprocess.Popen | None = None) -> None:
    """Wait for every process tagged ``tag`` to end (an event, checked as it happens). Only after ``process``
    (the command itself) has exited: its children have then either ended or been left behind, and a
    process left behind is a failure once the command's own exit has been waited for."""
    if process is not None:
        process.wait(timeout=300)
    for _ in range(200):  # a child that was already ending when its parent exited, reaped within moments
        if not tagged_processes(tag):
            return
        time.sleep(0.05)
    assert not tagged_processes(tag), f"processes left behind: {tagged_processes(tag)}"


def wait_for_exit(pids: list[int], timeout: float = 60) -> None:
    """Wait for the processes ``pids`` to end (the workers, acting process or learners of a run that ended):
    an event, checked as it happens; ``timeout`` only a safety net."""
    deadline = time.monotonic() + timeout
    while alive := [pid for pid in pids if running(pid)]:
        assert time.monotonic() < deadline, f"processes {alive} outlived their run"
        time.sleep(0.05)


def running(pid: int) -> bool:
    stat = process_stat(pid)
    return stat is not None and stat[0] != "Z"


def spawned_children(pid: int) -> list[int]:
    """The live processes that process ``pid`` spawned through multiprocessing (sampler workers, learners, an
    acting process)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        stat = process_stat(entry.name)
        if stat is None or stat[0] == "Z" or stat[1] != pid:
            continue
        try:
            if b"spawn_main" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def assert_preset_reaches(settings, family: str, agent: str) -> None:
    """Every value configs/preset/<family>/<agent>.yaml sets reaches the checked ``settings`` of a run."""
    from omegaconf import OmegaConf

    from rlconf.paths import config_dir

    preset = OmegaConf.to_container(OmegaConf.load(config_dir() / "preset" / family / f"{agent}.yaml"))
    assert preset, f"the {family} {agent} preset sets something"
    for key, value in preset.get("agent", {}).items():
        assert getattr(settings.agent, key) == value, key
    for key, value in preset.get("hardware", {}).items():
        assert getattr(settings.hardware, key) == value, key
    for key, value in preset.get("approximation", {}).items():
        assert settings.approximation[key] == value, key
    if "steps" in preset:
        assert settings.run.steps == preset["steps"]
