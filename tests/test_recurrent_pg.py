"""Recurrent policy gradients: PPO and A2C with an LSTM or GRU trunk (``approximation.recurrent``).

What acting computed one step at a time, an update recomputes as one unroll over each environment's chunk of
the rollout from the state stored at its start; the state returns to zero where an episode begins; PPO's
minibatches are whole chunks; the agents learn on Atari and CartPole, and memory solves CartPole without its
velocities where a feed-forward PPO cannot.
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import build, drive, only_run_dir, parameters, states

MASKED_CARTPOLE = ["env=classic/cartpole", "body=mask_velocity", "hardware.device=cpu"]


def _acting(agent, env, acts: int, seed: int = 0):
    """``agent`` acting ``acts`` times from a reset (no more: the buffer is full but not yet trained on)."""
    state = env.reset(seed=seed)
    for _ in range(acts):
        state = env.step(agent.act(state))
    return state


@pytest.mark.parametrize("core", ["lstm", "gru"])
@pytest.mark.parametrize("shared", ["true", "false"])
def test_an_unroll_from_the_stored_start_state_reproduces_what_acting_computed(core, shared):
    n_steps = 40  # random CartPole episodes last ~20 steps: every chunk holds episode ends and starts
    _, env, agent = build("agent=ppo", *MASKED_CARTPOLE, f"approximation.recurrent={core}",
                          f"approximation.shared={shared}", "hardware.n_envs=3", f"agent.n_steps={n_steps}",
                          "agent.sequence_length=null")
    body = agent
    agent = agent.agent  # the PPO agent inside the body
    # Two rollouts: the second chunk starts from the states the first one carried over (not from zero).
    _acting(body, env, 2 * n_steps)
    buffer = agent.buffer
    assert buffer.t == n_steps and buffer.resets[1:n_steps].any() and buffer.start.abs().sum() > 0
    features, after = agent.features.no_grad(buffer.observation[:-1], buffer.start, buffer.resets[:-1])
    log_prob = agent.policy.no_grad(features).log_prob(buffer.action)
    # The log-probabilities acting stored for every row (reset steps included): the same numbers.
    torch.testing.assert_close(log_prob, buffer.log_prob, rtol=0, atol=1e-6)
    # And the state after the chunk is the one the agent carries on with.
    torch.testing.assert_close(after, agent.carried.state, rtol=0, atol=1e-6)
    env.close()


def test_the_state_is_zero_where_an_episode_begins():
    _, env, body = build("agent=ppo", *MASKED_CARTPOLE, "approximation.recurrent=lstm", "hardware.n_envs=2")
    env.close()
    agent = body.agent
    observation = torch.tensor([[0.1, 0.0, 0.2, 0.0], [0.3, 0.0, -0.1, 0.0]])
    body.act(states(observation, [0.0, 0.0], [False, False]))  # the body hides the velocities (0 here)
    body.act(states(observation, [1.0, 1.0], [True, False]))  # env 0's episode ends here
    carried = agent.carried.current(states(observation, [0.0, 1.0], [False, False]))
    assert torch.equal(carried[0], torch.zeros_like(carried[0]))  # env 0 begins a new episode: no memory
    assert carried[1].abs().sum() > 0  # env 1 goes on remembering

    # In an unroll, a reset row starts from zero: its outputs and those after it are the unroll's from there.
    trunk = agent.features.model
    x = torch.randn(6, 2, 2)  # cart position and pole angle
    resets = torch.zeros(6, 2, dtype=torch.bool)
    resets[3, 0] = True
    start = torch.randn(2, trunk.state_size)
    with torch.no_grad():
        whole, _ = trunk(x, start, resets)
        fresh, _ = trunk(x[3:, :1], torch.zeros(1, trunk.state_size))
        unreset, _ = trunk(x, start)
    torch.testing.assert_close(whole[3:, 0], fresh[:, 0], rtol=0, atol=1e-6)
    torch.testing.assert_close(whole[:, 1], unreset[:, 1], rtol=0, atol=1e-6)  # env 1 never reset
    assert not torch.allclose(whole[3:, 0], unreset[3:, 0])


def test_ppo_minibatches_are_whole_environment_chunks(monkeypatch):
    n_steps, n_envs = 16, 4
    _, env, body = build("agent=ppo", *MASKED_CARTPOLE, "approximation.recurrent=lstm", f"hardware.n_envs={n_envs}",
                         f"agent.n_steps={n_steps}", f"agent.batch_size={2 * n_steps}", "agent.epochs=3",
                         "agent.sequence_length=null")
    agent = body.agent
    seen = []
    update = agent._update_sequences
    monkeypatch.setattr(agent, "_update_sequences", lambda batch: (seen.append(batch), update(batch))[1])
    state = _acting(body, env, n_steps)
    chunks = agent.buffer.observation[:-1].clone()  # [n_steps, n_envs, 2]: the rollout about to be trained on
    before = parameters(body)
    body.act(state)  # the rollout's last row: the update
    assert len(seen) == 3 * 2  # epochs x (4 environments / 2 per minibatch)
    for epoch in range(3):
        columns = []
        for batch in seen[2 * epoch : 2 * epoch + 2]:
            assert batch.observation.shape == (n_steps, 2, 2)  # masked CartPole: position and angle
            for column in batch.observation.unbind(1):  # each is one environment's whole chunk
                columns += [e for e in range(n_envs) if torch.equal(column, chunks[:, e])]
        assert sorted(columns) == list(range(n_envs))  # every environment once per epoch
    assert not torch.equal(before, parameters(body))
    env.close()


def test_ppo_minibatches_of_segments_start_from_the_state_acting_had(monkeypatch):
    """agent.sequence_length: each environment's chunk cut into segments (SB3-contrib's minibatches), each
    unrolled from the state acting had before its first row, so it reproduces what acting computed."""
    n_steps, n_envs, length = 24, 2, 6
    # A learning rate too small to move the parameters: every minibatch meets the parameters acting used.
    _, env, body = build("agent=ppo", *MASKED_CARTPOLE, "approximation.recurrent=lstm", f"hardware.n_envs={n_envs}",
                         f"agent.n_steps={n_steps}", f"agent.sequence_length={length}",
                         f"agent.batch_size={2 * length}", "agent.epochs=2", "agent.lr=1e-12")
    agent = body.agent
    seen, reproduced = [], []
    update = agent._update_sequences

    def checked(batch):  # each segment unrolled alone from its start: the log-probabilities acting stored
        features, _ = agent.features.no_grad(batch.observation, batch.start, batch.resets)
        reproduced.append(agent.policy.no_grad(features).log_prob(batch.action) - batch.log_prob)
        seen.append(batch)
        return update(batch)

    monkeypatch.setattr(agent, "_update_sequences", checked)
    state = _acting(body, env, n_steps)
    chunks = agent.buffer.observation[:-1].clone()  # [n_steps, n_envs, 2]
    assert agent.buffer.resets[1:n_steps].any()  # random CartPole episodes end inside the chunks
    body.act(state)  # the rollout's last row: the update
    segments = [chunks[first:first + length, e] for first in range(0, n_steps, length) for e in range(n_envs)]
    per_epoch = len(segments) // 2  # minibatches of batch_size // length = 2 segments
    assert len(seen) == 2 * per_epoch
    for epoch in range(2):
        found = []
        for batch in seen[epoch * per_epoch:(epoch + 1) * per_epoch]:
            assert batch.observation.shape == (length, 2, 2) and batch.start.shape[0] == 2
            for column in batch.observation.unbind(1):
                found += [i for i, segment in enumerate(segments) if torch.equal(column, segment)]
        assert sorted(found) == list(range(len(segments)))  # every segment once per epoch
    differences = torch.cat([d.flatten() for d in reproduced])
    torch.testing.assert_close(differences, torch.zeros_like(differences), rtol=0, atol=1e-5)
    # Only the first rollout's first segments start from zero: the others from the state carried to their cut.
    starts = torch.cat([batch.start for batch in seen[:per_epoch]])
    assert int((starts.abs().sum(dim=1) > 0).sum()) == len(segments) - n_envs
    env.close()


def test_checkpoints_hold_the_carried_state_and_the_chunks_start():
    _, env, body = build("agent=a2c", *MASKED_CARTPOLE, "approximation.recurrent=gru", "hardware.n_envs=2",
                         "agent.n_steps=8")
    _acting(body, env, 11)
    env.close()
    state = body.agent.state_dict()
    assert torch.equal(state["carried"]["state"], body.agent.carried.state)
    assert torch.equal(state["buffer"]["start"], body.agent.buffer.start)
    _, env, other = build("agent=a2c", *MASKED_CARTPOLE, "approximation.recurrent=gru", "hardware.n_envs=2",
                          "agent.n_steps=8", "seed=1")
    env.close()
    other.agent.load_state_dict(state)
    assert torch.equal(other.agent.buffer.start, body.agent.buffer.start)
    assert bool(other.agent.carried.ended.all())  # a resumed run restarts its environments: no memory


def test_recurrent_a2c_trains_on_cartpole():
    settings, env, body = build("agent=a2c", "env=classic/cartpole", "approximation.recurrent=gru",
                                "hardware.device=cpu")
    before = parameters(body)
    drive(env, body, 3_000)
    assert not torch.equal(before, parameters(body))
    test = body.test_agent()
    actions = test.act(env.reset(seed=1))
    assert actions.shape == (settings.hardware.n_envs,)
    assert test.agent.carried is not body.agent.carried and test.agent.carried.state is not None
    env.close()


def test_recurrent_ppo_runs_2000_steps_on_atari_pong_with_updates_then_tests():
    pytest.importorskip("ale_py")
    _, env, body = build("agent=ppo", "env=atari/pong", "approximation.recurrent=lstm", "hardware.n_envs=2",
                         "agent.n_steps=32", "agent.epochs=1", "hardware.device=cpu")
    before = parameters(body)
    state = drive(env, body, 2_000)
    assert env.steps >= 2_000 and state["observation"].dtype == torch.uint8
    assert not torch.equal(before, parameters(body)), "recurrent PPO never updated on Pong"
    test = body.test_agent()
    state = env.reset(seed=1)
    for _ in range(50):  # the test agent carries its own state from step to step
        actions = test.act(state)
        state = env.step(actions)
    assert actions.shape == (2,) and int(actions.max()) < env.action_space.n
    env.close()


# Masked CartPole (position and angle only): memory solves it, a feed-forward policy cannot, both at the budget
# of the task's preset (configs/preset/classic/mask_velocity/ppo.yaml; the figures measured here are on
# docs/algorithms/ppo.md).
MASKED_BUDGET = 300_000
MASKED_CARTPOLE_PPO = ("agent=ppo", "env=classic/cartpole", "body=mask_velocity")


# One seed in CI; seeds 0-3 (one in four under 475) are measured in the README's table.
@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("seed", [0])
def test_recurrent_ppo_solves_cartpole_without_velocities(run_cli, workdir, seed):
    summary = _masked_cartpole(run_cli, workdir, seed, *MASKED_CARTPOLE_PPO, "approximation.recurrent=lstm")
    assert summary["test_return_mean"] >= 475, summary


@pytest.mark.slow
@pytest.mark.long
def test_feed_forward_ppo_stays_far_below_on_cartpole_without_velocities(run_cli, workdir):
    summary = _masked_cartpole(run_cli, workdir, 0, *MASKED_CARTPOLE_PPO)
    assert summary["test_return_mean"] < 200, summary


def _masked_cartpole(run_cli, workdir, seed: int, *overrides: str) -> dict:
    result = run_cli("run", *overrides, f"seed={seed}", "quiet=true", cwd=workdir, timeout=1200)
    assert result.returncode == 0, result.stderr
    summary = json.loads((only_run_dir(workdir / "runs") / "summary.json").read_text())
    assert MASKED_BUDGET <= summary["steps"] <= MASKED_BUDGET + summary["n_envs"]
    assert summary["test_episodes"] == 100
    return summary
