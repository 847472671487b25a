"""The console: progress while training (steps/s, ETA, last and best return), a line per periodic evaluation
as it comes, and one summary line at the end; all silent when quiet.

On a terminal the progress is a live rich bar. Elsewhere (a Slurm log, a pipe) a bar cannot redraw, so a
plain line is printed each time another tenth of the budget is done: a log file reads as a short history.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

LOG_LINES = 10  # progress lines a run prints when stderr is not a terminal


class ConsoleProgress:
    REFRESH_SECONDS = 0.25

    def __init__(self, title: str, total_steps: int, quiet: bool = False):
        self.quiet = quiet
        self.title = title
        self.total_steps = total_steps
        self.console = Console(stderr=True)
        self._next_refresh = 0.0
        self._next_line = max(total_steps // LOG_LINES, 1)  # the step count of the next plain line
        self.progress: Progress | None = None
        if quiet or not self.console.is_terminal:
            return
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(),
            TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"),
            TextColumn("{task.fields[rate]:,.0f} steps/s"),
            TextColumn("ep {task.fields[episodes]:,}"),
            TextColumn("last {task.fields[last]}"), TextColumn("best {task.fields[best]}"),
            TimeRemainingColumn(), console=self.console, transient=True)
        self.task = self.progress.add_task(title, total=total_steps, rate=0.0, episodes=0, last="-", best="-")
        self.progress.start()

    def update(self, steps: int, episodes: int, last_return: float | None, best_return: float | None,
               start: float, start_steps: int = 0, now: float | None = None) -> None:
        """Cheap to call every step: the display (and the rate since ``start``, a perf_counter reading, when
        the run stood at ``start_steps``) is computed at most four times a second. ``now``: the caller's
        perf_counter reading, if it has one."""
        if self.quiet:
            return
        if now is None:
            now = time.perf_counter()
        if now < self._next_refresh:
            return
        self._next_refresh = now + self.REFRESH_SECONDS
        rate = (steps - start_steps) / max(now - start, 1e-9)
        if self.progress is not None:
            self.progress.update(self.task, completed=steps, rate=rate, episodes=episodes,
                                 last=_number(last_return), best=_number(best_return))
        elif steps >= self._next_line:
            tenth = max(self.total_steps // LOG_LINES, 1)
            self._next_line = (steps // tenth + 1) * tenth
            remaining = (self.total_steps - steps) / max(rate, 1e-9)
            self.print(f"{self.title}: {steps:,}/{self.total_steps:,} steps ({steps / self.total_steps:.0%}), "
                       f"{rate:,.0f} steps/s, {episodes:,} episodes, last return {_number(last_return)}, "
                       f"best {_number(best_return)}, {_duration(remaining)} to go")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def print(self, message: str) -> None:
        if not self.quiet:
            self.console.print(message, highlight=False, soft_wrap=True)  # one greppable line


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _duration(seconds: float) -> str:
    seconds = int(min(seconds, 99 * 3600))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
