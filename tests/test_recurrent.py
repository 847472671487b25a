"""Recurrent networks and the state agents carry: a sequence unrolled at once equals the same steps taken one
by one (resets included), a reset forgets everything before it, the carried state starts each episode from zero,
and body=mask_velocity hides exactly the velocities; the players of a multi-agent run each carry their own."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import build, only_run_dir, states

from rlconf.agents._recurrent import CarriedState
from rlconf.nn import model_settings
from rlconf.nn.recurrent import RecurrentCore

VECTOR = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_a_sequence_unrolled_at_once_equals_its_steps_one_by_one(kind):
    torch.manual_seed(0)
    q = model_settings({"model": "mlp", "recurrent": kind, "recurrent_hidden": 8, "dueling": True}).recurrent_q(
        VECTOR, 2)
    x, state = torch.randn(6, 4, 3), torch.randn(4, q.state_size)
    resets = torch.zeros(6, 4, dtype=torch.bool)
    resets[2, 1] = resets[4, 0] = resets[4, 3] = True  # three segments
    whole, final = q(x, state, resets)
    step_state, steps = state, []
    for t in range(6):
        out, step_state = q(x[t : t + 1], step_state, resets[t : t + 1])
        steps.append(out)
    torch.testing.assert_close(torch.cat(steps), whole)
    torch.testing.assert_close(step_state, final)


def test_a_reset_forgets_everything_before_it():
    core = RecurrentCore("lstm", 3, 5)
    x = torch.randn(4, 2, 3)
    resets = torch.zeros(4, 2, dtype=torch.bool)
    resets[2] = True
    after_history, _ = core(x, torch.randn(2, core.state_size), resets)
    fresh, _ = core(x[2:], torch.zeros(2, core.state_size))
    torch.testing.assert_close(after_history[2:], fresh)
    assert not torch.allclose(after_history[:2], core(x[:2], torch.zeros(2, core.state_size))[0])


def test_side_by_side_trunks_keep_their_states_apart():
    torch.manual_seed(0)
    trunk, width = model_settings({"model": "mlp", "recurrent": "gru", "recurrent_hidden": 4,
                                   "shared": False}).recurrent_trunk(VECTOR)
    assert width == 8 and trunk.state_size == 8
    x, state = torch.randn(3, 2, 3), torch.randn(2, 8)
    out, final = trunk(x, state)
    actor, _ = trunk.networks[0](x, state[:, :4])
    torch.testing.assert_close(out[..., :4], actor)
    critic_changed = state.clone()
    critic_changed[:, 4:] = 0
    assert torch.equal(trunk(x, critic_changed)[0][..., :4], out[..., :4])  # the critic's state is not the actor's


def test_the_carried_state_starts_every_episode_from_zero():
    carried = CarriedState(2)
    first = states(torch.zeros(3, 1), [0, 0, 0], [False, False, False])
    assert torch.equal(carried.current(first), torch.zeros(3, 2))
    assert carried.starts(first).all()
    carried.advance(torch.ones(3, 2), states(torch.zeros(3, 1), [0, 0, 0], [False, True, False]))
    nxt = states(torch.zeros(3, 1), [0, 0, 0], [False, False, False])
    assert torch.equal(carried.current(nxt), torch.tensor([[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]))
    assert carried.starts(nxt).tolist() == [False, True, False]
    resumed = CarriedState(2)
    resumed.load_state_dict(carried.state_dict())  # a resumed run restarts its environments
    assert torch.equal(resumed.current(nxt), torch.zeros(3, 2))


def test_mask_velocity_hides_cartpoles_velocities():
    settings, env, body = build("agent=ppo", "env=classic/cartpole", "body=mask_velocity", "hardware.n_envs=2")
    assert settings.body.masked == [1, 3]
    state = env.reset(seed=0)
    body.act(state)  # the agent inside was built for what the body shows it
    env.close()
    assert torch.equal(body.process_state(state).observation, state.observation[:, [0, 2]])
    first_layer = next(m for m in body.agent.policy.model.modules() if isinstance(m, torch.nn.Linear))
    assert first_layer.in_features == 2


@pytest.mark.parametrize("base", ["r2d1", "ppo"])
def test_each_player_of_a_multiagent_run_carries_its_own_memory(base, run_cli, workdir, tmp_path):
    own = {"r2d1": ["agent.r2d1.replay_start_size=200", "agent.r2d1.batch_size=4", "agent.r2d1.update_frequency=8"],
           "ppo": ["agent.ppo.n_steps=16"]}[base]
    result = run_cli("run", "agent=independent", f"agent.base={base}", "env=pettingzoo/simple_spread",
                     "approximation.recurrent=lstm", *own, "steps=900", "test_episodes=2", "eval_every=0",
                     "quiet=true", f"logdir={tmp_path}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(tmp_path)
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == 900
    players = torch.load(run_dir / "checkpoint.pt", weights_only=True)["agent"]
    assert len(players) == 3
    for state in players.values():  # a recurrent state per player, which has learned
        assert state["carried"]["state"].shape[0] == 1 and state["carried"]["state"].abs().sum() > 0
