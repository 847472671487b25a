"""A sweep directory's table of results: ``sweep.csv``, one row per finished run.

Each row holds the run's directory, its overrides (one column per key), its state (done, or pruned by an Optuna
sweep's pruner: then untested, its last evaluation's step and return beside) and the figures of its summary.json:
those of every run, and those of a kind of run when the sweep holds one (a bandit's regret and best-arm rates,
a multi-agent test's win-or-draw rate).
The table is rebuilt from the run directories whenever a run finishes, under a lock, rather than appended
to: runs finish concurrently on several machines, a requeued run finishes once however often it started,
and a sweep launched again cannot add a row twice.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import os
from collections.abc import Iterator
from pathlib import Path

import yaml

from rlconf.errors import ConfigError
from rlconf.experiments.rundir.directory import SWEEP_LOCK, is_placement
from rlconf.experiments.rundir.saved import load_yaml
from rlconf.files import atomic_write, open_inside, read_json, write_text
from rlconf.settings import redact

SUMMARY_COLUMNS = ["steps", "episodes", "test_return_mean", "test_return_std", "test_episodes", "wall_seconds",
                   "steps_per_second", "resumes"]
# Figures of one kind of run, after "episodes", as columns only when a run of the sweep has them.
KIND_COLUMNS = ["cumulative_regret", "cumulative_regret_std", "regret_per_pull", "optimal_arm_rate",
                "final_optimal_arm_rate", "test_win_or_draw", "pruned_at_step", "pruned_eval_return"]


def finished_runs(sweep_dir: Path) -> Iterator[tuple[Path, dict]]:
    """``(run_dir, summary)`` for every run of the sweep that has finished, by directory name."""
    for summary_path in sorted(Path(sweep_dir).glob("*/summary.json")):
        summary = read_json(summary_path)
        if summary is not None:
            yield summary_path.parent, summary


def overrides_of(run_dir: Path) -> dict[str, str]:
    """What a run was launched with, as key -> value (``+``, ``++`` and ``~`` dropped): its overrides but
    those that only place it (launcher, logdir, quiet, ...) and those a summary column reports as reached
    (``steps``: a vectorised run may take a few more)."""
    try:
        lines = load_yaml(run_dir / "overrides.yaml") or []
    except ConfigError:
        return {}
    if not isinstance(lines, list):
        return {}
    pairs = [str(line).lstrip("+~").split("=", 1) for line in lines]
    return {p[0]: p[1] if len(p) > 1 else "" for p in pairs
            if not is_placement(p[0]) and p[0] not in SUMMARY_COLUMNS + KIND_COLUMNS}


def redact_multirun(sweep_dir: str | Path) -> None:
    """Hydra writes the sweep's command line, secrets and all, into ``multirun.yaml`` before the first job
    starts; each job rewrites it redacted (``rlconf.settings.redact``) when it finds a secret there."""
    path = Path(sweep_dir) / "multirun.yaml"
    try:
        data = load_yaml(path)
    except ConfigError:
        return
    redacted = redact(data)
    if redacted != data:
        write_text(path, yaml.safe_dump(redacted, sort_keys=False))


def write_sweep_table(sweep_dir: str | Path) -> Path:
    """Rebuild ``sweep.csv`` from the finished runs of ``sweep_dir``; returns its path."""
    sweep_dir = Path(sweep_dir)
    # Read and written under one lock: two runs finishing together must not each write a table without
    # the other's row.
    with _locked(sweep_dir, SWEEP_LOCK):
        return _write_table(sweep_dir)


def _write_table(sweep_dir: Path) -> Path:
    rows = []
    keys: list[str] = []
    for run_dir, summary in finished_runs(sweep_dir):
        overrides = overrides_of(run_dir)
        keys += [k for k in overrides if k not in keys]
        rows.append((run_dir, overrides, summary))
    kind = [c for c in KIND_COLUMNS if any(summary.get(c) is not None for _, _, summary in rows)]
    columns = [*SUMMARY_COLUMNS[:2], *kind, *SUMMARY_COLUMNS[2:]]
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["run", *keys, "state", *columns])
    for run_dir, overrides, summary in rows:
        writer.writerow([run_dir.name, *(overrides.get(k, "") for k in keys), summary.get("state", "done"),
                         *(_cell(summary.get(c)) for c in columns)])
    path = sweep_dir / "sweep.csv"
    atomic_write(path, lambda tmp: Path(tmp).write_text(text.getvalue()))
    return path


def _cell(value) -> str:
    return "" if value is None else str(value)


@contextlib.contextmanager
def _locked(folder: Path, name: str) -> Iterator[None]:
    """An exclusive lock on the file ``name`` of ``folder`` (fcntl locks also hold across machines on NFS),
    made there, never through a link (``rlconf.files.open_inside``)."""
    fd = open_inside(folder, name, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
