"""The Python API as a notebook uses it: rlconf.compose, rlconf.train, rlconf.load(...).act on raw observations."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import rlconf
from rlconf.errors import ConfigError
from rlconf.experiments.playback.play import PlaybackError


def raw_episode(policy, env_id: str, seed: int) -> float:
    """One episode of the plain gymnasium environment, every action from ``policy.act``."""
    env = gym.make(env_id)
    observation, _ = env.reset(seed=seed)
    policy.reset()
    total, done = 0.0, False
    while not done:
        observation, reward, terminated, truncated, _ = env.step(policy.act(observation))
        total += float(reward)
        done = terminated or truncated
    env.close()
    return total


def eval_return(run_cli, workdir, run_dir, seed: int, checkpoint: str) -> float:
    """``rlconf eval`` of one episode with ``seed``: what the run's own test environment returns."""
    result = run_cli("eval", str(run_dir), "--checkpoint", checkpoint, "--episodes", "1", "--seed", str(seed),
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    name = "eval.json" if checkpoint == "last" else f"eval-{checkpoint}.json"
    return json.loads((run_dir / name).read_text())["mean"]


@pytest.mark.parametrize(("overrides", "env_id", "checkpoint"), [
    (["agent=dqn", "env=classic/cartpole", "steps=4000", "eval_every=2000"], "CartPole-v1", "best"),
    (["agent=sac", "env=classic/pendulum", "steps=600", "agent.replay_start_size=200"], "Pendulum-v1", "last"),
])
def test_train_then_act_on_raw_observations_as_the_runs_tests_do(run_cli, workdir, tmp_path, monkeypatch,
                                                                  overrides, env_id, checkpoint):
    monkeypatch.chdir(workdir)
    cfg = rlconf.compose(*overrides, "test_episodes=2", "eval_episodes=2", "quiet=true", f"logdir={tmp_path}")
    run_dir, summary = rlconf.train(cfg)
    assert (run_dir / "summary.json").is_file() and summary["steps"] >= cfg.steps
    policy = rlconf.load(run_dir, checkpoint=checkpoint)
    action = policy.act(gym.make(env_id).reset(seed=0)[0])
    if env_id == "Pendulum-v1":  # a Box action within its bounds
        assert isinstance(action, np.ndarray) and action.shape == (1,) and -2.0 <= action[0] <= 2.0
    else:
        assert isinstance(action, int) and action in (0, 1)
    # The same episode, seed for seed, as the run's own (vectorised, rlconf-wrapped) test environment plays it.
    for seed in (7, 8):
        assert raw_episode(policy, env_id, seed) == pytest.approx(eval_return(run_cli, workdir, run_dir, seed,
                                                                              checkpoint), abs=1e-3)
    # The overrides were recorded: the command line resumes an API run.
    result = run_cli("run", f"resume={run_dir}", f"steps={cfg.steps + 200}", "quiet=true", cwd=workdir)
    assert result.returncode == 0, result.stderr


def test_bad_input_raises_the_line_the_command_prints(tmp_path):
    with pytest.raises(ConfigError, match="unknown key 'agent.nosuch'"):
        rlconf.compose("agent=dqn", "env=classic/cartpole", "agent.nosuch=1")
    with pytest.raises(PlaybackError, match="no such run directory"):
        rlconf.load(tmp_path / "nowhere")
    policy_dir = tmp_path / "none"
    with pytest.raises(PlaybackError):
        rlconf.load(policy_dir, checkpoint="best")


def test_compose_given_a_list_says_how_to_pass_it_in_one_line():
    with pytest.raises(ConfigError, match=r"each override is a string.*rlconf.compose\(\*overrides\)") as caught:
        rlconf.compose(["agent=dqn", "env=classic/cartpole"])
    assert "\n" not in str(caught.value)
    cfg = rlconf.compose(*["agent=dqn", "env=classic/cartpole"])
    assert cfg.agent.name == "dqn"


def test_a_run_of_another_simulator_id_is_named_after_it(tmp_path):
    """env=classic/cartpole env.id=Acrobot-v1 trains Acrobot: its directory and summary say so, not cartpole
    (rlconf.config.named_for_its_id); a run keeps its env's name where the id is the env's own."""
    run_dir, summary = rlconf.train(rlconf.compose("agent=dqn", "env=classic/cartpole", "env.id=Acrobot-v1",
                                                   "steps=200", "agent.replay_start_size=100", "test_episodes=1",
                                                   "eval_every=0", "quiet=true", f"logdir={tmp_path}"))
    assert run_dir.name.startswith("dqn_classic-Acrobot-v1_")
    assert summary["env"] == "classic/Acrobot-v1" and summary["env_id"] == "Acrobot-v1"
    assert json.loads((run_dir / "summary.json").read_text())["env"] == "classic/Acrobot-v1"
