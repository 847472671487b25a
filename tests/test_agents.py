"""Agents built through the platform (compose -> validate -> registry), driven by the real environment."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlconf.cli import compose
from rlconf.config import validate
from rlconf.experiments.run import build_agent, make_env
from rlconf.logging import LoggerGroup


def build(*overrides: str, env_prefix: str | None = "env=classic/cartpole"):
    settings = validate(compose([*([env_prefix] if env_prefix else []), *overrides], []))
    env = make_env(settings, settings.hardware.n_envs)
    return settings, env, build_agent(settings, env, LoggerGroup([]))


def parameters(agent) -> torch.Tensor:
    state = agent.state_dict()
    tensors = [v for approx in state.values() if isinstance(approx, dict) and "model" in approx
               for v in approx["model"].values()]
    return torch.cat([t.flatten() for t in tensors])


def drive(env, agent, steps: int, seed: int = 0):
    state = env.reset(seed=seed)
    while env.steps < steps:
        state = env.step(agent.act(state))
    return state


@pytest.mark.parametrize("overrides", [
    ("agent=ppo",),  # the preset: one minibatch holds the whole rollout
    ("agent=ppo", "agent.batch_size=64"),  # several shuffled minibatches per epoch
    ("agent=ppo", "approximation.shared=true"),  # one trunk for policy and value
    ("agent=ppo", "hardware.vectorization=async", "hardware.n_envs=2", "agent.n_steps=16"),
    ("agent=dqn", "agent.replay_start_size=200", "agent.update_frequency=4", "agent.gradient_steps=1"),
    ("agent=dqn", "agent.replay_start_size=200", "agent.target=polyak", "hardware.n_envs=3"),
])
def test_agent_learns_something_and_checkpoints_round_trip(overrides):
    settings, env, agent = build(*overrides)
    before = parameters(agent)
    drive(env, agent, 1_000)
    after = parameters(agent)
    assert not torch.equal(before, after), "the agent never updated its networks"

    # A fresh agent loaded from the checkpoint state acts exactly like the trained one.
    _, env2, clone = build(*overrides)
    clone.load_state_dict(agent.state_dict())
    probe = env2.reset(seed=123)
    with torch.no_grad():
        assert torch.equal(agent.test_agent().act(probe), clone.test_agent().act(probe))
    env.close()
    env2.close()


def test_ppo_learning_rate_and_clip_follow_their_linear_schedules():
    settings, env, agent = build("agent=ppo", "steps=4096", "agent.lr_final=0", "agent.clip_final=0")
    ppo = agent.agent
    drive(env, agent, 2048)
    lr = ppo.policy.optimizer.param_groups[0]["lr"]
    assert lr == pytest.approx(settings.agent.lr * (1 - ppo.clock.steps / 4096), rel=0.05)
    assert float(ppo.clip) == pytest.approx(settings.agent.clip * (1 - ppo.clock.steps / 4096), rel=0.05)
    env.close()


@pytest.mark.parametrize("agent", ["dqn", "ddqn", "c51", "rainbow", "vqn", "vsarsa"])
def test_value_based_agents_train_and_test_on_cartpole(agent):
    settings, env, trained = build(f"agent={agent}", "steps=4000", "agent.replay_start_size=500"
                                   if agent not in ("vqn", "vsarsa") else "agent.lr=1e-3")
    before = parameters(trained)
    drive(env, trained, 1_500)
    assert not torch.equal(before, parameters(trained)), f"{agent} never updated its networks"
    probe = env.reset(seed=5)
    actions = trained.test_agent().act(probe)
    assert actions.shape == (settings.hardware.n_envs,) and actions.dtype == torch.int64
    env.close()


def test_prioritized_replay_learns_priorities_from_td_errors():
    _, env, agent = build("agent=ddqn", "agent.replay_start_size=300", "agent.update_frequency=4",
                          "agent.gradient_steps=1")
    drive(env, agent, 1_000)
    replay = agent.agent.replay
    priorities = replay.tree.get(np.arange(replay.tree.size))
    valid = priorities[priorities > 0]
    # New transitions enter at the largest priority; trained ones carry their own |TD error|: not all equal.
    assert len(np.unique(valid.round(6))) > 10
    env.close()


@pytest.mark.parametrize("agent", ["dqn", "c51", "rainbow", "vqn"])
def test_discrete_agents_refuse_continuous_actions_in_one_line(agent, run_cli, tmp_path):
    result = run_cli("run", f"agent={agent}", "env=classic/pendulum", "steps=100", f"logdir={tmp_path / 'runs'}",
                     cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (f"rlconf: error: agent={agent}: needs discrete actions, not "
                                     "Box(-2.0, 2.0, (1,), float32); allowed: envs with Discrete actions, e.g. "
                                     "env=classic/cartpole or env=atari/<game> (rlconf list env)")
    assert not (tmp_path / "runs").exists()  # nothing half-written
