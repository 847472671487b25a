"""Checking a config node against a dataclass schema: unknown keys named with what they may mean, whole
numbers written as floats made integers, nan, inf and out-of-range integers refused, each in one line.

The ground floor of configuration: agents' and models' schemas, the settings groups and validation use it;
it imports nothing of rlconf's but the registry's message helper and the errors."""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rlconf import registry
from rlconf.errors import ConfigError, require

# A budget no machine finishes (a trillion steps is weeks at a million steps a second) is a typo.
MAX_STEPS = 10**12
# Seeds reach numpy's legacy generator and the simulators, which take 32-bit seeds.
MAX_SEED = 2**32 - 1
INT64 = 2**63  # integers the tensors, generators and simulators can hold lie within +-INT64


def require_every(key: str, value: Any, least: int) -> None:
    """The one rule of every ``*_every`` key (``eval_every``, ``logger.scalars_every``, ...): a whole number of
    steps (or updates) from ``least`` to MAX_STEPS; more is never reached, and is a typo."""
    require(isinstance(value, int) and not isinstance(value, bool) and least <= value <= MAX_STEPS, key, value,
            f"must be an integer from {least} to {MAX_STEPS:,}")


# Control characters (a newline, a tab, an escape) in a path make a file named ``a\nb`` that no listing shows as
# typed, and break the lines of every log that names it.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def require_path(key: str, value: Any) -> None:
    """A path setting (``logdir``, ...) holds no control character."""
    found = CONTROL_CHARACTERS.search(value) if isinstance(value, str) else None
    if found is not None:
        raise ConfigError(f"{key}={value!r}: holds the control character {found.group()!r}; allowed: a path of "
                          "printable characters")


def check(schema: type, node: Any, prefix: str = "", see: str = "", known: set[str] | None = None) -> Any:
    """``node`` (a DictConfig or dict) as an instance of the dataclass ``schema``, or a ConfigError. An unknown
    key's message names the keys it may mean among ``known`` (every key of the config) and ``see``, a command
    that shows them all."""
    node = OmegaConf.create(node) if not isinstance(node, DictConfig) else node
    allowed = [f.name for f in dataclasses.fields(schema)]
    for key in node:
        if key not in allowed:
            raise ConfigError(registry.unknown_message("key", f"{prefix}{key}", [prefix + a for a in allowed], see,
                                                       known))
    try:
        node = OmegaConf.to_container(node, resolve=True)
    except OmegaConfBaseException:  # an interpolation that does not resolve here: the merge below says which
        pass
    else:
        node = whole_numbers(schema, node)
        check_booleans(schema, node, prefix)
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema), node)
        settings = OmegaConf.to_object(merged)
    except ConfigError:
        raise
    except OmegaConfBaseException as error:
        key = f"{prefix}{error.full_key}" if getattr(error, "full_key", None) else prefix.rstrip(".")
        value = getattr(error, "value", None)
        expected = _expected_type(schema, str(error.full_key or ""))
        raise ConfigError(f"{key}={value}: {expected}") from None
    check_finite_numbers(settings, prefix)
    return settings


def check_nested(schema: type, values: dict, prefix: str) -> Any:
    """``values`` as an instance of the agent Config ``schema``, where they live under ``prefix`` in the config
    (``agent.dqn.`` of agent=independent, ``agent.groups.<group>.`` of a team agent). The Config's own checks
    name keys as ``agent.<key>``; the message names them where they were written."""
    try:
        return check(schema, values, prefix)
    except ConfigError as error:
        message = str(error)
        if message.startswith("agent.") and not message.startswith(prefix):
            message = prefix + message.removeprefix("agent.")
        raise ConfigError(message) from None


def whole_numbers(schema: type, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with each float that is a whole number (``steps=1e5``, ``100000.0``) under a key ``schema``
    types as an integer (``int``, ``int | None``, ``list[int]``, nested settings too) made that integer: the
    command line reads 1e5 as a float. 1.5 stays a float, which the schema refuses as before."""
    hints = typing.get_type_hints(schema)
    values = dict(values)
    for f in dataclasses.fields(schema):
        if f.name not in values:
            continue
        kind, value = hints.get(f.name), values[f.name]
        if _integer_type(kind):
            values[f.name] = whole(value)
        elif typing.get_origin(kind) is list and _integer_type(typing.get_args(kind)[0]) and isinstance(value, list):
            values[f.name] = [whole(item) for item in value]
        elif dataclasses.is_dataclass(kind) and isinstance(value, dict):
            values[f.name] = whole_numbers(kind, value)
    return values


def check_booleans(schema: type, values: dict[str, Any], prefix: str = "") -> None:
    """Refuse a number other than 0 or 1 under a key ``schema`` types as a bool (nested settings too): OmegaConf
    would take ``agent.input_priorities=3`` as true, where the user most likely meant another key or value."""
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        kind, value = hints.get(f.name), values.get(f.name)
        if dataclasses.is_dataclass(kind) and isinstance(value, dict):
            check_booleans(kind, value, f"{prefix}{f.name}.")
        elif kind in (bool, bool | None) and isinstance(value, int | float) and not isinstance(value, bool) \
                and value not in (0, 1):
            raise ConfigError(f"{prefix}{f.name}={value}: expected a bool; allowed: true, false")


def whole(value: Any) -> Any:
    """A float that is a whole number as that int (1e5 -> 100000); anything else as it is."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _integer_type(kind: Any) -> bool:
    return kind is int or (typing.get_origin(kind) in (typing.Union, types.UnionType)
                           and int in typing.get_args(kind) and set(typing.get_args(kind)) <= {int, type(None)})


def config_keys(node: Any, prefix: str = "") -> set[str]:
    """Every key of a composed config, dotted (``hardware.n_envs``), without resolving anything."""
    keys = set()
    for key in node.keys() if isinstance(node, DictConfig) else ():
        dotted = f"{prefix}{key}"
        keys.add(dotted)
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            keys |= config_keys(child, dotted + ".")
    return keys


def check_finite_numbers(settings: Any, prefix: str = "") -> None:
    """Refuse nan and inf in a settings dataclass (nested settings and lists included): YAML and the command
    line accept ``inf`` and ``nan`` as floats, and a learning rate of inf trains nothing but NaN weights.
    Integers beyond 64 bits are refused too: no tensor, generator or simulator takes them.
    Free-form mappings (an env's kwargs) are the simulator's business and are not looked into."""
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        values = value if isinstance(value, list) else [value]
        if dataclasses.is_dataclass(value):
            check_finite_numbers(value, f"{prefix}{f.name}.")
        for item in values:
            if isinstance(item, float) and not math.isfinite(item):
                raise ConfigError(f"{prefix}{f.name}={value}: must be a finite number")
            if isinstance(item, int) and not -INT64 <= item < INT64:
                raise ConfigError(f"{prefix}{f.name}={value}: out of range; integers must lie within +-2^63")


def _expected_type(schema: type, key: str) -> str:
    """The declared type of ``key`` (dotted, into nested settings) for the error message."""
    kind: Any = schema
    for name in key.split("."):
        fields = {f.name: f for f in dataclasses.fields(kind)} if dataclasses.is_dataclass(kind) else {}
        field_ = fields.get(name.split("[")[0])
        if field_ is None:
            return "expected a valid value"
        kind = field_.default_factory if dataclasses.is_dataclass(field_.default_factory) else field_.type
    return f"expected {kind}"
