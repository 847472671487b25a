"""Which agents play which environments: the kinds environments declare, what agents' specs declare they play,
and every refusal of a pairing, each one line from ``pairing.compatible``, on real environments."""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import pytest

from rlconf import registry
from rlconf.agents import AgentSpec, Plays
from rlconf.core import EnvKind
from rlconf.environments import Environment, GymVectorEnvironment
from rlconf.environments.bandit import MultiArmedBandit
from rlconf.experiments.build.pairing import compatible


@pytest.fixture(scope="module")
def envs():
    made = {"cartpole": GymVectorEnvironment("CartPole-v1", 1, name="classic/cartpole"),
            "pendulum": GymVectorEnvironment("Pendulum-v1", 1, name="classic/pendulum"),
            "bernoulli": MultiArmedBandit("bernoulli", 1, name="bandit/bernoulli")}
    yield made
    for env in made.values():
        env.close()


@pytest.fixture(scope="module")
def tictactoe():
    pytest.importorskip("pettingzoo", reason="the pettingzoo extra is not installed")
    from rlconf.environments.pettingzoo import MultiagentEnvironment

    env = MultiagentEnvironment("pettingzoo.classic.tictactoe_v3", name="pettingzoo/tictactoe")
    yield env
    env.close()


def test_every_agent_declares_what_it_plays_and_every_env_family_its_kind():
    for name in registry.names("agent"):
        assert isinstance(registry.agent_spec(name).plays, Plays), name
    for name in registry.names("environment"):
        assert isinstance(registry.env_spec(name).kind, EnvKind), name
        try:
            env_class = registry.get("environment", name)
        except ModuleNotFoundError:  # an optional extra
            continue
        assert Environment in env_class.__mro__ and env_class.kind is registry.env_spec(name).kind, name


@pytest.mark.parametrize(("agent", "env", "refusal"), [
    ("dqn", "cartpole", None),
    ("ppo", "pendulum", None),
    ("ucb", "bernoulli", None),
    ("random", "bernoulli", None),  # the baseline plays bandits too
    ("random", "pendulum", None),
    ("dqn", "pendulum", "agent=dqn: needs discrete actions, not Box(-2.0, 2.0, (1,), float32); allowed: envs with "
                        "Discrete actions, e.g. env=classic/cartpole or env=atari/<game> (rlconf list env)"),
    ("sac", "cartpole", "agent=sac: needs continuous (Box) actions, not Discrete(2); allowed: envs with Box actions, "
                        "e.g. env=classic/pendulum or env=mujoco/half_cheetah (rlconf list env)"),
    ("dqn", "bernoulli", "agent=dqn: learns from episodes of many steps; env=bandit/bernoulli is a bandit (one pull "
                         "per episode); allowed: a bandit agent (rlconf list agent) or agent=random"),
    ("ucb", "cartpole", "agent=ucb: plays bandits, not env=classic/cartpole; allowed: env=bandit/<problem> "
                        "(rlconf list env)"),
    ("independent", "cartpole", "agent=independent: plays multi-agent environments, not env=classic/cartpole; "
                                "allowed: env=pettingzoo/<game> (rlconf list env)"),
])
def test_compatible_gives_each_refusal_in_one_line(envs, agent, env, refusal):
    assert compatible(registry.agent_spec(agent), envs[env], agent) == refusal


def test_a_multiagent_game_is_played_by_a_multiagent_agent_only(tictactoe):
    assert compatible(registry.agent_spec("independent"), tictactoe, "independent") is None
    assert compatible(registry.agent_spec("dqn"), tictactoe, "dqn") == (
        "agent=dqn: env=pettingzoo/tictactoe is a multi-agent env; train one dqn per player with agent=independent "
        "agent.base=dqn")


def test_a_spec_that_declares_nothing_plays_single_agent_envs_of_any_action_space(envs):
    @dataclass
    class Options:
        pass

    undeclared = AgentSpec("mine", "my_agents:Mine", Options)  # a plugin's spec that names no plays
    assert compatible(undeclared, envs["pendulum"], "mine") is None
    assert compatible(undeclared, envs["cartpole"], "mine") is None
    assert compatible(undeclared, envs["bernoulli"], "mine").startswith("agent=mine: learns from episodes")


@pytest.mark.parametrize("agent", ["vpg", "vac", "a2c", "ppo"])
def test_policy_gradient_agents_declare_every_action_kind_they_play(agent):
    plays = registry.agent_spec(agent).plays
    for space in (gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,)), gym.spaces.MultiDiscrete([2, 3]),
                  gym.spaces.MultiBinary(2)):
        assert not plays.refuses_actions(space)
    tuple_space = gym.spaces.Tuple((gym.spaces.Discrete(2),))
    assert plays.refuses_actions(tuple_space)
    assert plays.actions_refusal(agent, tuple_space).endswith(
        "allowed: envs with Discrete or MultiDiscrete or MultiBinary or Box actions, e.g. env=classic/cartpole or "
        "env=atari/<game> or env=gym env.id=<an id with MultiDiscrete actions> or env=gym env.id=<an id with "
        "MultiBinary actions> or env=classic/pendulum or env=mujoco/half_cheetah (rlconf list env)")


def test_a_plugin_declares_what_it_plays_as_a_built_in_agent_does(monkeypatch):
    """Checking ``agent.base`` reads whether an agent is itself multi-agent without building it: a plugin's
    spec answers as a built-in one does, and an agent class registered without a spec is refused."""
    monkeypatch.setitem(registry._SPECS, "agent", registry.specs("agent"))  # forgotten after the test

    @dataclass
    class Options:
        pass

    teams = Plays(frozenset({EnvKind.MULTI_AGENT}))
    registry.register(AgentSpec("my_teams", "my_agents:MyTeams", Options, plays=teams))
    registry.register(AgentSpec("my_single", "my_agents:MySingle", Options))
    assert registry.agent_spec("my_teams").plays.multiagent is True
    assert registry.agent_spec("my_single").plays.multiagent is False  # declares nothing: single-agent
    assert registry.agent_spec("independent").plays.multiagent is True
    with pytest.raises(TypeError, match=r"registered by its spec"):
        registry.register("agent", "my_class")
