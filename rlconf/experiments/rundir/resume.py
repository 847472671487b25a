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
from rlconf.experiments.rundir.directory import (
    PLACEMENT_KEYS,
    check_run_files,
    check_sweep_files,
    finished_summary,
    is_placement,
    override_key,
    sweep_run_name,
    within,
)
from rlconf.experiments.rundir.saved import read_config
from rlconf.files import load_json, write_json
from rlconf.settings import TOP_LEVEL_GROUPS

RESUME_MAY_CHANGE = ("steps", "episodes", "quiet", "verbose", "logdir", "resume", "plugins", "eval_every",
                     "eval_episodes", "test_episodes", "checkpoint_every", "checkpoint", "logger", "callbacks", "stop",
                     "hardware.device", "hardware.gpus_per_run",
                     *PLACEMENT_KEYS)  # and everything that says where a run executes


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
    folder = _check_dir(path, "run", "config.yaml", "multirun.yaml", hint, key)
    if key == "resume":  # it is written to: none of its files may lead outside it
        _check_files(check_run_files, folder)
    return folder


def check_resume_sweep_dir(path: str | Path) -> Path:
    """``-m ... resume=DIR`` must name a sweep directory (one with Hydra's multirun.yaml), none of whose files
    leads outside it (``rundir.check_sweep_files``)."""
    folder = _check_dir(path, "sweep", "multirun.yaml", "config.yaml", "a run directory: leave out -m")
    _check_files(check_sweep_files, folder)
    return folder


def _check_files(check, folder: Path) -> None:
    """``check(folder)`` (``rundir.check_run_files``, ``check_sweep_files``), its ValueError a ConfigError."""
    try:
        check(folder)
    except ValueError as error:
        raise ConfigError(str(error)) from None


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


def check_resumable(run_dir: Path, config: dict[str, Any], overrides: list[str] | tuple[str, ...] = ()) -> None:
    """Raise a ConfigError naming the first key of ``config`` (resolved) that differs from the run's saved
    config.yaml and may not change on resume.

    A key the saved config lacks came to rlconf after the run began: its default keeps what the run computed
    (a new key's default is the behaviour before it), so it is taken as the run's unless ``overrides`` (the
    command line) set it. A group's choice (``agent=ppo``) sets none of its keys: it composes the group's file,
    whose newer keys stand at their defaults."""
    saved = read_config(run_dir / "config.yaml")  # data only: no interpolation is resolved, nothing imported
    old, new = flatten(saved), flatten(config)
    given = tuple(key for key in map(override_key, overrides) if key not in TOP_LEVEL_GROUPS)
    for group in ("agent", "env"):  # say so, not the first of the group's keys that differs
        check_same_choice(run_dir, group, old.get(f"{group}.name"), new.get(f"{group}.name"))
    for key in sorted(old.keys() | new.keys()):
        if within(key, RESUME_MAY_CHANGE) or (key not in old and not within(key, given)):
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
    """A nested config as {"a.b.c": value} (empty mappings, and empty lists, leave no key: a run saved before a
    list key such as env.wrappers existed resumes with it empty)."""
    if isinstance(node, list) and not node:
        return {}
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
        run_dir = Path(parent_dir) / sweep_job_name(parent_dir, *name, overrides)
    elif resume:
        run_dir = check_resume_dir(resume)
        check_resumable(run_dir, config, overrides)
    else:
        return Plan(None)
    if parent_dir is not None and (run_dir.exists() or run_dir.is_symlink()):  # resume= was checked above
        _check_files(lambda folder: check_run_files(folder, in_sweep=True), run_dir)
    if not run_dir.exists():
        return Plan(run_dir)
    checkpoint = run_dir / "checkpoint.pt"
    summary = finished_summary(run_dir, steps)
    if summary is not None:
        return Plan(run_dir, existing=True, checkpoint=checkpoint, summary=summary)
    return Plan(run_dir, existing=True, checkpoint=checkpoint if checkpoint.exists() else None)


# -- a sweep resumed with other budgets, logging or hardware ----------------------------------------------
# A sweep job's directory is named by its overrides (rundir.sweep_run_name). ``-m resume=SWEEP steps=N`` changes
# the jobs' overrides, but each must continue its run in place: the keys a resume may change keep, for naming,
# the values the sweep's runs were named with, recorded the first time a resume changes them.
RUN_NAMES = "run_names.json"  # in a sweep directory: {"named_by": {key: the override its runs were named with}}


def resume_changes(sweep_dir: str | Path, saved: list[str], given: list[str]) -> dict[str, str | None]:
    """The overrides ``given`` beside ``-m resume=SWEEP`` that change one the sweep was launched with
    (``saved``), as {key: the saved override, or None}: each may only be a key a resume may change and the
    sweep does not sweep. Any other change is a ConfigError naming the key: it would change what its runs
    compute, and the runs would start over in new directories."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    was = {override_key(line): line for line in saved}
    changed: dict[str, str | None] = {}
    for line in given:
        key = override_key(line)
        old = was.get(key)
        if key == "resume" or is_placement(key) or old == line:
            continue
        if not within(key, RESUME_MAY_CHANGE):
            had = f"the sweep has {old}" if old is not None else f"the sweep was launched without {key}"
            raise ConfigError(f"resume={sweep_dir}: {line} would change what the sweep's runs compute ({had}); "
                              f"a resumed sweep may change only {', '.join(RESUME_MAY_CHANGE[:8])}, ...: start a "
                              "new sweep for another")
        if old is not None and OverridesParser.create().parse_overrides([old])[0].is_sweep_override():
            raise ConfigError(f"resume={sweep_dir}: {line}: the sweep sweeps {old}; a resumed sweep keeps its grid")
        changed[key] = old
    return changed


def keep_run_names(sweep_dir: Path, saved: list[str], given: list[str]) -> None:
    """Before ``-m resume=SWEEP`` launches: record in RUN_NAMES the overrides its runs were named with, for
    each key ``given`` changes for the first time, so that every job finds its own run directory."""
    named_by = run_names(sweep_dir)
    first = {k: v for k, v in resume_changes(sweep_dir, saved, given).items() if k not in named_by}
    if first:
        write_json(sweep_dir / RUN_NAMES, {"named_by": {**named_by, **first}})


def run_names(sweep_dir: str | Path) -> dict[str, str | None]:
    """The sweep's RUN_NAMES ({} where no resume has changed a key), checked as untrusted data."""
    path = Path(sweep_dir) / RUN_NAMES
    if not path.exists() and not path.is_symlink():
        return {}
    data = load_json(path)
    named_by = data.get("named_by") if isinstance(data, dict) else None
    if not isinstance(named_by, dict) or not all(_names_a_run(key, line) for key, line in named_by.items()):
        raise ConfigError(f"{path}: not rlconf's record of how a sweep's runs are named (named_by: a mapping of "
                          "keys a resume may change to the override the runs were named with, or null)")
    return named_by


def _names_a_run(key: Any, line: Any) -> bool:
    """Whether RUN_NAMES may hold ``key: line``: a key a resume may change (not a placement one), with the
    override of that key the runs were named with, or None (they were named without one)."""
    return (isinstance(key, str) and within(key, RESUME_MAY_CHANGE) and not is_placement(key)
            and (line is None or (isinstance(line, str) and override_key(line) == key)))


def sweep_job_name(sweep_dir: str | Path, agent: str, env: str, seed: int, overrides: list[str]) -> str:
    """The directory name of a sweep job (``rundir.sweep_run_name``), with the keys a resume has changed named
    by their values of the sweep's first launch (RUN_NAMES)."""
    named_by = run_names(sweep_dir)
    kept = [o for o in overrides if override_key(o) not in named_by]
    return sweep_run_name(agent, env, seed, kept + [line for line in named_by.values() if line is not None])
