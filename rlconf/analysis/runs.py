"""Finding run directories below a folder and reading what each one is (agent, env, seed, configuration)
and scored.

A run directory is any folder with ``config.yaml`` and ``episodes.csv`` (what ``rlconf run`` writes as
it starts), at any depth: a folder of single runs, one sweep, or a folder of sweeps all read the same way.
Nothing here imports matplotlib or torch: ``rlconf plot`` checks its input before it draws.

Runs are pooled across seeds only when their whole configuration is the same: ``Run.settings`` is the
resolved config.yaml, flattened (``agent.lr``, ``steps``), less the seed and what does not change what is
learned (``RECORD_KEYS``, and the keys that only place a run). ``label_runs`` names each configuration by its
agent and the settings that differ between runs of one agent on one env (``dqn steps=4000``).
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlconf.errors import AnalysisError
from rlconf.experiments.rundir.directory import is_placement

RUN_FILES = ("config.yaml", "episodes.csv")
# Keys of config.yaml that say what is recorded or how often, not what is learned: runs that differ only in
# these are one configuration (with the seed and the keys that place a run: logdir, launcher, threads ...).
RECORD_KEYS = ("seed", "agent.name", "env.name", "family", "logger", "verbose", "plugins", "checkpoint",
               "checkpoint_every", "eval_every", "eval_episodes", "test_episodes", "hardware.device",
               "hardware.gpus_per_run")
MAX_LINE = 1 << 20  # bytes of one CSV line: a row of rlconf's logs is a few hundred (a bandit's, a column per arm)
FINAL_FRACTION = 0.1  # without a test, a run's score is the mean return of its last 10% of training episodes
#                       (a bandit's: the mean reward of its last 10% of pulls.csv's rows)


@dataclass(frozen=True)
class Schedule:
    """When a run was configured to stop and to evaluate (config.yaml's ``steps`` and ``eval_every``): where
    its evaluations were due, which its own steps overshoot by up to a batch of its env copies."""

    budget: int  # env steps (a bandit's: pulls); 0 when unknown
    eval_every: int  # 0: no periodic evaluation

    def due(self, step: int) -> int:
        """The point an evaluation made at ``step`` was due at: the budget once it is reached (the last batch
        of several copies runs past it), else the last multiple of ``eval_every`` (the evaluation runs at the
        first step at or after it)."""
        if self.budget and step >= self.budget:
            return self.budget
        return step // self.eval_every * self.eval_every if self.eval_every else step


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
    settings: dict[str, str] = field(default_factory=dict, repr=False)  # what it was configured to learn with
    label: str = ""  # its configuration's name in the figure and the CSV files (``label_runs``)
    schedule: Schedule = field(default_factory=lambda: Schedule(0, 0))

    @property
    def ended_at(self) -> int | None:
        """The env steps its training ended at (summary.json's ``steps``), or None while it runs."""
        steps = (self.summary or {}).get("steps")
        return None if steps is None else int(steps)

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
    nor the inside of a run directory. Symbolic links to folders are followed (a folder of links is how runs
    from several places are compared), each real folder once, so a link back up cannot loop."""
    found = []
    seen: set[str] = set()
    for folder, subfolders, files in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            subfolders.clear()
            continue
        seen.add(real)
        if all(name in files for name in RUN_FILES):
            found.append(Path(folder))
            subfolders.clear()
        else:
            subfolders[:] = [name for name in subfolders if not name.startswith(".")]
    return sorted(found)


def read_table(path: Path) -> dict[str, np.ndarray]:
    """A CSV file with a header as column -> float array (empty arrays when it has only the header, or
    is missing). A last row cut short by a run still writing is dropped. Read a line at a time, each at most
    MAX_LINE bytes and free of NUL bytes, so a file that is no CSV (a crafted sparse file of a terabyte of
    NULs) is refused at its first megabyte rather than read into memory."""
    try:
        with open(path, newline="", errors="replace") as file:
            rows = list(csv.reader(_lines(file, path)))
    except OSError:
        return {}
    except csv.Error as error:
        raise AnalysisError(f"{path}: not a CSV table ({error})") from None
    if not rows:
        return {}
    header, body = rows[0], [row for row in rows[1:] if len(row) == len(rows[0])]
    try:
        values = np.asarray(body, dtype=float).reshape(len(body), len(header))
    except ValueError as error:
        raise AnalysisError(f"{path}: not a table of numbers ({error})") from None
    return {name: values[:, i] for i, name in enumerate(header)}


def _lines(file, path: Path):
    """The lines of ``file``, or an AnalysisError at the first that is longer than MAX_LINE or holds NUL."""
    while line := file.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE or "\0" in line:
            what = "a NUL byte" if "\0" in line else f"a line longer than {MAX_LINE:,} characters"
            raise AnalysisError(f"{path}: not a CSV table of rlconf's (it holds {what})")
        yield line


def read_identity(run_dir: Path) -> tuple[str, str, int, dict[str, str], Schedule]:
    """(agent, env, seed, settings, schedule) from the run's resolved config.yaml."""
    from rlconf.errors import ConfigError
    from rlconf.experiments.rundir.saved import read_config

    try:
        config = read_config(run_dir / "config.yaml")  # data only: nothing resolved or imported
        identity = str(config["agent"]["name"]), str(config["env"]["name"]), int(config["seed"])
        schedule = Schedule(*(max(0, int(config.get(key) or 0)) for key in ("steps", "eval_every")))
    except ConfigError as error:
        raise AnalysisError(str(error)) from None
    except Exception as error:  # a config.yaml that is not rlconf's
        raise AnalysisError(f"{run_dir / 'config.yaml'}: no agent.name, env.name and seed, or steps and "
                            f"eval_every that are not whole numbers ({error})") from None
    settings = {key: value for key, value in flatten(config).items() if not ignored(key)}
    return (*identity, settings, schedule)


def ignored(key: str) -> bool:
    """Whether two runs that differ in ``key`` are still one configuration."""
    return is_placement(key) or any(key == k or key.startswith(k + ".") for k in RECORD_KEYS)


def flatten(node: Any, prefix: str = "") -> dict[str, str]:
    """A config as dotted key -> the value as a command line would write it (``agent.hidden=[64,64]``)."""
    if isinstance(node, dict) and node:
        out = {}
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: override_value(node)}


def override_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{}"
    return str(value)


def load_run(run_dir: Path) -> Run | None:
    """The run in ``run_dir``, or None when it has not finished a training episode (a bandit: a pull) yet."""
    episodes = read_table(run_dir / "episodes.csv")
    pulls = read_table(run_dir / "pulls.csv")
    if len(episodes.get("return", ())) == 0 and len(pulls.get("regret", ())) == 0:
        return None
    agent, env, seed, settings, schedule = read_identity(run_dir)
    nothing = np.zeros(0)
    return Run(run_dir, agent, env, seed, episodes.get("step", nothing), episodes.get("return", nothing),
               read_summary(run_dir), pulls, settings, schedule=schedule)


def read_summary(run_dir: Path) -> dict[str, Any] | None:
    """The run's summary.json checked against its schema (``saved.SUMMARY_SCHEMA``), or None when it has none."""
    from rlconf.errors import ConfigError
    from rlconf.experiments.rundir.saved import SUMMARY_SCHEMA, read_record

    try:
        return read_record(run_dir / "summary.json", SUMMARY_SCHEMA)
    except ConfigError as error:
        raise AnalysisError(str(error)) from None


def label_keys(runs: list[Run]) -> list[str]:
    """The settings that differ between runs of one agent on one env (shortest keys first): they, with the
    agent, tell the configurations apart. A setting that differs only between agents (a preset's network, an
    agent's own hyperparameters) is the agent's and is not repeated. A key some runs lack (written by an rlconf
    from before the setting existed) tells apart only the runs that have it."""
    by_agent_env: dict[tuple[str, str], list[dict[str, str]]] = {}
    for run in runs:
        by_agent_env.setdefault((run.agent, run.env), []).append(run.settings)
    keys = set()
    for settings in by_agent_env.values():
        for key in set().union(*settings):
            if len({one[key] for one in settings if key in one}) > 1:
                keys.add(key)
    return sorted(keys, key=lambda key: (key.count("."), key))


def label_runs(runs: list[Run]) -> list[str]:
    """Set each run's ``label``: its agent, then ``key=value`` for each of ``label_keys`` it has. Runs of
    one env with one label are one configuration (the same settings, seeds apart). Returns the keys."""
    keys = label_keys(runs)
    for run in runs:
        run.label = " ".join([run.agent, *(f"{key}={run.settings[key]}" for key in keys if key in run.settings)])
    return keys


def relative(path: Path, root: Path) -> str:
    """``path`` as it reads below ``root`` (all of it when it is not below)."""
    try:
        return path.relative_to(root).as_posix() or path.name
    except ValueError:
        return str(path)


def left_out_line(left_out: dict[str, list[Path]], total: int, root: Path, shown: int = 3) -> str | None:
    """One line: how many runs were left out, and for each reason which (the first ``shown`` of them)."""
    count = sum(len(paths) for paths in left_out.values())
    if not count:
        return None
    parts = []
    for reason, paths in left_out.items():
        names = ", ".join(relative(path, root) for path in paths[:shown])
        more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
        parts.append(f"{len(paths)} {reason}: {names}{more}")
    return f"left out {count} of {total} runs: {'; '.join(parts)}"


def load_runs(root: Path, left_out: dict[str, list[Path]]) -> tuple[list[Run], int]:
    """The runs below ``root`` that have data, and how many run directories there are; each one left out is
    added to ``left_out`` under its reason."""
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
            if len(dirs) == 1:  # nor is there another to plot: its own line says what is wrong
                raise
            text = str(error).replace(f"{run_dir}/", "").replace(str(run_dir), "run directory")
            left_out.setdefault(f"unreadable, {text}", []).append(run_dir)
            continue
        if run is None:
            reason = ("that finished without a training episode (the budget ended before any episode did)"
                      if (run_dir / "summary.json").is_file() else "with no finished episode yet")
            left_out.setdefault(reason, []).append(run_dir)
        else:
            runs.append(run)
    if not runs:  # each was left out: say why (an unreadable file, or no episode yet)
        raise AnalysisError(f"{root}: none of its {len(dirs)} run directories has a finished episode to plot"
                            f"{'' if len(dirs) == 1 else ': ' + str(left_out_line(left_out, len(dirs), root))}")
    return runs, len(dirs)


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
