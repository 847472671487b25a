"""Each agent's defaults are written twice, in its ``Config`` dataclass (what code and tests build) and in
configs/agent/<name>.yaml (what a user reads and overrides): the two must say the same, key for key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from rlconf import registry

AGENT_CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "agent"
NOT_SETTINGS = {"name", "_target_", "defaults"}


def agent_yaml(name: str) -> dict:
    """configs/agent/<name>.yaml with its defaults list (other agent files, ``_self_`` where it stands)
    merged in order, as Hydra composes it."""
    node = OmegaConf.to_container(OmegaConf.load(AGENT_CONFIGS / f"{name}.yaml"))
    defaults = node.get("defaults", ["_self_"])
    if "_self_" not in defaults:
        defaults = ["_self_", *defaults]  # Hydra 1.1+: _self_ first when not listed
    merged: dict = {}
    for entry in defaults:
        if entry == "_self_":
            merged.update({k: v for k, v in node.items() if k not in NOT_SETTINGS})
        elif isinstance(entry, dict):  # /agent@key: other -> the other agent's whole config under key
            ((target, other),) = entry.items()
            merged[target.rsplit("@", 1)[1]] = COMPOSED
        else:
            merged.update(agent_yaml(entry))
    return merged


COMPOSED = "<another agent's config>"  # independent's per-agent sections, composed from those agents' files


def dataclass_defaults(config: type) -> dict:
    values = {}
    for field in dataclasses.fields(config):
        if field.default is not dataclasses.MISSING:
            values[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            values[field.name] = field.default_factory()
    return values


def as_plain(value):
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    return value


AGENTS = sorted(path.stem for path in AGENT_CONFIGS.glob("*.yaml"))


def test_every_registered_agent_has_a_config_file_and_every_file_an_agent():
    assert set(AGENTS) == set(registry.names("agent"))


@pytest.mark.parametrize("name", AGENTS)
def test_the_yaml_and_the_dataclass_agree_on_every_default(name):
    yaml_values = agent_yaml(name)
    code_values = dataclass_defaults(registry.get("agent", name).Config)
    assert sorted(set(yaml_values) - set(code_values)) == [], f"{name}.yaml has keys its Config lacks"
    assert sorted(set(code_values) - set(yaml_values)) == [], f"{name}.yaml does not list these Config keys"
    differing = {key: (yaml_values[key], as_plain(code_values[key])) for key in code_values
                 if yaml_values[key] != as_plain(code_values[key]) and yaml_values[key] != COMPOSED}
    assert differing == {}, f"{name}: key: (yaml, dataclass)"
