"""Run directories: ``<logdir>/<agent>_<env>_<YYYYmmdd-HHMMSS>_s<seed>/``, unique, written atomically."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any


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


def atomic_write(path: str | Path, write) -> None:
    """Write through ``write(file_path)`` to a temporary file beside ``path``, then rename it over ``path``:
    a reader (or a crash) never sees half a file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: str | Path, data: dict[str, Any]) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(data, indent=2) + "\n"))
