"""Agents built through the platform (compose -> validate -> registry), driven by the real environment."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import build, drive, one_error_line, parameters

from rlconf.memory import Transitions

CARTPOLE = "env=classic/cartpole"


@pytest.mark.parametrize("overrides", [
    ("agent=ppo",),  # the preset: one minibatch holds the whole rollout
    ("agent=ppo", "agent.batch_size=64"),  # several shuffled minibatches per epoch
    ("agent=ppo", "approximation.shared=true"),  # one trunk for policy and value
    ("agent=ppo", "hardware.vectorization=async", "hardware.n_envs=2", "agent.n_steps=16"),
    ("agent=dqn", "agent.replay_start_size=200", "agent.update_frequency=4", "agent.gradient_steps=1"),
    ("agent=dqn", "agent.replay_start_size=200", "agent.target=polyak", "hardware.n_envs=3"),
])
def test_agent_learns_something_and_checkpoints_round_trip(overrides):
    settings, env, agent = build(CARTPOLE, *overrides)
    before = parameters(agent)
    drive(env, agent, 1_000)
    after = parameters(agent)
    assert not torch.equal(before, after), "the agent never updated its networks"

    # A fresh agent loaded from the checkpoint state acts exactly like the trained one.
    _, env2, clone = build(CARTPOLE, *overrides)
    clone.load_state_dict(agent.state_dict())
    probe = env2.reset(seed=123)
    with torch.no_grad():
        assert torch.equal(agent.test_agent().act(probe), clone.test_agent().act(probe))
    env.close()
    env2.close()


def test_ppo_learning_rate_and_clip_follow_their_linear_schedules():
    settings, env, agent = build(CARTPOLE, "agent=ppo", "steps=4096", "agent.lr_final=0", "agent.clip_final=0")
    ppo = agent.agent
    drive(env, agent, 2048)
    lr = ppo.policy.optimizer.param_groups[0]["lr"]
    assert lr == pytest.approx(settings.agent.lr * (1 - ppo.clock.steps / 4096), rel=0.05)
    assert float(ppo.clip) == pytest.approx(settings.agent.clip * (1 - ppo.clock.steps / 4096), rel=0.05)
    env.close()


@pytest.mark.parametrize("agent", ["dqn", "ddqn", "c51", "rainbow", "vqn", "vsarsa"])
def test_value_based_agents_train_and_test_on_cartpole(agent):
    settings, env, trained = build(CARTPOLE, f"agent={agent}", "steps=4000", "agent.replay_start_size=500"
                                   if agent not in ("vqn", "vsarsa") else "agent.lr=1e-3")
    before = parameters(trained)
    drive(env, trained, 1_500)
    assert not torch.equal(before, parameters(trained)), f"{agent} never updated its networks"
    probe = env.reset(seed=5)
    actions = trained.test_agent().act(probe)
    assert actions.shape == (settings.hardware.n_envs,) and actions.dtype == torch.int64
    env.close()


def test_prioritized_replay_learns_priorities_from_td_errors():
    _, env, agent = build(CARTPOLE, "agent=ddqn", "agent.replay_start_size=300", "agent.update_frequency=4",
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
    assert one_error_line(result) == (f"rlconf: error: agent={agent}: needs discrete actions, not "
                                     "Box(-2.0, 2.0, (1,), float32); allowed: envs with Discrete actions, e.g. "
                                     "env=classic/cartpole or env=atari/<game> (rlconf list env)")
    assert not (tmp_path / "runs").exists()  # nothing half-written


def _projected_by_hand(rewards, discounts, probabilities, v_min: float, v_max: float) -> torch.Tensor:
    """The categorical projection of Bellemare et al. 2017 (Algorithm 1), one atom at a time."""
    batch, atoms = probabilities.shape
    delta = (v_max - v_min) / (atoms - 1)
    projected = torch.zeros(batch, atoms, dtype=torch.float64)
    for i in range(batch):
        for j in range(atoms):
            tz = min(max(float(rewards[i]) + float(discounts[i]) * (v_min + j * delta), v_min), v_max)
            b = (tz - v_min) / delta
            lower, upper = int(np.floor(b)), int(np.ceil(b))
            p = float(probabilities[i, j])
            if lower == upper:
                projected[i, lower] += p
            else:
                projected[i, lower] += p * (upper - b)
                projected[i, upper] += p * (b - lower)
    return projected


@pytest.mark.parametrize("agent, double_q", [("c51", False), ("rainbow", True), ("rainbow", False), ("c51", True)])
def test_distributional_targets_choose_the_next_action_as_configured(agent, double_q):
    """Rainbow (double_q): the online network picks the next action, the target network's distribution of
    that action is shifted, discounted and projected; C51: the target network picks it too."""
    torch.manual_seed(0)
    _, env, built = build(CARTPOLE, f"agent={agent}", f"agent.double_q={str(double_q).lower()}",
                          "approximation.noisy=false", "agent.n_steps=1")
    learner = built.agent
    assert learner.config.double_q is double_q
    with torch.no_grad():  # a target network that disagrees with the online one
        for p in learner.q.target_network.model.parameters():
            p.add_(torch.randn_like(p))
    next_observation = torch.randn(64, 4)
    online = learner.q.expected(learner.q.no_grad(next_observation)).argmax(1)
    target_probabilities = learner.q.target(next_observation)
    by_target = learner.q.expected(target_probabilities).argmax(1)
    assert (online != by_target).any(), "the test needs states where the two networks disagree"

    rewards, masks = torch.linspace(-2, 2, 64), (torch.arange(64) % 5 != 0).float()
    batch = Transitions(torch.randn(64, 4), torch.zeros(64, dtype=torch.long), rewards, next_observation, masks)
    chosen = online if double_q else by_target
    expected = _projected_by_hand(rewards, 0.99 * masks, target_probabilities[torch.arange(64), chosen],
                                  learner.config.v_min, learner.config.v_max)
    torch.testing.assert_close(learner.td_targets(batch).double(), expected, atol=1e-5, rtol=1e-5)
    env.close()


@pytest.mark.parametrize("agent, double_q", [("dqn", False), ("dqn", True), ("ddqn", True), ("ddqn", False)])
def test_dqn_targets_choose_the_next_action_as_configured(agent, double_q):
    """Double Q-learning (van Hasselt et al. 2016): r + gamma * Q_target(s', argmax_a Q_online(s', a)); plain
    DQN: r + gamma * max_a Q_target(s', a). Computed by hand, transition by transition, on a fixed batch."""
    torch.manual_seed(0)
    _, env, built = build(CARTPOLE, f"agent={agent}", f"agent.double_q={str(double_q).lower()}", "agent.n_steps=1")
    learner, gamma = built.agent, built.agent.config.discount_factor
    assert learner.config.double_q is double_q and learner.targets_per_burst is not double_q
    with torch.no_grad():  # a target network that disagrees with the online one
        for p in learner.q.target_network.model.parameters():
            p.add_(torch.randn_like(p))
    next_observation = torch.randn(64, 4)
    online, target = learner.q.no_grad(next_observation), learner.q.target(next_observation)
    assert (online.argmax(1) != target.argmax(1)).any(), "the test needs states where the two networks disagree"

    rewards, masks = torch.linspace(-2, 2, 64), (torch.arange(64) % 5 != 0).float()
    batch = Transitions(torch.randn(64, 4), torch.zeros(64, dtype=torch.long), rewards, next_observation, masks)
    expected = []
    for i in range(64):
        values = [float(v) for v in target[i]]
        chosen = int(online[i].argmax()) if double_q else max(range(len(values)), key=values.__getitem__)
        expected.append(float(rewards[i]) + gamma * float(masks[i]) * values[chosen])
    torch.testing.assert_close(learner.td_targets(batch).double(), torch.tensor(expected, dtype=torch.float64),
                               atol=1e-5, rtol=1e-6)  # float32 arithmetic against float64
    env.close()


def test_dqn_keeps_single_q_targets_and_ddqn_double_by_default():
    for agent, double_q in (("dqn", False), ("ddqn", True)):
        settings, env, _ = build(CARTPOLE, f"agent={agent}")
        assert settings.agent.double_q is double_q
        env.close()


def test_rainbow_uses_double_q_by_default_and_c51_does_not():
    for agent, double_q in (("rainbow", True), ("c51", False)):
        settings, env, _ = build(CARTPOLE, f"agent={agent}")
        assert settings.agent.double_q is double_q
        env.close()


@pytest.mark.parametrize(("agent", "env"), [("dqn", "classic/cartpole"), ("rainbow", "classic/cartpole"),
                                            ("sac", "classic/pendulum"), ("td3", "classic/pendulum")])
def test_an_agent_restored_without_its_replay_refills_it_before_learning_again(agent, env):
    """A checkpoint without the replay (checkpoint.replay=false) restores a clock past replay_start_size: the
    agent must not update from the few transitions an empty memory holds (a resumed DQN on Pong fell back from
    -10 to -21 doing so), but act, store, and learn again once the memory holds replay_start_size of them."""
    overrides = (f"agent={agent}", "agent.replay_start_size=300")
    _, env1, trained = build(f"env={env}", *overrides)
    drive(env1, trained, 400)
    _, env2, resumed = build(f"env={env}", *overrides)
    resumed.load_state_dict(trained.state_dict())  # the agent's state, the replay left behind
    restored = parameters(resumed)
    drive(env2, resumed, 250)
    assert torch.equal(parameters(resumed), restored), "it learned from a replay holding fewer than 300 transitions"
    drive(env2, resumed, 360)
    assert not torch.equal(parameters(resumed), restored), "refilled, it learns again"
    env1.close()
    env2.close()


@pytest.mark.parametrize(("agent", "env", "approximation"), [
    ("dqn", "classic/cartpole", "q"), ("rainbow", "classic/cartpole", "q"),
    ("ddpg", "classic/pendulum", "q"), ("td3", "classic/pendulum", "q_1"), ("sac", "classic/pendulum", "q_1")])
def test_off_policy_agents_update_in_bursts_once_replay_start_size_steps_are_stored(agent, env, approximation):
    """Every update_frequency environment steps (4 acts of 2 environments) a burst of gradient_steps updates,
    from the first burst due at or after replay_start_size steps: acts 52, 56, ..., 148 of 150."""
    overrides = (f"agent={agent}", f"env={env}", "agent.replay_start_size=100", "agent.update_frequency=8",
                 "agent.gradient_steps=3", "agent.batch_size=16", "hardware.n_envs=2")
    _, environment, built = build(*overrides)
    learner = built
    while hasattr(learner, "agent"):  # inside its bodies
        learner = learner.agent
    state = environment.reset(seed=0)
    for acts in range(1, 151):
        state = environment.step(built.act(state))
        if acts == 51:
            assert getattr(learner, approximation).updates == 0, "updated before the first burst was due"
    assert learner.clock.steps == 300
    assert getattr(learner, approximation).updates == 3 * len(range(52, 151, 4))
    environment.close()
