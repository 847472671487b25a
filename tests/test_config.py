"""validate(): a composed config becomes typed Settings, or one ConfigError line naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import assert_preset_reaches
from omegaconf import OmegaConf

from rlconf.agents.dqn import DQN, DQNConfig
from rlconf.agents.ppo import PPOConfig
from rlconf.config import compose, validate
from rlconf.errors import ConfigError
from rlconf.paths import config_dir
from rlconf.schema import check
from rlconf.settings import EnvSettings, HardwareSettings, RunSettings, Settings


def composed(*overrides: str, agent: str = "dqn"):
    return compose([f"agent={agent}", "env=classic/cartpole", *overrides], [])


def test_a_good_config_gives_typed_settings():
    cfg = composed("agent.lr=0.01", "seed=3", "steps=1234")
    settings = validate(cfg)
    assert isinstance(settings, Settings)
    assert settings.agent_name == "dqn"
    assert settings.agent_class is DQN
    assert isinstance(settings.agent, DQNConfig)
    assert type(settings.agent.lr) is float and settings.agent.lr == 0.01
    assert type(settings.agent.batch_size) is int
    assert settings.agent.batch_size == cfg.agent.batch_size  # the preset's value, typed
    assert isinstance(settings.run, RunSettings)
    assert (settings.run.seed, settings.run.steps) == (3, 1234)
    assert isinstance(settings.env, EnvSettings)
    assert (settings.env.id, settings.env.family, settings.env.name) == ("CartPole-v1", "classic", "classic/cartpole")
    assert isinstance(settings.hardware, HardwareSettings)
    assert settings.hardware.device == "cpu"
    assert settings.approximation["model"] == "mlp"
    assert settings.approximation["hidden"] == list(cfg.approximation.hidden)
    assert list(settings.logger.backends) == ["csv"]


def test_the_env_family_picks_the_agents_preset():
    """configs/preset/classic/ppo.yaml is applied without naming it: every value it sets reaches Settings."""
    settings = validate(composed(agent="ppo"))
    assert isinstance(settings.agent, PPOConfig)
    assert_preset_reaches(settings, "classic", "ppo")


def learning_benchmark_rows() -> dict[str, dict]:
    return yaml.safe_load((Path(__file__).resolve().parents[1] / "benchmarks" / "learning.yaml").read_text())["rows"]


@pytest.mark.parametrize("row", sorted(learning_benchmark_rows()))
def test_an_experiment_composes_exactly_the_learning_benchmark_row_it_names(row):
    """experiment=NAME pins the whole setting the row's overrides give: the same config, key for key."""
    entry = learning_benchmark_rows()[row]
    by_name = compose([f"experiment={entry['experiment']}"], [])
    by_overrides = compose(list(entry["overrides"]), [])
    assert OmegaConf.to_container(by_name, resolve=True) == OmegaConf.to_container(by_overrides, resolve=True)


def test_the_command_line_wins_over_an_experiment():
    cfg = compose(["experiment=atari_pong_dqn", "agent=ppo", "steps=1000", "seed=3", "agent.lr=0.001"], [])
    assert (cfg.agent.name, cfg.steps, cfg.seed, cfg.agent.lr) == ("ppo", 1000, 3, 0.001)
    assert cfg.env.name == "atari/pong" and cfg.env.kwargs.repeat_action_probability == 0  # the rest still pinned
    preset = OmegaConf.load(config_dir() / "preset" / "atari" / "ppo.yaml")
    assert cfg.agent.batch_size == preset.agent.batch_size  # the preset of the agent now chosen


@pytest.mark.parametrize(("overrides", "words"), [
    (["agent.lr=abc"], ["agent.lr=abc", "float"]),
    (["agent.batch_size=1.5"], ["agent.batch_size", "int"]),
    (["agent.lr_final=abc"], ["agent.lr_final", "float"]),
    (["steps=-5"], ["steps=-5", "positive"]),
    (["seed=-1"], ["seed=-1", "from 0 to"]),
    (["eval_every=-1"], ["eval_every"]),
    (["quiet=maybe"], ["quiet=maybe", "bool"]),
    (["hardware.n_envs=0"], ["hardware.n_envs=0", "at least 1"]),
    (["hardware.device=tpu"], ["hardware.device=tpu", "cpu", "cuda"]),
    (["hardware.vectorization=bad"], ["hardware.vectorization=bad", "sync", "async"]),
    (["+agent.nosuchkey=1"], ["agent.nosuchkey", "agent.lr"]),
    (["+nosuchkey=1"], ["nosuchkey", "steps"]),
    (["+env.nosuchkey=1"], ["env.nosuchkey", "env.id"]),
    (["+approximation.nosuchkey=1"], ["approximation.nosuchkey", "approximation.hidden"]),
    (["approximation.hidden=[a,b]"], ["approximation.hidden", "int"]),
    (["approximation.model=nosuch"], ["approximation.model", "nosuch", "mlp"]),
    (["env.family=nosuch"], ["env.family=nosuch", "classic"]),
    (["env.max_episode_steps=0"], ["env.max_episode_steps=0"]),
    (["body.name=nosuch"], ["body.name=nosuch", "none"]),
    (["+logger.nope={}"], ["logger.nope", "logger.tensorboard", "logger.wandb"]),
    (["logger=wandb", "logger.wandb.mode=sometimes"], ["logger.wandb.mode=sometimes", "online, offline, disabled"]),
    (["logger=tensorboard", "logger.tensorboard.flush_secs=soon"], ["logger.tensorboard.flush_secs", "int"]),
    (["logger.debug_every=0"], ["logger.debug_every=0"]),
    (["plugins=[no_such_plugin_module]"], ["plugins", "no_such_plugin_module"]),
    (["agent.name=dqnn"], ["agent.name", "dqnn", "did you mean 'dqn'"]),
])
def test_bad_values_raise_one_line_config_errors_naming_the_key(overrides, words):
    with pytest.raises(ConfigError) as info:
        validate(composed(*overrides))
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)


def test_agent_target_that_cannot_be_imported_is_a_config_error():
    cfg = composed()
    cfg.agent = OmegaConf.create({"_target_": "no_such_module_xyz.Agent"})
    with pytest.raises(ConfigError, match=r"agent\._target_=no_such_module_xyz\.Agent"):
        validate(cfg)


def test_check_builds_the_dataclass_and_rejects_unknown_keys():
    settings = check(HardwareSettings, {"n_envs": 4}, "hardware.")
    assert settings == HardwareSettings(n_envs=4)
    with pytest.raises(ConfigError, match=r"unknown key 'hardware\.n_env' \(did you mean 'hardware\.n_envs'\?\)"):
        check(HardwareSettings, {"n_env": 4}, "hardware.")


def test_every_key_alias_suggests_a_key_that_exists():
    """registry.KEY_ALIASES answers an unknown key by meaning: every key it may suggest exists, a dotted one in
    the composed config, a plain one in some agent, group or at the top level."""
    from rlconf.registry import KEY_ALIASES
    from rlconf.schema import config_keys

    keys = set().union(*(config_keys(composed(agent=path.stem)) for path in (config_dir() / "agent").glob("*.yaml")),
                       config_keys(compose(["agent=dqn", "env=atari/pong"], [])))
    leaves = {key.rpartition(".")[2] for key in keys}
    for habit, meant in KEY_ALIASES.items():
        for key in meant:
            assert (key in keys) if "." in key else (key in leaves), (habit, key)
        assert habit not in meant, habit


def test_whole_numbers_written_as_floats_are_accepted_for_integer_keys():
    settings = validate(composed("steps=1e5", "seed=3.0", "hardware.n_envs=2.0", "agent.replay_buffer_size=1e4",
                                 "env.max_episode_steps=5e2", "logger.scalars_every=1e3"))
    assert (settings.run.steps, settings.run.seed, settings.hardware.n_envs) == (100_000, 3, 2)
    assert (settings.agent.replay_buffer_size, settings.env.max_episode_steps) == (10_000, 500)
    assert settings.logger.scalars_every == 1000
    assert all(type(v) is int for v in (settings.run.steps, settings.run.seed, settings.agent.replay_buffer_size,
                                        settings.env.max_episode_steps, settings.logger.scalars_every))
    for bad in ("steps=1.5", "hardware.n_envs=2.5", "agent.batch_size=0.5"):
        with pytest.raises(ConfigError, match=bad.split("=")[0]):
            validate(composed(bad))


def test_the_registry_declares_what_each_built_in_component_declares():
    """validate() reads an agent's spec, an env family's spec, a model's settings and a body's options from the
    registry, without importing the component (nor torch): here each is compared with the component itself.
    What an agent or an environment family declares is its spec alone: no class repeats it."""
    import inspect

    from rlconf import registry
    from rlconf.agents import AgentSpec
    from rlconf.environments import EnvSpec
    from rlconf.nn.layers import ACTIVATIONS
    from rlconf.nn.schemas import ACTIVATION_NAMES

    capabilities = {"plays", "recurrent", "data_parallel", "data_parallel_recurrent", "runs_async", "alternates"}
    for name in registry.names("agent"):
        spec, agent_class = registry.agent_spec(name), registry.get("agent", name)
        assert isinstance(spec, AgentSpec) and spec.name == name, name
        assert spec.config is agent_class.Config and "torch" not in spec.config.__module__, name
        assert not capabilities & {k for c in agent_class.__mro__ for k in vars(c)}, name  # the spec's alone
    for name in registry.names("model"):
        builder, schema = registry.get("model", name), registry.model_schema(name)
        assert issubclass(builder, schema) and "torch" not in schema.__module__, name
        assert "images_only" not in vars(schema), name  # the registry's entry says it
    for name in registry.names("environment"):
        spec = registry.env_spec(name)
        assert isinstance(spec, EnvSpec) and spec.name == name, name
        try:
            env_class = registry.get("environment", name)
        except ModuleNotFoundError:  # an optional extra
            continue
        assert env_class.kind is spec.kind, name  # the loop reads an env's kind from the env itself
        assert not {"image_observations", "lives", "test_bounds"} & {k for c in env_class.__mro__ for k in vars(c)}
    for name in registry.names("body"):
        taken = [p for p in inspect.signature(registry.get("body", name)).parameters
                 if p not in ("agent", "name", "observation_space")]  # the space it is built for: not a setting
        assert registry.declared("body", name, "options") == tuple(taken), name
    assert tuple(ACTIVATIONS) == ACTIVATION_NAMES
