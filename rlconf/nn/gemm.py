"""The matrix products of linear layers on a CPU (``hardware.cpu_linear``): oneDNN where it is faster, torch's
own elsewhere.

torch computes a float32 linear layer on a CPU with its BLAS (MKL in the x86 wheels). torch also ships oneDNN,
whose matmul it uses for convolutions and for compiled inference but not for eager float32 linear layers. Which
is faster depends on the CPU. On an AMD EPYC with AVX-512 (one thread) oneDNN did a linear layer's three products
(forward, input gradient, weight gradient) about twice as fast as MKL on the layers of rlconf's presets: 1.9x for
256 units at 256 rows (SAC's and TD3's MuJoCo networks), 2.1x at 1,600 rows (MAPPO's on VMAS), 2.3x for the
Nature network's 3,136 x 512 layer at 32 rows (DQN on Atari); on small products it was slower (64 units at 256
rows: 0.8x). On an AMD EPYC with AVX2 only, MKL was the faster on nearly every layer (oneDNN 0.6x to 0.9x its
speed; benchmarks/results/gemm-avx512.md and gemm-avx2.md). ``python benchmarks/gemm.py`` measures both on any
machine.

``Linear`` (every linear layer rlconf builds) routes a layer through oneDNN when ``hardware.cpu_linear`` asks for
it (``onednn``; ``auto``, the default, where the CPU runs AVX-512, as torch reports its capability) and the
product is worth it: float32 on a CPU, at least ``MIN_UNITS`` inputs and outputs, at least ``MIN_WORK``
multiply-adds (so acting on a few environments stays on torch's kernels), and not while tracing, exporting or
compiling (those see torch's plain ``linear``). Otherwise, and with ``hardware.cpu_linear=torch``, it is
``torch.nn.functional.linear``.

The two compute the same products in a different order, so their results differ in the last bits (about 1e-6
relative), as results on two machines do: a run repeats itself exactly under one setting on one machine, and a
run resumed from a checkpoint on the same machine continues as it would have. Where torch's build has no oneDNN,
or its operator refuses a first check, torch's own linear serves and ``describe()`` says why (a run's
provenance.json records it).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from rlconf.settings import CPU_LINEAR_CHOICES

# oneDNN pays from a product of about 2 million multiply-adds (rows x inputs x outputs) between layers of at least
# 64 inputs and outputs; below, torch's kernels were level or faster (benchmarks/results/gemm-avx512.md: 64 units at 256
# rows 0.8x, 256 units at 64 rows 1.4x, a 3,136 x 512 layer at 32 rows 2.3x, 512 x 4 at 32 rows 0.3x).
MIN_UNITS = 64
MIN_WORK = 2**21


@dataclass
class CpuLinear:
    """The process's choice (``configure``), the CPU it was made on (torch's ``capability``), whether it sends
    products to oneDNN there (``wanted``: read on every call), and whether oneDNN's operator is there to serve it."""

    choice: str = "auto"
    capability: str = ""
    wanted: bool = False
    available: bool | None = None  # None: not checked yet
    reason: str = ""

    def active(self) -> bool:
        if not self.wanted:
            return False
        if self.available is None:
            self.available, self.reason = _check_operator()
        return self.available


def onednn_pays_on(capability: str) -> bool:
    """``auto``'s rule: oneDNN where torch runs the CPU's AVX-512 (its capability ``AVX512``; and any later
    x86 level named so), MKL elsewhere (``AVX2``: oneDNN was 0.6x to 0.9x MKL's speed on the presets' layers).
    A rule on the CPU, not a timing: a run takes the same kernels on the same machine every time."""
    return capability.upper().startswith("AVX512")


def cpu_capability() -> str:
    """The widest vector instructions torch's CPU kernels use here (``AVX2``, ``AVX512``, ``DEFAULT``...)."""
    try:
        return torch.backends.cpu.get_cpu_capability()
    except (AttributeError, RuntimeError):  # an old or unusual build: no claim to AVX-512
        return "unknown"


cpu_linear = CpuLinear()


def configure(choice: str) -> None:
    """Set the process's ``hardware.cpu_linear`` before its networks run (as torch's thread count)."""
    if choice not in CPU_LINEAR_CHOICES:
        raise ValueError(f"hardware.cpu_linear={choice!r}; allowed: {', '.join(CPU_LINEAR_CHOICES)}")
    cpu_linear.choice, cpu_linear.capability = choice, cpu_capability()
    cpu_linear.wanted = choice == "onednn" or (choice == "auto" and onednn_pays_on(cpu_linear.capability))


configure(cpu_linear.choice)  # a process that never configures (a script building rlconf's layers) gets auto's


def describe() -> str:
    """Which kernels this process's linear layers use on a CPU, and why: a run's provenance records it."""
    setting = f"hardware.cpu_linear={cpu_linear.choice}"
    if cpu_linear.choice == "torch":
        return f"torch's ({setting})"
    if not cpu_linear.wanted:
        return f"torch's ({setting}: this CPU's capability is {cpu_linear.capability}, where MKL is the faster)"
    if not cpu_linear.active():
        return f"torch's ({setting}: {cpu_linear.reason})"
    why = f", capability {cpu_linear.capability}" if cpu_linear.choice == "auto" else ""
    return f"oneDNN's for the larger products, torch's for the rest ({setting}{why})"


def _operator():
    return torch.ops.mkldnn._linear_pointwise


def _check_operator() -> tuple[bool, str]:
    """Whether oneDNN's linear runs here and agrees with torch's on a small product."""
    if not torch.backends.mkldnn.is_available():
        return False, "torch was built without oneDNN"
    try:
        generator = torch.Generator().manual_seed(0)
        x, weight = torch.randn(4, 8, generator=generator), torch.randn(3, 8, generator=generator)
        ok = torch.allclose(_operator()(x, weight, None, "none", [], ""), x @ weight.t(), atol=1e-5)
    except (RuntimeError, AttributeError, NotImplementedError) as error:
        return False, f"oneDNN's linear operator failed: {str(error).splitlines()[0] if str(error) else error!r}"
    return (True, "oneDNN") if ok else (False, "oneDNN's linear operator disagreed with torch's")


# oneDNN's post-ops for the activations a layer may end in (rlconf.nn.layers.Layers fuses them): each one's
# gradient from the layer's output, as torch's own backward of that activation computes it.
POST_OP_GRADIENTS = {
    "none": None,
    "relu": lambda grad, out: torch.ops.aten.threshold_backward(grad, out, 0),
    "tanh": lambda grad, out: torch.ops.aten.tanh_backward(grad, out),
}


class _OneDNNLinear(torch.autograd.Function):
    """``post(x @ weight.T + bias)`` and its gradients, each product one oneDNN matmul on contiguous 2-d inputs,
    the activation ``post`` (one of ``POST_OP_GRADIENTS``) computed inside the forward product while its output
    is still in cache.

    (A transposed view is handed to oneDNN as it is: it reads the strides. A strided slice of a wider tensor is
    copied first: oneDNN reorders such an operand element by element, a hundred times slower.)"""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                post: str = "none") -> torch.Tensor:
        x = x.contiguous()
        out = _operator()(x, weight, bias, post, [], "")
        ctx.save_for_backward(x, weight, out if post != "none" else None)
        ctx.has_bias, ctx.post = bias is not None, post
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: torch.Tensor):
        x, weight, out = ctx.saved_tensors
        grad = grad.contiguous()
        if ctx.post != "none":
            grad = POST_OP_GRADIENTS[ctx.post](grad, out)
        linear = _operator()
        grad_x = linear(grad, weight.t(), None, "none", [], "") if ctx.needs_input_grad[0] else None
        grad_weight = linear(grad.t(), x.t(), None, "none", [], "") if ctx.needs_input_grad[1] else None
        grad_bias = grad.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_x, grad_weight, grad_bias, None


def pays(rows: int, inputs: int, outputs: int, activation: bool = False) -> bool:
    """Whether a product of this size goes to oneDNN (where ``hardware.cpu_linear`` sends any). With an
    ``activation`` oneDNN computes within it (rlconf.nn.layers.Layers) a layer of few inputs pays too: the
    activation's own passes over the output, which the fused product saves, are then most of the layer's time
    (MAPPO's first layer, 16 x 256 at 1,600 rows with tanh: 2.5x; benchmarks/results/gemm-avx512.md)."""
    return rows * inputs >= _fewest_input_elements((outputs, inputs), activation)


@functools.cache
def _fewest_input_elements(weight_shape: tuple[int, int], activation: bool) -> float:
    """The smallest input (rows x inputs elements) that ``pays`` for a layer of this weight: one comparison a
    call instead of the sizes' arithmetic, which on an acting step of a small network cost as much as the
    product itself."""
    outputs, inputs = weight_shape
    narrowest = outputs if activation else min(inputs, outputs)
    if narrowest < MIN_UNITS:
        return math.inf
    return -(-MIN_WORK // (inputs * outputs)) * inputs  # the fewest rows whose work reaches MIN_WORK, x inputs


def _worth_onednn(x: torch.Tensor, weight: torch.Tensor, activation: bool = False) -> bool:
    """The cheap questions first: this runs on every linear layer's every call, acting's included.
    (torch._C._is_tracing is torch.jit.is_tracing without its check for scripting, which rlconf's layers never
    are: a seventh of the cost.)"""
    if not cpu_linear.wanted or not x.is_cpu or torch._C._is_tracing() or torch.compiler.is_compiling():
        return False  # (before the sizes: a tracer records them as tensors, torch.export as guards on its batch)
    if x.numel() < _fewest_input_elements(weight.shape, activation):
        return False
    exporting = torch.jit.is_scripting() or torch.onnx.is_in_onnx_export()
    return (not exporting and x.dtype == torch.float32 and weight.dtype == torch.float32
            and cpu_linear.active())


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
           activation: Callable[[torch.Tensor], torch.Tensor] | None = None, post: str = "none") -> torch.Tensor:
    """``torch.nn.functional.linear``, through oneDNN where ``hardware.cpu_linear`` and the sizes say so; then
    ``activation`` where one is given, which oneDNN computes as its post-op ``post`` (the same function) within
    the product, and torch's kernels as ``activation`` itself."""
    if not _worth_onednn(x, weight, activation is not None):
        out = F.linear(x, weight, bias)
        return out if activation is None else activation(out)
    if x.dim() == 2:
        return _OneDNNLinear.apply(x, weight, bias, post)
    flat = x.reshape(-1, x.shape[-1])
    return _OneDNNLinear.apply(flat, weight, bias, post).view(*x.shape[:-1], weight.shape[0])
