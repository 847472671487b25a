"""Layers and model builders: output shapes on vector and Atari spaces, dueling and noisy heads, and settings."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import FAST_RUN, one_error_line, only_run_dir
from torch import nn

from rlconf.errors import ConfigError
from rlconf.nn import (
    Aggregation,
    CategoricalDueling,
    Dueling,
    Linear,
    Linear0,
    MLPSettings,
    NatureCNNSettings,
    NoisyFactorizedLinear,
    NoisyLinear,
    Scale,
    Tanh,
    model_settings,
)

VECTOR = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ATARI = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
SMALL_FRAMES = gym.spaces.Box(0, 255, (4, 36, 36), np.uint8)  # the smallest the Nature CNN takes: quick tests
ACTIONS, ATOMS = 6, 51
HEADS = [{}, {"dueling": True}, {"noisy": True}, {"dueling": True, "noisy": True}, {"ortho_init": True}]


def observations(space: gym.spaces.Box, batch: int) -> torch.Tensor:
    space.seed(0)
    return torch.as_tensor(np.stack([space.sample() for _ in range(batch)]))


def has(model: nn.Module, kind: type[nn.Module]) -> bool:
    return any(isinstance(m, kind) for m in model.modules())


# -- builders -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("settings", "space"), [
    *(pytest.param(MLPSettings(**head), VECTOR, id=f"mlp{head}") for head in HEADS),
    *(pytest.param(NatureCNNSettings(**head), ATARI, id=f"nature_cnn{head}") for head in HEADS),
])
def test_every_builder_gives_the_shape_agents_expect(settings, space):
    x = observations(space, 3)
    assert settings.q(space, ACTIONS)(x).shape == (3, ACTIONS)
    assert settings.q_dist(space, ACTIONS, ATOMS)(x).shape == (3, ACTIONS, ATOMS)
    assert settings.head(space, 5, out_gain=0.01)(x).shape == (3, 5)
    trunk, width = settings.trunk(space)
    features = trunk(x)
    assert features.shape == (3, width)
    assert settings.linear(width, 2, 0.01)(features).shape == (3, 2)


@pytest.mark.parametrize("settings", [MLPSettings(hidden=[16]), NatureCNNSettings()], ids=["mlp", "nature_cnn"])
def test_frames_are_scaled_inside_the_model_and_float_observations_are_not(settings):
    floats = gym.spaces.Box(0.0, 1.0, SMALL_FRAMES.shape, np.float32)
    assert has(settings.q(SMALL_FRAMES, ACTIONS), Scale)
    assert not has(settings.q(floats, ACTIONS), Scale)
    torch.manual_seed(0)
    on_frames = settings.head(SMALL_FRAMES, 3)
    torch.manual_seed(0)
    on_floats = settings.head(floats, 3)
    x = observations(SMALL_FRAMES, 2)
    torch.testing.assert_close(on_frames(x), on_floats(x.float() / 255))


def test_scale_turns_uint8_into_float():
    out = Scale(1 / 255)(torch.tensor([[0, 51, 255]], dtype=torch.uint8))
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, torch.tensor([[0.0, 0.2, 1.0]]))


def test_mlp_q_is_the_flat_stack_the_presets_were_tuned_on():
    """Same layers, same order of random draws: orthogonal init after every layer exists, in module order."""
    settings = MLPSettings(hidden=[8, 8], activation="tanh", ortho_init=True)
    torch.manual_seed(0)
    model = settings.head(VECTOR, 2, out_gain=0.01)
    torch.manual_seed(0)
    expected = nn.Sequential(Linear(4, 8), Tanh(), Linear(8, 8), Tanh(), Linear(8, 2))
    for layer, gain in zip(expected[::2], [math.sqrt(2), math.sqrt(2), 0.01], strict=True):
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
    assert [type(m) for m in model] == [type(m) for m in expected]
    for (name, value), (expected_name, expected_value) in zip(model.state_dict().items(),
                                                              expected.state_dict().items(), strict=True):
        assert name == expected_name
        assert torch.equal(value, expected_value), name
    assert [type(m) for m in MLPSettings().q(VECTOR, 2)] == [Linear, nn.ReLU, Linear, nn.ReLU, Linear]


def test_cnn_outputs_start_at_zero_unless_orthogonal():
    x = observations(SMALL_FRAMES, 2)
    assert torch.equal(NatureCNNSettings().q(SMALL_FRAMES, ACTIONS)(x), torch.zeros(2, ACTIONS))
    assert NatureCNNSettings(ortho_init=True).q(SMALL_FRAMES, ACTIONS)(x).abs().sum() > 0


def test_orthogonal_head_layer_has_the_given_gain():
    layer = MLPSettings(ortho_init=True).linear(64, 2, gain=0.01)
    torch.testing.assert_close(layer.weight @ layer.weight.T, 1e-4 * torch.eye(2))
    assert torch.equal(layer.bias, torch.zeros(2))


def test_model_settings_picks_the_class_the_model_names():
    assert type(model_settings({"model": "mlp", "hidden": [8]})) is MLPSettings
    cnn = model_settings({"model": "nature_cnn", "dueling": True})
    assert type(cnn) is NatureCNNSettings and cnn.dueling and cnn.shared


@pytest.mark.parametrize(("approximation", "words"), [
    ({"model": "mlp", "noisy_sigma": -1}, ["approximation.noisy_sigma=-1", "positive"]),
    ({"model": "mlp", "activation": "nosuch"}, ["approximation.activation=nosuch", "relu"]),
    ({"model": "mlp", "hidden": [64, 0]}, ["approximation.hidden=[64, 0]"]),
    ({"model": "nature_cnn", "hidden": 0}, ["approximation.hidden=0"]),
    ({"model": "nature_cnn", "noisy_sigma": 0.0}, ["approximation.noisy_sigma=0.0"]),
    ({"model": "nature_cnn", "convs": [[32, 5]]}, ["approximation.convs=[[32, 5]]", "[out_channels, kernel, stride]"]),
    ({"model": "nature_cnn", "convs": [[32, 5, 0]]}, ["approximation.convs=[[32, 5, 0]]", "at least 1"]),
    ({"model": "nature_cnn", "convs": []}, ["approximation.convs=[]", "a list of convolutions"]),
    ({"model": "nature_cnn", "convs": [32, 5, 5]}, ["approximation.convs=[32, 5, 5]", "e.g. [[32, 8, 4]"]),
])
def test_bad_settings_are_one_line(approximation, words):
    with pytest.raises(ConfigError) as error:
        model_settings(approximation)
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_convs_give_the_convolution_stack_and_nature_is_the_default():
    """approximation.convs: Data-Efficient Rainbow's two 5x5 convolutions of stride 5 (van Hasselt et al. 2019)
    leave 64 x 3 x 3 = 576 features of an 84x84 stack; unset, the Nature DQN's three."""
    def convs(model: nn.Module) -> list[tuple]:
        return [(m.out_channels, m.kernel_size, m.stride) for m in model.modules() if isinstance(m, nn.Conv2d)]

    der = NatureCNNSettings(convs=[[32, 5, 5], [64, 5, 5]], hidden=256, dueling=True, noisy=True, noisy_sigma=0.1)
    model = der.q_dist(ATARI, ACTIONS, ATOMS)
    assert convs(model) == [(32, (5, 5), (5, 5)), (64, (5, 5), (5, 5))]
    first = next(m for m in model.modules() if isinstance(m, NoisyFactorizedLinear))
    assert (first.in_features, first.out_features) == (64 * 3 * 3, 256)
    assert model(observations(ATARI, 2)).shape == (2, ACTIONS, ATOMS)
    assert convs(NatureCNNSettings().q(ATARI, ACTIONS)) == [(32, (8, 8), (4, 4)), (64, (4, 4), (2, 2)),
                                                             (64, (3, 3), (1, 1))]


def test_frames_too_small_for_the_convs_name_the_smallest_they_take():
    with pytest.raises(ConfigError, match=r"approximation.convs=\[\[32, 5, 5\], \[64, 5, 5\]\]: frames of \(24, 24\) "
                                          r"are too small for these convolutions \(at least 25x25\)"):
        NatureCNNSettings(convs=[[32, 5, 5], [64, 5, 5]]).q(gym.spaces.Box(0, 255, (4, 24, 24), np.uint8), ACTIONS)
    NatureCNNSettings(convs=[[32, 5, 5], [64, 5, 5]]).q(gym.spaces.Box(0, 255, (4, 25, 25), np.uint8), ACTIONS)


def test_cnn_on_vector_observations_is_one_line():
    with pytest.raises(ConfigError, match=r"approximation.model=nature_cnn: needs image observations"):
        NatureCNNSettings().q(VECTOR, ACTIONS)


# -- dueling --------------------------------------------------------------------------------------------
def test_aggregation_removes_the_mean_advantage():
    value, advantage = torch.randn(5, 1), torch.randn(5, ACTIONS)
    q = Aggregation()(value, advantage)
    torch.testing.assert_close(q, value + advantage - advantage.mean(-1, keepdim=True))
    torch.testing.assert_close((q - value).sum(-1), torch.zeros(5), atol=1e-5, rtol=0)


def test_dueling_runs_both_streams_on_the_same_features():
    torch.manual_seed(0)
    value, advantage = nn.Linear(8, 1), nn.Linear(8, ACTIONS)
    x = torch.randn(5, 8)
    q = Dueling(value, advantage)(x)
    assert q.shape == (5, ACTIONS)
    torch.testing.assert_close(q.mean(-1, keepdim=True), value(x))
    torch.testing.assert_close(q - value(x), advantage(x) - advantage(x).mean(-1, keepdim=True))


def test_categorical_dueling_aggregates_atom_by_atom():
    torch.manual_seed(0)
    value, advantage = nn.Linear(8, ATOMS), nn.Linear(8, ACTIONS * ATOMS)
    x = torch.randn(5, 8)
    logits = CategoricalDueling(value, advantage)(x)
    assert logits.shape == (5, ACTIONS, ATOMS)
    a = advantage(x).view(5, ACTIONS, ATOMS)
    torch.testing.assert_close(logits, value(x).unsqueeze(1) + a - a.mean(1, keepdim=True))
    torch.testing.assert_close((logits - value(x).unsqueeze(1)).sum(1), torch.zeros(5, ATOMS), atol=1e-4, rtol=0)


def test_dueling_settings_build_dueling_heads():
    assert has(MLPSettings(dueling=True).q(VECTOR, ACTIONS), Dueling)
    assert has(NatureCNNSettings(dueling=True).q_dist(ATARI, ACTIONS, ATOMS), CategoricalDueling)
    assert not has(MLPSettings().q(VECTOR, ACTIONS), Dueling)


# -- noisy layers ---------------------------------------------------------------------------------------
NOISY = [NoisyLinear, NoisyFactorizedLinear]


@pytest.mark.parametrize("kind", NOISY)
def test_noisy_layers_draw_fresh_noise_in_training_and_none_in_eval(kind):
    torch.manual_seed(0)
    layer, x = kind(16, 4), torch.randn(3, 16)
    assert not torch.equal(layer(x), layer(x))
    layer.eval()
    first = layer(x)
    assert torch.equal(first, layer(x))
    torch.testing.assert_close(first, F.linear(x, layer.weight, layer.bias))


@pytest.mark.parametrize("rows", [1, 32])
@pytest.mark.parametrize("kind", NOISY)
def test_gradients_reach_the_noise_scales(kind, rows):
    torch.manual_seed(0)
    layer = kind(16, 4)
    layer(torch.randn(rows, 16)).pow(2).sum().backward()
    for parameter in (layer.weight, layer.bias, layer.weight_sigma, layer.bias_sigma):
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0


def test_noise_scales_start_where_fortunato_et_al_put_them():
    factorized = NoisyFactorizedLinear(64, 8, sigma_init=0.5)
    for sigma in (factorized.weight_sigma, factorized.bias_sigma):
        torch.testing.assert_close(sigma, torch.full_like(sigma, 0.5 / 8))
    independent = NoisyLinear(64, 8)
    for sigma in (independent.weight_sigma, independent.bias_sigma):
        torch.testing.assert_close(sigma, torch.full_like(sigma, 0.017))
    assert factorized.weight.abs().max() <= 1 / 8
    assert independent.weight.abs().max() <= math.sqrt(3 / 64)


def test_factorized_noise_is_the_same_function_for_few_rows_and_many():
    """Acting (a few rows) takes a cheaper path than training batches; with the same noise they agree."""
    torch.manual_seed(0)
    layer, row = NoisyFactorizedLinear(16, 4), torch.randn(1, 16)
    torch.manual_seed(1)
    few = layer(row)
    torch.manual_seed(1)
    many = layer(row.expand(32, 16))
    torch.testing.assert_close(many, few.expand(32, 4))


def test_noisy_settings_explore_in_training_and_evaluate_deterministically():
    torch.manual_seed(0)
    model = MLPSettings(noisy=True, dueling=True).q(VECTOR, ACTIONS)
    assert has(model, NoisyFactorizedLinear)
    x = observations(VECTOR, 3)
    assert not torch.equal(model(x), model(x))
    model.eval()
    assert torch.equal(model(x), model(x))


def test_linear0_starts_at_zero_and_learns():
    layer = Linear0(3, 2)
    assert torch.equal(layer.weight, torch.zeros(2, 3)) and torch.equal(layer.bias, torch.zeros(2))
    layer(torch.ones(1, 3)).sum().backward()
    assert layer.weight.grad.abs().sum() > 0


# -- through the command line ---------------------------------------------------------------------------
@pytest.mark.parametrize("heads", [["approximation.dueling=true"],
                                   ["approximation.dueling=true", "approximation.noisy=true"]],
                         ids=["dueling", "dueling_noisy"])
def test_dqn_runs_with_dueling_and_noisy_heads(run_cli, workdir, tmp_path, heads):
    logdir = tmp_path / "runs"
    # replay_start_size=200: the 500 steps include a burst of updates through the new heads.
    result = run_cli("run", "agent=dqn", "env=classic/cartpole", *heads, "steps=500", "agent.replay_start_size=200",
                     *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    config = (only_run_dir(logdir) / "config.yaml").read_text()
    assert "dueling: true" in config


def test_bad_noise_scale_on_the_command_line_is_one_line(run_cli, workdir, tmp_path):
    line = one_error_line(run_cli("run", "agent=dqn", "env=classic/cartpole", "approximation.noisy_sigma=-1",
                                  f"logdir={tmp_path / 'runs'}", cwd=workdir))
    assert "approximation.noisy_sigma=-1" in line


@pytest.mark.parametrize("rows", [8, 64, 1024])
def test_tanh_equals_torchs_with_and_without_gradients(rows):
    """rlconf's Tanh (through sigmoid): values and gradients are torch.tanh's."""
    x = (torch.randn(rows, 64) * 4).requires_grad_()
    upstream = torch.randn(rows, 64)
    ours = Tanh()(x)
    ours.backward(upstream)
    ours_grad = x.grad.clone()
    x.grad = None
    theirs = torch.tanh(x)
    theirs.backward(upstream)
    torch.testing.assert_close(ours, theirs, atol=3e-7, rtol=0)
    torch.testing.assert_close(ours_grad, x.grad, atol=3e-6, rtol=0)


def test_once_per_frame_gives_row_by_rows_values_and_gradients_for_a_quarter_of_the_rows():
    """A shared centralised critic: every frame's 4 lanes read the same global state (after their own views), so
    it runs on one row a frame; its outputs and its parameters' gradients are those of running every row."""
    from rlconf.nn.layers import OncePerFrame
    from rlconf.nn.recurrent import Part

    torch.manual_seed(0)
    frames, lanes, own, state = 6, 4, 3, 5
    views = torch.randn(frames, lanes, own)
    states = torch.randn(frames, 1, state).expand(frames, lanes, state)
    rows = torch.cat([views, states], dim=-1).flatten(0, 1)
    head = nn.Sequential(nn.Linear(state, 8), nn.Tanh(), nn.Linear(8, 1))
    plain = nn.Sequential(Part(own, state), head)
    once = OncePerFrame(Part(own, state), head, lanes)
    assert once.state_dict().keys() == plain.state_dict().keys()  # checkpoints load either way
    calls = []
    head.register_forward_hook(lambda module, inputs, output: calls.append(inputs[0].shape[0]))
    targets = torch.randn(frames * lanes, 1)
    gradients = []
    for model in (plain, once):
        head.zero_grad()
        out = model(rows)
        (out - targets).square().mean().backward()
        gradients.append([p.grad.clone() for p in head.parameters()])
        assert out.shape == (frames * lanes, 1)
    assert calls == [frames * lanes, frames]
    torch.testing.assert_close(once(rows), plain(rows))
    for a, b in zip(*gradients, strict=True):
        torch.testing.assert_close(a, b)
    # Rows whose lanes differ (an agent index in the critic's part), or that are not whole frames: row by row.
    calls.clear()
    different = torch.randn(frames * lanes, own + state)
    torch.testing.assert_close(once(different), plain(different))
    torch.testing.assert_close(once(rows[:-1]), plain(rows[:-1]))
    assert calls == [frames * lanes] * 2 + [frames * lanes - 1] * 2


# -- linear layers' products on a CPU (rlconf.nn.gemm, hardware.cpu_linear) -------------------------------------
@pytest.fixture
def cpu_linear_setting():
    """``gemm.configure`` for one test: the process's whole setting (choice, capability, operator check) comes
    back as it was afterwards, whatever the test configured or patched."""
    import dataclasses

    from rlconf.nn import gemm

    before = dataclasses.replace(gemm.cpu_linear)
    yield gemm.configure
    for field in dataclasses.fields(before):
        setattr(gemm.cpu_linear, field.name, getattr(before, field.name))


@pytest.fixture
def onednn(cpu_linear_setting):
    """``hardware.cpu_linear=onednn`` for one test, whatever this CPU's ``auto`` would choose."""
    from rlconf.nn import gemm

    cpu_linear_setting("onednn")
    return gemm


def _linear_and_grads(layer: nn.Module, x: torch.Tensor, upstream: torch.Tensor) -> list[torch.Tensor]:
    layer.zero_grad()
    x = x.detach().requires_grad_()
    out = layer(x)
    out.backward(upstream)
    return [out, x.grad, layer.weight.grad, layer.bias.grad]


@pytest.mark.parametrize("shape", [(256, 256), (3, 100, 256)])  # a batch, and sequences of batches
def test_a_large_layer_runs_through_onednn_with_torchs_values_and_gradients(shape, onednn):
    gemm = onednn
    torch.manual_seed(0)
    layer, x = Linear(256, 128), torch.randn(*shape)
    upstream = torch.randn(*shape[:-1], 128)
    assert gemm.cpu_linear.active(), gemm.cpu_linear.reason  # torch's x86 wheels ship oneDNN
    out = layer(x.requires_grad_())
    assert "OneDNN" in type(out.grad_fn if len(shape) == 2 else out.grad_fn.next_functions[0][0]).__name__
    ours = _linear_and_grads(layer, x, upstream)
    plain = nn.Linear(256, 128)
    plain.load_state_dict(layer.state_dict())  # the same parameters under the same names
    theirs = _linear_and_grads(plain, x, upstream)
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-4)  # the same products summed in another order


@pytest.mark.parametrize(("inputs", "outputs", "rows"), [(32, 256, 512), (256, 2, 512), (256, 256, 16)])
def test_small_layers_and_batches_keep_torchs_own_kernels_bit_for_bit(inputs, outputs, rows, onednn):

    torch.manual_seed(0)
    layer, x = Linear(inputs, outputs), torch.randn(rows, inputs)
    upstream = torch.randn(rows, outputs)
    plain = nn.Linear(inputs, outputs)
    plain.load_state_dict(layer.state_dict())
    for a, b in zip(_linear_and_grads(layer, x, upstream), _linear_and_grads(plain, x, upstream), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("act", [Tanh, nn.ReLU])
def test_layers_run_a_large_linear_layer_and_its_activation_as_one_onednn_product_with_torchs_values(act, onednn):
    from rlconf.nn.layers import Layers

    torch.manual_seed(0)
    ours = Layers(Linear(16, 256), act(), Linear(256, 256), act(), Linear(256, 2))
    plain = nn.Sequential(nn.Linear(16, 256), act(), nn.Linear(256, 256), act(), nn.Linear(256, 2))
    plain.load_state_dict(ours.state_dict())  # the same parameters under the same names
    x, upstream = torch.randn(1600, 16), torch.randn(1600, 2)
    fused = ours[:4](x)  # the hidden 256 x 256 layer's product with its activation is one autograd node
    assert "OneDNN" in type(fused.grad_fn).__name__
    results = []
    for model in (ours, plain):
        inputs = x.clone().requires_grad_()
        out = model(inputs)
        out.backward(upstream)
        results.append([out, inputs.grad, *(p.grad for p in model.parameters())])
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-4)


def test_layers_too_small_for_onednn_compute_exactly_what_a_sequential_does(onednn):
    from rlconf.nn.layers import Layers

    torch.manual_seed(0)
    ours = Layers(Linear(4, 64), Tanh(), Linear(64, 64), Tanh(), Linear(64, 2))
    x = torch.randn(8, 4)
    assert torch.equal(ours(x), nn.Sequential(*ours)(x))
    traced = torch.jit.trace(Layers(Linear(256, 256), nn.ReLU()), torch.randn(256, 256))  # exports see torch's ops
    assert "aten::linear" in str(traced.inlined_graph) and "aten::relu" in str(traced.inlined_graph)


def test_cpu_linear_torch_keeps_torchs_kernels_for_every_layer_and_tracing_always_does(cpu_linear_setting):
    from rlconf.nn import gemm

    torch.manual_seed(0)
    layer, x = Linear(256, 256), torch.randn(256, 256)
    expected = F.linear(x, layer.weight, layer.bias)
    cpu_linear_setting("torch")
    assert torch.equal(layer(x), expected)
    cpu_linear_setting("onednn")  # tracing sees torch's operator whatever the setting
    traced = torch.jit.trace(layer, x)  # what an export records is torch's own operator
    assert "aten::linear" in str(traced.graph) and torch.equal(traced(x), expected)
    with pytest.raises(ValueError, match="hardware.cpu_linear='mkl'; allowed: auto, onednn, torch"):
        gemm.configure("mkl")


@pytest.mark.parametrize(("capability", "kernels"), [("AVX512", "oneDNN"), ("AVX2", "torch"), ("DEFAULT", "torch")])
def test_cpu_linear_auto_takes_onednn_only_where_the_cpu_runs_avx512(monkeypatch, cpu_linear_setting, capability,
                                                                     kernels):
    """auto follows the measurements (benchmarks/results/gemm-avx512.md: oneDNN ~2x MKL; gemm-avx2.md: MKL
    faster): a rule on the CPU, so a run takes the same kernels on the same machine every time."""
    from rlconf.nn import gemm

    torch.manual_seed(0)
    layer, x = Linear(256, 256), torch.randn(256, 256)
    monkeypatch.setattr(gemm, "cpu_capability", lambda: capability)
    cpu_linear_setting("auto")
    out = layer(x.requires_grad_())
    assert ("OneDNN" in type(out.grad_fn).__name__) == (kernels == "oneDNN")
    assert gemm.describe().startswith(f"{kernels}'s"), gemm.describe()
    assert capability in gemm.describe()
