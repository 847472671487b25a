"""Layers the model builders assemble: activations, input scaling, zero outputs, dueling heads, noisy linears,
and a team critic computed once a frame.

Following the Autonomous Learning Library's ``all.nn``: networks convert their own inputs (uint8 frames stay
uint8 in replay, a quarter of the memory of floats, and become floats inside the model), and value-based heads
are ordinary modules an agent does not need to know about.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from rlconf.nn.gemm import linear


class Tanh(nn.Module):
    """tanh computed as ``2 * sigmoid(2x) - 1``: the same function, several times faster on CPU.

    torch's CPU tanh kernel runs at about 2 ns per element here (AVX-512, torch 2.13) against 0.25 ns for
    sigmoid, and tanh layers dominated the forward pass of small actor-critic networks. Float32 results
    agree with torch.tanh to within 2e-7.

    Why one formula for every size, although torch.tanh's single kernel is faster on acting batches (8 x 64:
    3.7 against 17 us) and a custom backward faster on large ones: any change of rounding here sends a
    learning run down another trajectory, and the CartPole learning tests of A2C and recurrent PPO (greedy
    >= 475) failed under those faster numerics (419.8; 335.5 and 217.4) where they pass under these. Until
    those presets hold under any rounding, the numerics stay the ones they were measured with.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x * 2.0) * 2.0 - 1.0


ACTIVATIONS = {"relu": nn.ReLU, "tanh": Tanh, "elu": nn.ELU, "gelu": nn.GELU, "silu": nn.SiLU}


def activation(name: str) -> type[nn.Module]:
    try:
        return ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; allowed: {', '.join(ACTIVATIONS)}") from None


class Flatten(nn.Module):
    """Flatten every dimension after the batch; observations of any shape become vectors."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1)


class Scale(nn.Module):
    """Multiply by a constant, converting integer inputs to float first.

    ``Scale(1 / 255)`` turns uint8 frames into floats in [0, 1] inside the model, so buffers and the
    environment hand around uint8 frames and the conversion happens once, on the device the model runs on.
    """

    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_floating_point():
            return x.float().mul_(self.factor)  # in place on the fresh float copy: one pass fewer
        return x * self.factor

    def extra_repr(self) -> str:
        return f"factor={self.factor}"


class ChannelsLast(nn.Module):
    """Lay image batches out pixel by pixel (NHWC in memory) where gradients will flow back through them; the
    tensor's shape and values do not change.

    Convolutions propagate the layout, and oneDNN's CPU convolutions run forward and backward together about
    20% faster on it: 13 ms instead of 16.5 ms for the Nature CNN at batch 32 on one thread (torch 2.13), 11
    instead of 14.7 for DER's. A forward pass alone (acting, bootstrap targets) is faster as it came, the
    reordering included in neither: DER's network at batch 32 2.7 ms against 3.8, the Nature CNN's 12.2 against
    14.7, and at batch 1 0.34 against 0.39 and 0.81 against 0.90. So the reordering happens only while autograd
    records.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            return x
        return x.contiguous(memory_format=torch.channels_last)


class OncePerFrame(nn.Sequential):
    """``network(select(x))`` for rows that come ``lanes`` at a time, one frame's agents: where every frame's
    selected inputs are the same (a centralised critic shared by a group's agents, reading no agent index), the
    network runs once a frame and its output is repeated for the frame's lanes, as BenchMARL's shared
    centralised critic computes one value a frame; otherwise (rows that are not whole frames, or differ) row by
    row. Either way the outputs and their gradients are the same, for a quarter of the work with four agents.

    A Sequential of ``(select, network)``, so its parameters keep the names a plain ``Sequential(select,
    network)`` gives them (checkpoints load either way)."""

    def __init__(self, select: nn.Module, network: nn.Module, lanes: int):
        super().__init__(select, network)
        self.lanes = lanes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        select, network = self[0], self[1]
        inputs = select(x)
        if inputs.dim() != 2 or inputs.shape[0] % self.lanes:
            return network(inputs)
        frames = inputs.view(-1, self.lanes, inputs.shape[-1])
        first = frames[:, :1]
        if not torch.equal(frames, first.expand_as(frames)):
            return network(inputs)
        once = network(first.squeeze(1))
        return once.unsqueeze(1).expand(-1, self.lanes, *once.shape[1:]).reshape(inputs.shape[0], *once.shape[1:])

    def extra_repr(self) -> str:
        return f"lanes={self.lanes}"


class Linear(nn.Linear):
    """torch's linear layer, its products through ``rlconf.nn.gemm`` (oneDNN on a CPU where that is faster):
    the same parameters, names and initialisation, so checkpoints and exports see an ``nn.Linear``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)


# The activations oneDNN computes as a linear layer's post-op (Layers), by oneDNN's name for each.
POST_OPS: dict[type, str] = {Tanh: "tanh", nn.ReLU: "relu"}


class Layers(nn.Sequential):
    """``nn.Sequential`` whose linear layers run together with an activation that follows them (tanh, ReLU):
    where a layer's product goes to oneDNN (``rlconf.nn.gemm``), oneDNN computes the activation on the product's
    output while it is still in cache, and its gradient in one pass, instead of the two to five passes of the
    separate module; elsewhere the two modules run as they always have. The same modules under the same names:
    checkpoints, exports and ``print(model)`` see a Sequential. (MAPPO's 256-unit tanh layer at 1,600 rows: its
    forward and backward 27% faster.)"""

    def __init__(self, *modules: nn.Module):
        super().__init__(*modules)
        self._steps()  # worked out here, so that a compiled forward only reads them

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (A fused step calls the activation's forward itself: a module's call adds its hooks' bookkeeping.)
        for layer, activation, post in self._steps():
            x = layer(x) if post is None else linear(x, layer.weight, layer.bias, activation.forward, post)
        return x

    def _steps(self) -> tuple[tuple[nn.Module, nn.Module | None, str | None], ...]:
        """(module, the activation fused after it, oneDNN's name for that) in order, worked out once for these
        modules: on an acting step of a small network, doing it at every call cost as much as a layer's product."""
        modules = tuple(self._modules.values())
        cached = self.__dict__.get("_cached_steps")
        if cached is not None and cached[0] == modules:  # the same modules (a tuple compares them by identity)
            return cached[1]
        steps, i = [], 0
        while i < len(modules):
            layer = modules[i]
            post = POST_OPS.get(type(modules[i + 1])) if i + 1 < len(modules) and type(layer) in FUSABLE else None
            steps.append((layer, modules[i + 1] if post else None, post))
            i += 2 if post else 1
        built = tuple(steps)
        self.__dict__["_cached_steps"] = (modules, built)  # not an attribute nn.Module tracks
        return built


class Linear0(Linear):
    """A linear layer whose weights and bias start at zero.

    As an output layer it makes every initial prediction zero (equal action values, uniform categorical
    logits), so early targets are not dominated by random initial outputs; the layer still learns, since
    its gradient depends on its inputs, not its weights.
    """

    def reset_parameters(self) -> None:
        nn.init.zeros_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)


# The layers Layers runs with the activation after them: not the noisy ones, whose training forward adds noise.
FUSABLE = (Linear, Linear0)


class Aggregation(nn.Module):
    """Dueling aggregation (Wang et al. 2016): ``value + advantage - mean(advantage)`` over the action dim.

    Subtracting the mean advantage makes the split into value and advantage identifiable: the value stream
    alone carries the state's value, and the advantages of one state sum to zero.
    """

    def __init__(self, action_dim: int = -1):
        super().__init__()
        self.action_dim = action_dim

    def forward(self, value: torch.Tensor, advantage: torch.Tensor) -> torch.Tensor:
        return value + advantage - advantage.mean(self.action_dim, keepdim=True)


class Dueling(nn.Module):
    """Action values from a value stream ``[B, 1]`` and an advantage stream ``[B, A]`` on the same features."""

    def __init__(self, value_model: nn.Module, advantage_model: nn.Module):
        super().__init__()
        self.value_model = value_model
        self.advantage_model = advantage_model
        self.aggregation = Aggregation(-1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.aggregation(self.value_model(features), self.advantage_model(features))


class CategoricalDueling(nn.Module):
    """Dueling for return distributions: logits ``[B, A, atoms]`` from a value stream ``[B, atoms]`` and an
    advantage stream ``[B, A * atoms]``, aggregated atom by atom over the actions (Rainbow, Hessel et al. 2018).
    """

    def __init__(self, value_model: nn.Module, advantage_model: nn.Module):
        super().__init__()
        self.value_model = value_model
        self.advantage_model = advantage_model
        self.aggregation = Aggregation(1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        value = self.value_model(features)
        batch, atoms = value.shape
        advantage = self.advantage_model(features).view(batch, -1, atoms)
        return self.aggregation(value.unsqueeze(1), advantage)


class _Noisy(Linear):
    """A linear layer whose ``weight`` and ``bias`` are means, plus learned noise scales ``weight_sigma`` and
    ``bias_sigma``. Fresh noise is drawn on every forward pass in training mode; in eval mode the layer is
    the mean-weight linear, so evaluation is deterministic."""

    def __init__(self, in_features: int, out_features: int, sigma_init: float):
        super().__init__(in_features, out_features)
        self.sigma_init = sigma_init
        self.weight_sigma = nn.Parameter(torch.full_like(self.weight, self.initial_sigma()))
        self.bias_sigma = nn.Parameter(torch.full_like(self.bias, self.initial_sigma()))

    def initial_sigma(self) -> float:
        return self.sigma_init

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.noisy_forward(x) if self.training else super().forward(x)

    def noisy_forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, sigma_init={self.sigma_init}"


class NoisyLinear(_Noisy):
    """Independent Gaussian noise on every weight (Fortunato et al. 2018): ``in * out`` normals per pass."""

    def __init__(self, in_features: int, out_features: int, sigma_init: float = 0.017):
        super().__init__(in_features, out_features, sigma_init)

    def reset_parameters(self) -> None:
        bound = math.sqrt(3 / self.in_features)
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    def noisy_forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = torch.addcmul(self.weight, self.weight_sigma, torch.randn_like(self.weight))
        bias = torch.addcmul(self.bias, self.bias_sigma, torch.randn_like(self.bias))
        return linear(x, weight, bias)


# Below this many rows a factorised noisy layer never builds its noisy weight matrix (measured crossover).
SMALL_BATCH = 16


class NoisyFactorizedLinear(_Noisy):
    """Factorised Gaussian noise (Fortunato et al. 2018), the variant Rainbow uses.

    The noise of weight ``(i, j)`` is ``f(e_out[i]) * f(e_in[j])`` with ``f(x) = sign(x) sqrt(|x|)``: one
    forward pass draws ``in + out`` normals instead of ``in * out``. ``sigma`` starts at
    ``sigma_init / sqrt(in_features)``.
    """

    def __init__(self, in_features: int, out_features: int, sigma_init: float = 0.5):
        super().__init__(in_features, out_features, sigma_init)

    def initial_sigma(self) -> float:
        return self.sigma_init / math.sqrt(self.in_features)

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.in_features)
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    def noisy_forward(self, x: torch.Tensor) -> torch.Tensor:
        like = {"device": self.weight.device, "dtype": self.weight.dtype}
        noise_in = _signed_sqrt(torch.randn(self.in_features, **like))
        noise_out = _signed_sqrt(torch.randn(self.out_features, **like))
        if x.numel() < SMALL_BATCH * self.in_features:
            # Few rows (acting): scaling inputs and outputs costs two thin matmuls instead of building the
            # [out, in] noisy weight, 3x faster for one observation through a 3136x512 layer.
            noise = F.linear(x * noise_in, self.weight_sigma, self.bias_sigma)
            return torch.addcmul(F.linear(x, self.weight, self.bias), noise, noise_out)
        # Many rows (training batches): building the noisy weight once and one matmul measured faster.
        weight = torch.addcmul(self.weight, self.weight_sigma, torch.outer(noise_out, noise_in))
        bias = torch.addcmul(self.bias, self.bias_sigma, noise_out)
        return linear(x, weight, bias)


def _signed_sqrt(x: torch.Tensor) -> torch.Tensor:
    return x.sign() * x.abs().sqrt()
