"""Finding run directories below a folder and reading what each one is (agent, env, seed) and scored.

A run directory is any folder with ``config.yaml`` and ``episodes.csv`` (what ``rlconf run`` writes as
it starts), at any depth: a folder of single runs, one sweep, or a folder of sweeps all read the same way.
Nothing here imports matplotlib or torch: ``rlconf plot`` checks its input before it draws.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlconf.experiments.rundir import read_json

RUN_FILES = ("config.yaml", "episodes.csv")
FINAL_FRACTION = 0.1  # without a test, a run's score is the mean return of its last 10% of training episodes
#                       (a bandit's: the mean reward of its last 10% of pulls.csv's rows)


class AnalysisError(ValueError):
    """Input ``rlconf plot`` cannot use (no such folder, no runs, an unknown name): one line."""


@dataclass
class Run:
    """One run directory: who it is, and its training episodes (``step`` and ``return`` columns), or a bandit
    run's pulls (pulls.csv's columns)."""

    path: Path
    agent: str
    env: str
    seed: int
    episode_steps: np.ndarray
    episode_returns: np.ndarray
    summary: dict[str, Any] | None = field(default=None, repr=False)
    pulls: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def bandit(self) -> bool:
        return len(self.pulls.get("regret", ())) > 0

    @property
    def score(self) -> float:
        """What the aggregate statistics compare: the final test return (``test_return_mean`` of
        summary.json) when the run finished with a test, else the mean return of its last 10% of training
        episodes (at least one), so runs still going or stopped early still count."""
        test = (self.summary or {}).get("test_return_mean")
        if test is not None:
            return float(test)
        returns = self.pulls["reward"] if self.bandit else self.episode_returns
        last = max(1, math.ceil(FINAL_FRACTION * len(returns)))
        return float(returns[-last:].mean())

    @property
    def tested(self) -> bool:
        return (self.summary or {}).get("test_return_mean") is not None


def find_run_dirs(root: Path) -> list[Path]:
    """Every run directory at or below ``root``, sorted; hidden folders (``.launcher``) are not searched,
    nor the inside of a run directory."""
    found = []
    for folder, subfolders, files in os.walk(root):
        if all(name in files for name in RUN_FILES):
            found.append(Path(folder))
            subfolders.clear()
        else:
            subfolders[:] = [name for name in subfolders if not name.startswith(".")]
    return sorted(found)


def read_table(path: Path) -> dict[str, np.ndarray]:
    """A CSV file with a header as column -> float array (empty arrays when it has only the header, or
    is missing). A last row cut short by a run still writing is dropped."""
    try:
        with open(path, newline="") as file:
            rows = list(csv.reader(file))
    except OSError:
        return {}
    if not rows:
        return {}
    header, body = rows[0], [row for row in rows[1:] if len(row) == len(rows[0])]
    try:
        values = np.asarray(body, dtype=float).reshape(len(body), len(header))
    except ValueError as error:
        raise AnalysisError(f"{path}: not a table of numbers ({error})") from None
    return {name: values[:, i] for i, name in enumerate(header)}


def read_identity(run_dir: Path) -> tuple[str, str, int]:
    """(agent, env, seed) from the run's resolved config.yaml."""
    from rlconf.config import ConfigError
    from rlconf.experiments.saved import read_config

    try:
        config = read_config(run_dir / "config.yaml")  # data only: nothing resolved or imported
        return str(config["agent"]["name"]), str(config["env"]["name"]), int(config["seed"])
    except ConfigError as error:
        raise AnalysisError(str(error)) from None
    except Exception as error:  # a config.yaml that is not rlconf's
        raise AnalysisError(f"{run_dir / 'config.yaml'}: no agent.name, env.name and seed ({error})") from None


def load_run(run_dir: Path) -> Run | None:
    """The run in ``run_dir``, or None when it has not finished a training episode (a bandit: a pull) yet."""
    episodes = read_table(run_dir / "episodes.csv")
    pulls = read_table(run_dir / "pulls.csv")
    if len(episodes.get("return", ())) == 0 and len(pulls.get("regret", ())) == 0:
        return None
    agent, env, seed = read_identity(run_dir)
    nothing = np.zeros(0)
    return Run(run_dir, agent, env, seed, episodes.get("step", nothing), episodes.get("return", nothing),
               read_json(run_dir / "summary.json"), pulls)


def load_runs(root: Path, notes: list[str]) -> list[Run]:
    """The runs below ``root`` that have data; each one skipped adds a line to ``notes``."""
    if not root.exists():
        raise AnalysisError(f"{root}: no such directory")
    if not root.is_dir():
        raise AnalysisError(f"{root}: not a directory")
    dirs = find_run_dirs(root)
    if not dirs:
        raise AnalysisError(f"{root}: no run directory in it (a run directory holds {' and '.join(RUN_FILES)}, "
                            "as rlconf run writes them)")
    runs = []
    for run_dir in dirs:
        try:
            run = load_run(run_dir)
        except AnalysisError as error:  # one unreadable folder does not hide the others
            notes.append(f"skipped {error}")
            continue
        if run is None:
            notes.append(f"skipped {run_dir}: no finished episode yet")
        else:
            runs.append(run)
    if not runs:
        raise AnalysisError(f"{root}: none of its {len(dirs)} run directories has a finished episode to plot")
    return runs


def select_runs(runs: list[Run], agents: list[str] | None, envs: list[str] | None) -> list[Run]:
    """The runs of the named agents and envs (all when None); an unknown name is an error naming those there."""
    from rlconf.registry import unknown_message

    for what, wanted, present in (("agent", agents, {r.agent for r in runs}), ("env", envs, {r.env for r in runs})):
        for name in wanted or ():
            if name not in present:
                raise AnalysisError(unknown_message(what, name, sorted(present)))
    selected = [r for r in runs if (agents is None or r.agent in agents) and (envs is None or r.env in envs)]
    if not selected:
        raise AnalysisError(f"no run of {', '.join(agents or ['any agent'])} on {', '.join(envs or ['any env'])}")
    return selected
