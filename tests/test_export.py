"""rlconf export: the written TorchScript module and ONNX graph choose the agent's own actions.

Each case trains a real (short) run, exports it in both formats, then plays 1,000 steps of the run's own test
environment with the agent: every observation is also given to the TorchScript module (torch.jit.load) and to
the ONNX graph (onnxruntime), fed as the export says (Atari: the caller stacks the frames), and the three must
choose the same actions (continuous ones within float rounding).
"""

from __future__ import annotations

import json

import numpy as np
import onnxruntime
import pytest
import torch
from conftest import one_error_line, only_run_dir

import rlconf
from rlconf.experiments.playback.export import export_run
from rlconf.experiments.playback.play import PlaybackError, load_run

STEPS = 1000

CASES = {
    "dqn-cartpole": ["agent=dqn", "env=classic/cartpole", "steps=1500"],
    # The greedy policy: the preset's evaluation epsilon would make the agent's own actions random at times.
    "dqn-atari": ["agent=dqn", "env=atari/pong", "steps=400", "agent.eval_epsilon=0"],
    "ppo-cartpole-masked": ["agent=ppo", "env=classic/cartpole", "body=mask_velocity", "steps=1024",
                            "hardware.n_envs=4", "agent.n_steps=128"],
    # A Gaussian policy's mean behind the body's observation normaliser, clipped to the action space.
    "ppo-pendulum-normalized": ["agent=ppo", "env=classic/pendulum", "body.normalize_observations=true",
                                "steps=1024", "hardware.n_envs=4", "agent.n_steps=128"],
    "sac-pendulum": ["agent=sac", "env=classic/pendulum", "steps=600", "agent.replay_start_size=200"],
    # A deterministic actor (its Box scaling inside the network); the caller appends the time feature.
    "td3-pendulum-time-feature": ["agent=td3", "env=classic/pendulum", "body=time_feature", "steps=600",
                                  "agent.replay_start_size=200"],
    # Distributional, dueling and noisy: the greedy action is the argmax of the distributions' means.
    "rainbow-cartpole": ["agent=rainbow", "env=classic/cartpole", "steps=600", "agent.replay_start_size=200"],
}


def train(overrides: list[str], logdir) -> object:
    run_dir, _ = rlconf.train(rlconf.compose(*overrides, "test_episodes=1", "eval_every=0", "quiet=true",
                                             f"logdir={logdir}"))
    return run_dir


def played(run_dir, steps: int) -> tuple[list[np.ndarray], list[bool], np.ndarray]:
    """``steps`` steps of the run's test environment played by its test agent: the observations it saw, whether
    each ended an episode, and its actions."""
    playback = load_run(run_dir, "cpu")
    env = playback.make_env(1)
    try:
        agent = playback.agent(env).test_agent()
        state = env.reset(seed=1)
        observations, dones, actions = [], [], []
        with torch.inference_mode():
            for _ in range(steps):
                action = agent.act(state)
                observations.append(state.observation[0].numpy().copy())
                dones.append(bool(state.done[0]))
                actions.append(action[0].numpy().copy())
                state = env.step(action)
        space = env.action_space
    finally:
        env.close()
    actions = np.stack(actions)
    if hasattr(space, "low"):  # what the environment executes: the Box clips
        actions = np.clip(actions, space.low, space.high)
    return observations, dones, actions


def stacked(frames: list[np.ndarray], dones: list[bool], size: int) -> np.ndarray:
    """The frame stacks the export's feeding line asks for: the last ``size`` frames on the channel axis,
    oldest first, an episode's first frame repeated (an episode begins after a state that ended one)."""
    stacks, stack = [], None
    for t, frame in enumerate(frames):
        if stack is None or dones[t - 1]:
            stack = np.concatenate([frame] * size)
        else:
            stack = np.concatenate([stack[len(frame):], frame])
        stacks.append(stack)
    return np.stack(stacks)


def with_time_feature(observations: list[np.ndarray], dones: list[bool], scale: float) -> np.ndarray:
    """The observations with the time feature the export's feeding line asks for: t * scale, t the steps since
    the episode began."""
    t, rows = 0, []
    for i, observation in enumerate(observations):
        t = 0 if i == 0 or dones[i - 1] else t + 1
        rows.append(np.append(observation, np.float32(t * scale)))
    return np.stack(rows).astype(np.float32)


@pytest.fixture(scope="module", params=list(CASES))
def exported(request, tmp_path_factory):
    logdir = tmp_path_factory.mktemp(request.param)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(logdir)
        run_dir = train(CASES[request.param], logdir / "runs")
        files = {fmt: export_run(run_dir, fmt)["file"] for fmt in ("torchscript", "onnx")}
    return request.param, run_dir, files


def test_exported_files_choose_the_agents_actions(exported):
    case, run_dir, files = exported
    observations, dones, actions = played(run_dir, STEPS)
    description = json.loads((run_dir / "policy.onnx.json").read_text())
    if case == "dqn-atari":
        assert description["feeding"] and "4 frames stacked" in description["feeding"][0]
        inputs = stacked(observations, dones, 4)
        assert inputs.dtype == np.uint8 and inputs.shape == (STEPS, 4, 84, 84) and any(dones)
    elif case == "td3-pendulum-time-feature":
        assert description["feeding"] and "t * 0.001" in description["feeding"][0]
        inputs = with_time_feature(observations, dones, 0.001)
    else:
        assert description["feeding"] == []
        inputs = np.stack(observations)
    assert description["input"]["shape"] == ["batch", *inputs.shape[1:]]
    assert description["input"]["dtype"] == str(inputs.dtype)

    script = torch.jit.load(files["torchscript"])
    by_torchscript = script(torch.as_tensor(inputs)).numpy()  # as a user calls it: no torch.no_grad needed
    session = onnxruntime.InferenceSession(files["onnx"], providers=["CPUExecutionProvider"])
    by_onnx = session.run(None, {"observation": inputs})[0]

    assert by_torchscript.shape == by_onnx.shape == actions.shape
    if actions.dtype.kind == "f":
        np.testing.assert_allclose(by_torchscript, actions, atol=1e-5, rtol=0)
        np.testing.assert_allclose(by_onnx, actions, atol=1e-5, rtol=0)
    else:
        assert (by_torchscript == actions).all() and (by_onnx == actions).all()
        assert len(np.unique(actions)) > 1 or case == "dqn-atari"  # a policy that does choose, not a constant


def test_export_on_the_command_line_names_the_file_and_how_to_feed_it(run_cli, workdir, tmp_path):
    result = run_cli("run", *CASES["dqn-cartpole"], "test_episodes=1", "eval_every=0", "quiet=true",
                     f"logdir={tmp_path / 'runs'}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    out = tmp_path / "served" / "cartpole.onnx"
    out.parent.mkdir()
    result = run_cli("export", str(run_dir), "--format", "onnx", "--out", str(out), cwd=workdir)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    line = result.stdout.strip()
    assert line.endswith(f"-> {out}") and "observation float32 [batch, 4] -> action int64 [batch]" in line
    assert sorted(p.name for p in out.parent.iterdir()) == ["cartpole.onnx", "cartpole.onnx.json"]
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert session.run(None, {"observation": np.zeros((3, 4), np.float32)})[0].shape == (3,)


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("cartpole")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(logdir)
        return train(CASES["dqn-cartpole"], logdir / "runs")


@pytest.mark.parametrize(("options", "words"), [
    (["--format", "keras"], ["--format keras", "torchscript, onnx"]),
    ([], ["--format is required", "torchscript or onnx"]),
    (["--format", "onnx", "--out", "/no/such/folder/p.onnx"], ["--out", "no folder /no/such/folder"]),
    (["--format", "onnx", "--checkpoint", "best"], ["--checkpoint best"]),
    (["--format", "onnx", "--fast"], ["unknown option '--fast'"]),
])
def test_bad_export_input_is_one_line_and_writes_nothing(run_cli, workdir, cartpole_run, options, words):
    before = sorted(p.name for p in cartpole_run.iterdir())
    line = one_error_line(run_cli("export", str(cartpole_run), *options, cwd=workdir))
    for word in words:
        assert word in line, (word, line)
    assert sorted(p.name for p in cartpole_run.iterdir()) == before


def test_a_recurrent_policy_exports_with_its_state_as_inputs_and_outputs(tmp_path, monkeypatch):
    """Once refused; now its graph takes and returns the recurrent state (tests/test_export_recurrent.py plays
    such graphs against their agents)."""
    monkeypatch.chdir(tmp_path)
    run_dir = train(["agent=ppo", "env=classic/cartpole", "approximation.recurrent=lstm", "steps=256",
                     "hardware.n_envs=2", "agent.n_steps=64"], tmp_path / "runs")
    description = export_run(run_dir, "torchscript")
    assert [part["name"] for part in description["state"]["inputs"]] == ["state_h", "state_c"]
    assert (run_dir / "policy.pt").exists() and (run_dir / "policy.pt.json").exists()


def test_a_tabular_agent_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = train(["agent=q_learning", "env=tabular/frozen_lake", "steps=200"], tmp_path / "runs")
    with pytest.raises(PlaybackError, match="agent=q_learning cannot be exported: its test agent acts on more"):
        export_run(run_dir, "onnx")
