"""Small files written whole or not at all, opened never through a link, and read back within budgets.

A run directory is written by one process and read by many (``rlconf status``, a sweep's launcher, a resume,
someone else who was sent it): every file rlconf replaces is written to a temporary file and renamed over it
(``atomic_write``), every file it appends to is opened without following a link (``open_inside``), and every
file it reads back is read within a size and nesting budget (``read_bounded``, ``load_json``, ``log_tail``), so a
crafted or damaged file is one clear line, never a hang. A ground-floor module (it imports only
``rlconf.errors``): loggers, launchers and the run directory's own modules all write through it.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from rlconf.errors import ConfigError

# Budgets of the YAML and JSON files rlconf reads back. rlconf's own are kilobytes, a few levels deep (a sweep's
# multirun.yaml of many overrides stays far below these).
MAX_FILE_BYTES = 16 * 2**20
MAX_DEPTH = 64
LOG_TAIL_BYTES = 64 * 1024  # how much of a log's end ``log_tail`` reads


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it: done once, at import, before any thread
    os.umask(mask)
    return mask


_UMASK = _read_umask()


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


def open_inside(folder: str | Path, name: str, flags: int) -> int:
    """A descriptor of the file ``name`` of ``folder`` opened with ``flags`` (``os.O_*``; ``O_CREAT`` makes it),
    never through a symbolic link and only onto a regular file: a crafted directory whose ``episodes.csv`` (or
    ``.lock``) links to a file elsewhere gets an OSError naming the file, not a write outside it; a FIFO there
    is refused at once (opened without blocking), not waited on. Every file rlconf writes in place in a run or
    sweep directory is opened here; those it replaces (``atomic_write``) never follow a link either."""
    if os.sep in name:
        raise ValueError(f"{name}: a file name, not a path")
    path = Path(folder) / name
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO opened for writing without blocking, with no reader
            raise OSError(errno.EINVAL, "not a regular file", str(path)) from None
        reason = "a symbolic link" if error.errno == errno.ELOOP else error.strerror or str(error)
        raise OSError(error.errno, reason, str(path)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    os.set_blocking(fd, True)
    return fd


def write_json(path: str | Path, data: dict[str, Any]) -> None:
    write_text(path, json.dumps(data, indent=2) + "\n")


def read_bounded(path: Path) -> str:
    """A text file of a run or sweep directory, or a ConfigError in one line: missing, unreadable, or over
    MAX_FILE_BYTES (read no further than that: a sparse file of a terabyte costs nothing)."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({type(error).__name__})") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB; rlconf writes this file in "
                          "kilobytes and reads at most that much of it")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: cannot be read (not UTF-8 text)") from None


def load_json(path: Path) -> Any:
    """The plain data of a JSON file (rlconf's records: summary.json, status.json, provenance.json ...), or a
    ConfigError in one line: missing, over MAX_FILE_BYTES, not JSON, nested more than MAX_DEPTH levels."""
    text = read_bounded(path)
    try:
        data = json.loads(text)
        too_deep = _depth(data) > MAX_DEPTH
    except RecursionError:  # the parser recurses per level: 100,000 of them exhaust the stack
        too_deep = True
    except ValueError as error:
        raise ConfigError(f"{path}: not valid JSON ({' '.join(str(error).split())})") from None
    if too_deep:
        raise ConfigError(f"{path}: nested more than {MAX_DEPTH} levels deep; rlconf reads at most that")
    return data


def _depth(data: Any, level: int = 0) -> int:
    """How deeply ``data`` nests (stops counting past MAX_DEPTH)."""
    if level > MAX_DEPTH or not isinstance(data, dict | list):
        return level
    children = data.values() if isinstance(data, dict) else data
    return max((_depth(child, level + 1) for child in children), default=level)


def read_json(path: str | Path) -> dict[str, Any] | None:
    """A JSON mapping written by ``write_json``, or None when it is missing or, written by hand, unreadable,
    not a mapping, or beyond the budgets of ``load_json`` (size, depth). A reader that uses the values checks
    them against the file's schema instead (``rlconf.experiments.rundir.saved.read_record``)."""
    try:
        data = load_json(Path(path))
    except ValueError:  # a ConfigError: missing, unreadable, too large or too deep
        return None
    return data if isinstance(data, dict) else None


def log_tail(path: Path, lines: int = 1) -> str:
    """The last non-empty ``lines`` lines of a log file ('' when there is none, or it is no regular file): read
    from its last 64 KiB only, since job.json (which names it) may have been crafted to name a huge one."""
    try:
        with open(path, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # /dev/zero would never end
                return ""
            file.seek(max(0, os.fstat(file.fileno()).st_size - LOG_TAIL_BYTES))
            text = file.read(LOG_TAIL_BYTES).decode(errors="replace")
    except OSError:
        return ""
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])
