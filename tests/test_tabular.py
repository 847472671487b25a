"""Tabular agents (Q-learning, SARSA(lambda), Dyna-Q) on gymnasium's toy text.

Fast: one update of each worked out by hand, the Dyna-Q model's sampling, checkpoints (weights_only, round trips
that act and go on learning identically), one-line refusals, and a short real run of every agent on every
tabular env. Slow: the default commands reach their targets (greedy CliffWalking -13, Taxi >= 7 over 100
episodes), Dyna-Q in fewer environment steps than Q-learning; SARSA(lambda) learns the safe path.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import FAST_RUN, assert_run_refused, drive, only_run_dir, states

from rlconf.agents import BuildContext
from rlconf.agents.tabular import DynaQ, OutcomeModel, QLearning, SarsaLambda, TabularTestAgent
from rlconf.core import StateArray
from rlconf.environments.gym import GymVectorEnvironment
from rlconf.experiments.rundir.checkpoint import load_checkpoint

AGENTS = ["q_learning", "sarsa_lambda", "dyna_q"]
ENVS = ["cliff_walking", "frozen_lake", "frozen_lake_8x8", "taxi"]


def make(agent_class, n_states: int = 3, n_actions: int = 2, n_envs: int = 1, seed: int = 0, **options):
    """An agent built as the registry builds it, exploring not at all unless asked."""
    options = {"epsilon": 0.0, "epsilon_final": 0.0, **options}
    context = BuildContext(observation_space=gym.spaces.Discrete(n_states), action_space=gym.spaces.Discrete(n_actions),
                           n_envs=n_envs, device=torch.device("cpu"), total_steps=10_000, seed=seed)
    return agent_class.from_config(agent_class.Config(**options), context)


def one_state(observation: int, reward: float = 0.0, done: bool = False, terminated: bool = False) -> StateArray:
    """One environment's state as the adapter hands it over: done without terminated is a time limit."""
    return states([observation], [reward], [done], [0.0 if terminated else 1.0])


# -- the updates, by hand ---------------------------------------------------------------------------------
def test_one_q_learning_step_by_hand():
    agent = make(QLearning, alpha=0.5, discount_factor=0.9)
    agent.q[:] = [[0.0, 1.0], [2.0, 4.0], [0.0, 0.0]]
    assert agent.act(one_state(0)).tolist() == [1]  # greedy: nothing learned yet
    assert agent.act(one_state(1, reward=-1.0)).tolist() == [1]
    # q[0, 1] += 0.5 * (-1 + 0.9 * max(2, 4) - 1) = 1 + 0.5 * 1.6
    assert agent.q[0, 1] == pytest.approx(1.8)
    agent.act(one_state(2, reward=10.0, done=True, terminated=True))
    # Terminated: no future value. q[1, 1] += 0.5 * (10 - 4)
    assert agent.q[1, 1] == pytest.approx(7.0)
    before = agent.q.copy()
    agent.act(one_state(0))  # gymnasium's reset step: no transition leads out of a done state
    assert np.array_equal(agent.q, before)
    assert agent.clock.steps == 4


def test_a_truncated_step_bootstraps():
    agent = make(QLearning, alpha=1.0, discount_factor=0.5)
    agent.q[:] = [[0.0, 1.0], [2.0, 4.0], [0.0, 0.0]]
    agent.act(one_state(0))
    agent.act(one_state(1, reward=-1.0, done=True))  # a time limit: the world goes on
    assert agent.q[0, 1] == pytest.approx(-1.0 + 0.5 * 4.0)


def test_sarsa_lambda_traces_by_hand():
    agent = make(SarsaLambda, alpha=0.5, discount_factor=0.5, lam=0.5)  # traces decay by 0.25 a step
    agent.q[:] = [[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]]  # action 1 is greedy in states 0 and 1
    agent.act(one_state(0))
    agent.act(one_state(1))
    # delta = 0 + 0.5 * q[1, 1] - q[0, 1] = -0.5; e[0, 1] = 1, so q[0, 1] += 0.5 * -0.5; then e decays
    assert agent.q[0, 1] == pytest.approx(0.75)
    assert agent.traces[0, 0, 1] == pytest.approx(0.25)
    agent.act(one_state(2, reward=2.0, done=True, terminated=True))
    # delta = 2 - q[1, 1] = 1, reaching both pairs through their traces (1 and 0.25)
    assert agent.q[1, 1] == pytest.approx(1.0 + 0.5 * 1.0)
    assert agent.q[0, 1] == pytest.approx(0.75 + 0.5 * 0.25)
    assert agent.traces[0, :, 1] == pytest.approx([0.0625, 0.25, 0.0])
    agent.act(one_state(0))  # the next episode starts without traces
    assert not agent.traces.any()
    assert np.array_equal(agent.q[2], [0.0, 0.0])


@pytest.mark.parametrize(("kind", "trace"), [("replacing", 1.0 * 0.25), ("accumulating", (0.25 + 1.0) * 0.25)])
def test_a_revisited_pair_replaces_or_accumulates_its_trace(kind, trace):
    agent = make(SarsaLambda, alpha=0.5, discount_factor=0.5, lam=0.5, traces=kind)
    agent.q[:] = [[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]]
    for _ in range(3):  # 0 -> 0 -> 0: the pair (0, 1) twice
        agent.act(one_state(0))
    assert agent.traces[0, 0, 1] == pytest.approx(trace)


# -- Dyna-Q's model ---------------------------------------------------------------------------------------
def test_the_model_samples_pairs_uniformly_and_outcomes_in_proportion():
    model = OutcomeModel()
    for _ in range(3):
        model.record(0, 0, 1, 0.0, False)  # slipped to 1 three times ...
    model.record(0, 0, 2, 1.0, True)  # ... and reached the goal once
    for _ in range(10):
        model.record(5, 1, 5, -1.0, False)  # a pair seen more often is not drawn more often
    samples = list(model.sample(np.random.default_rng(0), 40_000))
    first = [s for s in samples if s[:2] == (0, 0)]
    assert len(first) / len(samples) == pytest.approx(0.5, abs=0.01)
    assert sum(s == (0, 0, 0.0, 1, False) for s in first) / len(first) == pytest.approx(0.75, abs=0.015)
    assert set(first) == {(0, 0, 0.0, 1, False), (0, 0, 1.0, 2, True)}
    assert set(samples) - set(first) == {(5, 1, -1.0, 5, False)}

    # Saved as tensors and restored, it samples exactly the same.
    copy = OutcomeModel()
    copy.load_state_dict(model.state_dict())
    assert list(copy.sample(np.random.default_rng(1), 100)) == list(model.sample(np.random.default_rng(1), 100))


def test_dyna_q_plans_from_what_it_saw():
    agent = make(DynaQ, alpha=0.5, planning_steps=5)
    agent.q[0] = [0.0, 1.0]
    agent.act(one_state(0))
    agent.act(one_state(2, reward=2.0, done=True, terminated=True))
    # One real update and five planned ones, all of the only pair seen: q moves 1 - 0.5**6 of the way to 2.
    assert agent.q[0, 1] == pytest.approx(2.0 - 0.5**6)
    assert len(agent.model) == 1


def test_ties_are_broken_at_random():
    agent = make(QLearning, n_states=1, n_actions=4)
    assert set(agent.act(one_state(0)).item() for _ in range(200)) == {0, 1, 2, 3}
    test_agent = TabularTestAgent(agent.q)
    np.random.seed(0)
    first = [test_agent.act(one_state(0)).item() for _ in range(50)]
    np.random.seed(0)
    assert [test_agent.act(one_state(0)).item() for _ in range(50)] == first  # from the global generator
    assert len(set(first)) > 1


# -- checkpoints ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("agent_class", [QLearning, SarsaLambda, DynaQ])
def test_a_checkpoint_loads_with_weights_only_and_goes_on_identically(agent_class, tmp_path):
    env = GymVectorEnvironment("FrozenLake-v1", 2)
    options = {"n_states": 16, "n_actions": 4, "n_envs": 2, "epsilon": 1.0, "epsilon_final": 0.1,
              "epsilon_decay_steps": 200}
    agent = make(agent_class, **options)
    drive(env, agent, 500)
    torch.save(agent.state_dict(), tmp_path / "agent.pt")
    assert torch.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "agent.pt") == []
    clone = make(agent_class, **options, seed=1)
    clone.load_state_dict(torch.load(tmp_path / "agent.pt", weights_only=True))
    assert np.array_equal(clone.q, agent.q) and clone.clock.steps == agent.clock.steps
    every_state = StateArray({"observation": torch.arange(16)}, (16,))
    np.random.seed(3)
    greedy = agent.test_agent().act(every_state)
    np.random.seed(3)
    assert torch.equal(clone.test_agent().act(every_state), greedy)

    # With the generator the experiment saves alongside, both go on learning in lockstep (the episodes in
    # progress end at a load, for both).
    clone.rng.bit_generator.state = agent.rng.bit_generator.state
    agent.load_state_dict(agent.state_dict())
    state = env.reset(seed=1)
    while env.steps < 1500:
        actions = agent.act(state)
        assert torch.equal(clone.act(state), actions)
        state = env.step(actions)
    assert np.array_equal(clone.q, agent.q)
    env.close()


# -- the real CLI -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "words"), [
    (["agent=q_learning", "env=classic/cartpole"], ["agent=q_learning", "Discrete observations", "env=tabular/taxi"]),
    (["agent=dyna_q", "env=tabular/taxi", "agent.planning_steps=-1"], ["agent.planning_steps=-1", "at least 0"]),
    (["agent=sarsa_lambda", "env=tabular/taxi", "agent.traces=dutch"], ["agent.traces=dutch", "accumulating"]),
    (["agent=sarsa_lambda", "env=tabular/taxi", "agent.lam=1.5"], ["agent.lam=1.5", "[0, 1]"]),
])
def test_bad_input_is_refused_in_one_line(run_cli, workdir, tmp_path, args, words):
    assert_run_refused(run_cli, args, words, workdir, tmp_path / "runs")


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("agent", AGENTS)
def test_every_agent_runs_on_every_tabular_env(run_cli, workdir, agent, env):
    result = run_cli("run", f"agent={agent}", f"env=tabular/{env}", "steps=2000", *FAST_RUN, cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(workdir / "runs")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 2000 and summary["test_episodes"] == 2
    assert torch.serialization.get_unsafe_globals_in_checkpoint(run_dir / "checkpoint.pt") == []
    n_states = {"cliff_walking": 48, "frozen_lake": 16, "frozen_lake_8x8": 64, "taxi": 500}[env]
    assert load_checkpoint(run_dir / "checkpoint.pt")["agent"]["q"].shape[0] == n_states


def test_parallel_envs_eval_and_resume(run_cli, workdir):
    """Several environments at once, an exploring test that ``rlconf eval`` repeats exactly, and a resume
    that restores the model and the generators."""
    result = run_cli("run", "agent=dyna_q", "env=tabular/frozen_lake", "steps=1000", "hardware.n_envs=3",
                     "agent.eval_epsilon=0.2", "test_episodes=20", "eval_every=0", "quiet=true", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(workdir / "runs")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert run_cli("eval", str(run_dir), cwd=workdir).returncode == 0
    evaluation = json.loads((run_dir / "eval.json").read_text())
    assert (evaluation["mean"], evaluation["std"]) == (summary["test_return_mean"], summary["test_return_std"])
    longer = run_cli("run", f"resume={run_dir}", "steps=2000", cwd=workdir)
    assert longer.returncode == 0, longer.stderr
    assert json.loads((run_dir / "summary.json").read_text())["resumes"] == 1
    model = load_checkpoint(run_dir / "checkpoint.pt")["agent"]["model"]
    assert int(model["count"].sum()) > 1000  # the first attempt's transitions are still counted


# -- learning (slow) --------------------------------------------------------------------------------------
# Periodic evaluations find when each run first reaches the target; they do not change training (their random
# numbers come from the global generators, seeded and restored around each), so the final test is the one the
# default command reports. CliffWalking is deterministic: one episode tells.
EVALUATIONS = {"cliff_walking": ["eval_every=100", "eval_episodes=1"],
               "taxi": ["eval_every=1000", "eval_episodes=20"]}


def train(run_cli, workdir: Path, agent: str, env: str, *extra: str) -> tuple[dict, list[dict]]:
    logdir = workdir / agent / env
    result = run_cli("run", f"agent={agent}", f"env=tabular/{env}", *extra, "quiet=true", f"logdir={logdir}",
                     cwd=workdir, timeout=300)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    with open(run_dir / "evaluations.csv") as f:
        evaluations = [row for row in csv.DictReader(f)]
    return json.loads((run_dir / "summary.json").read_text()), evaluations


@pytest.mark.slow
@pytest.mark.parametrize(("env", "reached"), [
    pytest.param("cliff_walking", lambda mean: mean == -13, id="cliff_walking"),  # the shortest path
    pytest.param("taxi", lambda mean: mean >= 7, id="taxi", marks=pytest.mark.long),
])
def test_q_learning_and_dyna_q_reach_the_target_dyna_q_sooner(run_cli, workdir, env, reached):
    first = {}
    for agent in ("q_learning", "dyna_q"):
        summary, evaluations = train(run_cli, workdir, agent, env, *EVALUATIONS[env])
        assert summary["test_episodes"] == 100
        assert reached(summary["test_return_mean"]), (agent, summary)
        first[agent] = next(int(row["step"]) for row in evaluations if reached(float(row["mean"])))
    assert first["dyna_q"] < first["q_learning"], first


@pytest.mark.slow
def test_sarsa_lambda_learns_the_safe_path_and_to_cross_the_lake(run_cli, workdir):
    summary, _ = train(run_cli, workdir, "sarsa_lambda", "cliff_walking")
    assert -17 <= summary["test_return_mean"] < -13, summary  # on-policy: a row or more away from the edge
    summary, _ = train(run_cli, workdir, "sarsa_lambda", "frozen_lake")
    assert summary["test_return_mean"] >= 0.6, summary  # the best policy succeeds about 0.74 of the time
