"""The policy-gradient agents (VPG, VAC, A2C, PPO) and their Gaussian policy: fast tests of the mechanics.

Agents are built through the platform (compose -> validate -> registry) and driven by real environments,
or, where a test needs exact numbers, fed hand-made states.
"""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import (
    build,
    drive,
    one_error_line,
    only_run_dir,
    parameters,
    plain_gradient_steps,
    recording_logger,
    states,
)

from rlconf.agents import PolicyGradient
from rlconf.agents.a2c import A2CConfig
from rlconf.approximation import make_optimizer
from rlconf.config import compose
from rlconf.core import StateArray
from rlconf.errors import ConfigError
from rlconf.memory import CompleteEpisodeBuffer
from rlconf.nn import MLPSettings
from rlconf.policies import (
    DiagonalNormal,
    GaussianPolicy,
    SoftmaxPolicy,
    action_layout,
    policy_network,
    policy_outputs,
    stochastic_policy,
)

AGENTS = ["vpg", "vac", "a2c", "ppo"]
GAMMA = 0.9
CARTPOLE = "env=classic/cartpole"


# -- the Gaussian policy ------------------------------------------------------------------------------------
def test_diagonal_normal_matches_torch_normal():
    torch.manual_seed(0)
    mean, log_std = torch.randn(5, 3), torch.randn(3)
    actions = torch.randn(5, 3) * 2
    ours = DiagonalNormal(mean, log_std)
    reference = torch.distributions.Normal(mean, log_std.exp())
    assert torch.allclose(ours.log_prob(actions), reference.log_prob(actions).sum(-1), atol=1e-5)
    assert torch.allclose(ours.entropy(), reference.entropy().sum(-1), atol=1e-5)
    assert ours.entropy().shape == (5,)
    assert torch.equal(ours.mode, mean)


def test_diagonal_normal_samples_have_its_mean_and_std_and_follow_the_generator():
    mean, log_std = torch.tensor([[0.5, -1.0]]).expand(20_000, 2), torch.log(torch.tensor([0.1, 2.0]))
    distribution = DiagonalNormal(mean, log_std)
    samples = distribution.sample(torch.Generator().manual_seed(3))
    assert torch.allclose(samples.mean(0), torch.tensor([0.5, -1.0]), atol=0.05)
    assert torch.allclose(samples.std(0), torch.tensor([0.1, 2.0]), rtol=0.03)
    assert torch.equal(samples, distribution.sample(torch.Generator().manual_seed(3)))


def box(low, high) -> gym.spaces.Box:
    return gym.spaces.Box(np.array(low, np.float32), np.array(high, np.float32))


def gaussian_policy(space: gym.spaces.Box, log_std_init: float = 0.0, squash: str = "clip") -> GaussianPolicy:
    layers = MLPSettings(hidden=[16]).head(gym.spaces.Box(-1, 1, (3,)), policy_outputs(space))
    network = policy_network(space, layers, log_std_init)
    optimizer, _ = make_optimizer(network.parameters(), 1e-2, None)
    policy = stochastic_policy(space, network, optimizer, squash=squash)
    assert isinstance(policy, GaussianPolicy)
    return policy


def test_gaussian_policy_acts_in_normalised_space_and_maps_to_the_box_through_its_bounds():
    space = box([0.0, -2.0], [10.0, 2.0])
    policy = gaussian_policy(space, log_std_init=-1.0)
    x = torch.randn(4, 3)
    distribution = policy(x)
    assert distribution.mean.shape == (4, 2)
    assert torch.allclose(distribution.std, torch.full((2,), math.exp(-1.0)))  # state-independent
    assert torch.equal(policy.greedy(x), policy.no_grad(x).mean)
    # [-1, 1] -> [low, high]: the normalised corners land on the Box's corners, 0 on its centre.
    normalised = torch.tensor([[-1.0, -1.0], [0.0, 0.0], [1.0, 1.0], [0.5, -0.5]])
    assert torch.allclose(policy.env_actions(normalised),
                          torch.tensor([[0.0, -2.0], [5.0, 0.0], [10.0, 2.0], [7.5, -1.0]]))


def test_a_tanh_squashed_gaussian_acts_inside_the_box_and_scores_its_gaussian_sample():
    space = box([0.0, -2.0], [10.0, 2.0])
    policy = gaussian_policy(space, squash="tanh")
    far = torch.tensor([[-50.0, 50.0], [0.0, 0.0], [0.5, -0.5]])  # samples far past the bounds, the centre, inside
    actions = policy.env_actions(far)
    assert torch.allclose(actions[:2], torch.tensor([[0.0, 2.0], [5.0, 0.0]]))  # at the bounds at most, never past
    assert torch.allclose(actions[2], torch.tensor([5.0 + 5.0 * math.tanh(0.5), -2.0 * math.tanh(0.5)]))
    # The density of tanh(u) differs from the Gaussian's by a factor of u alone: the agents score u itself, so
    # the log-probabilities (and PPO's ratios) are the clipped policy's for the same weights.
    clipped = gaussian_policy(space)
    clipped.model.load_state_dict(policy.model.state_dict())
    x = torch.randn(3, 3)
    assert torch.equal(policy(x).log_prob(far), clipped(x).log_prob(far))


def test_ppo_with_tanh_squashed_actions_trains_on_pendulum_inside_its_bounds():
    _, env, body = build("agent=ppo", "env=classic/pendulum", "hardware.n_envs=4", "agent.n_steps=16",
                         "agent.squash=tanh")
    policy = body.agent.policy
    assert policy.squash == "tanh"
    before = parameters(body)
    state = drive(env, body, 400)
    assert not torch.equal(before, parameters(body))
    policy.model.model[-1].bias.data.fill_(100.0)  # means far past the bound
    assert body.act(state).abs().max() <= 2.0  # Pendulum's torque bound
    env.close()


def test_gaussian_policy_learns_its_log_std_and_no_grad_gives_detached_samples():
    space = box([-2.0], [2.0])
    policy = gaussian_policy(space)
    x = torch.randn(64, 3)
    sample = policy.no_grad(x).sample()
    assert not sample.requires_grad
    before = policy.model.log_std.detach().clone()
    # Maximising the log-probability of actions near the mean narrows the Gaussian.
    policy.reinforce(-policy(x).log_prob(torch.zeros(64, 1)).mean())
    assert policy.model.log_std.item() < before.item()
    assert "log_std" in policy.state_dict()["model"]


def test_the_policy_factory_follows_the_action_space():
    discrete = gym.spaces.Discrete(3)
    assert policy_outputs(discrete) == 3 and action_layout(discrete) == ((), torch.int64)
    layers = torch.nn.Linear(4, 3)
    softmax = stochastic_policy(discrete, policy_network(discrete, layers))
    assert isinstance(softmax, SoftmaxPolicy)
    assert torch.equal(softmax.env_actions(torch.tensor([2, 0])), torch.tensor([2, 0]))
    space = box([-1.0, -1.0, 0.0], [1.0, 1.0, 5.0])
    assert policy_outputs(space) == 3 and action_layout(space) == ((3,), torch.float32)
    with pytest.raises(ConfigError, match="allowed: Discrete, MultiDiscrete, MultiBinary, Box"):
        policy_outputs(gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(2))))


# -- agents through the platform ----------------------------------------------------------------------------
def policy_gradient(agent) -> PolicyGradient:
    return agent.agent  # inside the body


@pytest.mark.parametrize("name", AGENTS)
@pytest.mark.parametrize("env", ["classic/cartpole", "classic/pendulum"])
def test_agent_learns_on_discrete_and_box_actions_and_checkpoints_round_trip(name, env):
    overrides = (f"agent={name}", f"env={env}", "hardware.n_envs=4", *(
        ["agent.n_steps=16"] if name in ("a2c", "ppo") else []), *(
        ["agent.min_batch_size=200"] if name == "vpg" else []))
    _, train_env, agent = build(*overrides)
    before = parameters(agent)
    state = drive(train_env, agent, 1_200)
    assert not torch.equal(before, parameters(agent)), f"{name} never updated its networks on {env}"
    actions = agent.act(state)
    space = train_env.action_space
    if isinstance(space, gym.spaces.Box):
        assert actions.shape == (4, *space.shape) and actions.dtype == torch.float32
    else:
        assert actions.shape == (4,) and actions.dtype == torch.int64

    # A fresh agent loaded from the checkpoint state acts exactly like the trained one, greedily.
    _, probe_env, clone = build(*overrides)
    clone.load_state_dict(agent.state_dict())
    probe = probe_env.reset(seed=123)
    greedy = agent.test_agent().act(probe)
    assert torch.equal(greedy, clone.test_agent().act(probe))
    assert torch.equal(greedy, agent.test_agent().act(probe)), "the test agent is not deterministic"
    train_env.close()
    probe_env.close()


@pytest.mark.parametrize("name", AGENTS)
def test_gaussian_policy_on_a_shared_trunk(name):
    """approximation.shared=true: policy means and value on one MLP trunk (a FeatureNetwork) for Box actions."""
    _, env, agent = build(f"agent={name}", "env=classic/pendulum", "approximation.shared=true", "hardware.n_envs=4",
                          *{"vpg": ["agent.min_batch_size=200"], "ppo": ["agent.n_steps=16"]}.get(name, []))
    trunk = [p.detach().clone() for p in policy_gradient(agent).features.model.parameters()]
    drive(env, agent, 1_000)
    after = list(policy_gradient(agent).features.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(after, trunk, strict=True)), "the shared trunk never learned"
    env.close()


def act_times(name: str, n: int, *overrides: str) -> PolicyGradient:
    _, env, body = build(CARTPOLE, f"agent={name}", "hardware.n_envs=4", *overrides)
    state = env.reset(seed=0)
    for _ in range(n):
        state = env.step(body.act(state))
    env.close()
    return policy_gradient(body)


def test_a2c_updates_once_per_rollout():
    # The first act stores the initial states; each rollout of 8 steps ends at the act that stores its
    # last states (acts 9, 17, ..., 81).
    assert act_times("a2c", 81, "agent.n_steps=8").policy.updates == 10


def test_vac_updates_on_every_step_after_the_first():
    # Acts 2..100, but for a step on which all 4 environments had just ended their episodes (then there is
    # no transition to learn from).
    assert 97 <= act_times("vac", 100).policy.updates <= 99


def test_vpg_updates_only_on_complete_episodes_of_at_least_min_batch_size_steps():
    _, env, agent = build(CARTPOLE, "agent=vpg", "hardware.n_envs=4", "agent.min_batch_size=300")
    vpg = policy_gradient(agent)
    state = env.reset(seed=0)
    finished, updates = 0, []
    while env.steps < 3_000:
        done_before = vpg.policy.updates
        state = env.step(agent.act(state))
        if vpg.policy.updates > done_before:
            updates.append(finished)
            finished = 0
        for episode in env.completed:
            finished += episode.length
    # Each update came once the episodes ended since the previous one held 300 steps or more.
    assert len(updates) >= 5
    assert all(n >= 300 for n in updates), updates
    env.close()


def test_complete_episode_buffer_returns_carry_running_episodes_over():
    buffer = CompleteEpisodeBuffer(n_envs=2, discount_factor=GAMMA)

    def step(obs, reward, done, mask, action):
        buffer.store_state(states(torch.tensor([[obs[0]], [obs[1]]], dtype=torch.float32), reward, done, mask))
        buffer.store_action(torch.tensor(action))

    # env 0: an episode of 3 steps ending in a terminal state; env 1: still running after 4 states.
    step([0, 10], [0, 0], [False, False], [1, 1], [1, 1])
    step([1, 11], [1, 2], [False, False], [1, 1], [0, 1])
    step([2, 12], [1, 2], [False, False], [1, 1], [1, 0])
    step([3, 13], [1, 2], [True, False], [0, 1], [0, 0])
    assert buffer.completed_steps == 3
    observations = buffer.observations()
    assert observations.squeeze(1).tolist() == [0, 1, 2, 3]  # env 0's steps and its last state
    batch = buffer.episodes(torch.full((4,), 100.0))  # a terminal state's value never counts
    assert batch.index.tolist() == [0, 1, 2] and batch.action.tolist() == [1, 0, 1]
    assert torch.allclose(batch.returns, torch.tensor([1 + GAMMA + GAMMA**2, 1 + GAMMA, 1.0]))
    # env 0 starts anew (reset state), env 1's episode ends truncated: mask 1 bootstraps from V(s_T).
    step([-5, 14], [0, 2], [False, True], [1, 1], [1, 0])
    assert buffer.completed_steps == 4
    observations = buffer.observations()
    assert observations.squeeze(1).tolist() == [10, 11, 12, 13, 14]  # env 1 only; env 0's rows were learned
    values = torch.tensor([0.0, 0.0, 0.0, 0.0, 7.0])
    batch = buffer.episodes(values)
    expected = [2 * sum(GAMMA**k for k in range(4 - t)) + GAMMA ** (4 - t) * 7.0 for t in range(4)]
    assert torch.allclose(batch.returns, torch.tensor(expected))
    assert batch.action.tolist() == [1, 1, 0, 0]
    assert buffer.completed_steps == 0


# -- what an update learned from, read off the step it took ------------------------------------------------
# With plain_gradient_steps the first update is a gradient step of size 1, and the change of a linear head is
# a known sum over the steps the update learned from. With V(s) = s[0] and a uniform softmax policy over
# CartPole's two actions (its head all zeros), an update on N steps with returns G and advantages A changes
#   the value head's [weight, bias] by (2 c / N) * sum_i (G_i - V(s_i)) * [s_i, 1]    (c: value_loss_scaling)
#   the policy's logits of action 1 minus those of action 0 by (1 / N) * sum_i A_i * sign_i * [s_i, 1]
# where sign_i is +1 if a_i = 1, else -1. Hand-made states carry one-hot tags in s[1:], so that the [s_i, 1]
# are independent and each step's term can be read off.
ONE_PLAIN_GRADIENT_STEP = ("approximation.hidden=[]", *plain_gradient_steps("lr"), "agent.lr_v=null",
                           "agent.clip_grad=0", "agent.entropy_loss_scaling=0", "agent.value_loss_scaling=0.5")


def hand_made_states(obs_first: list[float], reward: float, done: list[bool], mask: list[float],
                     tags: tuple[int | None, int | None] = (None, None)) -> StateArray:
    """States of 2 environments: observation [s0, 0, 0, 0], with a 1 at dimension ``tags[e]`` of env e."""
    observation = torch.zeros(2, 4)
    observation[:, 0] = torch.tensor(obs_first)
    for env, tag in enumerate(tags):
        if tag is not None:
            observation[env, tag] = 1.0
    return states(observation, torch.full((2,), reward), done, mask)


def agent_valuing_states_by_their_first_number(name: str, *overrides: str):
    """The policy-gradient agent ``name`` on 2 envs whose value head is V(s) = s[0] and whose policy is uniform
    (one linear layer each), and whose first update is one plain gradient step (ONE_PLAIN_GRADIENT_STEP)."""
    _, env, body = build(CARTPOLE, f"agent={name}", "hardware.n_envs=2", f"agent.discount_factor={GAMMA}",
                         *ONE_PLAIN_GRADIENT_STEP, *overrides)
    env.close()
    agent = policy_gradient(body)
    with torch.no_grad():
        for parameter in (*agent.v.model.parameters(), *agent.policy.model.parameters()):
            parameter.zero_()
        next(agent.v.model.parameters())[0, 0] = 1.0
    return agent


def linear_head(approximation) -> torch.Tensor:
    """A linear layer's weight and bias side by side: a row [w, b] per output."""
    weight, bias = approximation.model.parameters()
    return torch.cat([weight, bias[:, None]], dim=1).detach().clone()


def per_step_terms(change: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
    """The e_i with ``change`` = sum_i e_i * [s_i, 1], for the observations s_i (a row each)."""
    inputs = torch.cat([observations, torch.ones(len(observations), 1)], dim=1).double().T
    terms = torch.linalg.lstsq(inputs, change.double()[:, None]).solution
    assert torch.allclose(inputs @ terms, change.double()[:, None], atol=1e-4), "not one gradient step on these"
    return terms.squeeze(1).float()


def first_update(agent, *steps: StateArray) -> tuple[torch.Tensor, torch.Tensor]:
    """The returns G and advantages A of the update ``agent`` (from ``agent_valuing_states_by_their_first_number``)
    takes when the last of ``steps`` completes its first batch, one per state it learned from: the states of
    every step but the last, env 0 then env 1."""
    value_before, policy_before = linear_head(agent.v), linear_head(agent.policy)
    actions = [agent.act(state) for state in steps]
    learned = torch.cat([state["observation"] for state in steps[:-1]])
    sign = torch.cat(actions[:-1]).float() * 2 - 1
    value_change, policy_change = linear_head(agent.v) - value_before, linear_head(agent.policy) - policy_before
    assert value_change.abs().sum() > 0, "no update"
    n, value_scale = len(learned), 2 * agent.config.value_loss_scaling
    returns = learned[:, 0] + n / value_scale * per_step_terms(value_change[0], learned)
    advantages = n * sign * per_step_terms(policy_change[1] - policy_change[0], learned)
    return returns, advantages


# -- truncation: a time limit bootstraps from V(s_T), a terminal state does not ------------------------------
@pytest.mark.parametrize("name", AGENTS)
def test_truncated_episodes_bootstrap_from_the_last_state_and_terminal_ones_do_not(name):
    """Env 0 is truncated by a time limit in s_1 (done, mask 1), env 1 terminates there (done, mask 0). With
    V(s) = s[0], the return of step 0 must be r + gamma * V(s_1) = 1 + gamma * 5 for env 0 and r = 1 for
    env 1."""
    extra = {"vpg": ["agent.min_batch_size=1"], "vac": [], "a2c": ["agent.n_steps=1"],
             "ppo": ["agent.n_steps=1", "agent.epochs=1", "agent.normalize_advantages=false"]}[name]
    agent = agent_valuing_states_by_their_first_number(name, *extra)
    returns, _ = first_update(agent, hand_made_states([0.5, 0.5], 0.0, [False, False], [1.0, 1.0], tags=(1, 2)),
                              hand_made_states([5.0, 5.0], 1.0, [True, True], [1.0, 0.0]))
    assert torch.allclose(returns, torch.tensor([1.0 + GAMMA * 5.0, 1.0]), atol=1e-4), returns


# -- Atari: every policy-gradient agent on real games with its preset ---------------------------------------
@pytest.mark.parametrize("name", AGENTS)
def test_agent_runs_2000_steps_on_breakout_with_its_atari_preset(name):
    pytest.importorskip("ale_py")
    settings, env, agent = build(f"agent={name}", "env=atari/breakout")
    n = settings.hardware.n_envs
    assert n >= 8 and settings.approximation["model"] == "nature_cnn"
    before = parameters(agent)
    state = drive(env, agent, 2_000)
    assert env.steps >= 2_000
    assert state["observation"].shape == (n, 1, 84, 84) and state["observation"].dtype == torch.uint8
    assert not torch.equal(before, parameters(agent)), f"{name} never updated on breakout"
    actions = agent.test_agent().act(env.reset(seed=1))
    assert actions.shape == (n,) and int(actions.max()) < env.action_space.n
    env.close()


def test_a2c_on_pong_runs_as_typed(run_cli, workdir):
    pytest.importorskip("ale_py")
    # Two test games, not the preset's 30: thirty games of Pong lost 0-21 by a barely trained agent were 45 s of
    # the test's 60 and prove nothing the two do not (the preset's 30 is checked in its composed config).
    result = run_cli("run", "agent=a2c", "env=atari/pong", "steps=3000", "test_episodes=2", cwd=workdir, timeout=600)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(workdir / "runs") / "summary.json").read_text())
    assert 3000 <= summary["steps"] < 3000 + 16 and summary["n_envs"] == 16  # configs/preset/atari/a2c.yaml
    assert summary["test_episodes"] == 2 and -21 <= summary["test_return_mean"] <= 21
    assert compose(["agent=a2c", "env=atari/pong"], []).test_episodes == 30


# -- bad input: one line, exit 2 ------------------------------------------------------------------------------
@pytest.mark.parametrize(("override", "words"), [
    ("agent.min_batch_size=abc", ["agent.min_batch_size=abc", "int"]),
    ("agent.min_batch_size=0", ["agent.min_batch_size=0", "at least 1"]),
    ("agent.lr_v=-1", ["agent.lr_v=-1", "positive"]),
    ("agent.entropy_loss_scaling=-0.1", ["agent.entropy_loss_scaling=-0.1", "non-negative"]),
    ("agent.clip=0.2", ["agent.clip", "did you mean 'agent.clip_grad'?",  # PPO's key, not VPG's
                        "see them all: rlconf run agent=vpg env=classic/cartpole --cfg job"]),
])
def test_bad_policy_gradient_settings_are_one_line(run_cli, workdir, override, words):
    line = one_error_line(run_cli("run", "agent=vpg", "env=classic/cartpole", override, cwd=workdir))
    for word in words:
        assert word in line, line
    assert list(workdir.iterdir()) == []


def test_a2c_gae_lambda_and_advantage_normalisation_default_to_sb3s():
    _, env, agent = build(CARTPOLE, "agent=a2c")
    env.close()
    a2c = policy_gradient(agent)
    assert (a2c.config.lam, a2c.config.normalize_advantages) == (1.0, False)  # SB3's A2C defaults
    assert a2c.buffer.lam == 1.0


def _a2c_update_on_a_hand_made_rollout(*overrides: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A2C (2 envs, rollouts of 2 steps, V(s) = s[0]) fed one rollout of hand-made states: the returns its
    update regresses V on and the advantages its policy loss weighs log pi(a|s) with, in the rollout's order
    (step 0 of both envs, then step 1)."""
    agent = agent_valuing_states_by_their_first_number("a2c", "agent.n_steps=2", *overrides)
    return first_update(agent, hand_made_states([1.0, 3.0], 0.0, [False, False], [1.0, 1.0], tags=(1, 2)),
                        hand_made_states([2.0, 0.0], 1.0, [False, False], [1.0, 1.0], tags=(3, None)),
                        hand_made_states([4.0, 1.0], 2.0, [False, False], [1.0, 1.0]))  # full: one update


def _gae_by_hand(lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE(lambda) advantages and lambda-returns (A + V(s)) of the hand-made rollout above."""
    values = torch.tensor([[1.0, 3.0], [2.0, 0.0], [4.0, 1.0]])  # V(s_t) = s_t[0]: rows t = 0, 1, 2; columns envs
    delta_0 = 1.0 + GAMMA * values[1] - values[0]  # r_1 = 1
    delta_1 = 2.0 + GAMMA * values[2] - values[1]  # r_2 = 2; the last state bootstraps
    advantages = torch.cat([delta_0 + GAMMA * lam * delta_1, delta_1])
    return advantages, advantages + values[:2].flatten()


@pytest.mark.parametrize("lam", [1.0, 0.9])
def test_a2c_advantages_and_returns_are_gae_at_agent_lam(lam):
    returns, advantages = _a2c_update_on_a_hand_made_rollout(f"agent.lam={lam}")
    expected_advantages, expected_returns = _gae_by_hand(lam)
    assert torch.allclose(advantages, expected_advantages, atol=1e-5), (advantages, expected_advantages)
    assert torch.allclose(returns, expected_returns, atol=1e-5), (returns, expected_returns)
    if lam < 1:  # step 0's advantage discounts step 1's TD error by gamma * lam, not gamma alone
        assert not torch.allclose(advantages, _gae_by_hand(1.0)[0], atol=1e-3)


def test_a2c_normalize_advantages_scales_the_policy_loss_advantages_only():
    returns, advantages = _a2c_update_on_a_hand_made_rollout("agent.lam=0.9", "agent.normalize_advantages=true")
    raw, expected_returns = _gae_by_hand(0.9)
    assert abs(float(advantages.mean())) < 1e-6 and float(advantages.std()) == pytest.approx(1.0, abs=1e-6)
    assert torch.allclose(advantages, (raw - raw.mean()) / (raw.std() + 1e-8), atol=1e-5)
    assert torch.allclose(returns, expected_returns, atol=1e-5), "V still regresses on the unnormalised returns"


@pytest.mark.parametrize("lam", [-0.1, 1.5])
def test_a2c_lam_outside_zero_one_is_refused(lam):
    with pytest.raises(ConfigError, match=rf"agent.lam={lam}: must be in \[0, 1\]"):
        A2CConfig(lam=lam)


def test_verbose_ppo_logs_each_updates_entropy_approximate_kl_and_clip_fraction():
    logger = recording_logger(verbose=True, debug_every=1)
    settings, env, agent = build("agent=ppo", CARTPOLE, "hardware.n_envs=4", "agent.n_steps=16", "agent.batch_size=32",
                                 logger=logger)
    drive(env, agent, 3 * 16 * 4)  # three rollouts of 16 steps of 4 environments
    env.close()
    debug = [row for row in logger.rows if "debug/entropy" in row]
    per_rollout = (16 * 4 // 32) * settings.agent.epochs  # minibatches x epochs
    assert len(debug) == 3 * per_rollout, "one row an update"
    assert all(0 < row["debug/entropy"] <= math.log(2) + 1e-6 for row in debug), "a two-action softmax's entropy"
    # A rollout's first update sees the policy that acted: every ratio is 1, none clipped, no divergence.
    for first in debug[::per_rollout]:
        assert first["debug/approx_kl"] == pytest.approx(0, abs=1e-6) and first["debug/clip_fraction"] == 0
    assert all(row["debug/approx_kl"] >= -1e-7 and 0 <= row["debug/clip_fraction"] <= 1 for row in debug)
    assert max(row["debug/approx_kl"] for row in debug) > 0, "later epochs see the policy move away"
