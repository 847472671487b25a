"""The console: a line as soon as a run starts, progress while training (steps/s, ETA, last and best return),
a line per periodic evaluation as it comes, the final test as a phase of its own (episodes done of N, ETA),
and one summary line at the end; all silent when quiet.

On a terminal the progress is a live rich bar. Elsewhere (a Slurm log, a pipe) a bar cannot redraw, so a
plain line is printed each time another tenth of the budget is done (a third of the test's episodes): a log
file reads as a short history.

Nothing here imports torch: ``announce`` runs before the heavy imports of a run, so on a terminal the first
line comes at once.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from rlconf.text import counted

LOG_LINES = 10  # progress lines a run prints when stderr is not a terminal
TEST_LOG_LINES = 3  # progress lines of the final test when stderr is not a terminal (the last is the summary's)


_announced = False  # announce wrote a line that retract has not erased yet


def on_terminal() -> bool:
    """Whether stderr is a terminal (as rich sees it: a bar redraws there, plain lines go elsewhere)."""
    return Console(stderr=True).is_terminal


def announce(cfg: Any) -> None:
    """``rlconf: building AGENT for ENV (seed S) ...`` on a terminal, before torch and the environment are imported
    and built (seconds), so a run's first seconds are not a blank screen. The line is erased (``retract``) when
    the run's own output begins, so bad input still reads as one line. Off a terminal nothing is written:
    logs have no blank screen, and a run's first line there is its progress or its one line of error.
    ``cfg``: the composed config."""
    global _announced
    try:
        if cfg.get("quiet") or not on_terminal():
            return
        agent, env = cfg.agent.get("name", "?"), cfg.env.get("name", "?")
        what = f"resuming {cfg.resume}: " if cfg.get("resume") else ""
        sys.stderr.write(f"rlconf: {what}building {agent} for {env} (seed {cfg.get('seed')}) ...")
        sys.stderr.flush()
        _announced = True
    except Exception:  # a config too broken to name its parts: the run's own checks say what is wrong
        return


def retract() -> None:
    """Erase the line ``announce`` wrote (nothing if it wrote none)."""
    global _announced
    if _announced:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
        _announced = False


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
            TextColumn("ETA"), TimeRemainingColumn(), console=self.console, transient=True)
        self.task = self.progress.add_task(title, total=total_steps, rate=0.0, episodes=0, last="-", best="-")
        self.progress.start()

    @property
    def is_terminal(self) -> bool:
        return self.console.is_terminal

    def update(self, steps: int, episodes: int, last_return: float | None, best_return: float | None,
               start: float, start_steps: int = 0, now: float | None = None) -> None:
        """Cheap to call every step: on a terminal the bar (and the rate since ``start``, a perf_counter reading,
        when the run stood at ``start_steps``) is redrawn at most four times a second; off one, a line is printed
        when the steps reach the next tenth of the budget. ``now``: the caller's perf_counter reading, if any."""
        if self.quiet:
            return
        if now is None:
            now = time.perf_counter()
        if self.progress is not None:
            if now < self._next_refresh:
                return
            self._next_refresh = now + self.REFRESH_SECONDS
            rate = (steps - start_steps) / max(now - start, 1e-9)
            self.progress.update(self.task, completed=steps, rate=rate, episodes=episodes,
                                 last=_number(last_return), best=_number(best_return))
        elif steps >= self._next_line:  # by steps, not by the clock: a log has its tenths however fast the run
            rate = (steps - start_steps) / max(now - start, 1e-9)
            tenth = max(self.total_steps // LOG_LINES, 1)
            self._next_line = (steps // tenth + 1) * tenth
            remaining = (self.total_steps - steps) / max(rate, 1e-9)
            self.print(f"{self.title}: {steps:,}/{self.total_steps:,} steps ({steps / self.total_steps:.0%}), "
                       f"{rate:,.0f} steps/s, {counted(episodes, 'episode')}, last return {_number(last_return)}, "
                       f"best {_number(best_return)}, {_duration(remaining)} to go")

    def evaluating(self, done: int | None, episodes: int = 0) -> None:
        """A periodic evaluation under way (``done`` of ``episodes``), shown in the training bar's title on a
        terminal; ``None``: it has finished. Off a terminal its result line says enough."""
        if self.progress is not None:
            title = self.title if done is None else f"{self.title} (eval {done}/{episodes})"
            self.progress.update(self.task, description=title)

    def test(self, episodes: int, copies: int) -> TestProgress:
        """The final test's progress: ``episodes`` episodes in ``copies`` copies of the environment at once."""
        self.stop()
        return TestProgress(self, episodes, copies)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def print(self, message: str) -> None:
        if not self.quiet:
            self.console.print(message, highlight=False, soft_wrap=True)  # one greppable line


class TestProgress:
    """The final test as a phase of its own. On a terminal: a bar of the episodes done, with its ETA. Elsewhere:
    a line when it starts and when each third of its episodes is done, with the time to go. Episodes are played
    in rounds over the copies, so they are done in bursts, and the ETA is the time so far per episode done."""

    def __init__(self, console: ConsoleProgress, episodes: int, copies: int):
        self.console = console
        self.episodes = episodes
        self.start = time.perf_counter()
        self._next_refresh = 0.0
        self._lines = [-(-episodes * k // TEST_LOG_LINES) for k in range(1, TEST_LOG_LINES)]  # done counts
        self.bar: Progress | None = None
        if console.quiet or not episodes:
            return
        where = "one game at a time" if copies == 1 else f"{copies} environments at once"
        if not console.is_terminal:
            console.print(f"{console.title}: testing {counted(episodes, 'episode')} ({where}) ...")
            return
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            TextColumn("{task.completed:,.0f}/{task.total:,.0f} episodes"),
                            TextColumn("ETA {task.fields[eta]}"), console=console.console, transient=True)
        self.task = self.bar.add_task(f"{console.title} test ({where})", total=episodes, eta="-")
        self.bar.start()

    def update(self, done: int, stalled: int = 0) -> None:  # noqa: ARG002 - the summary line reports them
        """Cheap to call every step: the bar is redrawn at most four times a second."""
        if self.bar is not None:
            now = time.perf_counter()
            if now >= self._next_refresh or done >= self.episodes:
                self._next_refresh = now + ConsoleProgress.REFRESH_SECONDS
                self.bar.update(self.task, completed=done, eta=self._eta(done, now))
        elif self._lines and done >= self._lines[0] and not self.console.quiet:
            while self._lines and done >= self._lines[0]:
                self._lines.pop(0)
            if done >= self.episodes:  # the summary line follows at once
                return
            now = time.perf_counter()
            elapsed, eta = now - self.start, self._eta(done, now)
            self.console.print(f"{self.console.title}: test {done:,}/{self.episodes:,} episodes "
                               f"({done / self.episodes:.0%}) in {_duration(elapsed)}, {eta} to go")

    def _eta(self, done: int, now: float) -> str:
        return _duration((now - self.start) * (self.episodes - done) / done) if done else "-"

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _duration(seconds: float) -> str:
    seconds = int(min(seconds, 99 * 3600))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
