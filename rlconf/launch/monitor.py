"""What a sweep shows while its launcher waits for its runs, and the table it ends with.

The launcher knows which of its runs are queued, running, done or failed; how far a running run has got (its
steps, or its test's episodes) is read from the run directories as ``rlconf status`` reads them
(``rlconf.launch.status.collect``: status.json, refreshed by each run every 10 s, and summary.json).

On a terminal: a live block (the sweep directory, runs done / running / queued / failed, an ETA, and a line per
running run) redrawn every second. Elsewhere (a log, a pipe): a plain line when a run starts, finishes or
fails, and every minute a line of the counts with each running run's progress. Either way the sweep ends with
``print_table``: a line per run (state, steps, final test return) and the path of sweep.csv.

The ETA is the work left divided among the runs that go at once: a finished run's wall time stands for each
run still queued, and a running run's own progress (or a finished run's time) tells when it ends.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from rlconf.launch.status import RunStatus, collect
from rlconf.text import counted

REFRESH_SECONDS = 1.0  # how often a terminal's block is redrawn (and the run directories read)
LINE_SECONDS = 60.0  # how often a line of progress is printed off a terminal when no run starts or ends
STATES = ("done", "running", "queued", "failed")
PRUNED = "pruned"  # ended early by an Optuna sweep's pruner: counted only in sweeps that have such runs


class SweepProgress:
    """The progress of ``names`` (the run directories' names of this launch's runs) in ``sweep_dir``, ``at_once``
    of them running at a time. The launcher calls ``started``, ``ended`` and, as often as it likes, ``tick``.
    ``live=False``: plain lines on a terminal too (launcher=basic, whose runs print there themselves);
    ``header=False``: no opening line (a sweeper's later batch of the same sweep)."""

    def __init__(self, sweep_dir: Path, names: Sequence[str], at_once: int, quiet: bool = False,
                 where: str = "", console: Console | None = None, live: bool = True, header: bool = True):
        self.sweep_dir = Path(sweep_dir)
        self.names = list(names)
        self.at_once = max(1, at_once)
        self.quiet = quiet
        self.state = dict.fromkeys(self.names, "queued")
        self.started_at: dict[str, float] = {}
        self.ended_at: dict[str, float] = {}
        self.start = time.monotonic()
        self.console = console or Console(stderr=True)
        self._runs: dict[str, RunStatus] = {}  # what the run directories said when last read
        self._next_read = 0.0
        self._next_line = self.start + LINE_SECONDS
        self.live: Live | None = None
        if quiet:
            return
        if header:
            self.print(f"rlconf: sweep {self.sweep_dir}: {counted(len(self.names), 'run')}{where}; rlconf status "
                       f"{self.sweep_dir} shows them too")
        if live and self.console.is_terminal:
            self.live = Live(self._block(), console=self.console, transient=True, auto_refresh=False)
            self.live.start()

    # -- what the launcher reports -----------------------------------------------------------------------
    def started(self, name: str, state: str = "running") -> None:
        """``name`` began (``state``: running, or queued where a scheduler holds it before it runs)."""
        if state == "running":
            self.started_at.setdefault(name, time.monotonic())
        if self.state.get(name) == state:
            return
        self.state[name] = state
        if state == "running" and self.live is None:
            self.print(f"rlconf: sweep: started {name}; {self._counts()}")
        self.tick(force=True)

    def ended(self, name: str, failed: bool, why: str = "") -> None:
        """``name`` finished, was pruned (its run directory says), or failed (``why``)."""
        self._read()
        run = self._runs.get(name)
        self.state[name] = "failed" if failed else PRUNED if run is not None and run.state == PRUNED else "done"
        self.ended_at[name] = time.monotonic()
        self.started_at.setdefault(name, self.start)
        if self.live is None and not self.quiet:
            what = (f"failed{': ' + why if why else ''}" if failed else f"pruned: {run.note}" if
                    self.state[name] == PRUNED else f"done, test return {_num(run.test_return) if run else '-'}")
            self.print(f"rlconf: sweep: {name} {what}; {self._counts()}")
        self.tick(force=True)

    def tick(self, force: bool = False) -> None:
        """Cheap to call often: the terminal's block is redrawn once a second, a plain line once a minute."""
        if self.quiet:
            return
        now = time.monotonic()
        if self.live is not None:
            if force or now >= self._next_read:
                self._read()
                self.live.update(self._block(), refresh=True)
        elif now >= self._next_line:
            self._next_line = now + LINE_SECONDS
            self._read()
            running = [f"{name} {self._progress(name)}" for name in self.names if self.state[name] == "running"]
            self.print(f"rlconf: sweep: {self._counts()}" + (f"; {'; '.join(running)}" if running else ""))

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def print(self, line: str) -> None:
        if not self.quiet:
            self.console.print(line, highlight=False, soft_wrap=True, markup=False)

    # -- what is shown -------------------------------------------------------------------------------------
    def _read(self) -> None:
        """The run directories as rlconf status reads them (their steps, tests and results)."""
        self._next_read = time.monotonic() + REFRESH_SECONDS
        with contextlib.suppress(OSError, ValueError):  # a directory in the middle of being written: next time
            self._runs = {run.name: run for run in collect(self.sweep_dir) if run.name in self.state}

    def _counts(self) -> str:
        shown = (*STATES, PRUNED) if PRUNED in self.state.values() else STATES
        counts = {s: sum(v == s for v in self.state.values()) for s in shown}
        eta = self.eta()
        return (", ".join(f"{counts[s]} {s}" for s in shown) +
                ("" if counts["running"] + counts["queued"] == 0 else
                 f"; ETA {_duration(eta)}" if eta is not None else "; ETA -"))

    def _progress(self, name: str) -> str:
        """How far a running run has got, as its status.json says."""
        run = self._runs.get(name)
        if run is not None and run.testing:
            return f"testing {run.testing[0]:,}/{run.testing[1]:,} episodes"
        if run is None or not run.steps:
            return "starting"
        total = f"/{run.total_steps:,} steps ({run.steps / run.total_steps:.0%})" if run.total_steps else " steps"
        return f"{run.steps:,}{total}" + (f", last return {_num(run.last_return)}" if run.last_return is not None
                                          else "")

    def _block(self) -> Group:
        lines = [Text(f"sweep {self.sweep_dir}: {self._counts()}", style="bold")]
        lines += [Text(f"  {name}: {self._progress(name)}") for name in self.names if self.state[name] == "running"]
        return Group(*lines)

    def eta(self) -> float | None:
        """Seconds until every run has ended, or None while nothing tells yet."""
        now = time.monotonic()
        took = [self.ended_at[n] - self.started_at[n] for n in self.ended_at if self.state[n] == "done"]
        typical = sum(took) / len(took) if took else None
        left = 0.0
        for name in self.names:
            if self.state[name] != "running":
                continue
            elapsed = now - self.started_at.get(name, now)
            run = self._runs.get(name)
            fraction = run.steps / run.total_steps if run and run.steps and run.total_steps else 0.0
            total = elapsed / fraction if fraction >= 0.05 else typical
            if total is None:
                return None
            typical = typical or total
            left += max(total - elapsed, 0.0)
        queued = sum(v == "queued" for v in self.state.values())
        if queued:
            if typical is None:
                return None
            left += queued * typical
        return left / self.at_once


def print_table(sweep_dir: Path, names: Sequence[str], seconds: float, console: Console | None = None) -> None:
    """The sweep's closing table: a line per run (its state, steps and final test return, as rlconf status
    reads them), then where the results are (sweep.csv)."""
    console = console or Console(stderr=True)
    try:
        runs = {run.name: run for run in collect(Path(sweep_dir))}
    except (OSError, ValueError):
        runs = {}
    rows = [runs.get(name) or RunStatus(name, "failed", note="no run directory") for name in names]
    counts = {s: sum(r.state == s for r in rows) for s in ("done", PRUNED, "failed", "stopped", "running", "queued")}
    out = [f"rlconf: sweep {sweep_dir}: {counted(len(rows), 'run')} in {_duration(seconds)}"
           + "".join(f", {n} {s}" for s, n in counts.items() if n)]
    width = max([len("run"), *(len(r.name) for r in rows)])
    out.append(f"  {'run':<{width}}  {'state':<8} {'steps':>12} {'test return':>12}")
    for r in rows:
        steps = "" if r.steps is None else f"{r.steps:,}"
        out.append(f"  {r.name:<{width}}  {r.state:<8} {steps:>12} {_num(r.test_return) or '-':>12}")
    table = Path(sweep_dir) / "sweep.csv"
    out.append(f"rlconf: results: {table}" if table.exists() else "rlconf: no run finished: no sweep.csv")
    for line in out:
        console.print(line, highlight=False, soft_wrap=True, markup=False)


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _duration(seconds: float) -> str:
    seconds = int(min(max(seconds, 0), 99 * 3600))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
