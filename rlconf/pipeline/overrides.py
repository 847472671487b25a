"""The overrides a run is composed from, read before anything is composed: what Hydra's parser would refuse
with a traceback (or accept and ignore), and the overrides a ``resume=`` or ``rerun=`` directory was launched
with, merged with those typed beside it. A run directory's files are data (rlconf.experiments.rundir.saved)."""

from __future__ import annotations

import re
from pathlib import Path

from rlconf.errors import ConfigError

# Hydra settings that rlconf's own keys and groups replace: typed, they would be ignored or break a sweep.
REPLACED_HYDRA = {
    "hydra.run.dir": "rlconf puts each run in a folder of its own under logdir: give logdir=DIR",
    "hydra.sweep.dir": "rlconf puts each sweep under logdir: give logdir=DIR (-m resume=SWEEP_DIR continues one)",
    "hydra/launcher": "rlconf chooses Hydra's launcher with its launcher group: launcher=NAME (rlconf list launcher)",
}


def key(override: str) -> str:
    """The key an override sets (``+agent.lr=1`` -> ``agent.lr``)."""
    return override.lstrip("+~").split("=", 1)[0]


def last_value(overrides: list[str], name: str) -> str | None:
    """The value the last override of ``name`` gives it, or None."""
    values = [o.split("=", 1)[1] for o in overrides if key(o) == name and "=" in o]
    return values[-1] if values else None


def group_choices(value: str) -> list[str]:
    """The options a group override names: one (``logger=wandb``) or a list (``logger=[csv,wandb]``)."""
    if value.startswith("[") and value.endswith("]"):
        return [v.strip().strip("'\"") for v in value[1:-1].split(",") if v.strip()]
    return [value]


def override_prefixes() -> dict:
    """Hydra's override types and the prefix each is written with."""
    from hydra.core.override_parser.types import OverrideType

    return {OverrideType.CHANGE: "", OverrideType.ADD: "+", OverrideType.FORCE_ADD: "++", OverrideType.DEL: "~"}


def parse(overrides: list[str]) -> list:
    """Hydra's parse of the overrides; a ConfigError with the first line of its complaint."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        return OverridesParser.create().parse_overrides(overrides)
    except Exception as error:  # Hydra's parser errors are multi-line; keep the first line
        raise ConfigError(f"cannot parse overrides: {str(error).splitlines()[0]}") from None


def hydra_quoted(value: str) -> str:
    """``value`` as one Hydra override value, whatever it holds (a comma would make a path a sweep)."""
    if re.fullmatch(r"[\w./+@:-]+", value):
        return value
    # Hydra's quoted values escape a quote, and the backslashes just before a quote or the closing one.
    value = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", value)
    return "'" + re.sub(r"(\\+)$", lambda m: m.group(1) * 2, value) + "'"


def check_typed(overrides: list[str]) -> None:
    """What Hydra's parser would refuse with a traceback, or accept and ignore, said in one line first."""
    for override in overrides:
        name = key(override)
        if not name:
            raise ConfigError(f"{override}: an override needs a key: key=value (e.g. seed=3)")
        if override.startswith("~"):
            raise ConfigError(f"{override}: rlconf does not delete config keys (a run's config.yaml must be "
                              "complete); set a value instead (key=value), or choose another option of a group")
        if name in REPLACED_HYDRA:
            raise ConfigError(f"{override}: {REPLACED_HYDRA[name]}")
        odd = next((c for c in override if not c.isascii() or not c.isprintable()), None)
        if odd is not None and not _quoted_value(override):
            key_part, _, value = _escaped(override).partition("=")
            raise ConfigError(f"{_escaped(override)}: {odd!r} is not allowed unquoted in an override; quote the "
                              f"value: {key_part}='{value}'")


def _escaped(text: str) -> str:
    """``text`` with its control characters escaped (a newline as ``\\n``): an error stays one line."""
    from rlconf.schema import CONTROL_CHARACTERS

    return CONTROL_CHARACTERS.sub(lambda m: repr(m.group())[1:-1], text)


def _quoted_value(override: str) -> bool:
    name, eq, value = override.partition("=")
    return bool(eq) and name.isascii() and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\""


def with_saved(overrides: list[str], multirun: bool) -> list[str]:
    """The overrides typed, ``init=RUN`` as ``init.run=RUN``, after a ``rerun=``'s or ``resume=``'s saved ones."""
    overrides = [f"init.run={o.split('=', 1)[1]}" if key(o) == "init" else o for o in overrides]
    return with_resume(with_rerun(overrides, multirun), multirun)


def with_resume(overrides: list[str], multirun: bool) -> list[str]:
    """``resume=DIR``: the overrides DIR was launched with, then those given beside ``resume`` (which replace
    any of the same key). A sweep directory (with -m) becomes the sweep's directory (``hydra.sweep.dir``),
    where each run resumes or, finished, is skipped.

    DIR's files are data (rlconf.experiments.rundir.saved): no Hydra setting but a sweep's launcher and sweeper
    parameters, no interpolation, no ``_target_``, and its plugins only when they are given here too."""
    from rlconf.experiments.rundir.resume import check_same_choice, resume_changes
    from rlconf.experiments.rundir.saved import check_sweep_summaries

    value = last_value(overrides, "resume") or ""
    if not value or value == "null":
        return overrides
    saved = saved_overrides(value, multirun)
    if not multirun:  # before composing: the saved agent's keys would otherwise be named as unknown
        for group in ("agent", "env"):
            check_same_choice(value, group, last_value(saved, group), last_value(overrides, group))
    else:  # every run continues in place: nothing given may change what the runs compute
        resume_changes(value, saved, overrides)
        check_sweep_summaries(Path(value))  # the launcher reads them where an error is no longer one line
    _check_saved_plugins(saved, overrides, f"resume={value}")
    given = {key(o) for o in overrides}
    merged = [o for o in saved if key(o) not in given | {"resume", "hydra.sweep.dir"}] + overrides
    if multirun:  # the jobs resume by their directories in the sweep directory, not by a resume key
        merged = [o for o in merged if key(o) != "resume"] + [
            f"hydra.sweep.dir={hydra_quoted(str(Path(value).resolve()))}"]
    return merged


def with_rerun(overrides: list[str], multirun: bool) -> list[str]:
    """``rerun=DIR``: the overrides DIR was launched with (without its sweep's grid and launcher), then the keys
    given beside ``rerun``, which may only say where and how visibly the new run executes. After composing, the
    run puts DIR's recorded values back wherever today's presets differ (provenance.as_recorded)."""
    from rlconf.experiments.rundir.provenance import check_rerun_overrides

    value = last_value(overrides, "rerun")
    if not value or value == "null":
        return overrides
    if multirun:
        raise ConfigError(f"rerun={value} repeats one run: leave out -m (-m resume=SWEEP_DIR continues a sweep)")
    saved = saved_overrides(value, False, name="rerun")
    check_rerun_overrides(value, [o for o in overrides if key(o) != "rerun"])
    _check_saved_plugins(saved, overrides, f"rerun={value}")
    given = {key(o) for o in overrides}
    # How visibly the first run ran is not part of what it computed: today's command line says.
    return [o for o in saved if key(o) not in given | {"resume", "rerun", "quiet", "verbose"}] + overrides


def _check_saved_plugins(saved: list[str], overrides: list[str], what: str) -> None:
    """The plugins a run directory was launched with must be named again: its files never import code."""
    from rlconf.experiments.rundir.saved import check_plugins

    saved_plugins = last_value(saved, "plugins")
    if saved_plugins is not None:
        given = last_value(overrides, "plugins")
        check_plugins(group_choices(saved_plugins), None if given is None else group_choices(given), what,
                      "plugins=[{}]")


def saved_overrides(value: str, multirun: bool, name: str = "resume") -> list[str]:
    """The overrides a run (or, with -m, a sweep) directory was launched with, checked as untrusted data."""
    from rlconf.experiments.rundir.directory import within
    from rlconf.experiments.rundir.resume import check_resume_dir, check_resume_sweep_dir
    from rlconf.experiments.rundir.saved import SWEEP_HYDRA_KEYS, check_overrides, load_yaml, read_overrides

    if not multirun:  # a run of a sweep resumed alone: without the sweep's named grid, launcher and trial
        lines = read_overrides(check_resume_dir(value, name) / "overrides.yaml")
        return [o for o in lines if not within(key(o), ("sweep", "launcher", "trial"))]
    # The sweep's own overrides and its hydra.* ones (launcher settings, n_trials, ...).
    path = check_resume_sweep_dir(value) / "multirun.yaml"
    saved = load_yaml(path)
    overrides = (((saved or {}).get("hydra") or {}).get("overrides") or {}) if isinstance(saved, dict) else {}
    task, hydra = overrides.get("task") or [], overrides.get("hydra") or []
    if not isinstance(task, list) or not isinstance(hydra, list) or not all(
            isinstance(o, str) for o in (*task, *hydra)):
        raise ConfigError(f"{path}: not a sweep's multirun.yaml (no list of overrides under hydra.overrides)")
    hydra = [o for o in hydra if key(o) not in ("hydra.sweep.dir", "hydra.searchpath", "hydra.mode")]
    return check_overrides(task, path) + check_overrides(hydra, path, SWEEP_HYDRA_KEYS)
