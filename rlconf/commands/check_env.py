"""``rlconf check-env ID`` (or ``module:Class``): what rlconf will make of an environment, before a run fails.

It makes one copy, runs gymnasium's own checker on it (``gymnasium.utils.env_checker.check_env``: its warnings and
a failure said in plain lines) and prints the spaces, the keys of a structured (Dict or Tuple) observation with
the encoder each would get, whether actions are masked, and which registered agents can play it (the pairing
check a run makes, ``experiments.build.pairing``), with why the others cannot. A plain environment is read
without torch; a structured or masked one is made as a run makes it (the gymnasium adapter), which needs it.

A bad id or class is one line, exit status 2; a copy that fails gymnasium's checker is reported with the rest,
exit status 1.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from rlconf import registry
from rlconf.core.kinds import EnvKind
from rlconf.environments.registered import unknown_id_message
from rlconf.errors import ConfigError, first_line

USAGE = "usage: rlconf check-env ID | module:Class [--plugins M,...]"
CHECK_PREFIX = "rlconf-check-env"  # the namespace a module:Class is registered under, in this process only


@dataclass
class Target:
    """What was asked for: a registered gymnasium id (``module:Class`` is registered here as one), the family
    whose adapter makes it, and the plugins a run of it names."""

    env_id: str
    family: str
    plugins: list[str]
    shown: str  # as the user wrote it


def check_env_command(target: str, plugins: list[str]) -> int:
    """Print what rlconf makes of ``target``; 0 when gymnasium's checker passes, 1 when it fails."""
    try:
        registry.load_plugins(plugins)
    except ImportError as error:
        raise ConfigError(f"--plugins {','.join(plugins)}: {error} (is its folder on PYTHONPATH?)") from None
    found = resolve(target, plugins)
    import gymnasium as gym

    env = gym.make(found.env_id, disable_env_checker=True)
    try:
        problems, failure = run_checker(env)
        _, info = env.reset(seed=0)
        observation_space, action_space = env.observation_space, env.action_space
    finally:
        env.close()
    print(f"{found.shown}: gymnasium's checker {'failed: ' + failure if failure else 'passed'}"
          f"{'' if failure or not problems else f' with {len(problems)} warning(s)'}")
    for line in problems:
        print(f"  warning: {line}")
    print(f"observations: {observation_space}")
    print(f"actions: {action_space}")
    structured = not isinstance(observation_space, (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiBinary,
                                                   gym.spaces.MultiDiscrete))
    masked = mask_source(observation_space, info)
    seen = adapted(found) if structured or masked else SimpleNamespace(
        kind=EnvKind.SINGLE_AGENT, name=found.shown, observation_space=observation_space, action_space=action_space)
    try:
        print(f"action mask: {masked or 'none'}")
        if masked and failure:  # the checker steps with random actions, blind to the mask
            print("  note: gymnasium's checker takes random actions, masked ones too: an environment that refuses "
                  "an illegal action fails it, and rlconf never takes one")
        if structured:
            print_layout(seen)
        print_agents(seen, found)
    finally:
        if hasattr(seen, "close"):
            seen.close()
    return 1 if failure else 0


def resolve(target: str, plugins: list[str]) -> Target:
    """The gymnasium id ``target`` names: an id (found once the families' registering modules are imported),
    ``module:Id``, or ``module:Class`` (an Env class, registered here under CHECK_PREFIX); a ConfigError else."""
    import gymnasium as gym

    module, _, name = target.rpartition(":")
    if module:
        try:
            found = getattr(importlib.import_module(module), name, None) if name.isidentifier() else None
        except ImportError as error:
            raise ConfigError(f"{target}: cannot import {module} ({error})") from None
        if isinstance(found, type) and issubclass(found, gym.Env):
            env_id = f"{CHECK_PREFIX}/{name}-v0"
            if env_id not in gym.registry:
                gym.register(env_id, entry_point=found)
            return Target(env_id, "classic", [*plugins, module], target)
        if name not in gym.registry:
            raise ConfigError(f"{target}: {module} has no gymnasium Env class and registers no id {name!r}; "
                              f"allowed: module:EnvClass, module:Id-v0 or an id")
        return Target(target, family_of(name), [*plugins, module], target)
    if target not in gym.registry:
        registering = import_family_modules()
        if target not in gym.registry:
            raise ConfigError(unknown_id_message(target, named=""))
        plugins = [*plugins, *registering.get(target, [])]
    return Target(target, family_of(target), plugins, target)


def import_family_modules() -> dict[str, list[str]]:
    """Import the modules that register the families' ids (those installed); returns which ids each added."""
    import gymnasium as gym

    added: dict[str, list[str]] = {}
    for spec in registry.specs("environment").values():
        for module in spec.gymnasium_ids or ():
            before = set(gym.registry)
            try:
                importlib.import_module(module)
            except ImportError:  # that family's extra is not installed: its ids cannot be what was meant
                continue
            for env_id in set(gym.registry) - before:
                added.setdefault(env_id, []).append(module)
    return added


def family_of(env_id: str) -> str:
    """The family whose adapter makes ``env_id``: one whose registering module provides it (minigrid), else
    ``classic`` (``env=gym``), which makes any gymnasium id."""
    import gymnasium as gym

    entry = gym.spec(env_id).entry_point
    package = (entry if isinstance(entry, str) else getattr(entry, "__module__", "")).split(":")[0].split(".")[0]
    for name, spec in registry.specs("environment").items():
        if spec.wrappers and package in (spec.gymnasium_ids or ()):
            return name
    return "classic"


def run_checker(env: Any) -> tuple[list[str], str | None]:
    """Gymnasium's checker on ``env``: its warnings, each one line, and its failure (None when it passed)."""
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check_env(env.unwrapped, skip_render_check=True)
            failure = None
        except Exception as error:  # the checker's assertion, or the environment's own error
            failure = first_line(error)
    lines = list(dict.fromkeys(" ".join(str(w.message).split()) for w in caught))
    return [line.removeprefix("\x1b[33mWARN: ").removesuffix("\x1b[0m") for line in lines], failure


def mask_source(observation_space: Any, info: dict) -> str | None:
    """Where the environment's action mask comes from (the conventions rlconf reads), None without one."""
    import gymnasium as gym

    if isinstance(observation_space, gym.spaces.Dict) and "action_mask" in observation_space.spaces:
        return "the observation's 'action_mask' key (state['action_mask'], True: legal)"
    if "action_mask" in info:
        return "info['action_mask'] (state['action_mask'], True: legal)"
    return None


def adapted(found: Target) -> Any:
    """One copy made as a run makes it (the family's adapter: structured rows packed, the mask split off)."""
    spec = registry.env_spec(found.family)
    try:
        return registry.import_path(spec.class_path)(found.env_id, 1, vectorization="sync", name=found.shown)
    except Exception as error:  # a layout rlconf cannot pack, a mask of the wrong shape: what a run would say
        raise ConfigError(f"{found.shown}: {first_line(error)}") from None


def print_layout(env: Any) -> None:
    """The keys of a structured observation: each one's space, dtype, shape and encoder."""
    from rlconf.nn.encoders import describe_encoders

    layout = env.layout.without_mask() if env.layout is not None else None
    if layout is None:
        return
    print("observation keys (each encoded, then concatenated):")
    for line in describe_encoders(layout, {}):
        print(f"  {line}")


def run_overrides(found: Target) -> str:
    """The overrides that run ``found``: env=gym and its id, with the family whose adapter makes it (its
    registering modules imported by it) or the plugins that register it."""
    family = registry.env_spec(found.family)
    plugins = [m for m in dict.fromkeys(found.plugins) if m not in (family.gymnasium_ids or ())]
    words = [f"env=gym env.id={found.shown}"]
    if found.family != "classic":
        words.append(f"env.family={found.family}")
    if plugins:
        words.append(f"plugins=[{','.join(plugins)}]")
    return " ".join(words)


def print_agents(env: Any, found: Target) -> None:
    """Which registered agents can play ``env``, and why each of the others cannot."""
    from rlconf.experiments.build.pairing import compatible

    able, unable = [], []
    for name, spec in sorted(registry.specs("agent").items()):
        refusal = compatible(spec, env, name)
        (able if refusal is None else unable).append((name, refusal))
    print(f"agents that can play it: {', '.join(name for name, _ in able) or 'none'}")
    reasons: dict[str, list[str]] = {}  # the same reason once, with every agent it stops
    for name, refusal in unable:
        reasons.setdefault(str(refusal).removeprefix(f"agent={name}: "), []).append(name)
    if reasons:
        print("agents that cannot:")
        for reason, names in reasons.items():
            print(f"  {', '.join(names)}: {reason}")
    if able and not found.env_id.startswith(CHECK_PREFIX):
        print(f"run it: rlconf run agent={'ppo' if 'ppo' in dict(able) else able[0][0]} {run_overrides(found)}")
    elif able:
        print("run it: register it with gymnasium.register(ID, entry_point=...) in a plugin module, then "
              "rlconf run agent=... env=gym env.id=ID plugins=[that module]")

