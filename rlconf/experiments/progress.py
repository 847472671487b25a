"""The console: a progress bar while training and one summary line at the end (silent when quiet)."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


class ConsoleProgress:
    REFRESH_SECONDS = 0.25

    def __init__(self, title: str, total_steps: int, quiet: bool = False):
        self.quiet = quiet
        self.console = Console(stderr=True)
        self._next_refresh = 0.0
        if quiet:
            return
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(),
            TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"),
            TextColumn("{task.fields[rate]:,.0f} steps/s"),
            TextColumn("ep {task.fields[episodes]:,}"),
            TextColumn("last {task.fields[last]}"),
            TimeRemainingColumn(), console=self.console, transient=True)
        self.task = self.progress.add_task(title, total=total_steps, rate=0.0, episodes=0, last="-")
        self.progress.start()

    def update(self, steps: int, episodes: int, last_return: float | None, start: float,
               start_steps: int = 0, now: float | None = None) -> None:
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
        last = "-" if last_return is None else f"{last_return:.1f}"
        self.progress.update(self.task, completed=steps, rate=rate, episodes=episodes, last=last)

    def stop(self) -> None:
        if not self.quiet:
            self.progress.stop()

    def print(self, message: str) -> None:
        if not self.quiet:
            self.console.print(message, highlight=False, soft_wrap=True)  # one greppable line
