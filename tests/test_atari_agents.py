"""Every value-based agent trains on real Atari games through the platform (atari body, Nature CNN)."""

from __future__ import annotations

import pytest
import torch
from conftest import build, drive, parameters

pytest.importorskip("ale_py")




@pytest.mark.parametrize("game", ["breakout", "pong"])
@pytest.mark.parametrize("agent", ["dqn", "ddqn", "c51", "rainbow", "vqn", "vsarsa"])
def test_agent_runs_2000_steps_on_atari(agent, game):
    replay = [] if agent in ("vqn", "vsarsa") else ["agent.replay_start_size=300", "agent.replay_buffer_size=5000"]
    settings, env, trained = build(f"agent={agent}", f"env=atari/{game}", "hardware.n_envs=2", *replay)
    before = parameters(trained)
    state = drive(env, trained, 2_000)
    assert env.steps >= 2_000
    assert state["observation"].shape == (2, 1, 84, 84) and state["observation"].dtype == torch.uint8
    assert not torch.equal(before, parameters(trained)), f"{agent} never updated on {game}"
    actions = trained.test_agent().act(env.reset(seed=1))
    assert actions.shape == (2,) and int(actions.max()) < env.action_space.n
    env.close()
