"""CSV files in the run directory: the record every run keeps, whatever else is logged."""

from __future__ import annotations

import csv
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rlconf.errors import require
from rlconf.files import open_inside
from rlconf.logging.base import Logger, LoggerContext

EPISODE_FIELDS = ["step", "episode", "return", "length", "wall_seconds"]
WINDOW_FIELDS = ["step", "episode", "mean", "std", "min", "max"]
EVALUATION_FIELDS = ["step", "episodes", "mean", "std", "min", "max"]
SCALAR_FIELDS = ["step", "name", "value"]
PULL_FIELDS = ["step", "pull", "reward", "regret", "optimal_rate"]  # then arm/<a>: each arm's count so far


class _Table:
    def __init__(self, path: Path, fields: list[str]):
        # Appended to (and cut back on resume) in place: opened never through a link (rlconf.files.open_inside).
        fd = open_inside(path.parent, path.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        new = os.fstat(fd).st_size == 0
        self.path = path
        self.fields = fields
        self.file = open(fd, "a", newline="")  # noqa: SIM115 - open for the run's lifetime
        self.writer = csv.writer(self.file)
        if new:
            self.writer.writerow(fields)

    def write(self, row) -> None:
        self.writer.writerow(row)

    @property
    def size(self) -> int:
        """Bytes on disk once flushed: the position a checkpoint records."""
        self.file.flush()
        return os.fstat(self.file.fileno()).st_size

    def truncate(self, size: int) -> None:
        """Cut the file back to ``size`` bytes (0: just the header). Appends continue from there. Never
        lengthened: a checkpoint recording more than the file holds is refused before a resume touches the run
        directory (``saved.check_recorded_sizes``), and here again rather than grow a sparse file."""
        self.file.flush()
        if size > os.fstat(self.file.fileno()).st_size:
            raise ValueError(f"{self.path.name}: the checkpoint records {size:,} bytes, more than the file holds")
        self.file.truncate(size)
        if size == 0:
            self.writer.writerow(self.fields)


class CSVLogger(Logger):
    """episodes.csv (one row per training episode), returns100.csv (statistics of every 100 episodes, as
    the Autonomous Learning Library writes them), evaluations.csv and scalars.csv (every other scalar:
    performance, and with ``verbose`` losses and schedules).

    In a multi-agent run episodes.csv has a column per player, ``return/<player>``, after the usual ones;
    ``return`` is the first player's (so every tool reading ``return`` reads one player's curve).

    A bandit run writes pulls.csv instead of episode rows (see ``Logger.add_pulls``): ``pull`` counts each
    bandit's pulls, ``step`` all of them, and an ``arm/<a>`` column per arm holds its count."""

    @dataclass
    class Config:
        window: int = 100  # episodes per row of returns<window>.csv

        def __post_init__(self):
            require(self.window >= 1, "logger.csv.window", self.window, "must be at least 1")

    @classmethod
    def from_config(cls, config: Config, context: LoggerContext) -> CSVLogger:
        return cls(context.run_dir, window=config.window, agents=context.agents, arms=context.arms)

    def __init__(self, run_dir: str | Path, window: int = 100, agents: list[str] | tuple[str, ...] = (),
                 arms: int = 0):
        super().__init__()
        run_dir = Path(run_dir)
        self.agents = list(agents)
        self.episodes = _Table(run_dir / "episodes.csv", EPISODE_FIELDS + [f"return/{a}" for a in self.agents])
        self.windows = _Table(run_dir / f"returns{window}.csv", WINDOW_FIELDS)
        self.evaluations = _Table(run_dir / "evaluations.csv", EVALUATION_FIELDS)
        self._scalars_path = run_dir / "scalars.csv"
        self._scalars: _Table | None = None
        self.window = window
        self._recent: deque[float] = deque(maxlen=window)
        self._tables = [self.episodes, self.windows, self.evaluations]
        if arms:
            self.pulls = _Table(run_dir / "pulls.csv", PULL_FIELDS + [f"arm/{a}" for a in range(arms)])
            self._tables.append(self.pulls)

    def add_episode(self, step, episode, returns, length, wall_seconds, agent_returns=None) -> None:
        per_agent = [_number(agent_returns.get(a, float("nan"))) for a in self.agents] if agent_returns else []
        self.episodes.write([step, episode, _number(returns), length, f"{wall_seconds:.3f}", *per_agent])
        self._recent.append(returns)
        if episode % self.window == 0:
            r = np.asarray(self._recent)
            self.windows.write([step, episode, *(_number(x) for x in (r.mean(), r.std(), r.min(), r.max()))])

    def add_pulls(self, step, pulls, reward, regret, optimal_rate, arm_counts) -> None:
        self.pulls.write([step, pulls, *(_number(x) for x in (reward, regret, optimal_rate)), *arm_counts])

    def add_evaluation(self, step, returns) -> None:
        r = np.asarray(returns)
        self.evaluations.write([step, len(r), *(_number(x) for x in (r.mean(), r.std(), r.min(), r.max()))])
        self.flush()

    def add_scalars(self, values, step=None) -> None:
        if self._scalars is None:
            self.add_scalar_table()
        step = self.step if step is None else step
        for name, value in values.items():
            self._scalars.write([step, name, _number(value)])

    def flush(self) -> None:
        for table in self._tables:
            table.file.flush()

    def close(self) -> None:
        for table in self._tables:
            table.file.close()

    # -- resume --------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Each file's length (its rows so far) and the returns of the current 100-episode window."""
        sizes = {table.path.name: table.size for table in self._tables}
        sizes.setdefault(self._scalars_path.name, 0)  # not created yet: nothing to keep
        return {"sizes": sizes, "recent": list(self._recent)}

    def load_state_dict(self, state: dict | None) -> None:
        sizes = {} if state is None else state["sizes"]
        if self._scalars is None and self._scalars_path.exists():
            self.add_scalar_table()
        for table in self._tables:
            table.truncate(sizes.get(table.path.name, 0))
        self._recent.clear()
        self._recent.extend([] if state is None else state["recent"])

    def add_scalar_table(self) -> None:
        self._scalars = _Table(self._scalars_path, SCALAR_FIELDS)
        self._tables.append(self._scalars)


def _number(x) -> str:
    return f"{float(x):.6g}"
