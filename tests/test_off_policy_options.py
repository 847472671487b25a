"""rlpyt's options of the off-policy agents: n-step returns, reward scaling and a target clip for DDPG, TD3 and
SAC; Ornstein-Uhlenbeck action noise for DDPG and TD3; Ape-X's per-copy epsilons for the DQN family and R2D1.

Targets are checked against a hand computation on a replay the test fills itself, the noise's statistics on
many copies of the process, the epsilons' values and each copy's exploration rate; everything runs from the
command line, and n-step SAC learns Pendulum in a fifth of the default preset's budget.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from conftest import FAST_RUN, build, drive, only_run_dir, states

from rlconf.config import compose, validate
from rlconf.errors import ConfigError
from rlconf.memory.replay import NStepReplayBuffer, ReplayBuffer
from rlconf.policies import ParallelGreedyPolicy
from rlconf.policies.exploration import OrnsteinUhlenbeck, per_copy_epsilons

PENDULUM = "env=classic/pendulum"
CARTPOLE = "env=classic/cartpole"
NEVER_LEARN = "agent.replay_start_size=1000000"  # a test that reads targets, not one that trains


def innermost(agent):
    while hasattr(agent, "agent"):
        agent = agent.agent
    return agent


# -- n-step targets --------------------------------------------------------------------------------------
# One copy's stored steps: (reward on arrival, done, mask). Row 3 ends its episode in a terminal state (mask 0),
# row 6 in a truncated one (a time limit: mask 1, it bootstraps); row 8 is the newest.
ROWS = [(0.0, False, 1.0), (1.0, False, 1.0), (2.0, False, 1.0), (3.0, True, 0.0), (0.0, False, 1.0),
        (5.0, False, 1.0), (6.0, True, 1.0), (0.0, False, 1.0), (8.0, False, 1.0)]
STARTS = [0, 1, 2, 4, 5, 7]  # the rows a transition may leave (not an episode's last state, not the newest)


def by_hand(start: int, n: int, gamma: float) -> tuple[float, int, float, float]:
    """The n-step return from ``start``, its bootstrap row, gamma ** steps and that row's mask, a step at a time."""
    total, row, steps = 0.0, start, 0
    while steps < n and row + 1 < len(ROWS) and not ROWS[row][1]:
        row += 1
        total += gamma ** steps * ROWS[row][0]
        steps += 1
    return total, row, gamma ** steps, ROWS[row][2]


def filled(agent) -> None:
    """``ROWS`` into the agent's replay, with observations that tell the rows apart."""
    for i, (reward, done, mask) in enumerate(ROWS):
        observation = torch.tensor([[math.cos(i), math.sin(i), 0.1 * i]], dtype=torch.float32)
        agent.replay.store(states(observation, [reward], [done], [mask]), torch.tensor([[0.5]]))


@pytest.mark.parametrize("name", ["ddpg", "td3", "sac"])
@pytest.mark.parametrize("clip", [None, 3.0])
def test_n_step_targets_equal_a_hand_computation(name, clip):
    n, gamma, scale = 3, 0.9, 2.0
    overrides = [f"agent={name}", PENDULUM, NEVER_LEARN, "hardware.n_envs=1", f"agent.n_steps={n}",
                 f"agent.discount_factor={gamma}", f"agent.reward_scale={scale}",
                 f"agent.q_target_clip={'null' if clip is None else clip}"]
    if name == "td3":
        overrides.append("agent.target_noise=0")  # a deterministic target action
    _, env, built = build(*overrides)
    env.close()
    agent = innermost(built)
    assert isinstance(agent.replay, NStepReplayBuffer) and agent.replay.n == n
    filled(agent)
    rows = torch.tensor(STARTS)
    batch = agent.replay.buffer.gather(rows, torch.zeros_like(rows), agent.replay.n, agent.replay.discount_factor)
    expected = [by_hand(start, n, gamma) for start in STARTS]
    assert [int(r) for r in batch.indices[0]] == STARTS
    assert torch.allclose(batch.reward, torch.tensor([e[0] for e in expected]))
    assert torch.allclose(batch.discount, torch.tensor([e[2] for e in expected]))
    assert batch.next_mask.tolist() == [e[3] for e in expected]
    bootstrap_rows = torch.tensor([e[1] for e in expected])
    assert torch.equal(batch.next_observation, agent.replay.buffer.observation[bootstrap_rows, 0])

    next_values = _next_values(agent, name, batch.next_observation)
    hand = torch.tensor([scale * e[0] for e in expected]) + torch.tensor([e[2] * e[3] for e in expected]) * next_values
    if clip is not None:
        hand = hand.clamp(-clip, clip)
    assert torch.allclose(_targets(agent, name, batch), hand, atol=1e-6)


def _next_values(agent, name: str, next_observation: torch.Tensor) -> torch.Tensor:
    """What the target bootstraps from, computed outside the agent's target code."""
    if name == "sac":
        agent.policy.generator.manual_seed(0)
        actions, log_probs = agent.policy.no_grad(next_observation)
        values = torch.min(agent.q_1.target(next_observation, actions), agent.q_2.target(next_observation, actions))
        return values - 0.2 * log_probs
    actions = agent.policy.target(next_observation)
    critics = [agent.q] if name == "ddpg" else [agent.q_1, agent.q_2]
    return torch.stack([q.target(next_observation, actions) for q in critics]).min(0).values


def _targets(agent, name: str, batch) -> torch.Tensor:
    if name == "sac":
        agent.policy.generator.manual_seed(0)  # the same next actions as _next_values drew
        return agent.td_targets(batch, torch.tensor(0.2))
    return agent.td_targets(batch)


@pytest.mark.parametrize("name", ["ddpg", "td3", "sac"])
def test_the_defaults_keep_one_step_unscaled_unclipped_targets(name):
    _, env, built = build(f"agent={name}", PENDULUM, NEVER_LEARN)
    env.close()
    agent = innermost(built)
    assert type(agent.replay) is ReplayBuffer  # no n-step wrapper: the replay of before, draw for draw
    assert (agent.config.n_steps, agent.config.reward_scale, agent.config.q_target_clip) == (1, 1.0, None)
    assert getattr(agent, "ou", None) is None


# -- Ornstein-Uhlenbeck noise ----------------------------------------------------------------------------
def test_ou_noise_reverts_to_zero_at_rate_theta_and_settles_at_its_stationary_spread():
    theta, sigma, copies = 0.15, 0.2, 20_000
    process = OrnsteinUhlenbeck(copies, 1, theta, 1.0)
    generator = torch.Generator().manual_seed(0)
    process.state.fill_(1.0)
    for _ in range(10):
        process.sample(0.0, generator)  # no shocks: x_k = (1 - theta)^k exactly
    assert torch.allclose(process.state, torch.full((copies, 1), (1 - theta) ** 10))
    means = []
    for _ in range(10):
        means.append(process.sample(sigma, generator).mean().item())
    # With shocks the mean still decays as (1 - theta)^k (standard error 0.003 over 20,000 copies).
    for k, mean in enumerate(means, start=11):
        assert mean == pytest.approx((1 - theta) ** k, abs=0.015)
    for _ in range(200):
        before = process.state
        after = process.sample(sigma, generator)
    stationary = sigma / math.sqrt(theta * (2 - theta))
    assert after.std().item() == pytest.approx(stationary, rel=0.03)
    assert after.mean().item() == pytest.approx(0.0, abs=0.02)
    lag_one = torch.corrcoef(torch.stack([before.flatten(), after.flatten()]))[0, 1].item()
    assert lag_one == pytest.approx(1 - theta, abs=0.02)  # consecutive values are correlated, unlike white noise


def test_ou_noise_restarts_only_the_copies_whose_episodes_ended():
    process = OrnsteinUhlenbeck(3, 2, 0.15, 1.0)
    process.sample(0.3, torch.Generator().manual_seed(0))
    before = process.state.clone()
    process.reset(torch.tensor([False, True, False]))
    assert torch.equal(process.state[1], torch.zeros(2))
    assert torch.equal(process.state[[0, 2]], before[[0, 2]]) and before[[0, 2]].abs().min() > 0


@pytest.mark.parametrize("name", ["ddpg", "td3"])
def test_ou_agents_act_with_each_copys_process_and_resume_it_mid_episode(name):
    overrides = [f"agent={name}", PENDULUM, "agent.noise_process=ou", "agent.noise=0.2", "agent.replay_start_size=50",
                 "hardware.n_envs=2", "env.max_episode_steps=30", "hardware.device=cpu"]
    _, env, built = build(*overrides, "seed=0")
    agent = innermost(built)
    state = drive(env, built, 100)  # 50 steps of each copy: 20 into their second episodes
    assert not state["done"].any()
    # The action is the policy's plus half a Box width of each copy's current OU value, clipped to the Box.
    policy_action = agent.policy.no_grad(state.as_input())
    action = built.act(state)
    assert torch.allclose(action, agent.bounds.clip(policy_action + agent.bounds.half_range * agent.ou.state))
    state = env.step(action)
    # An episode's end restarts its copy's process (30-step episodes: both copies end together).
    while not state["done"].any():
        state = env.step(built.act(state))
    built.act(state)
    assert torch.equal(agent.ou.state[state["done"]], torch.zeros_like(agent.ou.state[state["done"]]))
    state = env.step(built.act(env.step(built.act(env.reset(seed=3)))))  # two steps into new episodes
    assert agent.ou.state.abs().min() > 0

    # A checkpoint mid-episode holds each copy's noise: the resumed agent takes the same next action. (Only the
    # next: a resumed replay ends its newest episode, so later updates differ; test_resume_every_agent.py
    # checks a whole resumed run from an episode's end.)
    checkpoint = {"agent": built.state_dict(), "replay": built.replay_state_dict()}
    _, other_env, resumed = build(*overrides, "seed=1")
    other_env.close()
    resumed.load_state_dict(checkpoint["agent"])
    resumed.load_replay_state_dict(checkpoint["replay"])
    assert torch.equal(innermost(resumed).ou.state, agent.ou.state)
    assert torch.equal(built.act(state), resumed.act(state))
    assert torch.equal(innermost(resumed).ou.state, agent.ou.state)
    env.close()


# -- per-copy epsilons -----------------------------------------------------------------------------------
def test_per_copy_epsilons_are_ape_x_s_log_spaced_scale():
    epsilons = per_copy_epsilons(8, 0.4, 7.0)
    assert epsilons[0] == pytest.approx(0.4) and epsilons[-1] == pytest.approx(0.4 ** 8)
    assert np.allclose(epsilons, [0.4 ** (1 + 7 * i / 7) for i in range(8)])
    assert np.allclose(np.diff(np.log(epsilons)), 7 * math.log(0.4) / 7)  # evenly spaced in log
    assert per_copy_epsilons(1, 0.4, 7.0).tolist() == [0.4]


def test_each_copy_explores_with_its_own_epsilon():
    epsilons = per_copy_epsilons(4, 0.4, 3.0)  # 0.4, 0.16, 0.064, 0.0256
    policy = ParallelGreedyPolicy(None, 2, epsilons, np.random.default_rng(0))
    observations = states(torch.zeros((4, 1)), [0.0] * 4, [False] * 4)
    values = torch.tensor([[1.0, 0.0]] * 4)  # action 0 is greedy everywhere
    draws = 20_000
    off_greedy = sum(policy.choose(observations, lambda: values) for _ in range(draws)).float() / draws
    # A random action of two is the greedy one half the time: copy i leaves it with probability epsilon_i / 2.
    assert np.allclose(off_greedy.numpy(), epsilons / 2, atol=0.01)


@pytest.mark.parametrize("name", ["dqn", "c51", "r2d1"])
def test_value_based_agents_take_per_copy_epsilons_and_keep_their_test_policy(name):
    _, env, built = build(f"agent={name}", CARTPOLE, "hardware.n_envs=4", "agent.epsilon_per_copy=true",
                          "agent.epsilon_copy_base=0.5", "agent.epsilon_copy_alpha=3", "agent.eval_epsilon=0.01")
    agent = innermost(built)
    assert np.allclose(agent.policy.epsilon, [0.5 ** (1 + i) for i in range(4)])
    drive(env, built, 40)
    assert np.allclose(agent.policy.epsilon, [0.5 ** (1 + i) for i in range(4)])  # fixed: no schedule
    assert innermost(built.test_agent()).epsilon == 0.01
    env.close()


# -- the command line -------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [  # n-step SAC runs from the command line in its learning test below
    ["agent=td3", PENDULUM, "agent.noise_process=ou", "agent.noise=0.2", "agent.n_steps=3", "agent.reward_scale=0.5",
     "agent.q_target_clip=100", "hardware.n_envs=2"],
    ["agent=rainbow", CARTPOLE, "agent.epsilon_per_copy=true", "hardware.n_envs=4"],
])
def test_the_options_run_from_the_command_line(run_cli, workdir, args):
    result = run_cli("run", *args, "steps=300", "agent.replay_start_size=100", *FAST_RUN, "logdir=runs", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert json.loads((only_run_dir(workdir / "runs") / "summary.json").read_text())["steps"] >= 300


def test_team_agents_refuse_the_single_agent_options():
    with pytest.raises(ConfigError, match=r"agent.n_steps=3: is an option of ddpg, td3 and sac"):
        validate(compose(["agent=masac", "env=vmas/balance", "agent.n_steps=3"], []))
    with pytest.raises(ConfigError, match=r"agent.noise_process=ou"):
        validate(compose(["agent=maddpg", "env=vmas/balance", "agent.noise_process=ou"], []))


# -- learning -----------------------------------------------------------------------------------------------
BUDGET, TARGET = 4000, -250


@pytest.mark.slow
def test_n_step_sac_solves_pendulum_in_a_fifth_of_the_budget(run_cli, workdir):
    """SAC's Pendulum preset (20k steps in tests/test_continuous_learning.py) with 3-step returns: greedy test
    (20 episodes) >= -250 within 4k steps. Measured on 2026-11-28: at 4k -192, -197, -182 (seeds 0-2), at 5k
    -190, -205, -181; 1-step SAC at 4k: -478 (seed 0), at 5k -350 (seed 0) and -195 (seed 1): the n-step
    targets learn the swing-up about 2k steps sooner."""
    result = run_cli("run", "agent=sac", PENDULUM, "agent.n_steps=3", f"steps={BUDGET}", "test_episodes=20",
                     "eval_every=0", "quiet=true", "logdir=runs", cwd=workdir, timeout=600)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(workdir / "runs") / "summary.json").read_text())
    assert summary["steps"] == BUDGET and summary["test_episodes"] == 20
    assert summary["test_return_mean"] >= TARGET, summary
