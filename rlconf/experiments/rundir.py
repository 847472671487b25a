"""Run directories: ``<logdir>/<agent>_<env>_<YYYYmmdd-HHMMSS>_s<seed>/``, unique, written atomically.

Inside a sweep a run's directory is named by what it runs instead, ``<sweep>/<agent>_<env>_s<seed>_<hash>``
(the hash of the job's overrides): the same job, requeued by Slurm or launched again by the same command,
finds its own directory, its checkpoint and its summary.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

# Overrides that say where or how visibly a run executes, not what it computes: they do not change which
# directory a sweep job belongs to (re-running a sweep on another launcher, or quietly, continues it). An Optuna
# sweep's ``trial`` keys say which trial a run reports to: a trial asked again finds its run directory.
PLACEMENT_KEYS = ("hydra", "launcher", "quiet", "logdir", "resume", "trial", "hardware.torch_threads",
                  "hardware.eval_envs", "hardware.vectorization", "hardware.sampler", "hardware.runner",
                  "hardware.sync_every", "hardware.nodes", "hardware.runs_per_gpu", "hardware.cpus_per_run",
                  "hardware.compile")


CONFIG = "config.yaml"  # the run's fully resolved config
CHECKPOINT = "checkpoint.pt"  # what it has learned (rlconf.experiments.experiment.save_checkpoint)


def check_trained_run(path: str | Path) -> Path:
    """``path`` as a run directory with a checkpoint to play back (``rlconf eval``, ``rlconf watch``); a
    one-line ValueError saying what is missing. Cheap: the CLI asks before it imports torch."""
    folder = Path(path)
    if not folder.is_dir():
        raise ValueError(f"{path}: no such run directory")
    if not (folder / CONFIG).is_file():
        raise ValueError(f"{path}: not a run directory, it has no {CONFIG}")
    if not (folder / CHECKPOINT).is_file():
        raise ValueError(f"{path}: no {CHECKPOINT} (the run stopped before its first checkpoint)")
    return folder


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it: done once, at import, before any thread
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def check_logdir(logdir: str | Path) -> None:
    """A ValueError in one line unless run directories can be made under ``logdir``: checked before anything
    is built, by creating (and removing) a file in the nearest folder that exists. Nothing is left behind."""
    path = Path(logdir).expanduser().absolute()
    too_long = next((part for part in path.parts if len(part.encode()) > 255), None)
    if too_long is not None:
        raise ValueError(f"logdir={logdir}: the name {too_long[:40]}... is longer than 255 bytes")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        where = "" if existing == path else f" (its part {existing} is a file)"
        raise ValueError(f"logdir={logdir}: not a directory{where}; allowed: a folder, or a path to make one at")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        reason = (error.strerror or str(error)).lower()
        raise ValueError(f"logdir={logdir}: cannot write in {existing} ({reason})") from None


def make_run_dir(parent: str | Path, agent: str, env: str, seed: int) -> Path:
    """Create a fresh run directory. ``mkdir`` is atomic, so runs started in the same second (even by
    concurrent processes) each get their own directory: the later ones add ``-1``, ``-2``, ..."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    stem = f"{agent}_{env.replace('/', '-')}_{time.strftime('%Y%m%d-%H%M%S')}_s{seed}"
    for attempt in range(10_000):
        path = parent / (stem if attempt == 0 else f"{stem}-{attempt}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a run directory under {parent}")


TEMPORARY = ".tmp-"  # in the names of atomic_write's temporary files: ``.<name>.tmp-XXXXXXXX``


def atomic_write(path: str | Path, write) -> None:
    """Write through ``write(file_path)`` to a temporary file beside ``path``, then rename it over ``path``:
    a reader (or a crash) never sees half a file. A failed write (a full disk) leaves ``path`` as it was,
    removes the temporary file, and raises an OSError whose ``filename`` is ``path``."""
    path = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{TEMPORARY}")
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp's 0600 would make results unreadable to the user's group
        os.close(fd)
        write(tmp)
        os.replace(tmp, path)
    except OSError as error:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror or str(error), str(path)) from None
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    """A small text file written atomically: whole, or not at all."""
    atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def write_failure(error: OSError) -> str:
    """A failed write as the start of one line: ``no space left on device writing DIR/checkpoint.pt``."""
    reason = (error.strerror or os.strerror(error.errno or errno.EIO)).lower()
    return f"{reason} writing {error.filename}" if error.filename else reason


LOCK = ".lock"  # held (flock) by the one process writing a run directory


class RunDirBusy(Exception):
    """Another process is writing the run directory: one line, exit status 2."""


def claim(run_dir: Path) -> int:
    """Become the one writer of ``run_dir``: an exclusive ``flock`` on its lock file, held until the
    returned descriptor is closed or the process ends (the kernel releases it even after ``kill -9``, so a
    lock is never stale). Temporary files an earlier, killed writer left are then removed."""
    fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o666 & ~_UMASK)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise RunDirBusy(f"{run_dir} is being written by {holder}; a run directory has one writer at a "
                         "time: wait for that run to end, or stop it") from None
    with contextlib.suppress(OSError):  # who holds it, for the refusal's message; a full disk may not take it
        os.ftruncate(fd, 0)
        os.write(fd, f"rlconf pid {os.getpid()} on {socket.gethostname()}".encode())
    for orphan in run_dir.glob(f".*{TEMPORARY}*"):
        orphan.unlink(missing_ok=True)
    for orphan in run_dir.glob(".checkpoint.pt.*"):  # as earlier versions named them
        orphan.unlink(missing_ok=True)
    return fd


def write_json(path: str | Path, data: dict[str, Any]) -> None:
    write_text(path, json.dumps(data, indent=2) + "\n")


def sweep_run_name(agent: str, env: str, seed: int, overrides: list[str]) -> str:
    """The directory name of a sweep job: readable, and unique to the job's overrides (in any order)."""
    key = "\n".join(sorted(o for o in overrides if not is_placement(o.lstrip("+~").split("=", 1)[0])))
    digest = hashlib.sha1(key.encode()).hexdigest()[:8]
    return f"{agent}_{env.replace('/', '-')}_s{seed}_{digest}"


def is_placement(key: str) -> bool:
    """Whether an override of ``key`` only says where or how visibly a run executes."""
    return within(key, PLACEMENT_KEYS)


def within(key: str, prefixes: tuple[str, ...]) -> bool:
    """Whether the config key ``key`` is one of ``prefixes`` or lies below one (``hardware.sampler`` below
    ``hardware``)."""
    return any(key == k or key.startswith(k + ".") for k in prefixes)


def write_status(run_dir: str | Path, state: str, **fields: Any) -> None:
    """``status.json``: what ``rlconf status`` shows for a run (its state, steps, last return, and where it
    runs: host, process, Slurm job), refreshed while it trains."""
    status = {"state": state, "updated": time.time(), "host": socket.gethostname(), "pid": os.getpid(),
              "slurm_job_id": slurm_job_id(), **fields}
    write_json(Path(run_dir) / "status.json", status)


def slurm_job_id() -> str | None:
    """This process's Slurm job as squeue names it (``<array>_<task>`` for a job array), or None."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    if array and task:
        return f"{array}_{task}"
    return os.environ.get("SLURM_JOB_ID")


def read_json(path: str | Path) -> dict[str, Any] | None:
    """A JSON file written by ``write_json``, or None when it is missing (or, written by hand, unreadable)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def finished_summary(run_dir: str | Path, steps: int) -> dict[str, Any] | None:
    """The summary.json of the run in ``run_dir`` when it has finished a budget of ``steps``, or was pruned
    (an end of its own, whatever the budget), else None: a run resumed with a longer budget has not finished,
    though it holds the summary of its shorter one."""
    summary = read_json(Path(run_dir) / "summary.json")
    if summary is None:
        return None
    return summary if summary.get("state") == "pruned" or summary.get("steps", 0) >= steps else None
