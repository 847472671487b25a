"""Compiled forward passes (``hardware.compile``): torch.compile where it pays, eager where it does not.

An Approximation runs its model through ``compiled(model)``. Compiling the forward pass compiles its backward
too (AOTAutograd traces both), so the update step and acting both run compiled; the optimiser is torch's fused
Adam, one kernel already. The module itself stays the one the Approximation holds: state dicts, target
copies, checkpoints and ONNX export see plain eager modules whatever this says.

``hardware.compile`` is a setting of the process, like torch's thread count, applied in ``configure`` before
any network is built:

- ``false``: eager.
- ``true``: compiled; on CUDA with CUDA graphs (``reduce-overhead``: a fixed-shape update or acting pass
  becomes one graph launch).
- ``auto``: compiled on CUDA when the run is long enough that compilation (tens of seconds a network) is a
  small part of it; eager on a CPU, where it measured too little gain for its compilation time on rlconf's
  networks (the compile table of benchmarks/results/bench-20261126-140837.md).

A compilation that fails (no C++ compiler, an operation the compiler cannot take) falls back to eager with
one line on stderr naming the reason; the run goes on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from rlconf.errors import first_line

# auto compiles a CUDA run of at least this many environment steps. On an H200 (2026-12-04,
# benchmarks/results/speed/gpu-20261204.md) compiling DQN's Nature network took 7.5 s and saved 0.32 ms a step
# (it updates every 4th step), breaking even at 23k steps; DER's network took 15 s and saved 3.3 ms a step (one update a
# step), breaking even at 4.5k. From 50k steps compiling pays on both by a clear margin: a 100k-step Atari 100k run
# trains about 1.35x faster, compilation included.
AUTO_MIN_STEPS = 50_000


@dataclass(frozen=True)
class Compilation:
    """What ``hardware.compile`` came to for this run: ``mode`` is torch.compile's (None: eager)."""

    mode: str | None
    reason: str


def decide(choice: str, device: str, steps: int) -> Compilation:
    """The compilation ``hardware.compile=choice`` means for a run of ``steps`` on ``device``, and why."""
    cuda = device.startswith("cuda")
    mode = "reduce-overhead" if cuda else "default"
    if choice == "false":
        return Compilation(None, "hardware.compile=false")
    if choice == "true":
        return Compilation(mode, f"hardware.compile=true: torch.compile mode={mode}")
    if not cuda:
        return Compilation(None, f"hardware.compile=auto: eager on {device} (compiled, rlconf's networks gained "
                                 "too little on a CPU for their compilation time); hardware.compile=true compiles")
    if steps < AUTO_MIN_STEPS:
        return Compilation(None, f"hardware.compile=auto: eager for a run of {steps:,} steps (compilation would "
                                 f"take much of it; compiled from {AUTO_MIN_STEPS:,})")
    return Compilation(mode, f"hardware.compile=auto: torch.compile mode={mode} on {device}")


_active = Compilation(None, "hardware.compile=false")
_failed = False  # a compilation failed: every network of the process runs eagerly from then on


def configure(choice: str, device: str, steps: int) -> Compilation:
    """Set the compilation of networks built from now on in this process (``experiments.build.setup.prepare``)."""
    global _active, _failed
    _active, _failed = decide(choice, device, steps), False
    return _active


def active() -> Compilation:
    return _active


def seconds() -> float | None:
    """Wall seconds this process has spent compiling networks (forward and backward graphs; included in its
    training time), or None when it compiles none."""
    if _active.mode is None:
        return None
    try:  # torch keeps the tally in a private module: if it moves, the figure goes missing, not the run
        from torch._dynamo.utils import calculate_time_spent

        return round(float(calculate_time_spent().get("total_wall_time", 0.0)), 3)
    except (ImportError, AttributeError, TypeError):
        return None


def compiled(model: nn.Module) -> Callable[..., torch.Tensor] | nn.Module:
    """``model``'s forward pass as this process compiles it: the model itself when eager."""
    if _active.mode is None:
        return model
    return CompiledForward(model, _active.mode)


class CompiledForward:
    """``torch.compile(model)``, falling back to ``model`` when compilation fails.

    torch.compile compiles on the first call with each new input shape, so a failure shows there: the same
    call then runs eagerly. If it fails eagerly too, the error was the call's own and is raised as eager
    raises it; otherwise compilation is what failed, and every network of the process goes eager, with one
    line saying why.
    """

    def __init__(self, model: nn.Module, mode: str):
        self.model = model
        self.mode = mode
        self._compiled = torch.compile(model, mode=mode)

    def __call__(self, *inputs):
        if _failed:
            return self.model(*inputs)
        try:
            out = self._compiled(*inputs)
        except Exception as error:  # noqa: BLE001 - any compiler failure; the eager call below re-raises real ones
            out = self.model(*inputs)
            fall_back(error)
            return out
        # CUDA graphs write every replay's outputs into the same memory, and an agent holds one call's values
        # while it makes the next (Q(s) and Q(s') in one loss): each caller gets a copy of its own.
        return _cloned(out) if self.mode == "reduce-overhead" else out


def fall_back(error: Exception) -> None:
    """Run every network of this process eagerly from now on, saying once why."""
    global _failed, _active
    _failed, why = True, first_line(error)
    _active = Compilation(None, f"{_active.reason}; compilation failed ({why}): eager")
    print(f"rlconf: torch.compile failed ({why}); the networks run eagerly", file=sys.stderr, flush=True)


def _cloned(out):
    if isinstance(out, torch.Tensor):
        return out.clone()
    if isinstance(out, tuple):
        return tuple(_cloned(o) for o in out)
    return out

