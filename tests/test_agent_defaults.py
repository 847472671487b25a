"""A default is written once. An agent's are in configs/agent/<name>.yaml, and its ``Config`` dataclass takes
them from there (``@agent_defaults``); a preset holds only what differs from the config it is merged over; an
Atari game's env config holds only its name and id, over the settings every game shares.

The agent YAML is composed by Hydra on its own (``config_name=agent/<name>``): its defaults list of other agent
files is merged with ``_self_`` where it stands, as in a run, but without an env, whose family preset would
replace the agent's defaults with that family's hyperparameters. That Hydra's reading and the dataclass's agree,
key for key and type for type, checks the derivation (the dataclass reads the files with PyYAML).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rlconf import registry
from rlconf.agents.specs._defaults import NOT_SETTINGS, agent_defaults
from rlconf.config import compose as compose_run
from rlconf.paths import config_dir

AGENTS = sorted(path.stem for path in (config_dir() / "agent").glob("*.yaml"))
PRESETS = sorted(path.relative_to(config_dir() / "preset").with_suffix("").as_posix()
                 for path in (config_dir() / "preset").glob("**/*.yaml"))


def agent_yaml(name: str) -> dict[str, Any]:
    """configs/agent/<name>.yaml as Hydra composes it, with its defaults list."""
    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        return OmegaConf.to_container(compose(config_name=f"agent/{name}"))["agent"]


def dataclass_defaults(config: type) -> dict[str, Any]:
    """Every field's default as the YAML would write it (nested dataclasses as mappings); a field without a
    default is dataclasses.MISSING, which the YAML must still list."""
    values = {}
    for field in dataclasses.fields(config):
        value = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
        values[field.name] = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
    return values


def same(yaml_value: Any, code_value: Any) -> bool:
    """Equal, and a bool on both sides or neither (``False == 0`` in Python, not in a config)."""
    return isinstance(yaml_value, bool) == isinstance(code_value, bool) and yaml_value == code_value


class Absent:
    """Stands for a key that one side of a nested mapping lacks (None is a value a YAML may hold)."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT = Absent()


def value_differences(key: str, yaml_value: Any, code_value: Any) -> list[str]:
    """``key: YAML x, dataclass y`` for the value, or for each key inside it that differs when both are
    mappings, so that a nested difference names its own key rather than printing both mappings whole."""
    if isinstance(yaml_value, dict) and isinstance(code_value, dict):
        return [line for inner in sorted(yaml_value.keys() | code_value.keys())
                for line in value_differences(f"{key}.{inner}", yaml_value.get(inner, ABSENT),
                                              code_value.get(inner, ABSENT))]
    return [] if same(yaml_value, code_value) else [f"{key}: YAML {yaml_value!r}, dataclass {code_value!r}"]


def disagreements(name: str) -> list[str]:
    """One line per key on which configs/agent/<name>.yaml and the agent's Config differ."""
    config = registry.get("agent", name).Config
    yaml_values = {k: v for k, v in agent_yaml(name).items() if k not in NOT_SETTINGS}
    code_values = dataclass_defaults(config)
    where = f"agent={name}: {name}.yaml vs {config.__name__}"
    lines = [f"{where}: {key}={yaml_values[key]!r} in the YAML, not a field of the dataclass"
             for key in yaml_values if key not in code_values]
    lines += [f"{where}: {key} missing from the YAML (dataclass default {code_values[key]!r})"
              for key in code_values if key not in yaml_values]
    for key in yaml_values.keys() & code_values.keys():
        yaml_value, code_value = yaml_values[key], code_values[key]
        if key in AGENTS and code_value == {}:
            # A multi-agent's section for another agent (independent's agent.dqn): in the dataclass empty
            # (that agent's own defaults), in the YAML that agent's file, composed in through the defaults list.
            code_value = agent_yaml(key)
        if code_value is not dataclasses.MISSING:
            lines += [f"{where}: {line}" for line in value_differences(key, yaml_value, code_value)]
    return sorted(lines)


def test_every_registered_agent_has_a_config_file_and_every_file_an_agent():
    assert set(AGENTS) == set(registry.names("agent"))


@pytest.mark.parametrize("name", AGENTS)
def test_the_dataclass_takes_every_default_from_the_yaml(name):
    problems = disagreements(name)
    assert not problems, "\n".join(problems)


def test_a_disagreement_names_the_agent_the_key_and_both_values(monkeypatch):
    """The check itself: a default changed on one side only, and a key on one side only, either side."""
    td3 = registry.get("agent", "td3")
    kept = [(f.name, f.type, dataclasses.field(default=f.default)) for f in dataclasses.fields(td3.Config)
            if f.name not in ("noise", "policy_delay")]
    drifted = dataclasses.make_dataclass("Drifted", [*kept, ("noise", float, dataclasses.field(default=0.3)),
                                                     ("extra", int, dataclasses.field(default=1))])
    monkeypatch.setattr(td3, "Config", drifted)
    assert disagreements("td3") == [
        "agent=td3: td3.yaml vs Drifted: extra missing from the YAML (dataclass default 1)",
        "agent=td3: td3.yaml vs Drifted: noise: YAML 0.1, dataclass 0.3",
        "agent=td3: td3.yaml vs Drifted: policy_delay=2 in the YAML, not a field of the dataclass",
    ]


# -- a default written in the class too, or a key on one side only, is refused when the module is imported ----
def test_a_default_written_in_the_class_too_is_refused():
    with pytest.raises(TypeError, match=r"Twice\.noise: its default is written in configs/agent/td3\.yaml"):
        @agent_defaults("td3")
        class Twice(registry.agent_spec("td3").config):
            noise: float = 0.3


def test_a_yaml_key_the_class_does_not_declare_is_refused():
    with pytest.raises(TypeError, match=r"configs/agent/td3\.yaml: discount_factor is not a field of Bare"):
        @agent_defaults("td3")
        class Bare:
            noise: float


def test_a_field_the_yaml_leaves_out_is_refused():
    with pytest.raises(TypeError, match=r"configs/agent/random\.yaml has no value for lr \(Extra\)"):
        @agent_defaults("random")
        class Extra:
            lr: float


def test_code_that_builds_a_config_gets_the_yaml_defaults():
    td3 = registry.agent_spec("td3").config()
    assert (td3.replay_start_size, td3.noise, td3.policy_delay) == (10_000, 0.1, 2)
    assert isinstance(registry.agent_spec("ppo").config().clip_grad, float)
    assert registry.agent_spec("rainbow").config().n_steps == 3 and registry.agent_spec("c51").config().n_steps == 1


# -- presets: only what differs from the config they are merged over ------------------------------------------
def family_env(family: str) -> str:
    """An env whose config picks ``family``."""
    for path in sorted((config_dir() / "env").glob("*/*.yaml")):
        if f"override /family: {family}\n" in path.read_text():
            return path.relative_to(config_dir() / "env").with_suffix("").as_posix()
    raise LookupError(family)


def preset_run(preset: str) -> list[str]:
    """The overrides of a run that applies ``preset``: a family's (``classic/ppo``) or a task's, over the
    family's (``classic/mask_velocity/ppo``: that body)."""
    family, *body, agent = preset.split("/")
    return [f"agent={agent}", f"env={family_env(family)}", *(f"body={b}" for b in body)]


def preset_file(entry: str) -> Path:
    """The file of a preset's defaults-list entry: ``atari/dqn`` (relative) or ``/preset/continuous/ppo``."""
    return config_dir() / "preset" / f"{entry.removeprefix('/preset/')}.yaml"


def preset_values(path: Path) -> OmegaConf:
    """A preset file's values with those of the presets its defaults list names merged first."""
    own = yaml.safe_load(path.read_text()) or {}
    values = OmegaConf.create()
    for entry in own.pop("defaults", []):
        if entry != "_self_":
            values = OmegaConf.merge(values, preset_values(preset_file(entry)))
    return OmegaConf.merge(values, own)


def leaves(node: dict, prefix: str = ""):
    for key, value in node.items():
        if isinstance(value, dict):
            yield from leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def restated(preset: str, own: dict[str, Any]) -> list[str]:
    """The keys of ``own`` (preset ``family/agent``'s or ``family/body/agent``'s values, without its defaults
    list) whose value the run would have without them: the agent's defaults, the family's and top-level
    settings, the family's preset under a task's, and the presets its defaults list names."""
    base = compose_run([*preset_run(preset), "~preset@_global_" if preset.count("/") == 2 else "~preset"], [])
    for entry in yaml.safe_load(f"{preset_file(preset).read_text()}").get("defaults", []):
        if entry != "_self_":
            base = OmegaConf.merge(base, preset_values(preset_file(entry)))
    lines = []
    for key, value in leaves(own):
        before = OmegaConf.select(base, key, default=ABSENT)
        before = OmegaConf.to_container(before) if OmegaConf.is_config(before) else before
        if same(value, before):
            lines.append(f"preset/{preset}.yaml: {key}={value!r} is the value without the preset")
    return lines


@pytest.mark.parametrize("preset", PRESETS)
def test_a_preset_holds_only_what_differs(preset):
    compose_run(preset_run(preset), [])  # it composes, its defaults list too
    own = yaml.safe_load(preset_file(preset).read_text())
    own.pop("defaults", None)
    problems = restated(preset, own)
    assert not problems, "\n".join(problems)


def test_a_preset_restating_a_default_is_named():
    own = yaml.safe_load(preset_file("classic/dqn").read_text())
    own["agent"]["adam_eps"] = 1e-8  # DQN's default
    own["steps"] = 50_000  # the preset's own value, not a restatement
    assert restated("classic/dqn", own) == ["preset/classic/dqn.yaml: agent.adam_eps=1e-08 is the value without "
                                            "the preset"]



def test_presets_merged_into_others_keep_their_effect():
    """What a chain of presets sets reaches the run: Rainbow on Atari explores with noisy layers only, though
    its parent, the C51 preset, decays epsilon to 0.02; DDQN takes the DQN preset's schedule and adds its dueling
    network."""
    rainbow = compose_run(["agent=rainbow", "env=atari/pong"], []).agent
    assert (rainbow.epsilon, rainbow.epsilon_final, rainbow.adam_eps, rainbow.lr) == (0.0, 0.0, 1.5e-4, 1e-4)
    c51 = compose_run(["agent=c51", "env=atari/pong"], []).agent
    assert (c51.epsilon, c51.epsilon_final, c51.replay_start_size) == (1.0, 0.02, 80_000)
    ddqn = compose_run(["agent=ddqn", "env=atari/pong"], [])
    assert (ddqn.agent.replay_start_size, ddqn.agent.n_steps, ddqn.agent.double_q, ddqn.agent.replay) == (
        320, 3, True, "prioritized")
    assert (ddqn.approximation.dueling, ddqn.approximation.scale_frames, ddqn.hardware.n_envs) == (True, False, 10)

# -- Atari: each game its name and id, over the settings every game shares ------------------------------------
def test_an_atari_game_config_writes_only_its_name_and_id():
    games = sorted((config_dir() / "env" / "atari").glob("*.yaml"))
    assert len(games) > 100
    for path in games:
        config = yaml.safe_load(path.read_text())
        assert set(config["env"]) == {"name", "id"}, f"{path.name} restates the shared settings"
        assert "/family/atari/game@env" in config["defaults"], f"{path.name} does not merge the shared settings"


def uncommented_values(text: str) -> list[str]:
    """The lines of a preset that set a value with no comment on them or on the line just above (a comment may
    speak for a pair of lines, as lr_q and lr_pi)."""
    lines, previous = [], ""
    for line in text.splitlines():
        code = line.split("#")[0]
        if ":" in code and code.split(":", 1)[1].strip() and "#" not in line and "#" not in previous:
            lines.append(line.strip())
        previous = line
    return lines


@pytest.mark.parametrize("preset", PRESETS)
def test_every_value_a_preset_keeps_says_why(preset):
    assert not uncommented_values(preset_file(preset).read_text()), f"preset/{preset}.yaml: say why or cite a source"


def test_an_uncommented_value_is_named():
    assert uncommented_values("agent:\n  lr: 1.0e-3  # the paper's\n  lr_pi: 1.0e-3\n  batch_size: 32\n") == [
        "batch_size: 32"]
