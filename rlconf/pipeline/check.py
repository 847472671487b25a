"""The check step: every value a run (or a sweep) will use, composed and validated before anything runs.

A sweep's every value is composed once, the other sweeps at their first value: linear, not the whole product,
and still every value is checked. The launcher's and the sweeper's settings are the plan's (``plan``), checked
between the first composition and the rest, since an Optuna sweep's search space adds values to compose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconf.errors import ConfigError
from rlconf.pipeline.groups import EXAMPLE, HIDDEN_GROUPS, REQUIRED_GROUPS, group_options, search_dirs
from rlconf.pipeline.overrides import (
    check_typed,
    group_choices,
    key,
    last_value,
    override_prefixes,
    parse,
    with_saved,
)
from rlconf.pipeline.plan import sweep_values

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from rlconf.settings import Settings


@dataclass
class Checked:
    """What the check made of the overrides typed: the overrides to launch with, the (first job's) settings and
    the option its composition chose in each config group (Hydra's ``hydra.runtime.choices``)."""

    overrides: list[str]
    settings: Settings
    choices: dict[str, str | None]


def check_run(overrides: list[str], config_dirs: list[str], multirun: bool) -> Checked:
    """The overrides typed, checked (``check_typed``), merged with a ``resume=``'s or ``rerun=``'s saved ones,
    and every value composed and validated (``precheck``)."""
    check_typed(overrides)
    return precheck(with_saved(overrides, multirun), config_dirs, multirun)


def precheck(overrides: list[str], config_dirs: list[str], multirun: bool) -> Checked:
    """Compose and validate every value a sweep will use, so bad input fails before anything runs. Returns the
    overrides to launch with: as given, but for whole numbers written as floats (``integer_overrides``), and the
    settings of the first job."""
    parsed = parse(overrides)
    groups = group_options(search_dirs(config_dirs))
    choices: dict[str, list[str]] = {}
    fixed: list[str] = []  # overrides that are not sweeps, exactly as typed (with any +, ++ or ~)
    sweeps: dict[str, tuple[str, list[str]]] = {}  # key -> (prefix, values)
    sampled: list[str] = []  # interval sweeps: drawn by a sweeper as it goes (Optuna), checked at their start
    for override in parsed:
        name = override.get_key_element()
        if _is_interval(override):
            sampled.append(override.input_line)
            values = [str(override.value().start)]
        else:
            values = list(override.sweep_string_iterator()) if override.is_sweep_override() else [
                override.get_value_element_as_str()]
        _check_sweep_override(override, name, multirun)
        choices[name] = values
        if override.is_sweep_override():
            sweeps[name] = (override_prefixes()[override.type], values)
        else:
            fixed.append(override.input_line)
        if name in groups:  # hidden groups too: an optional one (preset) would otherwise skip a misspelt choice
            _check_choices(name, values, groups[name])
    _check_required(choices, groups, multirun)

    base = {name: f"{prefix}{name}={values[0]}" for name, (prefix, values) in sweeps.items()}
    hydra_cfg, settings = check_composition([*fixed, *base.values()], config_dirs)
    if multirun:
        extra = sweep_values(hydra_cfg, [o.input_line for o in parsed if o.is_sweep_override()], sampled,
                             set(sweeps), settings)
        if extra:
            sweeps.update(extra)
            base = {name: f"{prefix}{name}={values[0]}" for name, (prefix, values) in sweeps.items()}
            check_composition([*fixed, *base.values()], config_dirs)
    for name, (prefix, values) in sweeps.items():
        for value in values[1:]:
            check_composition([*fixed, *{**base, name: f"{prefix}{name}={value}"}.values()], config_dirs)
    return Checked(integer_overrides(parsed, settings), settings, dict(hydra_cfg.hydra.runtime.choices.items()))


def _check_sweep_override(override, name: str, multirun: bool) -> None:
    if override.is_sweep_override() and not multirun:
        raise ConfigError(f"{override.input_line} is a sweep: add -m to run one job per value")
    if override.is_sweep_override() and name.startswith("hydra."):
        raise ConfigError(f"{override.input_line}: Hydra's own settings cannot be swept; to give a sweep as "
                          f"a value, quote it: {name}='{override.input_line.split('=', 1)[1]}'")


def _check_choices(group: str, values: list[str], options: dict[str, str]) -> None:
    from rlconf.registry import unknown_message

    for value in (c for v in values for c in group_choices(v)):
        if value not in options:
            see = "" if group in HIDDEN_GROUPS else f"rlconf list {group}"
            raise ConfigError(unknown_message(group, value, sorted(options), see))


def _check_required(choices: dict[str, list[str]], groups: dict[str, dict[str, str]], multirun: bool) -> None:
    """An agent and an env (or an experiment, which names both); a named sweep only with -m."""
    from rlconf.registry import MESSAGE_LIMIT
    from rlconf.registry import choices as available

    for group in REQUIRED_GROUPS:
        if group not in choices and choices.get("experiment", ["null"]) == ["null"]:
            head = f"missing {group}: choose one with {group}=NAME (e.g. rlconf run {EXAMPLE})"
            options = available(sorted(groups.get(group, {})), group, f"rlconf list {group}",
                                room=MESSAGE_LIMIT - len(head) - 2, sample=False)
            raise ConfigError(f"{head}; {options}")
    if "sweep" in choices and choices["sweep"] != ["null"] and not multirun:
        raise ConfigError(f"sweep={','.join(choices['sweep'])} is a sweep: add -m to run one job per value")


def integer_overrides(parsed: list, settings: Settings) -> list[str]:
    """The overrides as typed, but where an integer key is given a whole number as a float (``steps=1e5``,
    ``seed=1e1,2e1``): there Hydra is given the integer (``steps=100000``), so that the run's config.yaml, the
    launchers (``${hardware.gpus_per_run}``) and the sweepers see what the check made of it (``schema.whole``)."""
    from hydra.core.override_parser.types import ChoiceSweep

    from rlconf.schema import whole
    from rlconf.settings import typed_value

    lines = []
    for override in parsed:
        name, value, line = override.get_key_element(), override.value(), override.input_line
        typed = typed_value(settings, name) if not name.startswith("hydra") else None
        prefix = override_prefixes()[override.type]
        if isinstance(typed, int) and not isinstance(typed, bool):
            if isinstance(value, float) and value.is_integer():
                line = f"{prefix}{name}={int(value)}"
            elif isinstance(value, ChoiceSweep) and all(type(v) in (int, float) for v in value.list) and not (
                    value.tags or value.shuffle):
                values = ",".join(str(whole(v)) for v in value.list)
                line = f"{prefix}{name}={values if value.simple_form else f'choice({values})'}"
        elif (isinstance(typed, list) and typed and all(type(v) is int for v in typed) and isinstance(value, list)
              and all(type(v) in (int, float) for v in value)):  # approximation.hidden=[64.0,64]
            line = f"{prefix}{name}=[{','.join(str(whole(v)) for v in value)}]"
        lines.append(line)
    return lines


def _is_interval(override) -> bool:
    """``interval(a, b)`` (or ``tag(log, interval(a, b))``): a range to sample, which cannot be enumerated."""
    from hydra.core.override_parser.types import IntervalSweep

    return override.is_sweep_override() and isinstance(override.value(), IntervalSweep)


def check_composition(overrides: list[str], config_dirs: list[str]) -> tuple[DictConfig, Settings]:
    """Compose and validate; returns the composed config with its ``hydra`` node (for the launcher's checks)
    and the checked settings."""
    from omegaconf import OmegaConf, open_dict

    from rlconf.config import compose, validate
    from rlconf.experiments.rundir.resume import check_resumable, check_resume_dir
    from rlconf.launch.launcher_config import SLURM_TARGET
    from rlconf.settings import check_process_counts

    try:
        cfg = compose(overrides, config_dirs, hydra_config=True)
    except Exception as error:
        raise ConfigError(_hydra_message(error, overrides, config_dirs)) from None
    job = cfg.copy()
    with open_dict(job):
        del job["hydra"]
    settings = validate(job)
    if str(cfg.hydra.launcher.get("_target_", "")) != SLURM_TARGET:  # a run of this machine
        check_process_counts(settings.hardware)
    if settings.run.resume and "hydra.sweep.dir" not in {key(o) for o in overrides}:
        check_resumable(check_resume_dir(settings.run.resume), OmegaConf.to_container(job, resolve=True), overrides)
    return cfg, settings


def _hydra_message(error: Exception, overrides: list[str], config_dirs: list[str]) -> str:
    """Hydra's composition errors, reduced to one line that names the key."""
    text = " ".join(str(error).split())
    if "not in struct" in text or "Could not override" in text:
        name = text.split("'")[1] if "'" in text else text
        return _unknown_key_message(name, overrides, config_dirs)
    if text.startswith("Error merging override") and error.__cause__ is not None:  # say why: the type
        return f"{text.removeprefix('Error merging override ')}: {str(error.__cause__).splitlines()[0]}"
    # Hydra appends its search path and a hint about HYDRA_FULL_ERROR: noise on a one-line error.
    return text.split(". Set the environment variable")[0].split(" Config search path:")[0]


def _unknown_key_message(name: str, overrides: list[str], config_dirs: list[str]) -> str:
    """Name the keys that do exist where ``name`` was asked for (composed without the bad override)."""
    from omegaconf import DictConfig, OmegaConf

    from rlconf.config import compose
    from rlconf.registry import unknown_message
    from rlconf.schema import config_keys

    parent = name.rpartition(".")[0]
    others = [o for o in overrides if o.lstrip("+~").split("=")[0] != name]
    composed: Any = None
    try:
        composed = compose(others, config_dirs, hydra_config=name.startswith("hydra."))
        node = OmegaConf.select(composed, parent) if parent else composed
    except Exception:
        node = None
    picks = " ".join(f"{group}={value}" for group in ("experiment", *REQUIRED_GROUPS)
                     if (value := last_value(others, group)))
    see = f"rlconf run {picks or 'agent=... env=...'} --cfg {'hydra' if name.startswith('hydra.') else 'job'}"
    if not isinstance(node, DictConfig):
        if name.startswith("agent.groups."):  # a team group's own setting is a key to add, not one to change
            return f"unknown key {name!r}; a group's own setting is added with a +: +{name}=VALUE"
        return f"unknown key {name!r}; see the composed config with: {see}"
    return unknown_message("key", name, [f"{parent}.{k}" if parent else str(k) for k in node], see,
                           config_keys(composed))
