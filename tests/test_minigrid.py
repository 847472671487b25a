"""MiniGrid's Dict observation end to end, as a new user meets it: ``rlconf run agent=X env=minigrid/doorkey_5x5``
with PPO, DQN, R2D1 and a recurrent PPO trains on the view and the direction, survives kill -9 and resumes with
no episode lost, exports, and ``rlconf.load(RUN).act`` on MiniGrid's own observation chooses what the run's
tests play."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import run_main
from test_resume import killed_after_checkpoint, read_rows

import rlconf
from rlconf.core.layout import layout_of
from rlconf.experiments.playback.play import load_run

minigrid = pytest.importorskip("minigrid")

# Each agent on the family's preset, shrunk to seconds: few copies, short rollouts, an early replay.
AGENTS = {
    "ppo": ["agent=ppo", "hardware.n_envs=4", "agent.n_steps=32", "agent.batch_size=64"],
    "ppo-lstm": ["agent=ppo", "approximation.recurrent=lstm", "hardware.n_envs=4", "agent.n_steps=32",
                 "agent.batch_size=64"],
    "dqn": ["agent=dqn", "hardware.n_envs=4", "agent.replay_start_size=200", "agent.batch_size=16"],
    "r2d1": ["agent=r2d1", "hardware.n_envs=4", "agent.replay_start_size=200", "agent.batch_size=4",
             "agent.sequence_length=8", "agent.burn_in=4", "agent.period=4"],
}
STEPS, CHECKPOINT_EVERY = 1600, 400


@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_minigrid_run_resumes_after_kill_9_exports_and_acts_as_its_tests_play(agent, run_cli, workdir, tmp_path,
                                                                                capsys):
    logdir = tmp_path / "runs"
    args = [*AGENTS[agent], "env=minigrid/doorkey_5x5", f"steps={STEPS}", f"checkpoint_every={CHECKPOINT_EVERY}",
            "eval_every=0", "test_episodes=2", "quiet=true", f"logdir={logdir}"]
    run_dir, saved, before = killed_after_checkpoint(args, workdir, logdir, CHECKPOINT_EVERY)

    resumed = run_cli("run", f"resume={run_dir}", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] >= STEPS and summary["resumes"] == 1
    rows = read_rows(run_dir / "episodes.csv")
    assert [int(r["episode"]) for r in rows] == list(range(1, len(rows) + 1)), "episodes lost or repeated"
    assert len(rows) == summary["episodes"] and rows[: saved["episodes"]] == before[: saved["episodes"]]

    exported = run_main(["export", str(run_dir), "--format", "onnx"], capsys)
    assert exported.returncode == 0, exported.stderr
    description = json.loads((run_dir / "policy.onnx.json").read_text())
    assert {"image", "direction"} <= {entry["name"] for entry in description["inputs"]}

    _acts_as_its_tests_play(run_dir)


def _acts_as_its_tests_play(run_dir) -> None:
    """``rlconf.load(RUN).act`` on observations straight from gymnasium's MiniGrid (mission and all) chooses the
    actions the run's test agent chooses on the rows rlconf's own copies of the task hand it."""
    policy = rlconf.load(run_dir)
    playback = load_run(run_dir, "cpu", [])
    env = playback.make_env(1)
    try:
        agent = playback.agent(env).test_agent()
        layout = layout_of(env.observation_space)
        raw = gym.make("MiniGrid-DoorKey-5x5-v0")
        observation, _ = raw.reset(seed=7)
        state = env.reset(seed=7)
        for _ in range(12):
            with torch.inference_mode():
                played = agent.act(state).item()
            rows = layout.unpack(state.observation.numpy())
            assert np.array_equal(rows["image"][0], observation["image"]), "rlconf's copy sees what gymnasium's does"
            assert policy.act(observation) == played
            observation, _, terminated, truncated, _ = raw.step(played)
            state = env.step(torch.tensor([played]))
            if terminated or truncated:
                break
    finally:
        env.close()
