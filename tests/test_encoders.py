"""Multi-input encoders (rlconf.nn.encoders): Dict and Tuple observations for every deep agent family.

Each key gets the encoder of what it holds unless ``approximation.encoders`` names another; a configured key the
observation lacks is one line before anything is written. Every family trains a few hundred steps on the test
environments of tests/structured_envs.py (an image, a float vector and a discrete value, nested one level), and
a trained run's ``rlconf.load(...).act`` takes the observation as the environment gives it, choosing what the
agent chooses on the same observations.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import structured_envs
import torch
from conftest import FAST_RUN, one_error_line, run_dirs

import rlconf
from rlconf.config import validate
from rlconf.core.layout import ObservationLayout, layout_of, packed
from rlconf.errors import ConfigError
from rlconf.experiments.playback.play import load_run
from rlconf.nn import model_settings
from rlconf.nn.encoders import (
    Embedding,
    FloatInput,
    MultiInputEncoder,
    OneHot,
    check_encoders,
    describe_encoders,
    multi_input,
)

TESTS = Path(__file__).resolve().parent
STRUCTURED = ["env=gym", "plugins=[structured_envs]"]


def dict_env(name: str = "dict") -> list[str]:
    return [*STRUCTURED, f"env.id={structured_envs.IDS[name]}"]


def layout(**spaces: gym.Space) -> ObservationLayout:
    return ObservationLayout(gym.spaces.Dict(spaces))


def rows(lay: ObservationLayout, *observations) -> torch.Tensor:
    return torch.from_numpy(np.stack([lay.pack(o) for o in observations]))


# -- defaults, by what a key holds ---------------------------------------------------------------------------
def test_each_kind_gets_its_default_encoder():
    lay = layout(frames=gym.spaces.Box(0, 255, (4, 84, 84), np.uint8),  # frame stack, channels first
                 grid=gym.spaces.Box(0, 255, (7, 7, 3), np.uint8),  # MiniGrid's view, channels last
                 tiny=gym.spaces.Box(0, 255, (2, 2), np.uint8),  # too small to convolve
                 vector=gym.spaces.Box(-1, 1, (5,), np.float64),
                 direction=gym.spaces.Discrete(4),
                 many=gym.spaces.Discrete(1000),
                 dims=gym.spaces.MultiDiscrete([3, 5]),
                 bits=gym.spaces.MultiBinary(4))
    lines = {line.split(":")[0]: line for line in describe_encoders(lay, {})}
    assert "-> cnn" in lines["frames"] and "channels_last False" in lines["frames"]
    assert lines["frames"].endswith("-> 3136 features")
    assert "-> small_cnn" in lines["grid"] and "channels_last True" in lines["grid"] and "pool True" in lines["grid"]
    assert lines["grid"].endswith("-> 64 features")  # the minigrid baselines' 7x7 -> 64
    assert "-> flatten (scale True)" in lines["tiny"] and lines["tiny"].endswith("4 features")
    assert "-> flatten" in lines["vector"] and lines["vector"].endswith("5 features")
    assert "-> one_hot" in lines["direction"] and lines["direction"].endswith("4 features")
    assert "-> embedding (size 16)" in lines["many"] and lines["many"].endswith("16 features")
    assert "-> one_hot" in lines["dims"] and lines["dims"].endswith("8 features")  # 3 + 5
    assert "-> flatten (scale False)" in lines["bits"]  # 0/1 as they are, not / 255
    assert all("[default]" in line for line in lines.values())
    encoder, width = multi_input(lay, {})
    assert width == 3136 + 64 + 4 + 5 + 4 + 16 + 8 + 4
    space = lay.space
    space.seed(0)
    out = encoder(rows(lay, space.sample(), space.sample()))
    assert out.shape == (2, width) and out.dtype == torch.float32 and torch.isfinite(out).all()


def test_discrete_values_are_one_hot_per_dimension_and_embedded_by_value():
    lay = layout(d=gym.spaces.Discrete(3, start=-1), m=gym.spaces.MultiDiscrete([2, 3]))
    x = rows(lay, {"d": -1, "m": np.array([1, 2])}, {"d": 1, "m": np.array([0, 0])})
    encoder, _ = multi_input(lay, {})
    assert encoder.keys == ["d", "m"] and all(isinstance(e, OneHot) for e in encoder.encoders)
    assert encoder(x).tolist() == [[1, 0, 0, 0, 1, 0, 0, 1], [0, 0, 1, 1, 0, 1, 0, 0]]
    embedded, width = multi_input(lay, {"encoders": {"d": {"type": "embedding", "size": 2},
                                                     "m": {"type": "embedding", "size": 2}}})
    assert width == 2 + 2 * 2 and isinstance(embedded.encoders[0], Embedding)
    table = embedded.encoders[1].table.weight  # m: rows 0-1 its first dimension's values, rows 2-4 its second's
    assert torch.equal(embedded(x)[0, 2:], torch.cat([table[1], table[2 + 2]]))


def test_images_channels_last_or_first_give_the_same_features_and_uint8_is_scaled():
    image = np.random.default_rng(0).integers(0, 255, (7, 7, 3), dtype=np.uint8)
    last = layout(image=gym.spaces.Box(0, 255, (7, 7, 3), np.uint8))
    first = layout(image=gym.spaces.Box(0, 255, (3, 7, 7), np.uint8))
    torch.manual_seed(0)
    encoder_last, _ = multi_input(last, {})
    torch.manual_seed(0)
    encoder_first, _ = multi_input(first, {})
    features_last = encoder_last(rows(last, {"image": image}))
    features_first = encoder_first(rows(first, {"image": image.transpose(2, 0, 1)}))
    assert torch.allclose(features_last, features_first, atol=1e-6)
    raw, _ = multi_input(last, {"encoders": {"image": {"type": "flatten", "scale": False}}})
    scaled, _ = multi_input(last, {"encoders": {"image": {"type": "flatten"}}})
    x = rows(last, {"image": image})
    assert torch.equal(raw(x), torch.from_numpy(image.reshape(1, -1)).float())
    assert torch.allclose(scaled(x), raw(x) / 255)
    assert isinstance(raw.encoders[0], FloatInput)


def test_the_encoder_reads_the_rows_without_copying_them():
    """The leaves are views of the rows' bytes: the same storage, no float copy of the whole row."""
    lay = layout(image=gym.spaces.Box(0, 255, (7, 7, 3), np.uint8), v=gym.spaces.Box(-1, 1, (3,), np.float32))
    x = rows(lay, lay.space.sample())
    for leaf in lay.inputs:
        assert lay.view(x, leaf).untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    encoder, _ = multi_input(lay, {})
    from_dict = encoder({key: value for key, value in lay.unpack(x).items()})
    assert torch.equal(encoder(x), from_dict)  # the exported graph's way in: the leaves themselves


# -- configured from YAML -------------------------------------------------------------------------------------
def test_encoders_are_configured_per_key_nested_keys_as_nested_yaml(tmp_path):
    (tmp_path / "approximation").mkdir()
    (tmp_path / "approximation" / "mine.yaml").write_text(
        "# the MLP with each key's encoder named\ndefaults:\n  - mlp\n  - _self_\nhidden: [32, 32]\n"
        "encoders:\n  image: {type: mlp, hidden: [16], activation: tanh}\n"
        "  state:\n    k: {type: embedding, size: 3}\n    vector: {type: mlp, hidden: [8]}\n")
    cfg = rlconf.compose("agent=ppo", *dict_env(), "approximation=mine", config_dirs=[str(tmp_path)])
    settings = validate(cfg)
    env = packed(gym.make(structured_envs.IDS["dict"]))
    lines = describe_encoders(layout_of(env.observation_space), settings.approximation)
    assert lines == ["image: Box uint8 [12, 12, 3] -> mlp (scale True, hidden [16], activation tanh) [configured] "
                     "-> 16 features",
                     "state.k: Discrete int64 [] -> embedding (size 3) [configured] -> 3 features",
                     # PPO's preset MLP is tanh: an encoder's MLP takes the model's activation unless it names one
                     "state.vector: Box float32 [3] -> mlp (hidden [8], activation tanh) [configured] -> 8 features"]
    network = model_settings(settings.approximation).head(env.observation_space, 4)
    assert isinstance(network[0], MultiInputEncoder) and network[0].width == 16 + 3 + 8
    assert network[1].in_features == 27 and network[1].out_features == 32  # then the MLP's hidden layers
    # The command line says the same with +: the keys are the user's, not the schema's.
    typed = validate(rlconf.compose("agent=ppo", *dict_env(), "+approximation.encoders.state.k.type=one_hot",
                                    "+approximation.encoders.image.scale=false"))
    lines = describe_encoders(layout_of(env.observation_space), typed.approximation)
    assert "small_cnn (scale False" in lines[0] and "one_hot [configured]" in lines[1]


@pytest.mark.parametrize("override, words", [
    ("+approximation.encoders.image.type=conv", "approximation.encoders.image.type=conv: unknown encoder; allowed"),
    ("+approximation.encoders.image.hiden=[3]", "approximation.encoders.image.hiden=[3]: not an argument"),
    ("+approximation.encoders.state.k.size=0", "approximation.encoders.state.k.size=0: a whole number, at least 1"),
])
def test_an_unknown_encoder_or_argument_is_refused_when_the_config_is_checked(override, words):
    with pytest.raises(ConfigError, match=words.replace("[", r"\[").replace("]", r"\]")):
        rlconf.compose("agent=ppo", *dict_env(), override)


def test_an_encoder_for_a_key_the_observation_lacks_is_one_line_and_writes_nothing(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    line = one_error_line(run_cli("run", "agent=ppo", *dict_env(), "+approximation.encoders.foo.type=mlp",
                                  "steps=100", *FAST_RUN, f"logdir={logdir}", cwd=workdir, pythonpath=[TESTS]))
    assert line == ("rlconf: error: approximation.encoders.foo: no such observation key; the observation has: "
                    "image, state.k, state.vector")
    line = one_error_line(run_cli("run", "agent=ppo", *dict_env(), "+approximation.encoders.image.type=one_hot",
                                  "steps=100", *FAST_RUN, f"logdir={logdir}", cwd=workdir, pythonpath=[TESTS]))
    assert "approximation.encoders.image.type=one_hot: reads Discrete or MultiDiscrete values" in line
    line = one_error_line(run_cli("run", "agent=ppo", "env=classic/cartpole", "+approximation.encoders.image.type=mlp",
                                  "steps=100", *FAST_RUN, f"logdir={logdir}", cwd=workdir))
    assert "approximation.encoders.image: no such observation key; the observation is a plain Box [4]" in line
    assert not logdir.exists() or run_dirs(logdir) == [] and list(workdir.iterdir()) == []


def test_an_agent_that_keeps_a_table_refuses_a_dict_observation(run_cli, workdir, tmp_path):
    line = one_error_line(run_cli("run", "agent=q_learning", *dict_env(), "steps=100", *FAST_RUN,
                                  f"logdir={tmp_path / 'runs'}", cwd=workdir, pythonpath=[TESTS]))
    assert line.startswith("rlconf: error: agent=q_learning: reads plain observations (a Box or Discrete), not "
                           "Dict('image': Box(0, 255, (12, 12, 3), uint8)")
    assert "allowed: an agent with networks, e.g. agent=dqn or agent=ppo" in line
    assert not (tmp_path / "runs").exists() or run_dirs(tmp_path / "runs") == []


def test_the_nature_cnn_model_encodes_its_frames_then_its_hidden_layer():
    lay = layout(frames=gym.spaces.Box(0, 255, (84, 84, 3), np.uint8), speed=gym.spaces.Box(-1, 1, (2,)))
    settings = model_settings({"model": "nature_cnn", "hidden": 32, "dueling": True, "ortho_init": True})
    network = settings.q(lay.packed_space(), 5)
    encoder = network[0]
    assert isinstance(encoder, MultiInputEncoder) and encoder.width == 3136 + 2
    assert network[1].value_model[0].in_features == 3136 + 2 and network[1].value_model[0].out_features == 32
    x = rows(lay, lay.space.sample(), lay.space.sample(), lay.space.sample())
    assert network(x).shape == (3, 5)
    # R2D2's layout on the same observations: the encoder on every step, an LSTM over time, the dueling head.
    settings = model_settings({"model": "nature_cnn", "hidden": 32, "recurrent": "lstm", "recurrent_hidden": 16})
    recurrent = settings.recurrent_q(lay.packed_space(), 5)
    values, state = recurrent(x.view(3, 1, -1), torch.zeros(1, recurrent.state_size))
    assert values.shape == (3, 1, 5) and state.shape == (1, 32)


def test_plain_observations_build_the_networks_they_always_did():
    """No encoder in front of a plain observation: the same modules, the same weights from the same seed."""
    space = gym.spaces.Box(-1, 1, (4,), np.float32)
    settings = model_settings({"model": "mlp", "hidden": [8, 8]})
    torch.manual_seed(0)
    network = settings.q(space, 2)
    assert [type(m).__name__ for m in network] == ["Linear", "ReLU", "Linear", "ReLU", "Linear"]
    encoder, width = settings.observation_encoder(space)
    assert encoder is None and width == 4


# -- every family trains on a Dict observation ----------------------------------------------------------------
# tests/test_structured.py trains PPO (recurrent, Tuple, MultiDiscrete), A2C, DQN, Rainbow, R2D1 and SAC on
# these environments with their storage checked; these are the other families, and a shared trunk.
FAMILIES = {
    "c51": ["agent=c51", *dict_env(), "agent.replay_start_size=100"],
    "vqn": ["agent=vqn", *dict_env()],
    "vpg": ["agent=vpg", *dict_env()],
    "vac-tuple": ["agent=vac", *dict_env("tuple")],
    "ppo-shared": ["agent=ppo", *dict_env(), "approximation.shared=true"],
    "ddpg": ["agent=ddpg", *dict_env("continuous"), "agent.replay_start_size=200", "agent.batch_size=32"],
    "td3": ["agent=td3", *dict_env("continuous"), "agent.replay_start_size=200", "agent.batch_size=32"],
}


@pytest.mark.parametrize("case", FAMILIES)
def test_every_family_trains_on_a_structured_observation(case, tmp_path):
    run_dir, summary = rlconf.train([*FAMILIES[case], "steps=300", *FAST_RUN, f"logdir={tmp_path}"])
    assert summary["steps"] >= 300 and summary["test_episodes"] == 2
    weights = _names(load_run(run_dir, "cpu", ["structured_envs"]).checkpoint["agent"])
    # Every key read by its own encoder (the image's convolutions, the discrete value's one-hot has no weights).
    assert any(".encoders.0." in name and name.endswith("weight") for name in weights), sorted(weights)[:20]


def _names(state, prefix: str = "") -> list[str]:
    """The dotted names of the tensors of a nested checkpoint."""
    if isinstance(state, dict):
        return [name for key, value in state.items() for name in _names(value, f"{prefix}{key}.")]
    return [prefix.rstrip(".")] if isinstance(state, torch.Tensor) else []


# -- export: the graph takes the dict --------------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    ["agent=ppo", *dict_env(), "agent.n_steps=64"],
    # The Gaussian's mean behind the vector key's normaliser, continuous actions within float rounding.
    ["agent=sac", *dict_env("continuous"), "agent.replay_start_size=200", "agent.batch_size=32",
     "body.normalize_observations=true"],
    ["agent=dqn", *dict_env("tuple"), "agent.replay_start_size=100", "agent.eval_epsilon=0"],
], ids=["ppo-dict", "sac-dict-normalized", "dqn-tuple"])
def test_the_exported_graph_takes_one_input_per_key_and_chooses_the_agents_actions(case, tmp_path):
    import onnxruntime

    from rlconf.experiments.playback.export import export_run, run_exported

    run_dir, _ = rlconf.train([*case, "steps=300", *FAST_RUN, f"logdir={tmp_path}"])
    playback = load_run(run_dir, "cpu", ["structured_envs"])
    env = playback.make_env(8)
    try:
        agent = playback.agent(env).test_agent()
        lay = layout_of(env.observation_space)
        state, observations, actions = env.reset(seed=5), [], []
        with torch.inference_mode():
            for _ in range(20):
                action = agent.act(state)
                observations.append(state.observation.numpy().copy())
                actions.append(action.numpy().copy())
                state = env.step(action)
        box = hasattr(env.action_space, "low")
        low, high = (env.action_space.low, env.action_space.high) if box else (None, None)
    finally:
        env.close()
    rows_played, expected = np.concatenate(observations), np.concatenate(actions)
    if box:
        expected = np.clip(expected, low, high)
    inputs = {key: np.ascontiguousarray(value) for key, value in lay.unpack(rows_played).items()}
    for fmt in ("onnx", "torchscript"):
        description = export_run(run_dir, fmt, plugins=["structured_envs"])
        assert [i["name"] for i in description["inputs"]] == list(lay.keys) and "input" not in description
        assert [i["dtype"] for i in description["inputs"]] == [leaf.dtype.name for leaf in lay.inputs]
        produced = run_exported(description["file"], fmt, inputs)
        if box:
            assert np.allclose(produced, expected, atol=1e-5)
        else:
            assert np.array_equal(produced, expected)
    session = onnxruntime.InferenceSession(description["file"].replace(".pt", ".onnx"))
    assert [(i.name, i.type) for i in session.get_inputs()] == [
        (leaf.key, {"uint8": "tensor(uint8)", "int64": "tensor(int64)", "float32": "tensor(float)"}[leaf.dtype.name])
        for leaf in lay.inputs]


def test_rlconf_export_names_each_keys_input(run_cli, workdir, tmp_path):
    run_dir, _ = rlconf.train(["agent=vpg", *dict_env(), "steps=64", *FAST_RUN, f"logdir={tmp_path}"])
    result = run_cli("export", str(run_dir), "--format", "onnx", "--plugins", "structured_envs", cwd=workdir,
                     pythonpath=[TESTS])
    assert result.returncode == 0, result.stderr
    assert ("onnx policy, image uint8 [batch, 12, 12, 3], state.k int64 [batch], state.vector float32 [batch, 3] "
            "-> action int64 [batch], the same actions as the policy on 256 observations") in result.stdout
    assert (run_dir / "policy.onnx").is_file() and (run_dir / "policy.onnx.json").is_file()


# -- rlconf.load(...).act takes the environment's own observations ----------------------------------------------
def test_act_takes_the_dict_the_environment_gives_and_chooses_what_eval_plays(tmp_path):
    run_dir, _ = rlconf.train(["agent=ppo", *dict_env(), "steps=512", "hardware.n_envs=4", "agent.n_steps=64",
                               *FAST_RUN, f"logdir={tmp_path}"])
    policy = rlconf.load(run_dir, plugins=["structured_envs"])
    playback = load_run(run_dir, "cpu", ["structured_envs"])
    env = playback.make_env(4)  # rlconf eval's copies: what the agent plays there, from packed rows
    try:
        agent = playback.agent(env).test_agent()
        state = env.reset(seed=3)
        raw = [gym.make(structured_envs.IDS["dict"]) for _ in range(4)]
        for _ in range(16):
            with torch.inference_mode():
                played = agent.act(state).numpy()
            lay = layout_of(env.observation_space)
            leaves = lay.unpack(state.observation.numpy())  # the copies' observations, as dicts again
            batch = lay.nest(leaves)
            assert np.array_equal(policy.act(batch), played)  # a batch of nested dicts
            singles = [policy.act({"image": leaves["image"][i], "state": {"vector": leaves["state.vector"][i],
                                                                          "k": int(leaves["state.k"][i])}})
                       for i in range(4)]
            assert singles == played.tolist() and all(isinstance(a, int) for a in singles)
            state = env.step(torch.as_tensor(played))
        for i, copy in enumerate(raw):  # a gymnasium env's own observation, not one rlconf unpacked
            observation, _ = copy.reset(seed=10 + i)
            expected = agent.act(_state(lay.pack(observation))).item()
            assert policy.act(observation) == expected
    finally:
        env.close()


def _state(row: np.ndarray):
    from rlconf.core.state import StateArray

    return StateArray({"observation": torch.from_numpy(row[None].copy()), "reward": torch.zeros(1),
                       "done": torch.zeros(1, dtype=torch.bool), "mask": torch.ones(1)}, (1,))


def test_act_refuses_an_observation_without_a_key(tmp_path):
    run_dir, _ = rlconf.train(["agent=vpg", *dict_env(), "steps=64", *FAST_RUN, f"logdir={tmp_path}"])
    policy = rlconf.load(run_dir, plugins=["structured_envs"])
    with pytest.raises(ValueError, match="the observation has no state.k"):
        policy.act({"image": np.zeros((12, 12, 3), np.uint8), "state": {"vector": np.zeros(3, np.float32)}})


def test_act_takes_a_tuple_as_the_environment_gives_it(tmp_path):
    run_dir, _ = rlconf.train(["agent=vpg", *dict_env("tuple"), "steps=64", *FAST_RUN, f"logdir={tmp_path}"])
    policy = rlconf.load(run_dir, plugins=["structured_envs"])
    playback = load_run(run_dir, "cpu", ["structured_envs"])
    env = playback.make_env(1)
    try:
        agent = playback.agent(env).test_agent()
        lay = layout_of(env.observation_space)
    finally:
        env.close()
    copy = gym.make(structured_envs.IDS["tuple"])
    for seed in range(8):
        observation, _ = copy.reset(seed=seed)
        assert isinstance(observation, tuple)
        with torch.inference_mode():
            assert policy.act(observation) == agent.act(_state(lay.pack(observation))).item()


@pytest.mark.parametrize("agent, env_id", [("dqn", "MaskedChoiceDict-v0"), ("ppo", "MaskedChoice-v0")])
def test_act_honours_the_mask_the_environment_gives(agent, env_id, tmp_path):
    """The mask as an ``action_mask`` key of the Dict, or as ``info["action_mask"]`` handed to act: the test
    environment raises on an illegal action, so episodes played to their end took none."""
    import action_envs

    run_dir, _ = rlconf.train([f"agent={agent}", "env=gym", f"env.id={env_id}", "plugins=[action_envs]",
                               "steps=64", "agent.replay_start_size=32" if agent == "dqn" else "agent.n_steps=16",
                               *FAST_RUN, f"logdir={tmp_path}"])
    policy = rlconf.load(run_dir, plugins=["action_envs"])
    env, played = gym.make(env_id), 0
    for seed in range(3):
        observation, info = env.reset(seed=seed)
        done = False
        while not done:
            played += 1
            action = policy.act(observation) if "Dict" in env_id else \
                policy.act(observation, action_mask=info["action_mask"])
            observation, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    assert played == 3 * action_envs.LENGTH


def test_encoders_check_is_the_one_pairing_uses():
    env = packed(gym.make(structured_envs.IDS["tuple"]))
    check_encoders(env.observation_space, {"encoders": {"1": {"1": {"type": "embedding"}}}})
    with pytest.raises(ConfigError, match=r"approximation.encoders.2: no such observation key; the observation "
                                          r"has: 0, 1.0, 1.1"):
        check_encoders(env.observation_space, {"encoders": {"2": {"type": "mlp"}}})
