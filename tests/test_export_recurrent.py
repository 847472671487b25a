"""rlconf export of recurrent policies (R2D1, PPO and A2C with ``approximation.recurrent``): the graph takes the
recurrent state beside the observation and returns the state after the step beside the action.

Each case trains a real (tiny) run, exports it in both formats, then plays the run's own test environment with
its test agent (which carries its state, zeroed where an episode begins) across several episodes: the
TorchScript module (torch.jit.load) and the ONNX graph (onnxruntime) are fed the same observations one step at
a time, each its own ``next_state_*`` outputs of the step before, zeros at an episode's first step, as the
export's description says, and must choose the agent's actions. R2D1 with ``agent.prev_action_reward`` is fed the
previous action and reward as well (-1 and 0 at an episode's first step).
"""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
import torch
from conftest import FAST_RUN

import rlconf
from rlconf.commands.runs import export_line
from rlconf.core.layout import ACTION_MASK, layout_of
from rlconf.experiments.playback.export import export_run
from rlconf.experiments.playback.play import load_run

STEPS = 150  # CartPole's first episodes under a barely trained policy are short: several resets
MASKED_CARTPOLE = ["env=classic/cartpole", "body=mask_velocity", "hardware.n_envs=2"]
SMALL_REPLAY = ["agent.replay_start_size=100", "agent.batch_size=4", "agent.sequence_length=8", "agent.burn_in=4",
                "agent.period=4", "agent.update_frequency=16", "agent.eval_epsilon=0"]
CASES = {  # name: (overrides, plugins)
    "r2d1-lstm": (["agent=r2d1", *MASKED_CARTPOLE, "approximation.recurrent=lstm", "steps=300", *SMALL_REPLAY], []),
    # The previous action and reward as inputs too: the graph takes them between the observation and the state.
    "r2d1-lstm-previous": (["agent=r2d1", *MASKED_CARTPOLE, "approximation.recurrent=lstm", "steps=300",
                            *SMALL_REPLAY, "agent.prev_action_reward=true"], []),
    "ppo-lstm": (["agent=ppo", *MASKED_CARTPOLE, "approximation.recurrent=lstm", "steps=256", "agent.n_steps=64"], []),
    # An actor and a critic side by side (the MLP's default): only the actor's state is in the graph.
    "a2c-gru": (["agent=a2c", *MASKED_CARTPOLE, "approximation.recurrent=gru", "steps=256"], []),
    # A Dict observation (an input per key), one trunk for both heads.
    "ppo-lstm-dict": (["agent=ppo", "env=gym", "env.id=StructuredDict-v0", "plugins=[structured_envs]",
                       "hardware.n_envs=2", "approximation.recurrent=lstm", "approximation.shared=true",
                       "steps=128", "agent.n_steps=32"], ["structured_envs"]),
    # Masked actions: the graph takes the mask before the state.
    "r2d1-gru-masked": (["agent=r2d1", "env=gym", "env.id=MaskedChoice-v0", "plugins=[action_envs]",
                         "hardware.n_envs=2", "approximation.recurrent=gru", "steps=300", *SMALL_REPLAY],
                        ["action_envs"]),
}


@pytest.fixture(scope="module", params=list(CASES))
def exported(request, tmp_path_factory):
    overrides, plugins = CASES[request.param]
    logdir = tmp_path_factory.mktemp(request.param)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(logdir)
        run_dir, _ = rlconf.train(rlconf.compose(*overrides, *FAST_RUN, f"logdir={logdir / 'runs'}"))
        descriptions = {fmt: export_run(run_dir, fmt, plugins=plugins) for fmt in ("torchscript", "onnx")}
    return request.param, run_dir, plugins, descriptions


def played(run_dir, plugins: list[str], steps: int) -> tuple[list[dict[str, np.ndarray]], list[bool], np.ndarray]:
    """``steps`` steps of the run's test environment played by its test agent: each step's graph inputs by name
    (the observation, one per key of a Dict; the action mask where there is one; the previous action and reward
    where the graph reads them), whether it ended an episode, and the agent's actions."""
    playback = load_run(run_dir, "cpu", plugins)
    env = playback.make_env(1)
    try:
        agent = playback.agent(env).test_agent()
        layout = layout_of(env.observation_space)
        state = env.reset(seed=1)
        inputs, dones, actions = [], [], []
        previous = getattr(playback.settings.agent, "prev_action_reward", False)
        with torch.inference_mode():
            for t in range(steps):
                begins = t == 0 or dones[-1]
                action = agent.act(state)
                rows = state.observation.numpy()
                feed = {"observation": rows.copy()} if layout is None else \
                    {key: np.ascontiguousarray(x) for key, x in layout.without_mask().unpack(rows).items()}
                if ACTION_MASK in state:
                    feed[ACTION_MASK] = state[ACTION_MASK].numpy().copy()
                if previous:
                    feed["previous_action"] = np.array([-1 if begins else int(actions[-1][0])], np.int64)
                    feed["previous_reward"] = np.array([0.0 if begins else float(state.reward[0])], np.float32)
                inputs.append(feed)
                dones.append(bool(state.done[0]))
                actions.append(action.numpy().copy())
                state = env.step(action)
    finally:
        env.close()
    return inputs, dones, np.concatenate(actions)


def carried_through(run, inputs: list[dict[str, np.ndarray]], dones: list[bool], description: dict) -> np.ndarray:
    """The actions ``run`` (inputs by name -> outputs) chooses, fed as the description says: its state inputs
    zeros at an episode's first step, else the state outputs of the step before."""
    state_parts = description["state"]["inputs"]
    zeros = {part["name"]: np.zeros((1, part["shape"][1]), np.float32) for part in state_parts}
    state, actions = zeros, []
    for t, feed in enumerate(inputs):
        if t > 0 and dones[t - 1]:
            state = zeros
        action, *after = run(feed | state)
        assert len(after) == len(state_parts)
        state = dict(zip(zeros, after, strict=True))
        actions.append(action)
    return np.concatenate(actions)


def test_the_exported_recurrent_policy_chooses_the_agents_actions_carrying_its_state(exported):
    case, run_dir, plugins, descriptions = exported
    inputs, dones, actions = played(run_dir, plugins, STEPS)
    assert sum(dones[:-1]) >= 1, "the played steps cross an episode's end: the state restarts from zeros"
    script = torch.jit.load(descriptions["torchscript"]["file"])
    session = onnxruntime.InferenceSession(descriptions["onnx"]["file"], providers=["CPUExecutionProvider"])
    names = [node.name for node in session.get_inputs()]
    assert names == [*inputs[0], *(part["name"] for part in descriptions["onnx"]["state"]["inputs"])]
    assert [node.name for node in session.get_outputs()] == \
        ["action", *(part["name"] for part in descriptions["onnx"]["state"]["outputs"])]

    def by_torchscript(feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [x.numpy() for x in script(*(torch.as_tensor(x) for x in feed.values()))]  # no torch.no_grad needed

    assert (carried_through(by_torchscript, inputs, dones, descriptions["torchscript"]) == actions).all()
    assert (carried_through(lambda feed: session.run(None, feed), inputs, dones, descriptions["onnx"]) == actions).all()


def test_the_description_and_the_command_line_name_the_state_and_how_it_starts(exported):
    case, run_dir, _, descriptions = exported
    description = descriptions["onnx"]
    core = "lstm" if "lstm" in case else "gru"
    parts = ["state_h", "state_c"] if core == "lstm" else ["state_h"]
    hidden = load_run(run_dir, "cpu", CASES[case][1]).settings.approximation["recurrent_hidden"]
    assert description["state"]["inputs"] == [{"name": name, "shape": ["batch", hidden], "dtype": "float32"}
                                              for name in parts]
    assert [part["name"] for part in description["state"]["outputs"]] == [f"next_{name}" for name in parts]
    assert description["state"]["start"].startswith("zeros at an episode's first step")
    line = export_line(description)
    assert f"{parts[-1]} float32 [batch, {hidden}] -> action int64 [batch], {', '.join(f'next_{p}' for p in parts)}" \
        in line
    assert f"feed {', '.join(parts)}: zeros at an episode's first step" in line
    if "masked" in case:
        assert f"action_mask bool [batch, 4], {parts[0]} float32" in line
    if "previous" in case:
        assert [part["name"] for part in description["previous"]["inputs"]] == ["previous_action", "previous_reward"]
        assert f"previous_action int64 [batch], previous_reward float32 [batch], {parts[0]} float32" in line
        assert "feed previous_action, previous_reward: -1 and 0 at an episode's first step" in line
