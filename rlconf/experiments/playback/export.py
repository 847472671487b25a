"""``rlconf export``: a trained run's greedy test policy as a TorchScript module or an ONNX graph, to act
without rlconf (a C++ program, onnxruntime, a robot).

The graph maps a batch of observations to a batch of actions: the body's preprocessing that depends on the
observation alone (observation normalisation with the run's frozen statistics, masked components), then the
agent's networks and its greedy choice (the argmax of Q, the policy's most probable action), then, for
continuous actions, the clip to the action space that the environment would apply. A body that keeps
something per environment (a frame stack, an episode's time) cannot be a function of one observation: the
caller does that part, and the export says how (``feeding``, also in the ``.json`` written beside the file).
Recurrent policies, tabular, bandit and multi-agent agents are refused in one line.

The run directory is read as ``rlconf eval`` reads it (config.yaml as data, the checkpoint as tensors). The
written file is loaded back (TorchScript by torch.jit, ONNX by onnxruntime) and must choose the graph's actions
on observations drawn from its input space before the export is reported done.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.agents import NotExportable, PolicyGraph
from rlconf.errors import first_line
from rlconf.experiments.playback.play import PlaybackError, load_run
from rlconf.files import atomic_write, write_json

FORMATS = {"torchscript": ".pt", "onnx": ".onnx"}
ONNX_MISSING = ("rlconf export --format onnx needs onnx, onnxscript (torch's exporter) and onnxruntime (to check "
                "the file): pip install 'rlconf[export]'")
CHECKED_OBSERVATIONS = 256  # drawn from the observation space to check a written file against the agent
CONTINUOUS_TOLERANCE = 1e-5  # how far a continuous action may stray (float rounding of another runtime)


def export_run(run_dir: str | Path, fmt: str, out: str | Path | None = None, which: str = "last",
               plugins: list[str] | None = None) -> dict[str, Any]:
    """Write the greedy test policy of ``run_dir`` (checkpoint ``which``) in format ``fmt`` to ``out``
    (default: RUN_DIR/policy.onnx, policy.pt; policy-best.onnx for ``best``), and its description to
    ``out`` + ``.json``; returns that description. PlaybackError (one line) for what cannot be exported."""
    if fmt not in FORMATS:
        raise PlaybackError(f"--format {fmt}: unknown; allowed: {', '.join(FORMATS)}")
    if fmt == "onnx":
        _check_onnx_exporter()
    if out is not None and not Path(out).parent.is_dir():
        raise PlaybackError(f"--out {out}: no folder {Path(out).parent}")
    playback = load_run(run_dir, "cpu", plugins, which)  # a graph is written from CPU tensors, for any device
    env = playback.make_env(1)
    try:
        agent = playback.agent(env)
        observation_space, action_space = env.observation_space, env.action_space
    finally:
        env.close()
    try:
        graph = agent.test_agent().policy_graph()
    except NotExportable as error:
        raise PlaybackError(f"{playback.run_dir}: agent={playback.settings.agent_name} cannot be exported: "
                            f"{error}") from None
    # Weights that need no gradient: whoever loads the file gets plain actions (.numpy() without torch.no_grad).
    module = _InTheBox(graph, action_space).eval().requires_grad_(False)
    path = Path(out) if out is not None else playback.run_dir / _default_name(fmt, which)
    input_space = graph.input_space(observation_space)
    observations = _observations(input_space, CHECKED_OBSERVATIONS, playback.settings.run.seed)
    with torch.inference_mode():  # eagerly first: what a body builds on its first call is then built for good
        expected = module(torch.as_tensor(observations)).numpy()
    atomic_write(path, lambda tmp: _WRITERS[fmt](module, observations[:2], tmp))
    produced = run_exported(path, fmt, observations)
    if not actions_agree(expected, produced, action_space):
        path.unlink(missing_ok=True)
        raise PlaybackError(f"{path}: the written {fmt} file chose other actions than the policy it was written "
                            f"from on {CHECKED_OBSERVATIONS} observations; nothing was kept")
    description = {
        "format": fmt, "file": str(path), "run_dir": str(playback.run_dir), "agent": playback.settings.agent_name,
        "env": playback.settings.env.name, "checkpoint": which, "checkpoint_step": playback.step,
        "input": {"name": "observation", "shape": ["batch", *input_space.shape], "dtype": str(input_space.dtype)},
        "output": {"name": "action", "shape": ["batch", *produced.shape[1:]], "dtype": str(produced.dtype)},
        "action_space": str(action_space), "feeding": graph.feeding, "checked_observations": len(observations),
    }
    write_json(description_path(path), description)
    return description


def description_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def run_exported(path: str | Path, fmt: str, observations: np.ndarray) -> np.ndarray:
    """The actions the exported file at ``path`` chooses for ``observations``: TorchScript through
    ``torch.jit.load``, ONNX through onnxruntime."""
    if fmt == "torchscript":
        module = torch.jit.load(str(path), map_location="cpu")
        with torch.inference_mode():
            return module(torch.as_tensor(observations)).numpy()
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"observation": observations})[0]


def actions_agree(expected: np.ndarray, produced: np.ndarray, action_space: gym.Space) -> bool:
    if expected.shape != produced.shape:
        return False
    if isinstance(action_space, gym.spaces.Box):
        return bool(np.allclose(expected, produced, atol=CONTINUOUS_TOLERANCE, rtol=0))
    return bool((expected == produced).all())


class _InTheBox(torch.nn.Module):
    """The graph's actions clipped to a Box action space, as the environment clips them (discrete ones as
    they are)."""

    def __init__(self, graph: PolicyGraph, action_space: gym.Space):
        super().__init__()
        self.policy = graph  # not ``graph``: torch.export's modules have a ``graph`` of their own
        self.box = isinstance(action_space, gym.spaces.Box)
        if self.box:
            self.register_buffer("low", torch.as_tensor(action_space.low, dtype=torch.float32))
            self.register_buffer("high", torch.as_tensor(action_space.high, dtype=torch.float32))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        actions = self.policy(observation)
        if self.box:  # elementwise, so each dimension keeps its own bounds (ONNX's Clip takes scalars only)
            actions = torch.minimum(torch.maximum(actions, self.low), self.high)
        return actions


def _write_torchscript(module: torch.nn.Module, example: np.ndarray, path: str) -> None:
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # torch.jit's notice that torch.export is its successor
        traced = torch.jit.trace(module, torch.as_tensor(example))
    traced.save(path)


def _write_onnx(module: torch.nn.Module, example: np.ndarray, path: str) -> None:
    batch = torch.export.Dim("batch")
    # The exporter narrates its passes on stdout and logs about packages it can do without (torchvision): the
    # command says one line.
    exporter_log = logging.getLogger("torch.onnx")
    level = exporter_log.level
    exporter_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (torch.as_tensor(example),), path, dynamo=True, input_names=["observation"],
                              output_names=["action"], dynamic_shapes=({0: batch},), external_data=False,
                              verbose=False)
    except OSError:
        raise
    except Exception as error:  # the exporter's own failure (an operator it cannot translate): one line
        raise PlaybackError(f"torch.onnx could not translate this policy: {first_line(error)}; --format "
                            "torchscript may") from None
    finally:
        exporter_log.setLevel(level)


_WRITERS = {"torchscript": _write_torchscript, "onnx": _write_onnx}


def _check_onnx_exporter() -> None:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import onnxscript  # noqa: F401 - torch.onnx's exporter translates through it
    except ImportError:
        raise PlaybackError(ONNX_MISSING) from None


def _default_name(fmt: str, which: str) -> str:
    tag = "" if which == "last" else f"-{which}"
    return f"policy{tag}{FORMATS[fmt]}"


def _observations(space: gym.Space, n: int, seed: int) -> np.ndarray:
    """``n`` observations drawn from ``space`` (an unbounded Box's from a normal distribution)."""
    space.seed(seed)
    return np.stack([space.sample() for _ in range(n)]).astype(space.dtype)
