"""An agent's schema takes its defaults from its YAML: ``@agent_defaults(name)``.

A default is written once, in configs/agent/<name>.yaml beside what the key means (BenchMARL's split: values
in YAML, the schema in the dataclass). ``@agent_defaults(name)`` reads that file when the schema's module is
imported and makes its values the dataclass's defaults, so ``DQNConfig()`` in code and ``agent=dqn`` on the
command line start from the same numbers; a class writes only each field's type and the checks of its values.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import field
from typing import Any

import yaml

from rlconf.errors import require
from rlconf.paths import config_dir

YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where PyYAML was built with it
NOT_SETTINGS = ("name", "_target_")  # what an agent's YAML tells Hydra and the registry, not the agent


def agent_yaml_values(name: str) -> dict[str, Any]:
    """configs/agent/<name>.yaml's keys and values, with the agent files its defaults list names merged in
    where they stand (ddqn.yaml: dqn.yaml's, then its own), as Hydra composes the file. A defaults entry that
    places another agent under a key of its own (independent's ``/agent@dqn: dqn``) is that agent's section,
    not a value of this one's. Read with PyYAML's C loader, 30 times faster than OmegaConf's: every check of a
    config imports this module (tests/test_agent_defaults.py checks Hydra reads the same values)."""
    own = yaml.load((config_dir() / "agent" / f"{name}.yaml").read_text(), Loader=YAML_LOADER)
    entries = own.pop("defaults", ["_self_"])
    values: dict[str, Any] = {}
    for entry in entries if "_self_" in entries else [*entries, "_self_"]:
        if entry == "_self_":
            values.update(own)
        elif isinstance(entry, str):
            values.update(agent_yaml_values(entry))
    return values


def agent_defaults(name: str):
    """A class decorator, under ``@dataclass``: every field's default from configs/agent/<name>.yaml (inherited
    fields too, so ddqn.yaml's ``replay: prioritized`` is DDQNConfig's). A key the class does not declare, a field
    the file leaves out, or a default also written in the class is a mistake in this module: it fails on import."""

    def decorate(cls: type) -> type:
        types = {f.name: f.type for base in reversed(cls.__mro__[1:]) if dataclasses.is_dataclass(base)
                 for f in dataclasses.fields(base)}
        own = dict(cls.__dict__.get("__annotations__", {}))
        types.update(own)
        values = {k: v for k, v in agent_yaml_values(name).items() if k not in NOT_SETTINGS}
        for key, value in values.items():
            if key not in types:
                raise TypeError(f"configs/agent/{name}.yaml: {key} is not a field of {cls.__name__}")
            if key in cls.__dict__:
                raise TypeError(f"{cls.__name__}.{key}: its default is written in configs/agent/{name}.yaml, "
                                "not in the class")
            own[key] = types[key]
            setattr(cls, key, _field_default(types[key], value))
        unset = [k for k in types if k not in values and k not in cls.__dict__ and not _inherited_default(cls, k)]
        if unset:
            raise TypeError(f"configs/agent/{name}.yaml has no value for {', '.join(unset)} ({cls.__name__})")
        cls.__annotations__ = own
        return cls

    return decorate


def _field_default(kind: Any, value: Any) -> Any:
    """``value`` as a dataclass default: a float field's whole number as a float (YAML's ``0`` for
    ``clip_grad: float`` is 0.0, as OmegaConf makes it), a list or mapping behind a factory."""
    if isinstance(value, int) and not isinstance(value, bool) and "float" in str(kind):
        return float(value)
    if isinstance(value, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(value))
    return value


def _inherited_default(cls: type, key: str) -> bool:
    """Whether a base dataclass already gives the field ``key`` a default (a default factory counts)."""
    for base in cls.__mro__[1:]:
        fields = getattr(base, "__dataclass_fields__", {})
        if key in fields:
            return (fields[key].default is not dataclasses.MISSING
                    or fields[key].default_factory is not dataclasses.MISSING)
    return False


def require_epsilon_schedule(config) -> None:
    """An epsilon-greedy schedule's settings: probabilities (start, end, test), decaying over at least a step."""
    require(config.epsilon_decay_steps >= 1, "agent.epsilon_decay_steps", config.epsilon_decay_steps,
            "must be at least 1")
    for key in ("epsilon", "epsilon_final", "eval_epsilon"):
        require(0 <= getattr(config, key) <= 1, f"agent.{key}", getattr(config, key), "must be in [0, 1]")

