"""Multi-armed bandit agents (rlconf.agents.multi_armed): hand-checked updates, the Beta quantile against
mpmath, init_pulls, checkpoints, refusals through the real CLI, short real runs, and the issue's target:
on 10-armed Bernoulli bandits over 10k pulls, Thompson sampling and UCB have at least 5x less cumulative
regret than uniformly random pulls, and less than epsilon-greedy with epsilon 0.1."""

from __future__ import annotations

import io
import json
import math

import mpmath
import numpy as np
import pytest
import torch
from conftest import assert_run_refused

from rlconf import registry
from rlconf.agents import BuildContext
from rlconf.agents.multi_armed import beta_cdf, beta_quantile
from rlconf.core import rng
from rlconf.environments.bandit import BernoulliArms, GaussianArms, MultiArmedBandit
from rlconf.errors import ConfigError

AGENTS = ("epsilon_greedy", "ucb", "bayesian_ucb", "thompson", "gradient_bandit")


def build(name: str, env, total_steps: int = 10_000, seed: int = 0, **options):
    """The registry's agent ``name`` for ``env``, as the experiment builds it."""
    agent_class = registry.get("agent", name)
    context = BuildContext(observation_space=env.observation_space, action_space=env.action_space,
                           n_envs=env.n_envs, device=torch.device("cpu"), total_steps=total_steps,
                           reward_range=env.reward_range, seed=seed)
    return agent_class.from_config(agent_class.Config(**options), context)


def bandit(env_id: str = "bernoulli", n: int = 2, arms: int = 3, seed: int = 0) -> MultiArmedBandit:
    return MultiArmedBandit(env_id, n, kwargs={"arms": arms}, seed=seed)


def pulls(agent, env, steps: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Drive ``agent`` on ``env`` for ``steps`` pulls of every bandit: (the arms, steps x n; the cumulative
    expected regret of each bandit)."""
    states = env.reset(seed=seed)
    arms, regret = [], np.zeros(env.n_envs)
    for _ in range(steps):
        states = env.step(agent.act(states))
        arms.append(env.pulls.arms)
        regret += env.pulls.regrets
    return np.array(arms), regret


# -- hand-checked updates -----------------------------------------------------------------------------------
def test_counts_and_means_are_kept_per_bandit_and_arm():
    agent = build("epsilon_greedy", bandit(n=2, arms=3))
    agent.learn(None, np.array([0, 2]), np.array([1.0, 0.5]))
    agent.learn(None, np.array([0, 2]), np.array([0.0, 1.5]))
    agent.learn(None, np.array([1, 2]), np.array([4.0, 1.0]))
    np.testing.assert_allclose(agent.counts, [[2, 1, 0], [0, 0, 3]])
    np.testing.assert_allclose(agent.means, [[0.5, 4.0, 0.0], [0.0, 0.0, 1.0]])


def test_beta_posterior_counts_successes_and_failures():
    agent = build("thompson", bandit(n=2, arms=3), alpha=1.0, beta=2.0)
    assert agent.kind == "beta"  # Bernoulli rewards lie in [0, 1]
    for arms, rewards in [([0, 1], [1, 0]), ([0, 1], [1, 1]), ([2, 1], [0, 0]), ([0, 0], [0, 1])]:
        agent.learn(None, np.array(arms), np.array(rewards, dtype=np.float64))
    a, b = agent.beta_parameters()
    np.testing.assert_allclose(a, [[1 + 2, 1, 1], [1 + 1, 1 + 1, 1]])
    np.testing.assert_allclose(b, [[2 + 1, 2, 2 + 1], [2, 2 + 2, 2]])
    np.testing.assert_allclose(agent.estimates(), a / (a + b))


def test_fractional_rewards_count_as_successes_with_their_probability():
    agent = build("thompson", bandit(n=1, arms=2))
    for _ in range(4000):
        agent.learn(None, np.array([0]), np.array([0.3]))
    assert set(np.unique(agent.successes)) <= set(range(4001))  # whole successes
    assert agent.successes[0, 0] / 4000 == pytest.approx(0.3, abs=0.03)


def test_gaussian_posterior_is_the_conjugate_normal_update():
    env = bandit("gaussian", n=1, arms=2)
    agent = build("thompson", env, prior_mean=0.5, prior_std=2.0, reward_std=3.0)
    assert agent.kind == "gaussian"  # auto: Gaussian rewards are unbounded
    for reward in (1.0, 2.0, 6.0):
        agent.learn(None, np.array([1]), np.array([reward]))
    mean, std = agent.normal_parameters()
    precision = 1 / 2.0**2 + 3 / 3.0**2
    assert mean[0, 1] == pytest.approx((0.5 / 4 + 9.0 / 9) / precision)
    assert std[0, 1] == pytest.approx(precision**-0.5)
    assert (mean[0, 0], std[0, 0]) == pytest.approx((0.5, 2.0))  # never pulled: the prior


def test_ucb_index_on_a_tiny_case():
    agent = build("ucb", bandit(n=1, arms=3), confidence=0.5)
    for arm, reward in [(0, 1.0), (1, 0.0), (1, 1.0), (0, 0.0), (0, 1.0)]:
        agent.learn(None, np.array([arm]), np.array([reward]))
    # t = 6 (the next pull); arm 0: 3 pulls, mean 2/3; arm 1: 2 pulls, mean 1/2; arm 2: never pulled
    index = agent.index()[0]
    assert index[0] == pytest.approx(2 / 3 + 0.5 * math.sqrt(2 * math.log(6) / 3))
    assert index[1] == pytest.approx(1 / 2 + 0.5 * math.sqrt(2 * math.log(6) / 2))
    assert index[2] == math.inf
    assert agent.choose(None)[0] == 2  # untried arms first


def test_gradient_bandit_update_follows_the_formula():
    agent = build("gradient_bandit", bandit(n=1, arms=3), alpha=0.4, temperature=2.0)
    agent.learn(None, np.array([1]), np.array([1.0]))  # the first pull is its own baseline: no change
    np.testing.assert_allclose(agent.preferences, 0.0)
    assert agent.baseline[0] == 1.0
    agent.learn(None, np.array([2]), np.array([0.0]))  # baseline 1 (the first reward), pi uniform
    expected = 0.4 * (0.0 - 1.0) * (np.array([0, 0, 1]) - 1 / 3) / 2.0
    np.testing.assert_allclose(agent.preferences[0], expected)
    assert agent.baseline[0] == 0.5
    pi = np.exp(expected / 2.0) / np.exp(expected / 2.0).sum()
    np.testing.assert_allclose(agent.policy()[0], pi)
    agent.learn(None, np.array([0]), np.array([2.0]))  # baseline 0.5, the policy the pull came from
    expected = expected + 0.4 * (2.0 - 0.5) * (np.array([1, 0, 0]) - pi) / 2.0
    np.testing.assert_allclose(agent.preferences[0], expected)
    assert agent.baseline[0] == pytest.approx(1.0)

    plain = build("gradient_bandit", bandit(n=1, arms=3), alpha=0.4, baseline=False)
    plain.learn(None, np.array([1]), np.array([1.0]))  # no baseline: the reward itself
    np.testing.assert_allclose(plain.preferences[0], 0.4 * 1.0 * (np.array([0, 1, 0]) - 1 / 3))


def test_epsilon_greedy_explores_with_probability_epsilon_and_can_decay():
    agent = build("epsilon_greedy", bandit(n=1000, arms=4), epsilon=0.2)
    agent.means[:, 3] = 1.0
    arms = agent.choose(None)
    assert (arms != 3).mean() == pytest.approx(0.2 * 3 / 4, abs=0.04)
    decaying = build("epsilon_greedy", bandit(n=10, arms=4), epsilon=1.0, epsilon_final=0.0,
                     epsilon_decay_steps=100)
    decaying.clock.tick(50)
    assert float(decaying.epsilon) == pytest.approx(0.5)
    decaying.clock.tick(100)
    decaying.means[:, 1] = 1.0
    assert (decaying.choose(None) == 1).all()


def test_greedy_arms_are_the_best_estimates():
    env = bandit(n=2, arms=3)
    for name in AGENTS:
        agent = build(name, env)
        agent.learn(None, np.array([1, 2]), np.array([1.0, 1.0]))
        agent.learn(None, np.array([0, 0]), np.array([0.0, 0.0]))
        # Again: the gradient bandit's baseline equals the first reward, so its first pull moves nothing.
        agent.learn(None, np.array([1, 2]), np.array([1.0, 1.0]))
        assert agent.test_agent().act(env.reset(seed=0)).tolist() == [1, 2], name


# -- quantiles ----------------------------------------------------------------------------------------------
def exact_beta_cdf(a: float, b: float, x: float) -> float:
    """I_x(a, b) in 40 digits: for whole a and b the binomial tail P(Binomial(a + b - 1, x) >= a), summed with
    mpmath (its own betainc fails for large a and b), otherwise mpmath's betainc."""
    with mpmath.workdps(40):
        x = mpmath.mpf(x)
        if a != int(a) or b != int(b):
            return float(mpmath.betainc(a, b, 0, x, regularized=True))
        n, a = int(a + b - 1), int(a)
        term = mpmath.binomial(n, a) * x**a * (1 - x) ** (n - a)
        total = term
        for j in range(a, n):
            term *= mpmath.mpf(n - j) / (j + 1) * x / (1 - x)
            total += term
        return float(total)


@pytest.mark.parametrize(("a", "b"), [(1, 1), (0.5, 0.5), (2, 30), (30, 2), (1, 2000), (700, 300), (8001, 2001)])
def test_beta_quantile_matches_exact_arithmetic(a, b):
    levels = np.array([0.01, 0.3, 0.5, 0.9, 0.99, 0.9999, 1 - 1e-6])
    x = beta_quantile(np.full(7, float(a)), np.full(7, float(b)), levels)
    cdf = beta_cdf(np.full(7, float(a)), np.full(7, float(b)), x)
    sigma = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    for level, value, ours in zip(levels, x, cdf, strict=True):
        assert ours == pytest.approx(exact_beta_cdf(a, b, value), rel=1e-8, abs=1e-14)
        # The root lies within delta of ours (I brackets the level there), or a few float64 steps near 0 or 1.
        delta = max(1e-7 * min(sigma, value, 1 - value), 4 * np.spacing(value))
        assert exact_beta_cdf(a, b, value - delta) <= level <= exact_beta_cdf(a, b, value + delta), (level, value)


def test_bayesian_ucb_takes_the_level_of_its_time_and_horizon():
    env = bandit(n=1, arms=2)
    agent = build("bayesian_ucb", env, total_steps=1000, c=1.0)
    for reward in (1.0, 0.0, 1.0):
        agent.learn(None, np.array([0]), np.array([reward]))
    level = 1 - 1 / (4 * math.log(1000))
    assert agent.level()[0, 0] == pytest.approx(level)
    index = agent.index()[0]
    assert exact_beta_cdf(3, 2, index[0]) == pytest.approx(level, abs=1e-10)  # Beta(1 + 2, 1 + 1)
    assert index[1] == pytest.approx(level)  # Beta(1, 1): uniform
    gaussian = build("bayesian_ucb", bandit("gaussian", n=1, arms=2), quantile=0.975)
    np.testing.assert_allclose(gaussian.index()[0], [1.959964, 1.959964], atol=1e-6)  # N(0, 1) priors


# -- init_pulls, checkpoints --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", AGENTS)
def test_init_pulls_pull_every_arm_in_turn_first(name):
    env = bandit(n=3, arms=4)
    agent = build(name, env, init_pulls=2)
    arms, _ = pulls(agent, env, 8 + 5)
    assert arms[:8].tolist() == [[arm] * 3 for arm in [0, 1, 2, 3, 0, 1, 2, 3]]
    np.testing.assert_allclose(agent.counts.sum(axis=1), 13 - 1)  # the last pull's reward is yet to be learnt


@pytest.mark.parametrize("name", AGENTS)
@pytest.mark.parametrize("env_id", ["bernoulli", "gaussian"])
def test_checkpoint_round_trip_continues_with_the_same_arms(name, env_id, tmp_path):
    env = bandit(env_id, n=4, arms=5, seed=3)
    agent = build(name, env, seed=7)
    pulls(agent, env, 60)
    torch.save({"agent": agent.state_dict(), "rng": rng.capture()}, tmp_path / "checkpoint.pt")
    expected, _ = pulls(agent, env, 40, seed=99)  # as a resumed run goes on: from a reset environment

    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    restored = build(name, env, seed=7)
    restored.load_state_dict(saved["agent"])
    rng.restore(saved["rng"])
    assert pulls(restored, env, 40, seed=99)[0].tolist() == expected.tolist()
    fresh = build(name, env, seed=7)
    assert pulls(fresh, env, 40, seed=99)[0].tolist() != expected.tolist()  # the checkpoint carried something


# -- through the real CLI -----------------------------------------------------------------------------------
def test_a_bandit_agent_refuses_an_environment_that_is_no_bandit(run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=thompson", "env=classic/cartpole"], ["agent=thompson", "bandit"],
                       workdir, tmp_path / "runs")


def test_a_beta_prior_refuses_unbounded_rewards(run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=bayesian_ucb", "env=bandit/gaussian", "agent.prior=beta"],
                       ["agent.prior=beta", "[0, 1]", "gaussian"], workdir, tmp_path / "runs")


def test_options_are_checked_in_one_line(run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=ucb", "env=bandit/bernoulli", "agent.confidence=-1"],
                       ["agent.confidence=-1"], workdir, tmp_path / "runs")
    for name, options, words in [("thompson", {"prior": "uniform"}, ["agent.prior=uniform", "auto"]),
                                 ("epsilon_greedy", {"epsilon": 1.5}, ["agent.epsilon=1.5"]),
                                 ("epsilon_greedy", {"epsilon_final": -0.1}, ["agent.epsilon_final=-0.1"]),
                                 ("bayesian_ucb", {"quantile": 1.0}, ["agent.quantile=1.0"]),
                                 ("bayesian_ucb", {"reward_std": 0.0}, ["agent.reward_std=0.0"]),
                                 ("gradient_bandit", {"init_pulls": -2}, ["agent.init_pulls=-2"]),
                                 ("gradient_bandit", {"temperature": 0.0}, ["agent.temperature=0.0"])]:
        with pytest.raises(ConfigError) as error:
            registry.get("agent", name).Config(**options)
        assert all(word in str(error.value) for word in words), (words, str(error.value))
        assert "\n" not in str(error.value)


@pytest.mark.parametrize("name", AGENTS)
def test_short_real_runs_on_bernoulli_and_gaussian_bandits(name, run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", f"agent={name}", "env=bandit/bernoulli,bandit/gaussian", "steps=600",
                     "hardware.n_envs=3", "test_episodes=30", "checkpoint_every=300", "agent.init_pulls=1",
                     "launcher=basic", "quiet=true", f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dirs = sorted(path.parent for path in logdir.glob("*/*/summary.json"))
    assert len(run_dirs) == 2
    for run_dir in run_dirs:
        summary = json.loads((run_dir / "summary.json").read_text())
        assert (summary["agent"], summary["steps"], summary["n_envs"]) == (name, 600, 3)
        assert summary["steps_per_second"] > 0 and math.isfinite(summary["test_return_mean"])
        checkpoint = torch.load(io.BytesIO((run_dir / "checkpoint.pt").read_bytes()), weights_only=True)
        agent_state = checkpoint["agent"]
        assert agent_state["counts"].shape == (3, 10) and agent_state["counts"].sum() == 600 - 3
        assert agent_state["pulls"] == 200
    assert {json.loads((d / "summary.json").read_text())["env"] for d in run_dirs} == {"bandit/bernoulli",
                                                                                       "bandit/gaussian"}


# -- the target ---------------------------------------------------------------------------------------------
def seeded_problems(env_id: str, seeds: range) -> MultiArmedBandit:
    """One environment of ``len(seeds)`` bandits, bandit i facing the 10-armed problem ``rlconf run`` draws
    for seed ``seeds[i]`` (MultiArmedBandit(env_id, 1, seed=s)): every seed at once, in one numpy step."""
    one = [MultiArmedBandit(env_id, 1, kwargs={"arms": 10}, seed=s).problem for s in seeds]
    env = MultiArmedBandit(env_id, len(seeds), kwargs={"arms": 10})
    if env_id == "bernoulli":
        env.problem = BernoulliArms(np.concatenate([p.probabilities for p in one]))
    else:
        env.problem = GaussianArms(np.concatenate([p.means for p in one]), one[0].std)
    return env


def regrets(name: str, env_id: str, seeds: range = range(20), steps: int = 10_000, **options) -> np.ndarray:
    """The cumulative expected regret after ``steps`` pulls on each seed's problem."""
    env = seeded_problems(env_id, seeds)
    if name == "random":
        agent_class = registry.get("agent", "random")
        context = BuildContext(env.observation_space, env.action_space, env.n_envs, torch.device("cpu"), steps)
        agent = agent_class.from_config(agent_class.Config(), context)
    else:
        agent = build(name, env, total_steps=steps * env.n_envs, **options)
    return pulls(agent, env, steps)[1]


def test_target_thompson_and_ucb_beat_random_fivefold_and_epsilon_greedy():
    """Bernoulli, 10 arms, 10k pulls, seeds 0..19: mean cumulative regret of Thompson sampling and UCB at
    least 5x below uniform random and below epsilon-greedy (epsilon 0.1)."""
    regret = {name: regrets(name, "bernoulli").mean() for name in ("random", "epsilon_greedy", "ucb", "thompson")}
    assert regret["random"] > 3000  # 10k pulls at the average arm, about 0.41 below the best
    for name in ("thompson", "ucb"):
        assert 5 * regret[name] <= regret["random"], regret
        assert regret[name] < regret["epsilon_greedy"], regret


def test_target_through_the_cli(run_cli, workdir, tmp_path):
    """The same through ``rlconf run``: 20 bandits of 10k pulls each (each its own problem, drawn from the
    run's seed), cumulative regret as summary.json reports it, for seeds 0 and 1."""
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", "agent=random,epsilon_greedy,ucb,thompson", "env=bandit/bernoulli", "seed=0,1",
                     "hardware.n_envs=20", "steps=200000", "test_episodes=20", "checkpoint_every=0",
                     "launcher=basic", "quiet=true", f"logdir={logdir}", cwd=workdir, timeout=600)
    assert result.returncode == 0, result.stderr
    summaries = [json.loads(path.read_text()) for path in logdir.glob("*/*/summary.json")]
    assert len(summaries) == 8
    for seed in (0, 1):
        regret = {s["agent"]: s["cumulative_regret"] for s in summaries if s["seed"] == seed}
        for name in ("thompson", "ucb"):
            assert 5 * regret[name] <= regret["random"], (seed, regret)
            assert regret[name] < regret["epsilon_greedy"], (seed, regret)
