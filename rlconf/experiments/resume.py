"""Where a run lives and how it starts: fresh, resumed from its checkpoint, or already finished.

- A single run gets a new, unique directory, unless ``resume=DIR`` names one of an earlier run: it then
  continues from DIR's checkpoint (after Ctrl-C, a signal, a crash, or ``kill -9``), or starts DIR over when
  it was killed before its first checkpoint.
- A sweep job's directory is named by its overrides (``rundir.sweep_run_name``): a requeued job, or the same
  sweep launched again into the same sweep directory, resumes each unfinished run and skips each finished
  one (it has a summary.json).

A resumed run must compute what the checkpoint was computing: ``check_resumable`` allows only the keys in
``RESUME_MAY_CHANGE`` to differ from the saved config.yaml (a longer budget, other logging, other hardware
placement), and names the first other key that does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlconf.errors import ConfigError
from rlconf.experiments.rundir import PLACEMENT_KEYS, finished_summary, sweep_run_name, within
from rlconf.experiments.saved import read_config

RESUME_MAY_CHANGE = ("steps", "quiet", "verbose", "logdir", "resume", "plugins", "eval_every", "eval_episodes",
                     "test_episodes", "checkpoint_every", "checkpoint", "logger", "hardware.device",
                     "hardware.gpus_per_run", *PLACEMENT_KEYS)  # and everything that says where a run executes


@dataclass
class Plan:
    """How a run starts. ``run_dir`` is None for a fresh single run (its directory is made once everything
    is built, so that bad input leaves none); ``existing`` says the directory holds an earlier attempt."""

    run_dir: Path | None
    existing: bool = False
    checkpoint: Path | None = None
    summary: dict[str, Any] | None = None  # set when the run has already finished


def check_resume_dir(path: str | Path, key: str = "resume") -> Path:
    """``resume=DIR`` (or ``rerun=DIR``) must name a run directory (one with a config.yaml)."""
    hint = "a sweep directory: add -m" if key == "resume" else "a sweep directory: name one of its runs"
    return _check_dir(path, "run", "config.yaml", "multirun.yaml", hint, key)


def check_resume_sweep_dir(path: str | Path) -> Path:
    """``-m ... resume=DIR`` must name a sweep directory (one with Hydra's multirun.yaml)."""
    return _check_dir(path, "sweep", "multirun.yaml", "config.yaml", "a run directory: leave out -m")


def _check_dir(path: str | Path, kind: str, marker: str, other_marker: str, other_hint: str,
               key: str = "resume") -> Path:
    """``path`` as a directory holding ``marker``; one holding ``other_marker`` instead gets ``other_hint``."""
    folder = Path(path)
    if not folder.is_dir():
        raise ConfigError(f"{key}={path}: no such directory")
    if not (folder / marker).is_file():
        hint = f" ({other_hint})" if (folder / other_marker).is_file() else ""
        raise ConfigError(f"{key}={path}: not a {kind} directory, it has no {marker}{hint}")
    return folder


def check_resumable(run_dir: Path, config: dict[str, Any]) -> None:
    """Raise a ConfigError naming the first key of ``config`` (resolved) that differs from the run's saved
    config.yaml and may not change on resume."""
    saved = read_config(run_dir / "config.yaml")  # data only: no interpolation is resolved, nothing imported
    old, new = flatten(saved), flatten(config)
    for group in ("agent", "env"):  # say so, not the first of the group's keys that differs
        check_same_choice(run_dir, group, old.get(f"{group}.name"), new.get(f"{group}.name"))
    for key in sorted(old.keys() | new.keys()):
        if within(key, RESUME_MAY_CHANGE):
            continue
        if old.get(key, "<unset>") != new.get(key, "<unset>"):
            raise ConfigError(f"resume={run_dir}: {key}={new.get(key, '<unset>')} but the run has "
                              f"{key}={old.get(key, '<unset>')}; a resumed run may change only "
                              f"{', '.join(RESUME_MAY_CHANGE[:6])}, ... (not what it computes)")


def check_same_choice(run_dir: str | Path, group: str, was: Any, now: Any) -> None:
    """A resumed run keeps the agent and env it trained: a ConfigError saying so when ``now`` differs."""
    if was is not None and now is not None and was != now:
        raise ConfigError(f"resume={run_dir}: the run trained {group}={was}; a resumed run keeps its {group} "
                          f"({group}={now} given): start a new run for another")


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as {"a.b.c": value} (empty mappings leave no key)."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): node}


def plan(steps: int, resume: str | None, parent_dir: str | Path | None, name: tuple[str, str, int],
         overrides: list[str], config: dict[str, Any]) -> Plan:
    """Where the run described by ``config`` (resolved) lives, and whether it resumes or is done.
    ``name``: (agent, env, seed); ``parent_dir``: the sweep directory of a sweep job."""
    if parent_dir is not None:
        run_dir = Path(parent_dir) / sweep_run_name(*name, overrides)
    elif resume:
        run_dir = check_resume_dir(resume)
        check_resumable(run_dir, config)
    else:
        return Plan(None)
    if not run_dir.exists():
        return Plan(run_dir)
    checkpoint = run_dir / "checkpoint.pt"
    summary = finished_summary(run_dir, steps)
    if summary is not None:
        return Plan(run_dir, existing=True, checkpoint=checkpoint, summary=summary)
    return Plan(run_dir, existing=True, checkpoint=checkpoint if checkpoint.exists() else None)
