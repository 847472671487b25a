"""Every value-based agent trains on real Atari games through the platform (atari body, Nature CNN)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from conftest import build, drive, only_run_dir, parameters
from omegaconf import OmegaConf

from rlconf.config import compose

pytest.importorskip("ale_py")


@pytest.mark.parametrize("game", ["breakout", "pong"])
@pytest.mark.parametrize("agent", ["dqn", "ddqn", "c51", "rainbow", "vqn", "vsarsa"])
def test_agent_runs_1000_steps_on_atari(agent, game):
    """The agent's Atari preset acts and updates on the real ALE: 700 steps past a 300-step warm-up (about 175
    updates of the DQN family's network)."""
    replay = [] if agent in ("vqn", "vsarsa") else ["agent.replay_start_size=300", "agent.replay_buffer_size=5000"]
    settings, env, trained = build(f"agent={agent}", f"env=atari/{game}", "hardware.n_envs=2", *replay)
    before = parameters(trained)
    state = drive(env, trained, 1_000)
    assert env.steps >= 1_000
    assert state["observation"].shape == (2, 1, 84, 84) and state["observation"].dtype == torch.uint8
    assert not torch.equal(before, parameters(trained)), f"{agent} never updated on {game}"
    actions = trained.test_agent().act(env.reset(seed=1))
    assert actions.shape == (2,) and int(actions.max()) < env.action_space.n
    env.close()


def test_atari100k_der_trains_on_a_game_and_writes_its_final_test(run_cli, workdir, tmp_path):
    """experiment=atari100k_der with a game trains Rainbow with DER's settings end to end (its 1,600-step warm-up
    shortened to 100 so that 200 of the 300 steps update) and writes the final test to summary.json."""
    logdir = tmp_path / "runs"
    result = run_cli("run", "experiment=atari100k_der", "env=atari/pong", "steps=300", "agent.replay_start_size=100",
                     "test_episodes=2", "hardware.eval_envs=2", "eval_every=0", "quiet=true",
                     "env.kwargs.test_frames_without_reward=400", f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run = only_run_dir(logdir)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 300 and summary["test_episodes"] == 2
    assert math.isfinite(summary["test_return_mean"])
    config = OmegaConf.load(run / "config.yaml")
    assert (config.agent.name, config.env.id, config.agent.n_steps) == ("rainbow", "ALE/Pong-v5", 20)
    assert list(config.approximation.convs) == [[32, 5, 5], [64, 5, 5]]
    checkpoint = torch.load(run / "checkpoint.pt", weights_only=False)
    assert checkpoint["agent"]["q"]["updates"] == 201  # one update a step from step 100 (the warm-up) to 300


def test_atari100k_der_carries_the_papers_settings():
    """The composed experiment holds DER's hyper-parameters (van Hasselt et al. 2019) and Atari 100k's protocol:
    a check of the config file, beside the run above."""
    cfg = compose(["experiment=atari100k_der", "env=atari/breakout"], [])
    agent, net, kwargs = cfg.agent, cfg.approximation, cfg.env.kwargs
    assert (cfg.steps, cfg.test_episodes, cfg.hardware.n_envs) == (100_000, 100, 1)
    assert (agent.lr, agent.adam_eps, agent.clip_grad, agent.batch_size, agent.discount_factor) == (
        1e-4, 1.5e-4, 10.0, 32, 0.99)
    assert (agent.n_steps, agent.update_frequency, agent.gradient_steps, agent.replay_start_size) == (20, 1, 1, 1600)
    assert (agent.target_update_frequency, agent.replay_buffer_size) == (2000, 100_000)
    assert (agent.replay, agent.alpha, agent.beta, agent.double_q) == ("prioritized", 0.5, 0.4, True)
    assert (agent.atoms, agent.v_min, agent.v_max) == (51, -10.0, 10.0)
    assert (agent.epsilon, agent.epsilon_final) == (0.01, 0.01)  # Dopamine's constant epsilon
    assert agent.eval_epsilon == 0.001
    assert (net.hidden, net.dueling, net.noisy, net.noisy_sigma) == (256, True, True, 0.1)
    assert dict(cfg.body) == {"name": "atari", "frame_stack": 4, "clip_rewards": True, "episodic_lives": True}
    assert (kwargs.repeat_action_probability, kwargs.full_action_space, kwargs.frame_skip) == (0, False, 4)
    assert kwargs.max_num_frames_per_episode == 108_000 and not kwargs.test_fire_after_life_loss
