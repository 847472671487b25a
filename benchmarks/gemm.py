"""A linear layer's three products on a CPU, torch's own kernels against oneDNN's (rlconf.nn.gemm).

    python benchmarks/gemm.py                 # one thread; writes benchmarks/results/gemm-<capability>.md
    python benchmarks/gemm.py --threads 2 --out /tmp/gemm.md

For square layers of 64 to 512 units and batches of 32 to 1,600 rows, the time of the forward product, the input
gradient and the weight gradient (the three an update runs per layer), each the median of ``--repeats`` timings
of ``--number`` calls, then the layers of rlconf's presets that are not square, then those layers with the
activation after them, forward and backward, the activation separate (torch) or computed by oneDNN's product
(rlconf.nn.layers.Layers). ``hardware.cpu_linear=onednn`` sends a product to oneDNN from ``gemm.MIN_UNITS`` units
and ``gemm.MIN_WORK`` multiply-adds (a layer with its activation from ``MIN_UNITS`` outputs, whatever its inputs),
and ``auto`` (the default) does so where torch runs the CPU's AVX-512: these tables are where those rules come
from (gemm-avx512.md and gemm-avx2.md, one per kind of CPU measured), and where to look on another machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
UNITS = (64, 128, 256, 512)
ROWS = (32, 64, 128, 256, 512, 1600)
PRESET_LAYERS = (  # (layer, inputs, outputs, rows of an update's minibatch)
    ("SAC / TD3 on MuJoCo: hidden", 256, 256, 256),
    ("MAPPO on VMAS balance: actor's first", 16, 256, 1600),
    ("MAPPO on VMAS balance: actor's hidden", 256, 256, 1600),
    ("MAPPO on VMAS balance: actor's output", 256, 2, 1600),
    ("DQN on Atari: Nature network's hidden", 3136, 512, 32),
    ("DQN on Atari: output (Breakout)", 512, 4, 32),
    ("PPO on Atari: Nature network's hidden", 3136, 512, 256),
    ("Data-efficient Rainbow: hidden", 576, 256, 32),
)
PRESET_ACTIVATIONS = (  # (layer, inputs, outputs, rows, activation, whether the update needs the input's gradient)
    ("SAC / TD3 on MuJoCo: first (HalfCheetah)", 17, 256, 256, "relu", False),
    ("SAC / TD3 on MuJoCo: hidden", 256, 256, 256, "relu", True),
    ("MAPPO on VMAS balance: actor's first", 16, 256, 1600, "tanh", False),
    ("MAPPO on VMAS balance: actor's hidden", 256, 256, 1600, "tanh", True),
    ("DQN on Atari: Nature network's hidden", 3136, 512, 32, "relu", True),
    ("PPO on Atari: Nature network's hidden", 3136, 512, 256, "relu", True),
    ("Data-efficient Rainbow: hidden", 576, 256, 32, "relu", True),
)


def seconds(call: Callable[[], torch.Tensor], number: int, repeats: int) -> float:
    """The median over ``repeats`` of the mean time of one call, timed over ``number`` calls."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            call()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def layer_products(inputs: int, outputs: int, rows: int, number: int, repeats: int) -> tuple[float, float]:
    """Seconds for one layer's forward, input-gradient and weight-gradient products: torch's, then oneDNN's."""
    from rlconf.nn.gemm import _operator

    generator = torch.Generator().manual_seed(0)
    x, grad = torch.randn(rows, inputs, generator=generator), torch.randn(rows, outputs, generator=generator)
    weight, bias = torch.randn(outputs, inputs, generator=generator), torch.randn(outputs, generator=generator)
    onednn = _operator()
    torch_calls = [lambda: F.linear(x, weight, bias), lambda: grad @ weight, lambda: grad.t() @ x]
    onednn_calls = [lambda: onednn(x, weight, bias, "none", [], ""),
                    lambda: onednn(grad, weight.t(), None, "none", [], ""),
                    lambda: onednn(grad.t(), x.t(), None, "none", [], "")]
    return (sum(seconds(call, number, repeats) for call in torch_calls),
            sum(seconds(call, number, repeats) for call in onednn_calls))


def layer_with_activation(inputs: int, outputs: int, rows: int, post: str, input_grad: bool, number: int,
                          repeats: int) -> tuple[float, float, float]:
    """Seconds for a layer and its activation, forward and backward: torch's linear then rlconf's activation
    module; oneDNN's product then the module; oneDNN's product with the activation as its post-op
    (rlconf.nn.layers.Layers)."""
    from rlconf.nn.gemm import _OneDNNLinear
    from rlconf.nn.layers import Tanh

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(rows, inputs, generator=generator).requires_grad_(input_grad)
    grad = torch.randn(rows, outputs, generator=generator)
    weight = torch.randn(outputs, inputs, generator=generator).mul_(inputs ** -0.5).requires_grad_()
    bias = torch.zeros(outputs).requires_grad_()
    activation = Tanh() if post == "tanh" else torch.nn.ReLU()
    return (seconds(lambda: activation(F.linear(x, weight, bias)).backward(grad), number, repeats),
            seconds(lambda: activation(_OneDNNLinear.apply(x, weight, bias)).backward(grad), number, repeats),
            seconds(lambda: _OneDNNLinear.apply(x, weight, bias, post).backward(grad), number, repeats))


def table(threads: int, number: int, repeats: int) -> list[str]:
    from report import busy_cpu_seconds, machine_info, machine_line

    from rlconf.nn import gemm

    busy, own, start = busy_cpu_seconds(), time.process_time(), time.perf_counter()
    def uses(inputs: int, outputs: int, rows: int) -> str:
        return "oneDNN" if gemm.pays(rows, inputs, outputs) else "torch"

    lines = ["| units | rows | torch (µs) | oneDNN (µs) | torch / oneDNN | cpu_linear=onednn uses |",
             "|--:|--:|--:|--:|--:|---|"]
    for units in UNITS:
        for rows in ROWS:
            ours, theirs = layer_products(units, units, rows, number, repeats)
            lines.append(f"| {units} | {rows:,} | {ours * 1e6:,.0f} | {theirs * 1e6:,.0f} | {ours / theirs:.2f}x "
                         f"| {uses(units, units, rows)} |")
            print(lines[-1], flush=True)
    lines += ["", "The layers of rlconf's presets:", "",
              "| layer | inputs x outputs | rows | torch (µs) | oneDNN (µs) | torch / oneDNN | "
              "cpu_linear=onednn uses |", "|---|--:|--:|--:|--:|--:|---|"]
    for name, inputs, outputs, rows in PRESET_LAYERS:
        ours, theirs = layer_products(inputs, outputs, rows, number, repeats)
        lines.append(f"| {name} | {inputs:,} x {outputs:,} | {rows:,} | {ours * 1e6:,.0f} | {theirs * 1e6:,.0f} | "
                     f"{ours / theirs:.2f}x | {uses(inputs, outputs, rows)} |")
        print(lines[-1], flush=True)
    lines += ["", "The layers of rlconf's presets with the activation after them, forward and backward (the input's "
              "gradient where an update needs it): torch's product then rlconf's activation module; oneDNN's "
              "product then the module; oneDNN's product computing the activation as it writes its output "
              "(`rlconf.nn.layers.Layers`):", "",
              "| layer | inputs x outputs | rows | activation | torch (µs) | oneDNN, then the activation (µs) | "
              "oneDNN fused (µs) | torch / fused | cpu_linear=onednn uses |", "|---|--:|--:|---|--:|--:|--:|--:|---|"]
    for name, inputs, outputs, rows, post, input_grad in PRESET_ACTIVATIONS:
        plain, separate, fused = layer_with_activation(inputs, outputs, rows, post, input_grad, number, repeats)
        used = "oneDNN fused" if gemm.pays(rows, inputs, outputs, activation=True) else "torch"
        lines.append(f"| {name} | {inputs:,} x {outputs:,} | {rows:,} | {post} | {plain * 1e6:,.0f} | "
                     f"{separate * 1e6:,.0f} | {fused * 1e6:,.0f} | {plain / fused:.2f}x | {used} |")
        print(lines[-1], flush=True)
    others = None  # the cores other processes used meanwhile (Linux): is the table fair?
    if busy is not None and (now := busy_cpu_seconds()) is not None:
        others = round(max(0.0, now - busy - (time.process_time() - own)) / (time.perf_counter() - start), 2)
    capability = gemm.cpu_linear.capability
    auto = "oneDNN's where the sizes pay" if gemm.onednn_pays_on(capability) else "torch's throughout"
    return [f"# Linear layers on a CPU: torch's kernels against oneDNN's ({threads} thread{'s' * (threads > 1)})",
            "", f"Machine: {machine_line(machine_info())}; torch's CPU capability {capability}.",
            f"Other processes used {others} cores on average meanwhile." if others is not None else "", "",
            "Each row: one layer's forward product, input gradient and weight gradient, summed; each "
            f"product the median of {repeats} means of {number} calls (`python benchmarks/gemm.py`). "
            f"`hardware.cpu_linear=onednn` uses oneDNN for layers of at least {gemm.MIN_UNITS} inputs "
            f"and outputs whose product is at least {gemm.MIN_WORK:,} multiply-adds (rows x inputs x outputs; "
            f"rlconf.nn.gemm); a layer followed by its activation, from {gemm.MIN_UNITS} outputs and as many "
            f"multiply-adds, whatever its inputs. `auto` (the default) uses {auto} on this CPU ({capability}): "
            "oneDNN's rule where torch runs AVX-512, torch's kernels elsewhere.", "", *lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as rlconf's runs)")
    parser.add_argument("--number", type=int, default=20, help="calls a timing (default 20)")
    parser.add_argument("--repeats", type=int, default=5, help="timings a product (default 5)")
    parser.add_argument("--out", type=Path, help="the report to write (default: benchmarks/results/"
                        "gemm-<torch's CPU capability>.md, e.g. gemm-avx2.md)")
    args = parser.parse_args(argv)
    if args.out is None:
        from rlconf.nn.gemm import cpu_linear

        args.out = HERE / "results" / f"gemm-{cpu_linear.capability.lower()}.md"
    torch.set_num_threads(args.threads)
    report = table(args.threads, args.number, args.repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(report))
    print(f"gemm: wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))  # report.py
    sys.exit(main())
