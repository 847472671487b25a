"""Contextual bandit agents (issue 8): the posterior math, neural training, checkpoints, real CLI runs, and
the target: linear posterior pulls the best arm in >= 90% of the last 1k of 5k pulls on the linear bandit."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import FAST_RUN, one_error_line, only_run_dir
from omegaconf import OmegaConf

from rlconf import registry
from rlconf.agents import BuildContext
from rlconf.agents.linear_bandit import LinUCB, RidgeStatistics, thompson_scores
from rlconf.core import rng as rng_states
from rlconf.environments.bandit import ContextualBandit
from rlconf.nn.builders import MLPSettings
from rlconf.schema import check

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "agent"
LINEAR = ("linear_posterior", "linucb")
NEURAL = ("neural_greedy", "neural_linear", "bootstrap_neural", "noise_sampling", "variational")
SMALL = {"hidden": [32, 32]}  # networks for the in-process tests


def build(name: str, env: ContextualBandit, seed: int = 0, approximation: dict | None = None, **options):
    agent_class = registry.get("agent", name)
    config = check(agent_class.Config, options, "agent.")
    context = BuildContext(env.observation_space, env.action_space, env.n_envs, torch.device("cpu"), 5000,
                           approximation=dataclasses.asdict(MLPSettings(**(approximation or {}))), seed=seed,
                           reward_range=env.reward_range)
    return agent_class.from_config(config, context)


def optimal_pulls(agent, env: ContextualBandit, pulls: int, seed: int) -> np.ndarray:
    """Drive ``agent`` on ``env`` for ``pulls`` steps: whether each step's pulls were of a best arm, (pulls, n)."""
    state, optimal = env.reset(seed), []
    for _ in range(pulls):
        state = env.step(agent.act(state))
        optimal.append(env.pulls.optimal)
    return np.array(optimal)


# -- the posterior math -----------------------------------------------------------------------------------
def tiny_data(n: int = 2, pulls: int = 40, d: int = 3, arms: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, pulls, d))
    a = rng.integers(arms, size=(n, pulls))
    y = rng.standard_normal((n, pulls))
    return x, a, y


def test_ridge_statistics_equal_a_direct_least_squares_solve():
    n, d, arms, lam = 2, 3, 3, 0.5
    x, a, y = tiny_data(n, d=d, arms=arms)
    stats = RidgeStatistics(n, arms, d, lam)
    for t in range(x.shape[1]):  # rank-one updates, one pull per bandit
        stats.add(x[:, t], a[:, t], y[:, t])
    refitted = RidgeStatistics(n, arms, d, lam)
    refitted.refit(torch.from_numpy(x), torch.from_numpy(a), torch.from_numpy(y))
    probe = np.random.default_rng(1).standard_normal((n, d))
    a0, b0 = 2.0, 3.0
    shape, scale = stats.noise_posterior(a0, b0)
    for bandit in range(n):
        for arm in range(arms):
            xa, ya = x[bandit, a[bandit] == arm], y[bandit, a[bandit] == arm]
            gram = xa.T @ xa + lam * np.eye(d)
            mu = np.linalg.solve(gram, xa.T @ ya)  # ridge = the posterior mean under the N(0, sigma^2/lam I) prior
            np.testing.assert_allclose(stats.mean()[bandit, arm], mu, atol=1e-10)
            np.testing.assert_allclose(refitted.mean()[bandit, arm], mu, atol=1e-10)
            np.testing.assert_allclose(stats.covariance[bandit, arm], np.linalg.inv(gram), atol=1e-10)
            v = probe[bandit]
            np.testing.assert_allclose(stats.spread(probe)[bandit, arm], v @ np.linalg.solve(gram, v), atol=1e-10)
            # Normal-Inverse-Gamma: a = a0 + N/2, b = b0 + (|y - X mu|^2 + lam |mu|^2) / 2
            assert shape[bandit, arm] == pytest.approx(a0 + len(ya) / 2)
            residual = ((ya - xa @ mu) ** 2).sum() + lam * mu @ mu
            assert scale[bandit, arm] == pytest.approx(b0 + residual / 2)
    for name in ("precision", "xy", "yy", "counts"):
        np.testing.assert_allclose(getattr(stats, name), getattr(refitted, name), atol=1e-9)


def test_linucb_index_is_the_ridge_estimate_plus_alpha_times_the_width():
    env = ContextualBandit("linear", 2, kwargs={"arms": 3, "features": 3}, seed=0)
    agent = build("linucb", env, alpha=0.7, lambda_prior=2.0, intercept=False)
    assert isinstance(agent, LinUCB)
    x, a, y = tiny_data(2, d=3, arms=3)
    for t in range(x.shape[1]):
        agent.learn(x[:, t], a[:, t], y[:, t])
    probe = np.random.default_rng(2).standard_normal((2, 3))
    bounds = agent.upper_bounds(probe)
    for bandit in range(2):
        for arm in range(3):
            xa, ya = x[bandit, a[bandit] == arm], y[bandit, a[bandit] == arm]
            gram = xa.T @ xa + 2.0 * np.eye(3)
            theta = np.linalg.solve(gram, xa.T @ ya)
            v = probe[bandit]
            expected = theta @ v + 0.7 * np.sqrt(v @ np.linalg.solve(gram, v))
            assert bounds[bandit, arm] == pytest.approx(expected, abs=1e-10)
    assert (agent.choose(probe) == bounds.argmax(1)).all()


def test_thompson_scores_follow_the_posterior_predictive():
    """x . beta, beta ~ N(mu, sigma^2 A^-1), sigma^2 ~ IG(a, b): mean x . mu, variance b/(a-1) x^T A^-1 x."""
    x, a, y = tiny_data(1, pulls=60, d=3, arms=2)
    stats = RidgeStatistics(1, 2, 3, 0.25)
    for t in range(x.shape[1]):
        stats.add(x[:, t], a[:, t], y[:, t])
    probe = np.array([[0.3, -1.0, 0.5]])
    rng = np.random.default_rng(0)
    draws = np.array([thompson_scores(stats, probe, 6.0, 6.0, rng)[0] for _ in range(20000)])
    shape, scale = stats.noise_posterior(6.0, 6.0)
    mean, variance = stats.predict(probe)[0], scale[0] / (shape[0] - 1) * stats.spread(probe)[0]
    assert (np.abs(draws.mean(0) - mean) < 4 * np.sqrt(variance / 20000)).all()
    np.testing.assert_allclose(draws.var(0), variance, rtol=0.06)


# -- the target -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_linear_posterior_reaches_90_percent_optimal_arms_in_the_last_1k_of_5k(seed):
    """The issue's target, on the env's defaults (configs/env/bandit/linear.yaml: 5 arms, 10 features,
    noise 0.1) and the agent's (configs/agent/linear_posterior.yaml)."""
    env = ContextualBandit("linear", 1, kwargs={}, seed=seed)
    agent = build("linear_posterior", env, seed=seed)
    optimal = optimal_pulls(agent, env, 5000, seed)
    assert optimal[-1000:].mean() >= 0.90


def test_linucb_also_learns_the_linear_bandit_with_several_bandits_at_once():
    env = ContextualBandit("linear", 4, kwargs={}, seed=3)
    optimal = optimal_pulls(build("linucb", env, seed=3), env, 1500, 3)  # 6,000 pulls, 1,500 per bandit
    assert optimal[-250:].mean(0).min() >= 0.85  # every bandit, each its own problem


# -- neural agents ----------------------------------------------------------------------------------------
def store_loss(agent) -> float:
    """The mean squared error of every network's pulled-arm prediction over the whole store."""
    size, views = agent.store.size, agent.views
    contexts = agent.store.contexts[:, :size].repeat_interleave(views, 0)
    arms = agent.store.arms[:, :size].repeat_interleave(views, 0)
    rewards = agent.store.rewards[:, :size].repeat_interleave(views, 0)
    with torch.no_grad():
        predicted = agent.networks(contexts).gather(-1, arms.unsqueeze(-1)).squeeze(-1)
    return float(((predicted - rewards) ** 2).mean())


@pytest.mark.parametrize("name", NEURAL)
def test_neural_training_reduces_the_loss_on_the_store(name):
    env = ContextualBandit("linear", 2, kwargs={"arms": 3, "features": 4}, seed=0)
    extra = {"ensemble": 3} if name == "bootstrap_neural" else {}
    agent = build(name, env, approximation=SMALL, update_every=10_000, gradient_steps=50, **extra)
    rng = np.random.default_rng(0)
    for _ in range(300):  # random pulls into the store, no training yet (update_every is far off)
        contexts = env.problem.contexts(rng, 2).astype(np.float64)
        arms = rng.integers(3, size=2)
        agent.learn(contexts, arms, env.problem.rewards(rng, env.problem.expected(contexts), arms).astype(np.float64))
    assert agent.rounds == 0 and agent.store.size == 300
    before = store_loss(agent)
    for _ in range(4):
        agent.train_round()
    assert agent.updates == 200
    assert store_loss(agent) < 0.3 * before


def test_bootstrap_networks_train_on_their_own_views():
    env = ContextualBandit("linear", 1, kwargs={"arms": 3, "features": 4}, seed=0)
    agent = build("bootstrap_neural", env, approximation=SMALL, ensemble=4, add_probability=0.5)
    optimal_pulls(agent, env, 400, 0)
    included = agent.store.state_dict()["included"][0].float()  # (ensemble, pulls)
    assert included.shape == (4, 399)  # the last pull awaits its reward
    assert ((included.mean(1) - 0.5).abs() < 0.1).all()  # each pull joins each view with probability 1/2
    assert (included != included[0]).any()  # the views differ


def test_noise_sampling_adapts_its_noise_towards_the_target():
    env = ContextualBandit("linear", 1, kwargs={}, seed=0)
    low = build("noise_sampling", env, approximation=SMALL, noise_std=1e-4, noise_adapt=1.2)
    high = build("noise_sampling", env, approximation=SMALL, noise_std=10.0, noise_adapt=1.2)
    for agent in (low, high):
        optimal_pulls(agent, env, 500, 0)
    assert low.rounds == high.rounds == 9
    # Far from the target, every round moves the std by the factor: up from too little noise, down from too much.
    assert low.noise_std[0] == pytest.approx(1e-4 * 1.2**9) and high.noise_std[0] == pytest.approx(10.0 / 1.2**9)
    fixed = build("noise_sampling", env, approximation=SMALL, noise_target=None)
    optimal_pulls(fixed, env, 200, 0)
    assert fixed.noise_std[0] == 0.05


# -- checkpoints ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", LINEAR + NEURAL)
def test_checkpoint_round_trip_reproduces_the_next_arms(name):
    """Saved and loaded with weights_only=True (what the run's checkpoint holds: the agent's state and its
    generators), an agent built from another seed continues exactly as the original."""
    extra = {"ensemble": 3} if name == "bootstrap_neural" else {}
    neural = {"approximation": SMALL, "update_every": 40, **extra} if name in NEURAL else {}
    env = ContextualBandit("linear", 2, kwargs={}, seed=0)
    original = build(name, env, seed=0, **neural)
    optimal_pulls(original, env, 100, seed=0)  # two training rounds for the neural agents
    buffer = io.BytesIO()
    torch.save({"agent": original.state_dict(), "rng": rng_states.capture()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    restored = build(name, env, seed=99, **neural)
    restored.load_state_dict(saved["agent"])
    rng_states.restore(saved["rng"])
    assert restored.pulls == original.pulls == 100
    state = env.reset(7)  # as a resumed run starts: a fresh context, no reward pending
    for _ in range(60):  # past the next training round
        arms = original.act(state)
        assert torch.equal(arms, restored.act(state))
        state = env.step(arms)
    contexts = state["observation"].numpy().astype(np.float64)
    assert (original.greedy(contexts) == restored.greedy(contexts)).all()


# -- configs ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", LINEAR + NEURAL)
def test_the_agent_config_states_every_option_and_its_defaults(name):
    path = CONFIGS / f"{name}.yaml"
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# ") and ": " in lines[0]
    options = [line for line in lines[1:] if line and not line.startswith(("#", "name:"))]
    assert all(" # " in line for line in options), "every option has a trailing comment"
    node = OmegaConf.to_container(OmegaConf.load(path))
    assert node.pop("name") == name
    assert node == dataclasses.asdict(registry.get("agent", name).Config())


# -- the real command -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", LINEAR + NEURAL)
def test_a_short_real_run_of_each_agent(name, run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", f"agent={name}", "env=bandit/linear", "steps=600", "approximation.hidden=[32]",
                     f"logdir={logdir}", *FAST_RUN, "test_episodes=200", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 600 and summary["test_episodes"] == 200
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)["agent"]
    assert state["pulls"] == 600
    if name in NEURAL:
        networks = 10 if name == "bootstrap_neural" else 1  # the ensemble's, stacked
        assert state["networks"]["weights.0"].shape == (networks, 10, 32)  # approximation.hidden reached them
        assert state["store"]["contexts"].shape == (1, 599, 10)  # the last pull awaits its reward


def test_a_bad_agent_option_is_one_line(run_cli, workdir, tmp_path):
    line = one_error_line(run_cli("run", "agent=noise_sampling", "env=bandit/linear", "agent.resample=sometimes",
                                  f"logdir={tmp_path / 'runs'}", cwd=workdir))
    assert "agent.resample=sometimes" in line and "pull, round" in line


def write_clusters(path: Path, rows: int = 600, seed: int = 0) -> None:
    """Three Gaussian clusters in two numeric features, string labels, and a categorical feature that says
    something of the label (right 60% of the time)."""
    rng = np.random.default_rng(seed)
    centres = {"alpha": (0.0, 3.0), "beta": (-3.0, -1.5), "gamma": (3.0, -1.5)}
    colours = {"alpha": "red", "beta": "green", "gamma": "blue"}
    lines = ["x,y,colour,kind"]
    for _ in range(rows):
        label = str(rng.choice(list(centres)))
        x, y = np.array(centres[label]) + 1.2 * rng.standard_normal(2)
        colour = colours[label] if rng.random() < 0.6 else str(rng.choice(list(colours.values())))
        lines.append(f"{x:.4f},{y:.4f},{colour},{label}")
    path.write_text("\n".join(lines) + "\n")


def test_linucb_learns_a_labelled_csv_far_better_than_chance(run_cli, workdir, tmp_path):
    data = tmp_path / "clusters.csv"
    write_clusters(data)
    logdir = tmp_path / "runs"
    result = run_cli("run", "agent=linucb", "env=bandit/dataset", f"env.kwargs.path={data}", "env.kwargs.label=kind",
                     "steps=2000", f"logdir={logdir}", *FAST_RUN, "test_episodes=1000", cwd=workdir)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(logdir) / "summary.json").read_text())
    assert summary["test_return_mean"] >= 0.85  # greedy accuracy; chance is 1/3
