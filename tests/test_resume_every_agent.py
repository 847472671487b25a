"""A resumed agent draws the same random numbers as one that never stopped, for every registered agent.

Half a short run to the end of an episode, then the agent's checkpoint (its state dict with the generators
each component saves, the replay's contents, the process-global generators) through ``torch.save`` and
``weights_only`` loading, as a checkpoint file holds it. The agent goes on uninterrupted from a reset of its
environment; a new one built from another seed loads the checkpoint, as a resumed run does, and goes on from
the same reset. Their actions and their final states (weights, tables, counters, generators) must be identical:
a generator, counter or table that the checkpoint misses leaves the resumed agent drawing from its own seed.
(Checkpoints are taken at episode ends because a resumed run restarts its environments: a step in progress is
not continued, so an uninterrupted agent in the middle of an episode learns from one more transition.)
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
import torch
from conftest import build, drive

from rlconf import registry
from rlconf.core import MultiagentState, TeamState, rng

CARTPOLE, PENDULUM = "env=classic/cartpole", "env=classic/pendulum"
SMALL_REPLAY = "agent.replay_start_size=50"  # updates (and the replay's draws) start within the first half
# Each agent on a small env it plays; every registered agent must be here (test below).
RUNS = {
    "dqn": [CARTPOLE, SMALL_REPLAY], "ddqn": [CARTPOLE, SMALL_REPLAY], "c51": [CARTPOLE, SMALL_REPLAY],
    "rainbow": [CARTPOLE, SMALL_REPLAY], "r2d1": [CARTPOLE, SMALL_REPLAY], "vqn": [CARTPOLE], "vsarsa": [CARTPOLE],
    "vpg": [CARTPOLE], "vac": [CARTPOLE], "a2c": [CARTPOLE], "ppo": [CARTPOLE], "random": [CARTPOLE],
    "ddpg": [PENDULUM, SMALL_REPLAY], "td3": [PENDULUM, SMALL_REPLAY], "sac": [PENDULUM, SMALL_REPLAY],
    "independent": ["env=pettingzoo/tictactoe", SMALL_REPLAY.replace("agent.", "agent.dqn.")],
    **{name: ["env=bandit/bernoulli"] for name in ("epsilon_greedy", "ucb", "bayesian_ucb", "thompson",
                                                  "gradient_bandit")},
    **{name: ["env=bandit/linear"] for name in ("linear_posterior", "linucb", "neural_greedy", "neural_linear",
                                               "bootstrap_neural", "noise_sampling", "variational")},
    "fixed": ["env=bandit/bernoulli", "agent.arm=2"],
    **{name: ["env=tabular/frozen_lake"] for name in ("q_learning", "sarsa_lambda", "dyna_q")},
    # Teams: a shared learner per group (MAPPO), a learner per agent (IPPO without sharing)
    "mappo": ["env=vmas/balance", "agent.n_steps=20", "agent.epochs=2"],
    "ippo": ["env=vmas/balance", "agent.n_steps=20", "agent.epochs=2", "agent.share_parameters=false"],
    # Value decomposition: QMIX with hard target copies, VDN with a network per agent and double Q
    "qmix": ["env=vmas/navigation", SMALL_REPLAY, "agent.update_frequency=10", "agent.gradient_steps=2",
             "agent.batch_size=16", "agent.target=fixed", "agent.target_update_frequency=30"],
    "vdn": ["env=vmas/navigation", SMALL_REPLAY, "agent.update_frequency=10", "agent.gradient_steps=2",
            "agent.batch_size=16", "agent.share_parameters=false", "agent.double_q=true"],
    # Off-policy actor-critics: shared networks with one Q a frame (MASAC's preset), a network per agent (ISAC),
    # the noise's schedule and a target policy (MADDPG), agent indices (IDDPG)
    **{name: ["env=vmas/balance", SMALL_REPLAY, "agent.update_frequency=10", "agent.gradient_steps=2",
              "agent.batch_size=16", *extra] for name, extra in (
        ("masac", []), ("isac", ["agent.share_parameters=false"]),
        ("maddpg", ["agent.noise_final=0.1", "agent.noise_decay_steps=300", "agent.target_policy=true"]),
        ("iddpg", ["agent.agent_id=true"]))},
}
# Agents with memory, as well: the carried recurrent states and the stored start of the rollout's chunks.
RECURRENT_RUNS = {
    "ppo lstm": ["agent=ppo", CARTPOLE, "body=mask_velocity", "approximation.recurrent=lstm", "agent.n_steps=32"],
    "a2c gru": ["agent=a2c", CARTPOLE, "body=mask_velocity", "approximation.recurrent=gru"],
}
# Optimisers and schedules other than Adam and linear (approximation.optimizer, lr_schedule): their state (moments,
# a torch scheduler's count) and the clock a cosine schedule reads. steps=400: the cosine spans this test's run.
OPTIMIZER_RUNS = {
    "dqn rmsprop cosine": ["agent=dqn", CARTPOLE, SMALL_REPLAY, "steps=400", "approximation.optimizer=rmsprop",
                           "approximation.optimizer_args={momentum: 0.9, centered: true}",
                           "approximation.lr_schedule=cosine", "agent.lr_final=1e-5"],
    "a2c adamw StepLR": ["agent=a2c", CARTPOLE, "approximation.optimizer=adamw", "approximation.lr_schedule=StepLR",
                         "approximation.lr_schedule_args={step_size: 7, gamma: 0.5}"],
    "sac rmsprop_nature": [
        "agent=sac", PENDULUM, SMALL_REPLAY, "approximation.optimizer=rmsprop_nature",
        "approximation.lr_schedule=ExponentialLR", "approximation.lr_schedule_args={gamma: 0.99}"],
}
# Options with state or replay of their own: each copy's OU noise (DDPG, TD3), n-step returns with a scaled,
# clipped target, Ape-X's per-copy epsilons, R2D1's previous actions and rewards and its input priorities.
OPTION_RUNS = {
    "ddpg ou n-step": ["agent=ddpg", PENDULUM, SMALL_REPLAY, "agent.noise_process=ou", "agent.n_steps=3"],
    "sac n-step": ["agent=sac", PENDULUM, SMALL_REPLAY, "agent.n_steps=3", "agent.reward_scale=5",
                   "agent.q_target_clip=50"],
    "dqn per-copy epsilon": ["agent=dqn", CARTPOLE, SMALL_REPLAY, "agent.epsilon_per_copy=true"],
    # The previous action and reward as inputs (stored at sequence starts), the acted Q-values and input priorities
    "r2d1 previous action, input priorities": ["agent=r2d1", CARTPOLE, SMALL_REPLAY, "agent.prev_action_reward=true",
                                               "agent.input_priorities=true"],
    # gSDE's noise matrices, held across the checkpoint (drawn every 7 steps of rollouts of 32)
    "ppo gsde": ["agent=ppo", PENDULUM, "agent.gsde=true", "agent.gsde_every=7", "agent.n_steps=32"],
    "a2c gsde lstm": ["agent=a2c", PENDULUM, "agent.gsde=true", "approximation.recurrent=lstm"],
    # Recurrent PPO on segments: their starts come from the rollout's unroll, nothing of their own to save
    "ppo lstm segments": ["agent=ppo", CARTPOLE, "body=mask_velocity", "approximation.recurrent=lstm",
                          "agent.n_steps=32", "agent.sequence_length=8"],
}
HALF, REST = 200, 200


def test_every_registered_agent_is_checked():
    assert sorted(RUNS) == sorted(registry.names("agent"))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_resumed_agent_draws_what_the_uninterrupted_one_draws(name):
    _check_resumed(name, [f"agent={name}", *RUNS[name]])


@pytest.mark.parametrize("name", sorted(RECURRENT_RUNS))
def test_resumed_recurrent_agent_draws_what_the_uninterrupted_one_draws(name):
    _check_resumed(name, RECURRENT_RUNS[name])


@pytest.mark.parametrize("name", sorted(OPTIMIZER_RUNS))
def test_resumed_agent_with_another_optimizer_and_schedule_draws_the_same(name):
    _check_resumed(name, OPTIMIZER_RUNS[name])


@pytest.mark.parametrize("name", sorted(OPTION_RUNS))
def test_resumed_agent_with_an_option_draws_what_the_uninterrupted_one_draws(name):
    _check_resumed(name, OPTION_RUNS[name])


def _check_resumed(name: str, overrides: list[str]) -> None:
    # One environment: several end their episodes at different steps, and the checkpoint is taken at an end.
    overrides = [*overrides, "hardware.device=cpu", "hardware.n_envs=1"]
    _, env, agent = build(*overrides, "seed=0")
    _to_an_episode_end(env, agent, HALF)
    checkpoint = _saved({"agent": agent.state_dict(), "replay": agent.replay_state_dict(), "rng": rng.capture()})
    uninterrupted = _go_on(env, agent)

    # Built from another seed (its own generators, networks and tables start elsewhere), in the first run's
    # environment: a bandit's problem follows the run's seed.
    _, own_env, resumed = build(*overrides, "seed=1")
    own_env.close()
    _resumed(resumed, _loaded(checkpoint))
    _assert_same(_generators(resumed.state_dict()), _generators(_loaded(checkpoint)["agent"]),
                 f"{name}: the generators resumed")
    for step, (a, b) in enumerate(zip(uninterrupted, _go_on(env, resumed), strict=True)):
        _assert_same(_as_tensors(a), _as_tensors(b), f"{name}: the actions {step} steps in")
    _assert_same(_through_a_file(resumed.state_dict()), _through_a_file(agent.state_dict()), name)
    env.close()


def _to_an_episode_end(env, agent, steps: int) -> None:
    """``agent`` acting from a reset until the environments have taken ``steps`` steps, then until every
    episode in progress has ended and the agent has seen its end."""
    state = env.reset(seed=0)
    while True:
        action = agent.act(state)
        ended = bool(torch.as_tensor(state.done if isinstance(state, TeamState) else state["done"]).all())
        state = env.step(action)
        if isinstance(state, MultiagentState):
            ended = bool(env.completed)  # every player has seen its last state of the game
        if env.steps >= steps and ended:
            return


def _generators(state: dict[str, Any]) -> dict[str, Any]:
    """The generators' states in an agent's state dict (a multi-agent one: each player's)."""
    if "generators" in state:
        return state["generators"]
    return {player: _generators(player_state) for player, player_state in state.items()}


def _resumed(agent, checkpoint: dict[str, Any]):
    """``agent`` loaded from ``checkpoint`` as a resumed run loads it."""
    agent.load_state_dict(checkpoint["agent"])
    if checkpoint["replay"]:
        agent.load_replay_state_dict(checkpoint["replay"])
    rng.restore(checkpoint["rng"])
    return agent


def _go_on(env, agent) -> list:
    """``REST`` more steps from a reset (a resumed run resets its environments): the actions taken."""
    actions = []
    state = env.reset(seed=7)
    start = env.steps
    while env.steps < start + REST:
        actions.append(agent.act(state))
        state = env.step(actions[-1])
    return actions


def _as_tensors(actions: Any) -> Any:
    """Actions as tensors: a team's are a dict of each group's."""
    if isinstance(actions, dict):
        return {group: torch.as_tensor(each) for group, each in actions.items()}
    return torch.as_tensor(actions)


def _saved(state: Any) -> bytes:
    """``state`` as torch.save writes it into a checkpoint file."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def _loaded(saved: bytes) -> Any:
    return torch.load(io.BytesIO(saved), weights_only=True)


def _through_a_file(state: Any) -> Any:
    return _loaded(_saved(state))


def _assert_same(a: Any, b: Any, where: str) -> None:
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{where} differs"
    elif isinstance(a, dict):
        assert set(a) == set(b), f"{where}: {sorted(set(a) ^ set(b), key=str)}"
        for key in a:
            _assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where} differs in length"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), f"{where} differs"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


# Where checkpoints written before components saved their own generators found each one (paths as the
# checkpoints of commit 90ad77b name them: the body's wrapper first, each player's agent under its name).
OLD_PATHS = {
    "rainbow": {"agent.agent.policy.rng": ("policy", "rng"), "agent.agent.replay.buffer.generator": ("replay", "torch"),
                "agent.agent.replay.buffer.rng": ("replay", "numpy")},
    "sac": {"agent.agent.policy.generator": ("policy", "torch"), "agent.agent.replay.generator": ("replay", "torch")},
    "ppo": {"agent.agent.generator": ("generator", None)},
    "thompson": {"agent.agent.rng": ("rng", None)},
}


@pytest.mark.parametrize("name", sorted(OLD_PATHS))
def test_a_checkpoint_from_before_keeps_its_generators(name, tmp_path):
    from rlconf.experiments.rundir.checkpoint import load_checkpoint

    overrides = [f"agent={name}", *RUNS[name], "hardware.device=cpu"]
    _, env, agent = build(*overrides, "seed=0")
    drive(env, agent, HALF)
    env.close()
    state = agent.state_dict()
    generators = state.pop("generators")
    found = {path: generators[component] if key is None else generators[component][key]
             for path, (component, key) in OLD_PATHS[name].items()}
    torch.save({"agent": state, "rng": {**rng.capture(), "generators": found}}, tmp_path / "checkpoint.pt")

    loaded = load_checkpoint(tmp_path / "checkpoint.pt")
    assert "generators" not in loaded["rng"]
    _, env, resumed = build(*overrides, "seed=1")
    env.close()
    resumed.load_state_dict(loaded["agent"])
    _assert_same(_through_a_file(resumed.state_dict()["generators"]), _through_a_file(generators), name)


def test_a_multiagent_checkpoint_from_before_keeps_each_players_generators(tmp_path):
    from rlconf.experiments.rundir.checkpoint import load_checkpoint

    overrides = ["agent=independent", *RUNS["independent"], "hardware.device=cpu"]
    _, env, agent = build(*overrides, "seed=0")
    drive(env, agent, HALF)
    env.close()
    state = agent.state_dict()
    found = {}
    for player, player_state in state.items():
        generators = player_state.pop("generators")
        found[f"agent.agents['{player}'].agent.policy.rng"] = generators["policy"]["rng"]
        found[f"agent.agents['{player}'].agent.replay.generator"] = generators["replay"]["torch"]
    torch.save({"agent": state, "rng": {**rng.capture(), "generators": found}}, tmp_path / "checkpoint.pt")

    _, env, resumed = build(*overrides, "seed=1")
    env.close()
    resumed.load_state_dict(load_checkpoint(tmp_path / "checkpoint.pt")["agent"])
    _assert_same(_generators(_through_a_file(resumed.state_dict())), _generators(_through_a_file(agent.state_dict())),
                 "independent")
