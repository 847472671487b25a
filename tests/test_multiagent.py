"""Multi-agent learning on PettingZoo: MultiagentState, IndependentMultiagent (acting, checkpoints per player,
shared parameters), action masks in the DQN family, the random agent, one-line config errors, real runs
(tic-tac-toe, two-player Pong) with per-player returns, resume, ``rlconf eval``; and, slow, the learning target:
independent DQN on tic-tac-toe wins or draws >= 80% of 200 test games against random legal moves."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import FAST_RUN, assert_run_refused, build, cli_env, only_run_dir, recording_logger, wait_while_running

from rlconf.agents import DQN, BuildContext, IndependentMultiagent, RandomAgent, RandomTestAgent
from rlconf.agents.dqn import DDQN, DDQNConfig, DQNConfig, DQNTestAgent
from rlconf.agents.independent import batch_of_one
from rlconf.core import MultiagentState, State, StateArray
from rlconf.logging import LoggerGroup, ScopedLogger
from rlconf.memory import ReplayBuffer, Transitions
from rlconf.policies import GreedyPolicy, ParallelGreedyPolicy, legal_max

pytest.importorskip("pettingzoo")

TICTACTOE = ["agent=independent", "env=pettingzoo/tictactoe"]


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def inner(agent):
    """The learning agent inside a player's body wrappers."""
    while hasattr(agent, "agent"):
        agent = agent.agent
    return agent


class FixedQ:
    """Action values that do not depend on the observation, for checking what policies and targets pick."""

    def __init__(self, values: list[float]):
        self.values = torch.tensor(values)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.values.expand(len(x), -1)

    no_grad = eval = target = __call__


# -- MultiagentState ------------------------------------------------------------------------------------
def test_multiagent_state_names_its_player_and_stays_one():
    state = MultiagentState({"agent": "player_1", "observation": torch.zeros(3)})
    assert state.agent == "player_1" and state.reward == 0.0 and state.mask == 1.0
    assert isinstance(state.update("reward", 1.0), MultiagentState)
    assert state.update("reward", 1.0).agent == "player_1"
    assert isinstance(state.to("cpu"), MultiagentState)
    with pytest.raises(KeyError, match="agent"):
        MultiagentState({"observation": torch.zeros(3)})
    batch = batch_of_one(state.update("action_mask", torch.tensor([True, False, True])))
    assert isinstance(batch, StateArray) and len(batch) == 1 and "agent" not in batch
    assert batch["action_mask"].shape == (1, 3) and batch.observation.shape == (1, 3)


# -- action masks ---------------------------------------------------------------------------------------
MASK = torch.tensor([[False, True, False, True], [True, False, False, False]])
VALUES = [5.0, 1.0, 9.0, 2.0]  # the best actions, 2 then 0, are illegal in the first state


def masked_states() -> StateArray:
    return StateArray({"observation": torch.zeros(2, 3), "action_mask": MASK}, (2,))


def test_greedy_and_epsilon_greedy_choose_only_legal_actions():
    greedy = ParallelGreedyPolicy(FixedQ(VALUES), 4, 0.0, np.random.default_rng(0))
    assert greedy(masked_states()).tolist() == [3, 0]
    assert greedy.eval(masked_states()).tolist() == [3, 0]
    explore = ParallelGreedyPolicy(FixedQ(VALUES), 4, 1.0, np.random.default_rng(0))
    mixed = ParallelGreedyPolicy(FixedQ(VALUES), 4, 0.5, np.random.default_rng(1))
    for policy in (explore, mixed):
        chosen = torch.stack([policy(masked_states()) for _ in range(300)])
        assert MASK[torch.arange(2), chosen].all(), "every action legal"
    assert set(torch.stack([explore(masked_states()) for _ in range(200)])[:, 0].tolist()) == {1, 3}, "uniform"
    single = GreedyPolicy(FixedQ(VALUES), 4, 1.0, np.random.default_rng(0))
    state = State({"observation": torch.zeros(3), "action_mask": MASK[0]})
    assert {single(state) for _ in range(100)} == {1, 3}
    assert GreedyPolicy(FixedQ(VALUES), 4).greedy(state) == 3
    test_agent = DQNTestAgent(FixedQ(VALUES), 4, epsilon=0.5)
    assert all(MASK[torch.arange(2), test_agent.act(masked_states())].all() for _ in range(100))
    # Without a mask, nothing changes: the best action, whatever it is.
    assert greedy(StateArray({"observation": torch.zeros(2, 3)}, (2,))).tolist() == [2, 2]


def test_dqn_targets_maximise_over_the_next_states_legal_actions():
    next_mask = torch.tensor([[False, True, False, True], [False, False, False, False]])
    batch = Transitions(observation=torch.zeros(2, 3), action=torch.zeros(2, dtype=torch.int64),
                        reward=torch.tensor([0.5, 1.0]), next_observation=torch.zeros(2, 3),
                        next_mask=torch.tensor([1.0, 0.0]), next_action_mask=next_mask)
    context = BuildContext(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(4), 1, torch.device("cpu"), 1000)
    for agent_class, config in ((DQN, DQNConfig()), (DDQN, DDQNConfig())):
        agent = agent_class.from_config(config, context)
        agent.q.target = agent.q.no_grad = FixedQ(VALUES)
        targets = agent.td_targets(batch)
        # max over legal {1, 3} is 2.0; a terminal state with no legal action adds nothing (not nan)
        assert torch.allclose(targets, torch.tensor([0.5 + 0.99 * 2.0, 1.0])), (agent_class, targets)
        unmasked = agent.td_targets(batch._replace(next_action_mask=None))
        assert torch.allclose(unmasked, torch.tensor([0.5 + 0.99 * 9.0, 1.0]))
    assert legal_max(torch.tensor([[1.0, 2.0]]), None).tolist() == [2.0]


def test_replay_keeps_masks_only_for_environments_that_have_them():
    def state(i: int, mask: bool) -> StateArray:
        x = {"observation": torch.full((1, 2), float(i)), "reward": torch.zeros(1), "done": torch.zeros(1, dtype=bool),
             "mask": torch.ones(1)}
        if mask:
            x["action_mask"] = torch.tensor([[i % 3 == 0, True, i % 2 == 0]])
        return StateArray(x, (1,))

    plain = ReplayBuffer(16, 1, (2,), torch.float32, generator=torch.Generator().manual_seed(0))
    masked = ReplayBuffer(16, 1, (2,), torch.float32, generator=torch.Generator().manual_seed(0))
    for i in range(10):
        plain.store(state(i, False), torch.tensor([0]))
        masked.store(state(i, True), torch.tensor([0]))
    assert plain.action_mask is None and plain.sample(8).next_action_mask is None
    assert masked.bytes_per_transition == plain.bytes_per_transition + 3
    batch = masked.sample(64)
    following = batch.next_observation[:, 0].long()  # observation i: its mask is state(i)'s
    expected = torch.stack([(following % 3 == 0), torch.ones_like(following, dtype=bool), following % 2 == 0], 1)
    assert torch.equal(batch.next_action_mask, expected)
    restored = ReplayBuffer(16, 1, (2,), torch.float32)
    restored.load_state_dict(masked.state_dict())
    assert torch.equal(restored.action_mask, masked.action_mask)


# -- the random agent -----------------------------------------------------------------------------------
def test_random_agent_draws_legal_and_bounded_actions():
    context = BuildContext(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(4), 2, torch.device("cpu"), 100, seed=3)
    agent = RandomAgent.from_config(RandomAgent.Config(), context)
    for policy in (agent, agent.test_agent()):
        chosen = torch.stack([policy.act(masked_states()) for _ in range(200)])
        assert MASK[torch.arange(2), chosen].all()
        assert set(chosen[:, 0].tolist()) == {1, 3}
    unmasked = StateArray({"observation": torch.zeros(2, 3)}, (2,))
    assert set(torch.cat([agent.act(unmasked) for _ in range(100)]).tolist()) == {0, 1, 2, 3}
    box = RandomTestAgent(gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 0.5], np.float32)))
    actions = box.act(unmasked)
    assert actions.shape == (2, 2) and (actions[:, 1] >= 0).all() and (actions[:, 1] <= 0.5).all()
    assert list(agent.state_dict()) == ["generators"]  # nothing learned: only where its generator stands


def test_random_agent_runs_a_single_agent_env(run_cli, workdir):
    result = run_cli("run", "agent=random", "env=classic/cartpole", "steps=300", *FAST_RUN, cwd=workdir)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(workdir / "runs") / "summary.json").read_text())
    assert summary["steps"] == 300 and 5 < summary["test_return_mean"] < 100


# -- IndependentMultiagent ------------------------------------------------------------------------------
def test_each_player_has_its_own_agent_acting_on_its_own_states():
    _, env, agent = build(*TICTACTOE)
    assert isinstance(agent, IndependentMultiagent) and list(agent.agents) == ["player_1", "player_2"]
    assert isinstance(inner(agent.agents["player_1"]), DQN)
    assert inner(agent.agents["player_1"]).q is not inner(agent.agents["player_2"]).q
    state = env.reset(seed=0)
    seen = {"player_1": 0, "player_2": 0}
    for _ in range(200):
        action = agent.act(state)
        assert state.done or state["action_mask"][int(action)], "a legal move"
        seen[state.agent] += 1
        state = env.step(action)
    for player, count in seen.items():  # each player's agent saw exactly its own turns
        assert inner(agent.agents[player]).clock.steps == count
    env.close()


def test_checkpoint_holds_every_players_agent_and_round_trips():
    _, env, agent = build(*TICTACTOE, "agent.dqn.replay_start_size=20")
    state = env.reset(seed=0)
    for _ in range(300):  # long enough for both players to update their networks
        state = env.step(agent.act(state))
    saved = agent.state_dict()
    assert set(saved) == {"player_1", "player_2"} and "q" in saved["player_1"]
    assert set(agent.replay_state_dict()) == {"player_1", "player_2"}
    _, _, fresh = build(*TICTACTOE, "agent.dqn.replay_start_size=20")
    fresh.load_state_dict(saved)
    for player in saved:
        trained, loaded = inner(agent.agents[player]).q.model, inner(fresh.agents[player]).q.model
        for a, b in zip(trained.parameters(), loaded.parameters(), strict=True):
            assert torch.equal(a, b)
    test_state = env.reset(seed=1)
    assert int(agent.test_agent().act(test_state)) == int(fresh.test_agent().act(test_state))
    with pytest.raises(KeyError, match="player_2"):
        fresh.load_state_dict({"player_1": saved["player_1"]})
    env.close()


def test_shared_parameters_and_a_random_opponent():
    _, env, shared = build(*TICTACTOE, "agent.shared=true")
    first, second = (inner(shared.agents[p]) for p in ("player_1", "player_2"))
    assert first.q is second.q, "one network for both players"
    assert first.replay is not second.replay, "each player keeps its own transitions"
    _, env, against = build(*TICTACTOE, "agent.players={player_2:random}")
    assert isinstance(inner(against.agents["player_2"]), RandomAgent)
    assert set(against.replay_state_dict()) == {"player_1"}
    env.close()


def test_test_matches_put_each_trained_seat_against_random_moves():
    _, _, agent = build(*TICTACTOE, "agent.test_against=random")
    assert [match.seat for match in agent.test_matches()] == ["player_1", "player_2"]
    _, _, one_seat = build(*TICTACTOE, "agent.test_against=random", "agent.test_seat=player_2")
    [match] = one_seat.test_matches()
    assert match.seat == "player_2" and isinstance(match.agent.agents["player_1"], RandomTestAgent)
    _, _, self_play = build(*TICTACTOE, "agent.test_against=null")
    assert [match.seat for match in self_play.test_matches()] == [None]


def test_scalar_backends_get_each_players_return_and_each_players_losses():
    recorder = recording_logger()
    group = LoggerGroup([recorder])
    group.add_episode(10, 1, 1.0, 9, 0.1, agent_returns={"player_1": 1.0, "player_2": -1.0})
    ScopedLogger(group, "player_2").add_scalar("loss/q", 0.5)
    assert recorder.names == ["train/return", "train/episode_length", "train/return/player_1",
                              "train/return/player_2", "loss/q/player_2"]


# -- bad input: one line, exit 2, nothing written -------------------------------------------------------
@pytest.mark.parametrize(("args", "words"), [
    (["agent=dqn", "env=pettingzoo/tictactoe"], ["multi-agent", "agent=independent agent.base=dqn"]),
    (["agent=independent", "env=classic/cartpole"], ["agent=independent", "multi-agent", "env=classic/cartpole"]),
    ([*TICTACTOE, "agent.base=dqnn"], ["agent.base", "did you mean 'dqn'"]),
    ([*TICTACTOE, "agent.base=independent"], ["agent.base=independent", "multi-agent"]),
    ([*TICTACTOE, "agent.dqn.lrr=0.1"], ["agent.dqn.lrr", "did you mean 'agent.dqn.lr'"]),
    ([*TICTACTOE, "agent.dqn.lr=-1"], ["agent.dqn.lr=-1", "must be positive"]),
    ([*TICTACTOE, "agent.players={player_3:random}"], ["agent.players=player_3", "player_1, player_2"]),
    ([*TICTACTOE, "agent.players={player_2:dqnn}"], ["agent.players", "'dqnn'"]),
    ([*TICTACTOE, "agent.test_against=minimax"], ["agent.test_against=minimax", "random"]),
    ([*TICTACTOE, "agent.test_against=null", "agent.test_seat=player_1"], ["agent.test_seat", "test_against"]),
    ([*TICTACTOE, "agent.test_against=random", "agent.test_seat=player_9"], ["agent.test_seat=player_9"]),
    ([*TICTACTOE, "agent.base=random", "agent.shared=true"], ["agent.shared=true", "dqn"]),
    ([*TICTACTOE, "hardware.n_envs=4"], ["hardware.n_envs=4", "allowed: 1"]),
])
def test_bad_multiagent_config_is_one_line(run_cli, workdir, tmp_path, args, words):
    assert_run_refused(run_cli, args, words, workdir, tmp_path / "runs")


# -- real runs ------------------------------------------------------------------------------------------
def test_two_thousand_steps_of_independent_dqn_on_pong_log_each_players_returns(run_cli, workdir):
    result = run_cli("run", "agent=independent", "env=pettingzoo/pong", "steps=2000", "env.max_episode_steps=400",
                     "agent.dqn.replay_start_size=200", "agent.dqn.replay_buffer_size=5000", "test_episodes=1",
                     "eval_every=0", "quiet=true", cwd=workdir, timeout=600)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(workdir / "runs")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 2000 and summary["episodes"] == 4
    rows = read_rows(run_dir / "episodes.csv")
    assert list(rows[0]) == ["step", "episode", "return", "length", "wall_seconds", "return/first_0",
                             "return/second_0"]
    assert [int(r["length"]) for r in rows] == [400] * 4, "the fifth game is cut short by the budget: no row"
    for row in rows:  # the first player's return is the row's return; Pong is zero-sum
        assert row["return"] == row["return/first_0"]
        assert float(row["return/first_0"]) == -float(row["return/second_0"])
    assert set(summary["test_return_by_agent"]) == {"first_0", "second_0"}
    saved = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert set(saved["agent"]) == {"first_0", "second_0"}, "a checkpoint per player"
    print(f"pong: {summary['steps_per_second']} steps/s")


def test_tictactoe_run_and_rlconf_eval_report_every_player(run_cli, workdir):
    result = run_cli("run", *TICTACTOE, "steps=1500", "test_episodes=40", "eval_every=500", "eval_episodes=4",
                     "quiet=true", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(workdir / "runs")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["test_episodes"] == 40 and 0 <= summary["test_win_or_draw"] <= 1
    assert set(summary["test_win_or_draw_by_agent"]) == {"player_1", "player_2"}
    scalars = {r["name"] for r in read_rows(run_dir / "scalars.csv")}
    assert {"eval/return_mean/player_1", "eval/return_mean/player_2", "eval/win_or_draw"} <= scalars
    assert [int(r["step"]) for r in read_rows(run_dir / "evaluations.csv")] == [500, 1000, 1500, 1500]
    evaluated = run_cli("eval", str(run_dir), cwd=workdir)
    assert evaluated.returncode == 0, evaluated.stderr
    again = json.loads((run_dir / "eval.json").read_text())
    assert again["mean"] == summary["test_return_mean"] and again["episodes"] == 40
    assert again["test_win_or_draw"] == summary["test_win_or_draw"], "eval replays the run's final test"


def test_a_killed_multiagent_run_resumes_without_losing_an_episode(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    args = [*TICTACTOE, "steps=12000", "checkpoint_every=1000", "test_episodes=10", "eval_every=0", "quiet=true",
            f"logdir={logdir}"]
    process = subprocess.Popen([sys.executable, "-m", "rlconf", "run", *args], cwd=workdir, env=cli_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    def checkpoint_at_2000() -> tuple[Path, dict] | None:
        checkpoints = list(logdir.glob("*/checkpoint.pt"))
        try:
            saved = torch.load(checkpoints[0], weights_only=True) if checkpoints else {}
        except (OSError, EOFError, RuntimeError):
            saved = {}
        return (checkpoints[0], saved) if saved.get("steps", 0) >= 2000 else None

    # However long a loaded machine takes to get there: the timeout is only a safety net.
    checkpoint, saved = wait_while_running(process, checkpoint_at_2000, "a checkpoint at step 2,000", 900)
    process.kill()  # kill -9
    process.communicate(timeout=60)
    run_dir = checkpoint.parent
    assert set(saved["agent"]) == {"player_1", "player_2"}
    before = read_rows(run_dir / "episodes.csv")

    resumed = run_cli("run", f"resume={run_dir}", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 12000 and summary["resumes"] == 1
    rows = read_rows(run_dir / "episodes.csv")
    assert [int(r["episode"]) for r in rows] == list(range(1, len(rows) + 1)), "episodes lost or repeated"
    assert len(rows) == summary["episodes"]
    assert rows[: saved["episodes"]] == before[: saved["episodes"]]
    for row in rows:  # tic-tac-toe is zero-sum: +1/-1 or a draw
        assert float(row["return"]) == float(row["return/player_1"]) in (-1.0, 0.0, 1.0)
        assert float(row["return/player_1"]) + float(row["return/player_2"]) == 0


# -- learning: the target -----------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("seed", [0])  # seed 1 passed too; one seed keeps CI's minutes for other agents
def test_independent_dqn_wins_or_draws_tictactoe_against_random(run_cli, workdir, seed):
    """Exactly what a user types, with the family's preset: >= 80% of 200 test games not lost, both seats."""
    started = time.perf_counter()
    result = run_cli("run", "agent=independent", "agent.base=dqn", "env=pettingzoo/tictactoe", f"seed={seed}",
                     "quiet=true", cwd=workdir, timeout=900)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(workdir / "runs") / "summary.json").read_text())
    print(f"seed {seed}: win-or-draw {summary['test_win_or_draw']:.3f} {summary['test_win_or_draw_by_agent']}, "
          f"{summary['steps']} steps, {time.perf_counter() - started:.0f} s")
    assert summary["test_episodes"] == 200
    assert summary["test_win_or_draw"] >= 0.8, summary
