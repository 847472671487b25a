"""Run directories: ``<logdir>/<agent>_<env>_<YYYYmmdd-HHMMSS>_s<seed>/``, unique, written atomically.

Inside a sweep a run's directory is named by what it runs instead, ``<sweep>/<agent>_<env>_s<seed>_<hash>``
(the hash of the job's overrides): the same job, requeued by Slurm or launched again by the same command,
finds its own directory, its checkpoint and its summary.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import fnmatch
import hashlib
import os
import socket
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rlconf.errors import RunDirRefused
from rlconf.files import TEMPORARY, open_inside, write_json

# Overrides that say where or how visibly a run executes, not what it computes (the kernels it runs on, which
# round differently, included: threads, compilation, CPU linear kernels): they do not change which directory a
# sweep job belongs to (re-running a sweep on another launcher, or quietly, continues it). An Optuna
# sweep's ``trial`` keys say which trial a run reports to: a trial asked again finds its run directory.
PLACEMENT_KEYS = ("hydra", "launcher", "quiet", "logdir", "resume", "trial", "hardware.torch_threads",
                  "hardware.eval_envs", "hardware.vectorization", "hardware.sampler", "hardware.runner",
                  "hardware.sync_every", "hardware.nodes", "hardware.runs_per_gpu", "hardware.cpus_per_run",
                  "hardware.compile", "hardware.cpu_linear")


CONFIG = "config.yaml"  # the run's fully resolved config
CHECKPOINT = "checkpoint.pt"  # what it has learned (rlconf.experiments.loop.experiment.save_checkpoint)


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
    return make_unique_dir(parent, f"{agent}_{env.replace('/', '-')}_{time.strftime('%Y%m%d-%H%M%S')}_s{seed}")


def make_sweep_dir(logdir: str | Path) -> Path:
    """Create a fresh sweep directory, ``<logdir>/sweep_<YYYYmmdd-HHMMSS>``: two sweeps started in the same
    second each get their own (the later adds ``-1``), so neither launcher ever runs the other's jobs."""
    return make_unique_dir(logdir, f"sweep_{time.strftime('%Y%m%d-%H%M%S')}")


def make_unique_dir(parent: str | Path, stem: str) -> Path:
    """``parent/stem``, or ``stem-1``, ``stem-2``, ... : the first that ``mkdir`` creates. ``mkdir`` is atomic,
    so concurrent processes asking for the same stem each get a directory of their own."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(10_000):
        path = parent / (stem if attempt == 0 else f"{stem}-{attempt}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a directory named {stem} under {parent}")


LOCK = ".lock"  # held (flock) by the one process writing a run directory
SWEEP_LOCK = ".sweep.lock"  # held (lockf) while a sweep directory's sweep.csv is rebuilt

# What rlconf writes in a run directory, in place (the tables, the lock, a sweep job's log) or by replacing it,
# as names or fnmatch patterns; and the folders it writes into. ``check_run_files`` refuses a directory where
# one of them is a symbolic link (or not a file): rlconf writes inside its run directories, never through them.
RUN_FILES = ("episodes.csv", "returns*.csv", "evaluations.csv", "scalars.csv", "pulls.csv", LOCK, "log.txt",
             "status.json", "summary.json", CONFIG, "overrides.yaml", "provenance.json", "*.patch", "error.txt",
             "checkpoint*.pt", "best.pt", "job.json", "wandb.json")
RUN_FOLDERS = {"videos": ("*.mp4",), "wandb": ()}  # folder -> what rlconf writes in it (wandb: wandb's own)
# The same of a sweep directory: Hydra's multirun.yaml, the table, an Optuna sweep's study and results, and the
# local launcher's spool of job files.
SWEEP_FILES = ("multirun.yaml", "sweep.csv", SWEEP_LOCK, "run_names.json", "optuna.journal", "optuna.journal.lock",
               "optimization_results.yaml")
SWEEP_FOLDERS = {".launcher": ("*",)}


def check_run_files(run_dir: str | Path, in_sweep: bool | None = None) -> None:
    """A ValueError in one line, before anything is written or built, where a file rlconf writes in ``run_dir``
    (``RUN_FILES``: a run directory it is about to write, by ``resume=`` or as a sweep's run) is a symbolic link
    or not a file: a crafted directory cannot make rlconf truncate, append to or overwrite a file elsewhere. The
    run of a sweep (``in_sweep``; by default, one beside a multirun.yaml) rebuilds its sweep's table too: it must
    be a folder of its sweep, whose files are checked as well."""
    run_dir = Path(run_dir)
    if in_sweep is None:
        in_sweep = (run_dir.parent / "multirun.yaml").is_file()
    if in_sweep:
        _check_own_files(run_dir.parent, SWEEP_FILES, SWEEP_FOLDERS, "sweep")
    _check_run(run_dir, in_sweep)


def check_sweep_files(sweep_dir: str | Path) -> None:
    """``check_run_files`` of a sweep directory (``-m resume=``): its own files (``SWEEP_FILES``) and folders,
    and each of its run directories (none of which may be a link)."""
    sweep_dir = Path(sweep_dir)
    _check_own_files(sweep_dir, SWEEP_FILES, SWEEP_FOLDERS, "sweep")
    with os.scandir(sweep_dir) as entries:
        children = sorted(entries, key=lambda entry: entry.name)
    for child in children:
        if child.is_dir() and child.name not in SWEEP_FOLDERS:  # a link to a folder elsewhere included
            _check_run(Path(child.path), in_sweep=True)


def _check_run(run_dir: Path, in_sweep: bool) -> None:
    if in_sweep and run_dir.is_symlink():
        raise ValueError(_link_refusal(run_dir, "sweep"))
    _check_own_files(run_dir, RUN_FILES, RUN_FOLDERS, "run")


def _check_own_files(folder: Path, files: Iterable[str], folders: dict[str, tuple[str, ...]], kind: str) -> None:
    """``files`` (names, patterns) of ``folder`` must be regular files, ``folders`` folders (each holding its
    own patterns), where they exist: none a symbolic link."""
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda entry: entry.name):
            path = Path(entry.path)
            if entry.name in folders:
                if entry.is_symlink():
                    raise ValueError(_link_refusal(path, kind))
                if not entry.is_dir():
                    raise ValueError(f"{path} is not a folder; rlconf writes its files there: move it away")
                _check_own_files(path, folders[entry.name], {}, kind)
            elif any(fnmatch.fnmatchcase(entry.name, pattern) for pattern in files):
                if entry.is_symlink():
                    raise ValueError(_link_refusal(path, kind))
                if not entry.is_file(follow_symlinks=False):
                    raise ValueError(f"{path} is not a regular file ({_file_type(path)}); rlconf keeps a file of "
                                     "that name there: move it away")


def _link_refusal(path: Path, kind: str) -> str:
    return (f"{path} is a symbolic link; rlconf writes only inside a {kind} directory, never through a link out "
            "of it: replace the link by a copy of what it points to, or remove it")


def _file_type(path: Path) -> str:
    mode = os.lstat(path).st_mode
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "a device")


class RunDirBusy(RunDirRefused):
    """Another process is writing the run directory."""


def claim(run_dir: Path) -> int:
    """Become the one writer of ``run_dir``: an exclusive ``flock`` on its lock file, held until the
    returned descriptor is closed or the process ends (the kernel releases it even after ``kill -9``, so a
    lock is never stale). Nothing in the directory changes yet: a resume refused after this (a checkpoint of
    another agent) leaves it as it was; ``take_over`` marks it this process's once the run is built."""
    try:
        fd = open_inside(run_dir, LOCK, os.O_RDWR | os.O_CREAT)
    except OSError as error:  # the first write a run makes in its directory: refused before anything is built
        raise RunDirRefused(_unwritable(run_dir, error)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _lock_holder(fd)
        os.close(fd)
        raise RunDirBusy(f"{run_dir} is being written by {holder}; a run directory has one writer at a "
                         "time: wait for that run to end, or stop it") from None
    return fd


def take_over(fd: int, run_dir: Path) -> None:
    """The run holding ``run_dir``'s lock (``claim``) writes there from now on: its lock file names it (for
    another process's refusal, on a machine that cannot see the lock's holder), and the temporary files an
    earlier, killed writer left are removed."""
    with contextlib.suppress(OSError):  # a full disk may not take it; the lock itself holds regardless
        os.ftruncate(fd, 0)
        os.write(fd, f"rlconf pid {os.getpid()} on {socket.gethostname()}".encode())
    for orphan in run_dir.glob(f".*{TEMPORARY}*"):
        orphan.unlink(missing_ok=True)
    for orphan in run_dir.glob(".checkpoint.pt.*"):  # as earlier versions named them
        orphan.unlink(missing_ok=True)


def _lock_holder(fd: int) -> str:
    """Who holds the lock of the open lock file ``fd``: the process /proc/locks names for its inode (a holder
    still building its run has not written its name yet), else the name the file holds (a holder on another
    machine of a shared file system), else "another process"."""
    info = os.fstat(fd)
    place = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/locks") as locks:
        for line in locks:
            fields = line.split()
            if "FLOCK" in fields and "->" not in fields and fields[-3] == place:
                return f"rlconf pid {int(fields[-4])} on {socket.gethostname()}"
    return os.read(fd, 200).decode(errors="replace").strip() or "another process"


def _unwritable(run_dir: Path, error: OSError) -> str:
    """Why ``claim`` could not open the lock file, as one line."""
    if error.errno == errno.ELOOP:
        return _link_refusal(run_dir / LOCK, "run")
    if error.errno == errno.EINVAL:
        return f"{run_dir / LOCK} is not a regular file ({_file_type(run_dir / LOCK)}); rlconf keeps its lock there"
    reason = (error.strerror or os.strerror(error.errno or errno.EIO)).lower()
    return (f"{run_dir} is not writable ({reason}); a run continues in its own directory: make it writable, or "
            "copy it somewhere that is and resume the copy")


def sweep_run_name(agent: str, env: str, seed: int, overrides: list[str]) -> str:
    """The directory name of a sweep job: readable, and unique to the job's overrides (in any order)."""
    key = "\n".join(sorted(o for o in overrides if not is_placement(override_key(o))))
    digest = hashlib.sha1(key.encode()).hexdigest()[:8]
    return f"{agent}_{env.replace('/', '-')}_s{seed}_{digest}"


def override_key(override: str) -> str:
    """The key an override sets: ``agent.lr`` of ``agent.lr=0.1``, ``+logger.x={}`` and ``~seed``."""
    return override.lstrip("+~").split("=", 1)[0]


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


def finished_summary(run_dir: str | Path, steps: int) -> dict[str, Any] | None:
    """The summary.json of the run in ``run_dir`` when it has finished a budget of ``steps``, or was pruned or
    stopped early by a callback (ends of their own, whatever the budget), else None: a run resumed with a longer
    budget has not finished, though it holds the summary of its shorter one. A summary.json that is not what
    rlconf writes is a ConfigError in one line (``saved.SUMMARY_SCHEMA``)."""
    from rlconf.experiments.rundir.saved import SUMMARY_SCHEMA, read_record

    summary = read_record(Path(run_dir) / "summary.json", SUMMARY_SCHEMA)
    if summary is None:
        return None
    ended = summary.get("state") == "pruned" or summary.get("stop_reason")  # ends of their own (stop.*: done early)
    return summary if ended or summary.get("steps", 0) >= steps else None
