"""Gymnasium ids and wrappers named in a config: checked before anything is built, then made into the spec that
every copy of the environment is made from.

``env.id`` of a family whose spec declares ``gymnasium_ids`` is looked up in gymnasium's registry without
building anything, once the family's registering modules (``ale_py``, ``minigrid``) and the run's plugins are
imported (validation imports plugins first, so an id a plugin registers is found): an unknown id is one line
with the nearest registered ids.

``env.wrappers`` lists gymnasium wrappers put around each copy, innermost first, each given as

- ``gymnasium.wrappers.TimeAwareObservation`` (``module.Class`` or ``module:Class``), made with no arguments, or
- ``{target: my_plugin.ScaleReward, kwargs: {factor: 0.1}}``.

The trust rule is that of ``callbacks=`` and plugin agents: code only from gymnasium's own modules or from a
module named in ``plugins=``. Each class is imported and its arguments checked here, before anything is built.

The wrappers travel as gymnasium's own ``additional_wrappers`` of an ``EnvSpec`` handed to the adapter in place of
the id (``wrapped_spec``): ``gym.make`` applies them wherever a copy is made (this process, async subprocesses,
a parallel sampler's spawned workers), and a spawned process finds a plugin's env and wrapper classes by their
import paths rather than by a registration it never saw.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import inspect
from dataclasses import dataclass
from typing import Any

from rlconf import registry
from rlconf.errors import ConfigError

TRUSTED = "gymnasium"  # the package whose wrappers any config may name
SYNTAX = "module.Class or {target: module.Class, kwargs: {...}}"


@dataclass(frozen=True)
class Wrapper:
    """One entry of ``env.wrappers``: the class's import path (``module:Class``) and its keyword arguments."""

    module: str
    name: str
    kwargs: dict[str, Any]

    @property
    def entry_point(self) -> str:
        return f"{self.module}:{self.name}"


def parse_wrappers(value: Any) -> list[Wrapper]:
    """``env.wrappers`` as written, each entry a ``Wrapper``; a ConfigError naming an entry of another shape."""
    if not isinstance(value, list):
        raise ConfigError(f"env.wrappers={value}: must be a list of wrappers; allowed entries: {SYNTAX}")
    return [_parse_entry(entry) for entry in value]


def _parse_entry(entry: Any) -> Wrapper:
    kwargs: Any = {}
    path = entry
    if isinstance(entry, dict):
        unknown = sorted(set(entry) - {"target", "kwargs"})
        if unknown or "target" not in entry:
            raise ConfigError(f"env.wrappers: {entry} has {'key ' + repr(unknown[0]) if unknown else 'no target'}; "
                              f"allowed entries: {SYNTAX}")
        path, kwargs = entry["target"], entry.get("kwargs") or {}
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise ConfigError(f"env.wrappers: {entry}: kwargs must be a mapping of argument names to values")
    if not isinstance(path, str) or (":" not in path and "." not in path):
        raise ConfigError(f"env.wrappers: {path!r} is not a class's import path; allowed entries: {SYNTAX}")
    module, _, name = path.partition(":") if ":" in path else path.rpartition(".")
    if registry.plugin_problem(module) is not None or not name.isidentifier():
        raise ConfigError(f"env.wrappers: {path!r} is not a class's import path; allowed entries: {SYNTAX}")
    return Wrapper(module, name, dict(kwargs))


def trusted(module: str, plugins: list[str]) -> bool:
    """Whether a config may name a class of ``module``: one of gymnasium's, or a module named in ``plugins=``."""
    return module == TRUSTED or module.startswith(TRUSTED + ".") or module in plugins


def wrapper_class(wrapper: Wrapper, plugins: list[str]) -> type:
    """The gymnasium wrapper class ``wrapper`` names, imported under the trust rule, or a ConfigError."""
    import gymnasium as gym

    path = f"{wrapper.module}.{wrapper.name}"
    if not trusted(wrapper.module, plugins):
        raise ConfigError(f"env.wrappers: {path} is not from gymnasium or a module named in plugins= "
                          f"(plugins={plugins}); allowed: gymnasium's wrappers, or classes of your plugin modules")
    try:
        found = getattr(importlib.import_module(wrapper.module), wrapper.name, None)
    except ImportError as error:
        raise ConfigError(f"env.wrappers: {path}: cannot import {wrapper.module} ({error})") from None
    if not (isinstance(found, type) and issubclass(found, gym.Wrapper)):
        known = sorted(_wrappers_of(wrapper.module))
        near = difflib.get_close_matches(wrapper.name, known, n=3)
        hint = f"did you mean {', '.join(f'{wrapper.module}.{n}' for n in near)}" if near else (
            f"allowed: gymnasium.Wrapper classes, e.g. {', '.join(known[:4]) or 'gymnasium.wrappers.TimeLimit'}")
        raise ConfigError(f"env.wrappers: {path} is not a gymnasium wrapper class; {hint}")
    return found


def _wrappers_of(module: str) -> list[str]:
    """The names of the gymnasium wrapper classes ``module`` holds (already imported: nothing runs here)."""
    import sys

    import gymnasium as gym

    found = sys.modules.get(module)
    return [name for name in dir(found) if isinstance(getattr(found, name, None), type)
            and issubclass(getattr(found, name), gym.Wrapper)] if found else []


def check_arguments(wrapper: Wrapper, kind: type) -> None:
    """The wrapper takes its ``kwargs`` (an env first): said now, not as a TypeError in a worker process."""
    try:
        signature = inspect.signature(kind)
    except (TypeError, ValueError):  # a class whose signature cannot be read: gymnasium says so when it is made
        return
    try:
        signature.bind(None, **wrapper.kwargs)
    except TypeError as error:
        takes = ", ".join(p for p in list(signature.parameters)[1:]) or "no arguments"
        raise ConfigError(f"env.wrappers: {wrapper.module}.{wrapper.name} kwargs={wrapper.kwargs}: {error}; "
                          f"it takes: {takes}") from None


def check_wrappers(value: Any, family: Any, env_name: str, plugins: list[str]) -> None:
    """``env.wrappers`` fits the family (``family``: its EnvSpec) and names importable, trusted wrapper classes
    that take the arguments given: one line otherwise, before anything is built."""
    wrappers = parse_wrappers(value)
    if wrappers and not family.wrappers:
        able = [name for name, spec in registry.specs("environment").items() if spec.wrappers]
        raise ConfigError(f"env.wrappers: env={env_name} ({family.name}) makes its copies its own way, without "
                          f"gymnasium wrappers; allowed with the families {', '.join(able)}, or env.wrappers=[]")
    for wrapper in wrappers:
        check_arguments(wrapper, wrapper_class(wrapper, plugins))


# -- gymnasium ids -------------------------------------------------------------------------------------------
def import_registering(family: Any, env_name: str) -> None:
    """Import the modules that register ``family``'s ids (a missing extra is one line naming it)."""
    for module in family.gymnasium_ids or ():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            raise ConfigError(f"env={env_name} needs the missing package {error.name!r}: "
                              f"pip install 'rlconf[{family.extra or family.name}]'") from None


def nearest_ids(env_id: str, n: int = 3) -> list[str]:
    """The registered gymnasium ids nearest ``env_id`` (letter case aside), nearest first."""
    import gymnasium as gym

    ids = {name.lower(): name for name in gym.registry}
    return [ids[name] for name in difflib.get_close_matches(env_id.lower(), list(ids), n=n, cutoff=0.6)]


def unknown_id_message(env_id: str, named: str = "env.id=") -> str:
    """The one line for an id gymnasium's registry does not hold: the nearest ids, or where ids come from.
    ``named``: how the line names it (env.id= in a config; nothing for ``rlconf check-env ID``)."""
    near = nearest_ids(env_id.rpartition(":")[2])
    hint = f"did you mean {', '.join(near)}" if near else "an id a package registers needs it in plugins=[package]"
    return f"{named}{env_id}: not a registered gymnasium id; {hint}"


def check_env_id(env_id: str, family: Any, env_name: str, plugins: list[str]) -> None:
    """``env_id`` is in gymnasium's registry, for a family of gymnasium ids (``family.gymnasium_ids`` not None),
    once its registering modules are imported; nothing is built. Gymnasium's ``module:Id`` form (gym.make
    imports the module) is taken for a module named in ``plugins=``, under their rule: already imported."""
    if family.gymnasium_ids is None:
        return
    module, _, name = env_id.rpartition(":")
    if module and not trusted(module, plugins):
        raise ConfigError(f"env.id={env_id}: the module of a module:Id id is imported only when named in "
                          f"plugins=; allowed: plugins=[{module}] env.id={name} (or env.id={env_id} with it)")
    import_registering(family, env_name)
    import gymnasium as gym

    if name not in gym.registry:
        raise ConfigError(unknown_id_message(env_id))


def find_spec(env_id: Any) -> Any:
    """Gymnasium's EnvSpec of ``env_id``: an EnvSpec as it is, ``module:Id`` once ``module`` is imported (as
    gym.make does it: how a spawned process finds an id a module registers), else from the registry."""
    import gymnasium as gym

    if isinstance(env_id, gym.envs.registration.EnvSpec):
        return env_id
    module, _, name = env_id.rpartition(":")
    if module:
        importlib.import_module(module)
    return gym.spec(name)


def require_env_id(cfg: Any) -> None:
    """A composed config (``cfg``) names its env's id: ``env=gym`` leaves it to the command line."""
    from omegaconf import DictConfig, OmegaConf

    env = cfg.get("env")
    if isinstance(env, DictConfig) and OmegaConf.is_missing(env, "id"):
        raise ConfigError(f"env={env.get('name', '...')} needs env.id=ID: a registered gymnasium id "
                          "(e.g. env.id=LunarLander-v3), or one a module in plugins= registers")


def check_env(env: Any, plugins: list[str]) -> None:
    """The env group's id and wrappers (``env``: EnvSettings), checked against gymnasium before anything is
    built; ``plugins``: the modules the config names, already imported."""
    family = registry.env_spec(env.family)
    check_env_id(env.id, family, env.name, plugins)
    check_wrappers(env.wrappers, family, env.name, plugins)


def wrapped_spec(env_id: str, wrappers: Any, plugins: list[str]) -> Any:
    """What the adapter makes copies from: ``env_id`` itself without wrappers or plugins (a run's copies exactly
    as before), else gymnasium's EnvSpec of it with the wrappers added to its ``additional_wrappers``: with
    plugins, because an id a plugin registered is unknown to a spawned worker, which the spec's import paths
    lead to the plugin's classes."""
    parsed = parse_wrappers(wrappers)
    if not parsed and not plugins:
        return env_id
    from gymnasium.envs.registration import WrapperSpec

    spec = find_spec(env_id)
    added = tuple(WrapperSpec(w.name, w.entry_point, w.kwargs) for w in parsed)
    return dataclasses.replace(spec, additional_wrappers=(*spec.additional_wrappers, *added))
