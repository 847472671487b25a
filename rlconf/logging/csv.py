"""CSV files in the run directory: the record every run keeps, whatever else is logged."""

from __future__ import annotations

import csv
from collections import deque
from pathlib import Path

import numpy as np

from rlconf.logging.base import Logger

EPISODE_FIELDS = ["step", "episode", "return", "length", "wall_seconds"]
WINDOW_FIELDS = ["step", "episode", "mean", "std", "min", "max"]
EVALUATION_FIELDS = ["step", "episodes", "mean", "std", "min", "max"]
SCALAR_FIELDS = ["step", "name", "value"]


class _Table:
    def __init__(self, path: Path, fields: list[str]):
        new = not path.exists() or path.stat().st_size == 0
        self.file = open(path, "a", newline="")  # noqa: SIM115 - open for the run's lifetime
        self.writer = csv.writer(self.file)
        if new:
            self.writer.writerow(fields)

    def write(self, row) -> None:
        self.writer.writerow(row)


class CSVLogger(Logger):
    """episodes.csv (one row per training episode), returns100.csv (statistics of every 100 episodes, as
    the Autonomous Learning Library writes them), evaluations.csv and scalars.csv."""

    def __init__(self, run_dir: str | Path, window: int = 100):
        super().__init__()
        run_dir = Path(run_dir)
        self.episodes = _Table(run_dir / "episodes.csv", EPISODE_FIELDS)
        self.windows = _Table(run_dir / f"returns{window}.csv", WINDOW_FIELDS)
        self.evaluations = _Table(run_dir / "evaluations.csv", EVALUATION_FIELDS)
        self._scalars_path = run_dir / "scalars.csv"
        self._scalars: _Table | None = None
        self.window = window
        self._recent: deque[float] = deque(maxlen=window)
        self._tables = [self.episodes, self.windows, self.evaluations]

    def add_episode(self, step, episode, returns, length, wall_seconds) -> None:
        self.episodes.write([step, episode, _number(returns), length, f"{wall_seconds:.3f}"])
        self._recent.append(returns)
        if episode % self.window == 0:
            r = np.asarray(self._recent)
            self.windows.write([step, episode, *(_number(x) for x in (r.mean(), r.std(), r.min(), r.max()))])

    def add_evaluation(self, step, returns) -> None:
        r = np.asarray(returns)
        self.evaluations.write([step, len(r), *(_number(x) for x in (r.mean(), r.std(), r.min(), r.max()))])
        self.flush()

    def add_scalar(self, name, value, step=None) -> None:
        if self._scalars is None:
            self._scalars = _Table(self._scalars_path, SCALAR_FIELDS)
            self._tables.append(self._scalars)
        self._scalars.write([self.step if step is None else step, name, _number(value)])

    def flush(self) -> None:
        for table in self._tables:
            table.file.flush()

    def close(self) -> None:
        for table in self._tables:
            table.file.close()


def _number(x) -> str:
    return f"{float(x):.6g}"
