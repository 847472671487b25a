"""``rlconf status DIR``: each run of a sweep, its state, its steps and its last return.

DIR is a sweep directory, a run directory, or any folder holding them at any depth (``runs/`` with several
sweeps and single runs): every run below it is counted and shown, named by its path below DIR, and a folder
with several sweeps adds a count per sweep.

What a run directory holds says where the run is: ``job.json`` (written by the launcher when it queued
the job), ``status.json`` (written by the run as it trains, with its host, process and Slurm job) and
``summary.json`` (written when it finished). Whether a run that says it is running still is, is asked of
Slurm (squeue) for Slurm jobs and of the process table for runs on this machine; a run that is neither
finished nor alive has failed (killed, or its node lost), and its log's last lines are shown.

States: queued (waiting for a slot or in Slurm's queue, requeued runs too), running, done, pruned (ended
early by an Optuna sweep's pruner after an evaluation, untested: an end like done), failed, and stopped
(stopped by a signal with a checkpoint, or never started by a launcher that was stopped: launch the sweep
again, or ``rlconf run -m resume=SWEEP_DIR``, to continue it).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from rlconf.errors import StatusError
from rlconf.files import log_tail
from rlconf.launch.squeue import QUEUED, RUNNING, squeue_states
from rlconf.text import counted

STATES = ("queued", "running", "done", "pruned", "failed", "stopped")
STALE_SECONDS = 120.0  # a run elsewhere that has not refreshed its status.json for this long is presumed dead


RUN_FILES = ("job.json", "status.json", "config.yaml")  # any of them: a run directory (queued, started)


@dataclass
class RunStatus:
    name: str  # the run directory's path below the folder asked about
    state: str
    steps: int | None = None
    total_steps: int | None = None
    episodes: int | None = None
    last_return: float | None = None
    test_return: float | None = None
    testing: tuple[int, int] | None = None  # (episodes done, episodes) while the final test runs
    where: str = ""
    log: Path | None = None
    note: str = ""


def is_run_dir(folder: Path) -> bool:
    return any((folder / name).is_file() for name in RUN_FILES)


def walk(root: Path) -> tuple[list[Path], list[Path]]:
    """(run directories, sweep directories) at or below ``root``, sorted: a sweep directory holds
    multirun.yaml; hidden folders (``.launcher``) and the inside of a run directory are not searched."""
    runs, sweeps = [], []
    for folder, subfolders, _ in os.walk(root):
        path = Path(folder)
        if is_run_dir(path):
            runs.append(path)
            subfolders.clear()
            continue
        if (path / "multirun.yaml").is_file():
            sweeps.append(path)
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
    return sorted(runs), sorted(sweeps)


def run_dirs(sweep_dir: Path) -> list[Path]:
    """The run directories at or below ``sweep_dir``: a sweep's, a run's own, or those of every sweep and run
    in a folder of them."""
    return walk(sweep_dir)[0]


def collect(sweep_dir: Path) -> list[RunStatus]:
    if not sweep_dir.is_dir():
        raise StatusError(f"{sweep_dir}: no such directory")
    dirs, sweeps = walk(sweep_dir)
    if not dirs and not sweeps:
        raise StatusError(f"{sweep_dir}: not a sweep directory (no multirun.yaml) and no run directory below it")
    records = {d: _records(d) for d in dirs}
    slurm_ids = {str(r[1].get("slurm_job_id") if r[1] and r[1].get("slurm_job_id") else r[0].get("slurm_job_id"))
                 for r in records.values()} - {"None"}
    squeue = squeue_states(sorted(slurm_ids)) if slurm_ids else None
    return [_status(d, _name(d, sweep_dir), *records[d], squeue) for d in dirs]


def _records(run_dir: Path) -> tuple[dict, dict | None, dict | None]:
    """The run's job.json ({} when none), status.json and summary.json (None when none), each checked against
    its schema (``rlconf.experiments.rundir.saved``): a file that is not what rlconf writes is a StatusError line."""
    from rlconf.errors import ConfigError
    from rlconf.experiments.rundir.saved import JOB_SCHEMA, STATUS_SCHEMA, SUMMARY_SCHEMA, read_record

    try:
        return (read_record(run_dir / "job.json", JOB_SCHEMA) or {},
                read_record(run_dir / "status.json", STATUS_SCHEMA),
                read_record(run_dir / "summary.json", SUMMARY_SCHEMA))
    except ConfigError as error:
        raise StatusError(str(error)) from None


def _name(run_dir: Path, root: Path) -> str:
    """The run's path below ``root`` (its own name when ``root`` is the run or its sweep)."""
    return run_dir.name if run_dir == root else run_dir.relative_to(root).as_posix()


def _status(run_dir: Path, name: str, job: dict, status: dict | None, summary: dict | None,
            squeue: dict[str, str] | None) -> RunStatus:
    log = Path(job["log"]) if job.get("log") else None
    if log is None or not log.exists():
        log = run_dir / "error.txt" if (run_dir / "error.txt").exists() else log
    slurm_id = (status or {}).get("slurm_job_id") or job.get("slurm_job_id")
    slurm_state = None if squeue is None or not slurm_id else squeue.get(str(slurm_id), "GONE")
    where = f"slurm {slurm_id}" if slurm_id else (status or {}).get("host", "")
    out = RunStatus(name, "queued", where=where, log=log)
    if status:
        out.steps, out.total_steps = status.get("steps"), status.get("total_steps")
        out.episodes, out.last_return = status.get("episodes"), status.get("last_return")
        if status.get("phase") == "test" and status.get("test_episodes"):
            out.testing = (status.get("test_episodes_done", 0), status["test_episodes"])
    if summary is not None and _finished(summary, status):
        out.state = "pruned" if summary.get("state") == "pruned" else "done"
        if out.state == "pruned" and {"pruned_at_step", "pruned_eval_return"} <= summary.keys():
            out.note = (f"pruned after the evaluation at step {summary['pruned_at_step']:,} (return "
                        f"{summary['pruned_eval_return']:.1f})")
        out.steps, out.episodes = summary.get("steps"), summary.get("episodes")
        out.total_steps = out.total_steps or summary.get("steps")
        out.test_return = summary.get("test_return_mean")
        return out
    if status is None:  # queued by a launcher, not started
        if slurm_state is not None:
            out.state = "queued" if slurm_state in QUEUED else "running" if slurm_state in RUNNING else "failed"
            if out.state == "failed":
                out.note = f"Slurm job {slurm_id} ended ({slurm_state}) before the run started"
        elif job.get("launcher") == "local" and _dead(job.get("launcher_host"), job.get("launcher_pid")):
            out.state, out.note = "stopped", "never started: its launcher was stopped"
        return out
    state = status.get("state")
    if state in ("failed", "stopped"):
        out.state = state
        out.note = status.get("error") or (f"stopped by {status['signal']}" if status.get("signal") else "")
        return out
    # running or requeued: is it still?
    if slurm_state is not None:
        if slurm_state in QUEUED:
            out.state = "queued"
            out.note = "requeued" if state == "requeued" else ""
        elif slurm_state in RUNNING:
            out.state = "running"
        else:
            out.state, out.note = "failed", f"Slurm job {slurm_id} ended ({slurm_state})"
        return out
    if state == "requeued":  # Slurm cannot be asked: trust the run
        out.state, out.note = "queued", "requeued"
    elif _dead(status.get("host"), status.get("pid")):
        out.state, out.note = "failed", "its process is gone (killed?)"
    elif status.get("host") != socket.gethostname() and time.time() - status.get("updated", 0) > STALE_SECONDS:
        out.state, out.note = "failed", f"no news for {(time.time() - status.get('updated', 0)) / 60:.0f} minutes"
    else:
        out.state = "running"
    return out


def _finished(summary: dict, status: dict | None) -> bool:
    """Whether the run's summary.json is its end: a run resumed with a longer budget keeps the summary of its
    shorter one (its earlier test result) while it trains on, and has not finished (``rundir.finished_summary``
    by the budget its status.json names)."""
    if status is None or status.get("state") in ("done", "pruned") or summary.get("state") == "pruned":
        return True
    budget = status.get("total_steps")
    return budget is None or summary.get("steps", 0) >= budget


def _dead(host: str | None, pid: int | None) -> bool:
    """Whether a process of this machine is gone (False when it is elsewhere: we cannot tell)."""
    if host != socket.gethostname() or not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # someone else's process with that number
        return False
    try:  # killed, but not yet reaped by its parent (or by an init that takes its time): a zombie
        return Path(f"/proc/{int(pid)}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def counts_line(runs: list[RunStatus]) -> str:
    """``4 runs, 3 done, 1 failed``."""
    counts = {s: sum(r.state == s for r in runs) for s in STATES}
    return counted(len(runs), "run") + "".join(f", {n} {s}" for s, n in counts.items() if n)


def groups(runs: list[RunStatus], sweeps: list[Path], root: Path) -> list[tuple[str, list[RunStatus]]]:
    """(sweep, its runs) for each sweep below ``root``, then ("single runs", the others) when there are any."""
    names = [_name(sweep, root) for sweep in sweeps if sweep != root]
    out = [(name, [r for r in runs if r.name.startswith(name + "/")]) for name in names]
    loose = [r for r in runs if not any(r.name.startswith(name + "/") for name in names)]
    return out + ([("single runs", loose)] if loose else [])


def print_status(sweep_dir: Path, lines: int = 5) -> int:
    """Print the counts (per sweep too, in a folder of several) and the table; failed runs with the last
    ``lines`` lines of their log."""
    runs = collect(sweep_dir)
    print(f"{sweep_dir}: {counts_line(runs)}")
    parts = groups(runs, walk(sweep_dir)[1], sweep_dir)
    if len(parts) > 1:
        width = max(len(name) for name, _ in parts)
        for name, members in parts:
            print(f"  {name:<{width}}  {counts_line(members)}")
        runs = [r for _, members in parts for r in members]  # the table in the same order
    if not runs:
        return 0
    width = max(len(r.name) for r in runs)
    print(f"{'run':<{width}}  {'state':<8} {'steps':>17} {'episodes':>9} {'last return':>12} "
          f"{'test return':>12}  where")
    for r in runs:
        steps = "" if r.steps is None else f"{r.steps:,}" + (f"/{r.total_steps:,}" if r.total_steps else "")
        print(f"{r.name:<{width}}  {r.state:<8} {steps:>17} {_num(r.episodes):>9} {_num(r.last_return):>12} "
              f"{_num(r.test_return):>12}  {r.where}")
        if r.state == "failed":
            if r.note:
                print(f"    {r.note}")
            tail = log_tail(r.log, lines) if r.log else ""
            for line in tail.splitlines():
                print(f"    | {line}")
            if r.log:
                print(f"    log: {r.log}")
        elif r.note:
            print(f"    {r.note}")
    return 0


def _num(x) -> str:
    if x is None:
        return ""
    return f"{x:,}" if isinstance(x, int) else f"{x:.1f}"
