"""Continuous control, off-policy: bounds and policies, QContinuous, the time feature and observation
normalisation bodies, DDPG, TD3 and SAC on the real environments and through the real command."""

from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import (
    FAST_RUN,
    assert_run_refused,
    build,
    drive,
    one_error_line,
    only_run_dir,
    plain_gradient_steps,
    states,
)
from omegaconf import OmegaConf
from torch import nn

from rlconf.agents import TestAgent
from rlconf.approximation import PolyakTarget, QContinuous
from rlconf.bodies import NormalizeObservations, NormalizeRewards, RunningMeanStd, TimeFeature
from rlconf.config import compose, validate
from rlconf.core import StateArray
from rlconf.errors import ConfigError
from rlconf.experiments.build.environment import make_env
from rlconf.memory import ReplayBuffer, Transitions, replay_buffer
from rlconf.policies import ActionBounds, DeterministicPolicy, SoftDeterministicPolicy, TanhActionBound
from rlconf.policies.soft_deterministic import squashed_log_prob

BOX = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 3.0], np.float32))  # asymmetric on purpose
AGENTS = ("ddpg", "td3", "sac")
PENDULUM = "env=classic/pendulum"




def innermost(agent):
    while hasattr(agent, "agent"):
        agent = agent.agent
    return agent


# -- bounds and policies -------------------------------------------------------------------------------------
def test_tanh_action_bound_stays_inside_the_box_and_covers_it():
    squash = TanhActionBound(ActionBounds(BOX))
    actions = squash(torch.tensor([[-1e4, -1e4], [0.0, 0.0], [1e4, 1e4], [3.0, -3.0]]))
    low, high = torch.as_tensor(BOX.low), torch.as_tensor(BOX.high)
    assert ((actions >= low) & (actions <= high)).all()
    assert torch.allclose(actions[0], low) and torch.allclose(actions[2], high)
    assert torch.allclose(actions[1], (low + high) / 2)


def test_deterministic_policy_acts_in_the_box_and_its_target_too():
    model = nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.mul_(100)  # saturate the tanh
    policy = DeterministicPolicy(model, torch.optim.Adam(model.parameters()), bounds=ActionBounds(BOX),
                                 target=PolyakTarget(0.5))
    observations = torch.randn(64, 3)
    for actions in (policy(observations), policy.target(observations), policy.eval(observations)):
        assert actions.shape == (64, 2)
        assert (actions >= torch.as_tensor(BOX.low)).all() and (actions <= torch.as_tensor(BOX.high)).all()


def soft_policy(bounds: ActionBounds, seed: int = 0) -> SoftDeterministicPolicy:
    torch.manual_seed(seed)
    model = nn.Linear(3, 2 * bounds.dim)
    return SoftDeterministicPolicy(model, torch.optim.Adam(model.parameters()), bounds=bounds,
                                   generator=torch.Generator().manual_seed(seed))


def test_soft_policy_log_prob_matches_torch_distributions():
    """The closed form against an independent implementation: torch's Normal pushed through TanhTransform."""
    bounds = ActionBounds(BOX)
    policy = soft_policy(bounds)
    observations = torch.randn(256, 3)
    actions, log_probs = policy.no_grad(observations)
    mean, log_std = policy.model(observations).detach().chunk(2, dim=-1)
    squashed = bounds.normalize(actions).clamp(-1 + 1e-6, 1 - 1e-6)  # back to [-1, 1]
    reference = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean.double(), log_std.exp().double()),
        [torch.distributions.TanhTransform(cache_size=1)])
    expected = reference.log_prob(squashed.double()).sum(-1)
    assert torch.allclose(log_probs.double(), expected, atol=2e-3), (log_probs - expected).abs().max()


@pytest.mark.parametrize(("mean", "log_std"), [(0.0, 0.0), (1.5, -0.5), (-0.7, 0.3)])
def test_squashed_density_integrates_to_one_over_the_normalised_interval(mean, log_std):
    """The density of tanh(u) on [-1, 1], integrated numerically in the squashed variable itself."""
    a = torch.linspace(-1, 1, 400_001, dtype=torch.float64)[1:-1]
    u = torch.atanh(a)
    log_std_t = torch.full_like(u, log_std)
    noise = (u - mean) / math.exp(log_std)
    density = squashed_log_prob(u.unsqueeze(-1), noise.unsqueeze(-1), log_std_t.unsqueeze(-1)).exp()
    assert torch.trapezoid(density, a).item() == pytest.approx(1.0, abs=2e-3)


def test_soft_policy_samples_are_bounded_reparameterised_and_finite_when_saturated():
    bounds = ActionBounds(BOX)
    policy = soft_policy(bounds)
    observations = torch.randn(512, 3)
    actions, log_probs = policy(observations)
    assert ((actions >= bounds.low) & (actions <= bounds.high)).all()
    (actions.sum() + log_probs.sum()).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.model.parameters()), \
        "gradients flow through the sampled actions into the policy"

    # Means far outside tanh's linear range: float32 tanh(u) is exactly +-1, the log-prob still finite.
    with torch.no_grad():
        policy.model.bias.copy_(torch.tensor([30.0, -30.0, -5.0, -5.0]))
    actions, log_probs = policy.no_grad(observations)
    assert torch.isfinite(log_probs).all() and torch.isfinite(actions).all()


def test_soft_policy_greedy_is_the_squashed_mean():
    bounds = ActionBounds(BOX)
    policy = soft_policy(bounds)
    observations = torch.randn(8, 3)
    mean, _ = policy.model(observations).detach().chunk(2, dim=-1)
    assert torch.allclose(policy.greedy(observations), bounds.scale(torch.tanh(mean)))


# -- QContinuous ---------------------------------------------------------------------------------------------
def test_q_continuous_takes_observation_and_action_and_frozen_spares_its_weights():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3 + 2, 16), nn.ReLU(), nn.Linear(16, 1))
    q = QContinuous(model, torch.optim.SGD(model.parameters(), lr=0.1))
    observations, actions = torch.randn(32, 3), torch.randn(32, 2, requires_grad=True)
    values = q(observations, actions)
    assert values.shape == (32,)
    assert torch.allclose(values, model(torch.cat((observations, actions), -1)).squeeze(-1))

    frozen = q.frozen(observations, actions)
    assert torch.equal(frozen, values)
    frozen.sum().backward()
    assert actions.grad is not None and actions.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.parameters()), "the critic's weights get no gradient"

    q.reinforce(values.detach().mean() - q(observations, actions.detach()).mean())  # a step that moves the weights
    assert torch.allclose(q.frozen(observations, actions), q(observations, actions)), "frozen sees new weights"


def test_polyak_target_moves_every_nth_update_only():
    model = nn.Linear(1, 1, bias=False)
    target = PolyakTarget(0.5, every=2)
    target.init(model)
    with torch.no_grad():
        model.weight.fill_(1.0)
        target.model.weight.fill_(0.0)
    target.update()
    assert target.model.weight.item() == 0.0
    target.update()
    assert target.model.weight.item() == 0.5


def test_replay_stores_float_action_vectors_for_box_action_spaces():
    replay = replay_buffer(100, 2, gym.spaces.Box(-1, 1, (3,)), torch.float32, device="cpu", seed=0,
                           action_space=BOX)
    assert isinstance(replay, ReplayBuffer) and replay.action.dtype == torch.float32
    for t in range(10):
        state = states(torch.full((2, 3), float(t)), torch.ones(2), [False, False])
        replay.store(state, torch.tensor([[t + 0.25, -1.5], [t + 0.5, 2.5]]))
    batch = replay.sample(64)
    assert batch.action.shape == (64, 2) and batch.action.dtype == torch.float32
    # The action stored with an observation comes back with it.
    assert torch.equal(batch.action[:, 0].floor(), batch.observation[:, 0])


# -- bodies ---------------------------------------------------------------------------------------------
class Recorder(TestAgent):
    """Keeps every state it is shown and plays zeros."""

    def __init__(self, action_shape: tuple[int, ...] = (1,)):
        self.seen: list[StateArray] = []
        self.action_shape = action_shape

    def act(self, states: StateArray) -> torch.Tensor:
        self.seen.append(states)
        return torch.zeros((len(states), *self.action_shape))

    def test_agent(self) -> Recorder:
        return Recorder(self.action_shape)

    def state_dict(self) -> dict:
        return {"weights": torch.ones(1)}

    def load_state_dict(self, state: dict) -> None:
        self.loaded = state


def pendulum(n_envs: int = 2, max_episode_steps: int = 5):
    settings = validate(compose(["agent=sac", "env=classic/pendulum", f"hardware.n_envs={n_envs}",
                                 f"env.max_episode_steps={max_episode_steps}"], []))
    return make_env(settings, n_envs)


def test_time_feature_counts_steps_into_the_episode_and_restarts_after_done():
    env = pendulum(max_episode_steps=5)
    recorder = Recorder()
    body = TimeFeature(recorder, time_feature_scale=0.1)
    space = TimeFeature.transform_space(env.observation_space, time_feature_scale=0.1)
    assert space.shape == (4,) and space.dtype == np.float32
    state = env.reset(seed=0)
    raw = []
    for _ in range(13):
        raw.append(state.observation)
        state = env.step(body.act(state))
    # Truncated after 5 steps: the step after each done state is a reset, where the count starts at 0.
    times = [round(s.observation[0, -1].item() / 0.1) for s in recorder.seen]
    assert times == [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0]
    assert all(torch.equal(s.observation[:, :3], r) for s, r in zip(recorder.seen, raw, strict=True))
    assert all(s.observation.shape == (2, 4) for s in recorder.seen)

    tester = body.test_agent()
    tester.act(env.reset(seed=1))
    assert tester.agent.seen[0].observation[:, -1].eq(0).all(), "the test agent counts its own episodes"
    env.close()


def test_time_feature_refuses_image_observations():
    with pytest.raises(TypeError, match="vector observations"):
        TimeFeature.transform_space(gym.spaces.Box(0, 255, (1, 84, 84), np.uint8))


def test_running_mean_std_matches_numpy_over_batches():
    rng = np.random.default_rng(0)
    data = rng.normal([3.0, -1.0], [2.0, 0.1], size=(1000, 2))
    statistics = RunningMeanStd((2,))
    for batch in np.array_split(data, [1, 2, 10, 300, 301, 700]):
        statistics.update(torch.as_tensor(batch, dtype=torch.float32))
    assert statistics.count == 1000
    assert np.allclose(statistics.mean.numpy(), data.mean(0), atol=1e-5)
    assert np.allclose(statistics.var.numpy(), data.var(0), rtol=1e-4)


def test_normalisation_learns_in_training_is_frozen_in_tests_and_refuses_frames():
    env = pendulum(max_episode_steps=50)
    recorder = Recorder()
    body = NormalizeObservations(recorder, RunningMeanStd((3,)))
    drive(env, body, 400)
    seen = torch.cat([s.observation for s in recorder.seen[100:]])
    assert seen.mean(0).abs().max() < 0.5 and (seen.std(0) - 1).abs().max() < 0.5
    count = body.statistics.count
    tester = body.test_agent()
    tester.act(env.reset(seed=3))
    assert body.statistics.count == count, "the test agent does not update the statistics"
    assert tester.statistics is body.statistics, "... but reads the current ones"
    with pytest.raises(TypeError, match="float Box"):
        NormalizeObservations.transform_space(gym.spaces.Box(0, 255, (1, 84, 84), np.uint8))
    env.close()


def test_normalisation_statistics_round_trip_through_the_agents_checkpoint():
    overrides = ("agent=sac", "body.normalize_observations=true", "agent.replay_start_size=100", "agent.batch_size=32")
    _, env, agent = build(PENDULUM, *overrides)
    assert isinstance(agent, NormalizeObservations)
    drive(env, agent, 300)
    state = agent.state_dict()
    seen = innermost(agent).clock.steps  # every state the agent was shown, reset steps included
    assert state["observation_statistics"]["count"] == seen >= 300
    assert {"q_1", "q_2", "policy", "temperature"} <= set(state)

    _, env2, clone = build(PENDULUM, *overrides)
    clone.load_state_dict(state)
    assert clone.statistics.count == seen
    assert torch.equal(clone.statistics.mean, agent.statistics.mean)
    probe = env2.reset(seed=7)
    assert torch.equal(agent.test_agent().act(probe), clone.test_agent().act(probe))
    env.close()
    env2.close()



def test_reward_scaling_divides_by_the_running_std_of_the_discounted_return():
    """The agent sees r / std(G), G = gamma * G + r per environment, restarted after each episode's end (as
    Stable-Baselines3's VecNormalize(norm_reward=True)); the reset steps between episodes add nothing."""
    env = pendulum(max_episode_steps=30)
    env2 = pendulum(max_episode_steps=30)
    recorder = Recorder()
    body = NormalizeRewards(recorder, RunningMeanStd(()), discount_factor=0.9)
    drive(env, body, 200)
    raw = []
    drive(env2, _RewardTap(raw), 200)  # the same seed, the same zero actions: the same rewards and ends

    returns, seen, expected = np.zeros(2), [], []
    reset = np.ones(2, dtype=bool)
    for state in raw:
        reward, done = state.reward.numpy().astype(np.float64), state.done.numpy()
        returns = returns * 0.9 + reward
        seen += list(returns[~reset])
        std = np.sqrt(np.var(seen) + 1e-8) if seen else 1.0
        expected.append(np.clip(reward / std, -10, 10))
        returns[done] = 0.0
        reset = done
    got = [state.reward.numpy() for state in recorder.seen]
    assert np.allclose(np.stack(got), np.stack(expected), rtol=1e-4, atol=1e-6)
    assert body.statistics.count == len(seen)

    count = body.statistics.count
    tester = body.test_agent()
    state = env.reset(seed=3)
    tester.act(state)
    assert body.statistics.count == count, "tests do not update the statistics"
    assert torch.equal(tester.agent.seen[-1].reward, state.reward), "... and test agents see the env's rewards"
    env.close()
    env2.close()


class _RewardTap(Recorder):
    def __init__(self, seen: list):
        super().__init__()
        self.seen = seen


def test_reward_scaling_is_a_body_option_saved_in_checkpoints():
    overrides = ("agent=ppo", "body.normalize_rewards=true", "agent.n_steps=64", "hardware.n_envs=2")
    _, env, agent = build(PENDULUM, *overrides)
    assert isinstance(agent, NormalizeRewards) and agent.discount_factor == innermost(agent).config.discount_factor
    drive(env, agent, 300)
    state = agent.state_dict()
    assert state["reward_statistics"]["count"] > 200

    _, env2, clone = build(PENDULUM, *overrides)
    clone.load_state_dict(state)
    assert clone.statistics.count == agent.statistics.count
    assert torch.equal(clone.statistics.var, agent.statistics.var)
    env.close()
    env2.close()


def test_ppo_on_mujoco_scales_rewards_and_normalises_observations():
    settings = validate(compose(["agent=ppo", "env=mujoco/hopper"], []))
    assert settings.body.normalize_rewards and settings.body.normalize_observations
    assert (settings.hardware.n_envs, settings.agent.n_steps, settings.agent.batch_size) == (1, 2048, 64)


# -- the agents, in process ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", AGENTS)
def test_agent_learns_acts_in_the_box_and_checkpoints_round_trip(name):
    overrides = (f"agent={name}", "agent.replay_start_size=200", "agent.batch_size=32", "hardware.n_envs=2")
    settings, env, agent = build(PENDULUM, *overrides)
    inner = innermost(agent)
    before = {key: p.clone() for key, p in inner.policy.model.named_parameters()}
    state = drive(env, agent, 600)
    assert any(not torch.equal(p, before[key]) for key, p in inner.policy.model.named_parameters())
    actions = agent.act(state)
    assert actions.shape == (2, 1) and actions.dtype == torch.float32
    assert actions.abs().max() <= 2.0, "actions are inside Pendulum's Box [-2, 2]"

    _, env2, clone = build(PENDULUM, *overrides)
    clone.load_state_dict(agent.state_dict())
    clone.load_replay_state_dict(agent.replay_state_dict())
    probe = env2.reset(seed=11)
    greedy = agent.test_agent().act(probe)
    assert torch.equal(greedy, clone.test_agent().act(probe))
    assert torch.equal(greedy, agent.test_agent().act(probe)), "the test agent is deterministic"
    assert torch.equal(innermost(clone).replay.action, inner.replay.action)
    env.close()
    env2.close()


def test_sac_tunes_its_temperature_towards_the_entropy_target():
    _, env, agent = build(PENDULUM, "agent=sac", "agent.replay_start_size=100", "agent.batch_size=32",
                          "agent.lr_temperature=0.01")
    sac = innermost(agent)
    assert sac.entropy_target == -1  # -dim(A) for Pendulum's one action
    drive(env, agent, 400)
    assert sac.temperature.updates == sac.clock.steps - 100 + 1  # one per step from the 100th on
    # A fresh policy is far more random than the target entropy asks: alpha must have come down from 1.
    assert sac.temperature.model.log_alpha.exp().item() < 0.5
    env.close()


@pytest.mark.parametrize("name", AGENTS)
def test_time_limit_truncation_bootstraps_and_termination_does_not(name):
    """Pendulum never terminates; with a 20-step limit every episode is truncated. The transitions into
    those truncated states are learned with next_mask 1, so their targets add gamma * Q(s', a'); a
    terminal transition (next_mask 0) is worth its reward alone."""
    overrides = [f"agent={name}", "env.max_episode_steps=20", "agent.replay_start_size=100", "agent.batch_size=32"]
    if name == "td3":
        overrides.append("agent.target_noise=0")  # a deterministic target, to compare with DDPG's formula
    _, env, agent = build(PENDULUM, *overrides)
    drive(env, agent, 200)
    inner = innermost(agent)
    replay = inner.replay
    done_rows = torch.nonzero(replay.done[:, 0]).squeeze(-1)
    assert len(done_rows) == 9  # the 10th truncated state was just returned, not yet stored
    into_truncation = replay.gather(done_rows - 1, torch.zeros_like(done_rows))
    assert into_truncation.next_mask.eq(1).all(), "a truncated state keeps mask 1"

    def targets(batch):
        if name == "sac":
            inner.policy.generator.manual_seed(0)  # the same next actions for both calls
            return inner.td_targets(batch, torch.tensor(0.2))
        return inner.td_targets(batch)

    bootstrapped = targets(into_truncation)
    terminal = targets(into_truncation._replace(next_mask=torch.zeros_like(into_truncation.next_mask)))
    assert torch.equal(terminal, into_truncation.reward)
    assert (bootstrapped - into_truncation.reward).abs().min() > 0
    if name in ("ddpg", "td3"):
        next_observation = into_truncation.next_observation
        next_actions = inner.policy.target(next_observation)
        critics = [inner.q] if name == "ddpg" else [inner.q_1, inner.q_2]
        values = torch.stack([q.target(next_observation, next_actions) for q in critics]).min(0).values
        gamma = inner.config.discount_factor
        assert torch.allclose(bootstrapped, into_truncation.reward + gamma * values)
    env.close()


def test_continuous_agents_refuse_discrete_actions():
    with pytest.raises(ConfigError, match=r"agent=sac: needs continuous \(Box\) actions, not Discrete\(2\)"):
        build("env=classic/cartpole", "agent=sac")


@pytest.mark.parametrize(("override", "words"), [
    ("agent.noise=-1", ["agent.noise=-1", "non-negative"]),
    ("agent.policy_delay=0", ["agent.policy_delay=0", "at least 1"]),
    ("agent.polyak_rate=0", ["agent.polyak_rate=0", "(0, 1]"]),
    ("agent.lr_q=0", ["agent.lr_q=0", "positive"]),
])
def test_bad_td3_values_are_one_line_config_errors(override, words):
    with pytest.raises(ConfigError) as error:
        validate(compose(["agent=td3", "env=classic/pendulum", override], []))
    assert all(word in str(error.value) for word in words), str(error.value)


# -- the command ------------------------------------------------------------------------------------------
def test_list_shows_the_continuous_envs_bodies_and_agents(run_cli, workdir):
    envs = run_cli("list", "env", cwd=workdir).stdout
    for name in ("classic/pendulum", "classic/mountain_car_continuous", "mujoco/half_cheetah", "mujoco/ant",
                 "mujoco/hopper", "mujoco/humanoid", "mujoco/humanoid_standup", "mujoco/inverted_pendulum",
                 "mujoco/inverted_double_pendulum", "mujoco/pusher", "mujoco/reacher", "mujoco/swimmer",
                 "mujoco/walker2d"):
        assert f"  {name} " in envs, name
    assert "time_feature" in run_cli("list", "body", cwd=workdir).stdout
    components = run_cli("list", "components", cwd=workdir).stdout
    for name in ("ddpg", "td3", "sac", "continuous", "mujoco", "q_continuous", "deterministic", "soft_deterministic"):
        assert f"  {name} " in components, name


@pytest.mark.parametrize("name", AGENTS)
def test_agent_trains_on_half_cheetah_through_the_command(run_cli, workdir, tmp_path, name):
    logdir = tmp_path / "runs"
    result = run_cli("run", f"agent={name}", "env=mujoco/half_cheetah", "steps=2000", "agent.replay_start_size=1500",
                     *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", "MuJoCo's warnings do not reach the console"
    run_dir = only_run_dir(logdir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 2000 and summary["episodes"] == 2 and summary["test_episodes"] == 2
    config = OmegaConf.load(run_dir / "config.yaml")
    assert config.body.name == "time_feature" and list(config.approximation.hidden) == [256, 256]
    agent = torch.load(run_dir / "checkpoint.pt", weights_only=False)["agent"]
    critic = agent["q"] if name == "ddpg" else agent["q_1"]
    # One update per step from the 1500th on (the agent's clock also counts the reset step of episode 2).
    assert critic["updates"] == agent["steps"] - 1500 + 1 > 500
    # 17 observations, the time feature, 6 actions: what the critic's first layer takes.
    assert critic["model"]["model.0.weight"].shape == (256, 17 + 1 + 6)
    assert list(workdir.iterdir()) == [], "nothing is written outside logdir (no MUJOCO_LOG.TXT)"


def test_normalisation_statistics_are_checkpointed_and_restored_on_resume(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    command = ["run", "agent=td3", "env=classic/pendulum", "agent.replay_start_size=200",
               "body.normalize_observations=true", *FAST_RUN, f"logdir={logdir}"]
    result = run_cli(*command, "steps=300", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    checkpoint = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    statistics = checkpoint["agent"]["observation_statistics"]
    assert statistics["count"] == checkpoint["agent"]["steps"] >= 300  # one observation per step seen
    assert statistics["mean"].shape == (3,) and (statistics["var"] > 0).all()

    result = run_cli(*command, "steps=600", f"resume={run_dir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    resumed = torch.load(run_dir / "checkpoint.pt", weights_only=False)["agent"]
    # Counting on from the checkpoint's statistics: restored, not started afresh.
    assert resumed["observation_statistics"]["count"] == resumed["steps"] >= 600


def test_sac_on_half_cheetah_runs_as_typed(run_cli, workdir):
    result = run_cli("run", "agent=sac", "env=mujoco/half_cheetah", "steps=3000", cwd=workdir, timeout=120)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(workdir / "runs") / "summary.json").read_text())
    assert summary["steps"] == 3000 and summary["test_episodes"] == 10
    assert summary["wall_seconds"] < 30


def test_sac_on_a_discrete_env_is_one_line(run_cli, workdir, tmp_path):
    line = one_error_line(run_cli("run", "agent=sac", "env=classic/cartpole", f"logdir={tmp_path / 'runs'}",
                                  cwd=workdir))
    assert "agent=sac" in line and "Box" in line and "Discrete(2)" in line and "classic/pendulum" in line
    assert not (tmp_path / "runs").exists() and list(workdir.iterdir()) == []


def test_without_mujoco_the_error_names_the_extra(run_cli, workdir, tmp_path):
    fake = tmp_path / "no_mujoco" / "mujoco"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'mujoco\'", name="mujoco")\n')
    line = one_error_line(run_cli("run", "agent=sac", "env=mujoco/hopper", cwd=workdir,
                                  pythonpath=[fake.parent]))
    assert "pip install 'rlconf[mujoco]'" in line and "'mujoco'" in line and "mujoco/hopper" in line
    assert list(workdir.iterdir()) == []


def test_without_mujoco_in_process_the_import_names_the_package(monkeypatch):
    from rlconf.environments.mujoco import MujocoEnvironment

    monkeypatch.setitem(sys.modules, "mujoco", None)  # as if the mujoco extra were not installed
    with pytest.raises(ModuleNotFoundError) as error:
        MujocoEnvironment("Hopper-v5", 1)
    assert error.value.name == "mujoco"


def test_time_feature_on_frames_is_a_config_error():
    pytest.importorskip("ale_py")
    with pytest.raises(ConfigError, match=r"body=time_feature: TimeFeature appends to vector observations"):
        build("env=atari/pong", "agent=dqn", "body=time_feature")


def test_mujoco_configs_name_real_v5_tasks():
    folder = Path(__file__).parents[1] / "configs" / "env" / "mujoco"
    ids = {path.stem: OmegaConf.load(path).env.id for path in folder.glob("*.yaml")}
    assert len(ids) == 11
    for name, env_id in ids.items():
        assert env_id.endswith("-v5") and gym.spec(env_id).entry_point.startswith("gymnasium.envs.mujoco"), name


def test_sac_temperature_is_tuned_by_default_and_fixed_when_given():
    overrides = ("agent=sac", "agent.replay_start_size=100", "agent.batch_size=32")
    _, env, tuned = build(PENDULUM, *overrides)
    drive(env, tuned, 400)
    assert innermost(tuned).temperature.updates > 0
    assert float(innermost(tuned).temperature.model().detach()) != 0.0, "log alpha moved from log 1"
    env.close()

    _, env, fixed = build(PENDULUM, *overrides, "agent.temperature=0.2")
    sac = innermost(fixed)
    policy_before = [p.clone() for p in sac.policy.model.parameters()]
    drive(env, fixed, 400)
    env.close()
    log_alpha = torch.tensor(math.log(0.2))
    assert torch.equal(sac.temperature.model().detach(), log_alpha), "log alpha never moves"
    assert float(sac.temperature.model().exp()) == pytest.approx(0.2, rel=1e-6)
    assert sac.temperature.updates == 0, "a fixed temperature takes no optimiser step"
    assert any(not torch.equal(a, b) for a, b in zip(policy_before, sac.policy.model.parameters(), strict=True))
    # The checkpoint holds the fixed log alpha, and a fresh agent restored from it keeps it fixed.
    assert torch.equal(fixed.state_dict()["temperature"]["model"]["log_alpha"], log_alpha)
    _, env, clone = build(PENDULUM, *overrides, "agent.temperature=0.2")
    clone.load_state_dict(fixed.state_dict())
    drive(env, clone, 200)
    env.close()
    assert torch.equal(innermost(clone).temperature.model().detach(), log_alpha)
    assert innermost(clone).temperature.updates == 0


def _sac_losses_by_hand(sac, batch: Transitions, alpha: float) -> list[torch.Tensor]:
    """The critics' and the policy's losses of one SAC update at temperature ``alpha``, taking its draws from
    the policy's generator as the update does (a' ~ pi(s') for the targets, then a ~ pi(s))."""
    next_actions, next_log_probs = sac.policy.no_grad(batch.next_observation)
    next_values = torch.min(sac.q_1.target(batch.next_observation, next_actions),
                            sac.q_2.target(batch.next_observation, next_actions))
    targets = batch.reward + sac.config.discount_factor * batch.next_mask * (next_values - alpha * next_log_probs)
    observation = batch.observation
    actions, log_probs = sac.policy(observation)
    values = torch.min(sac.q_1.frozen(observation, actions), sac.q_2.frozen(observation, actions))
    return [F.mse_loss(sac.q_1(observation, batch.action), targets),
            F.mse_loss(sac.q_2(observation, batch.action), targets), (alpha * log_probs - values).mean()]


def _gradient_steps_by_hand(sac, state: StateArray, alpha: float) -> list[list[torch.Tensor]]:
    """What ``sac.act(state)`` does to the critics' and the policy's weights, by hand, if its one update
    trains on the losses of temperature ``alpha`` by plain gradient steps of size 1 (plain_gradient_steps):
    the act's own draws (its action, then its minibatch) and then the losses' draws, from a copy of ``sac``
    as it is now."""
    copy_ = copy.deepcopy(sac)
    actions = copy_.policy.no_grad(state.as_input())[0]
    copy_.replay.store(state, actions)
    batch = copy_.replay.sample(copy_.config.batch_size)
    networks = (copy_.q_1.model, copy_.q_2.model, copy_.policy.model)
    for network, loss in zip(networks, _sac_losses_by_hand(copy_, batch, alpha), strict=True):
        network.zero_grad()
        loss.backward(inputs=list(network.parameters()))
    return [[-p.grad for p in network.parameters()] for network in networks]


def test_a_fixed_temperature_weighs_the_critic_targets_and_the_policy_loss():
    """SAC's first update at a fixed alpha 0.2, a plain gradient step, moves its critics and policy down the
    gradients of the losses written out at alpha 0.2, not at 1.0, and takes no temperature step."""
    _, env, agent = build(PENDULUM, "agent=sac", "hardware.n_envs=1", "agent.replay_start_size=100",
                          "agent.batch_size=32", "agent.temperature=0.2", *plain_gradient_steps("lr_q", "lr_pi"))
    sac = innermost(agent)
    state = drive(env, agent, 99)  # the warm-up but for its last step: no update yet
    env.close()
    assert sac.policy.updates == 0
    expected, other_alpha = _gradient_steps_by_hand(sac, state, 0.2), _gradient_steps_by_hand(sac, state, 1.0)
    before = [[p.detach().clone() for p in network.parameters()] for network in (sac.q_1.model, sac.q_2.model,
                                                                                 sac.policy.model)]
    sac.act(state)
    assert sac.policy.updates == 1 and sac.temperature.updates == 0, "one update, no temperature step"
    after = [list(network.parameters()) for network in (sac.q_1.model, sac.q_2.model, sac.policy.model)]
    for name, old, new, step, wrong in zip(("q_1", "q_2", "policy"), before, after, expected, other_alpha,
                                           strict=True):
        for o, n, s in zip(old, new, step, strict=True):
            torch.testing.assert_close(n.detach() - o, s, atol=1e-5, rtol=1e-4, msg=name)
        assert not all(torch.allclose(n.detach() - o, w, atol=1e-5, rtol=1e-4)
                       for o, n, w in zip(old, new, wrong, strict=True)), f"alpha weighs {name}'s loss"


def test_a_fixed_temperature_must_be_positive(run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=sac", "env=classic/pendulum", "agent.temperature=0"],
                       ["agent.temperature=0", "null"], workdir, tmp_path / "runs")


@pytest.mark.parametrize("value", ["-0.5", "inf", "nan"])
def test_a_fixed_temperature_must_be_a_positive_finite_number(value):
    with pytest.raises(ConfigError, match=f"agent.temperature={value}: must be a positive finite number"):
        validate(compose(["agent=sac", "env=classic/pendulum", f"agent.temperature={value}"], []))
