"""``rlconf export``: a trained run's greedy test policy as a TorchScript module or an ONNX graph, to act
without rlconf (a C++ program, onnxruntime, a robot).

The graph maps a batch of observations to a batch of actions: the body's preprocessing that depends on the
observation alone (observation normalisation with the run's frozen statistics, masked components), then the
agent's networks and its greedy choice (the argmax of Q, the policy's most probable action), then, for
continuous actions, the clip to the action space that the environment would apply. A body that keeps
something per environment (a frame stack, an episode's time) cannot be a function of one observation: the
caller does that part, and the export says how (``feeding``, also in the ``.json`` written beside the file).
Tabular, bandit and multi-agent agents are refused in one line. Where the environment says which actions are
legal (an action mask: rlconf.core.layout), the graph takes the mask as a second input, ``action_mask`` (bool
``[batch, width]``, True = legal), and never chooses a masked action.

A recurrent policy (R2D1, A2C and PPO with ``approximation.recurrent``) remembers the episode so far: its graph
takes the recurrent state as inputs after those (``state_h`` and ``state_c`` of an LSTM, ``state_h`` of a GRU,
float32 ``[batch, hidden]``) and returns the state after the step beside the action (``next_state_h`` ...). The
caller carries it as the agent does (rlconf.agents._recurrent.CarriedState): zeros at an episode's first step,
then the previous step's outputs. Of an actor and a critic side by side only the actor's state is in the graph.
R2D1 with ``agent.prev_action_reward`` reads the previous action and reward too: its graph takes them before the
state (``previous_action`` int64 ``[batch]``, ``previous_reward`` float32 ``[batch]``), -1 and 0 at an episode's
first step, then the action the graph chose at the step before and the reward the environment gave for it.

The run directory is read as ``rlconf eval`` reads it (config.yaml as data, the checkpoint as tensors). The
written file is loaded back (TorchScript by torch.jit, ONNX by onnxruntime) and must choose the graph's actions
on observations drawn from its input space before the export is reported done (a recurrent one over
``CHECKED_STEPS`` steps, each file fed its own state outputs, whose states must agree too).
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.agents import NotExportable, PolicyGraph
from rlconf.core.layout import ACTION_MASK, layout_of, mask_width
from rlconf.errors import first_line
from rlconf.experiments.playback.play import PlaybackError, load_run
from rlconf.files import atomic_write, write_json

FORMATS = {"torchscript": ".pt", "onnx": ".onnx"}
ONNX_MISSING = ("rlconf export --format onnx needs onnx, onnxscript (torch's exporter) and onnxruntime (to check "
                "the file): pip install 'rlconf[export]'")
CHECKED_OBSERVATIONS = 256  # drawn from the observation space to check a written file against the agent
CONTINUOUS_TOLERANCE = 1e-5  # how far a continuous action may stray (float rounding of another runtime)
CHECKED_STEPS = 4  # steps a recurrent graph is checked over, each from the state the step before returned
STATE_TOLERANCE = 1e-4  # how far a recurrent state may stray after CHECKED_STEPS steps in another runtime
STATE_START = ("zeros at an episode's first step (after a step whose state ended an episode), then the "
               "previous step's next_state outputs")
PREVIOUS_START = ("-1 and 0 at an episode's first step, then the action chosen at the previous step and the "
                  "reward the environment gave for it")


def export_run(run_dir: str | Path, fmt: str, out: str | Path | None = None, which: str = "last",
               plugins: list[str] | None = None, group: str | None = None) -> dict[str, Any]:
    """Write the greedy test policy of ``run_dir`` (checkpoint ``which``) in format ``fmt`` to ``out``
    (default: RUN_DIR/policy.onnx, policy.pt; policy-best.onnx for ``best``; a team's policy-<group>.onnx), and
    its description to ``out`` + ``.json``; returns that description. A team has a policy per group of agents:
    ``group`` names it (needed where there are several). PlaybackError (one line) for what cannot be exported."""
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
        masked = env.masks_actions
        groups = dict(env.agent_groups)
    finally:
        env.close()
    group = _team_group(groups, group, playback.settings.env.name)
    try:
        if group is None:
            graph = agent.test_agent().policy_graph()
        else:  # one group's policy, on each of its agents' own inputs
            graph, observation_space = agent.test_agent().group_graph(group)
            action_space, masked = groups[group].action_space, False
    except NotExportable as error:
        raise PlaybackError(f"{playback.run_dir}: agent={playback.settings.agent_name} cannot be exported: "
                            f"{error}") from None
    # Weights that need no gradient: whoever loads the file gets plain actions (.numpy() without torch.no_grad).
    module: torch.nn.Module = _InTheBox(graph, action_space).eval().requires_grad_(False)
    path = Path(out) if out is not None else playback.run_dir / _default_name(fmt, which, group)
    input_space = graph.input_space(observation_space)
    if graph.state_parts:  # a recurrent policy: the state goes in and out too, checked over several steps
        return _export_recurrent(playback, graph, module, (fmt, path, which), input_space, action_space, masked)
    seed = playback.settings.run.seed
    observations = _observations(input_space, CHECKED_OBSERVATIONS, seed)
    layout = layout_of(input_space)
    inputs = _observation_inputs(input_space, observations)
    if layout is not None:  # a Dict or Tuple observation: an input of its own for each key, read by its encoder
        module = _FromKeys(module, list(inputs), masked)
    if masked:
        inputs[ACTION_MASK] = legal_masks(action_space, CHECKED_OBSERVATIONS, seed)
    with torch.inference_mode():  # eagerly first: what a body builds on its first call is then built for good
        expected = module(*(torch.as_tensor(x) for x in inputs.values())).numpy()
    atomic_write(path, lambda tmp: _WRITERS[fmt](module, {name: x[:2] for name, x in inputs.items()}, tmp))
    produced = run_exported(path, fmt, inputs)
    if masked and not _all_legal(produced, inputs[ACTION_MASK], action_space):
        path.unlink(missing_ok=True)
        raise PlaybackError(f"{path}: the written {fmt} file chose masked actions; nothing was kept")
    if not actions_agree(expected, produced, action_space):
        path.unlink(missing_ok=True)
        raise PlaybackError(f"{path}: the written {fmt} file chose other actions than the policy it was written "
                            f"from on {CHECKED_OBSERVATIONS} observations; nothing was kept")
    description = _described(playback, (fmt, path, which), inputs, input_space, produced, action_space, graph)
    write_json(description_path(path), description)
    return description


def _described(playback: Any, written: tuple[str, Path, str], inputs: dict[str, np.ndarray], input_space: gym.Space,
               actions: np.ndarray, action_space: gym.Space, graph: PolicyGraph) -> dict[str, Any]:
    """The description written beside the file (``written``: its format, path and checkpoint): what the graph
    takes (``inputs``: the checked ones, by name) and gives (``actions``: the checked ones)."""
    fmt, path, which = written
    description = {
        "format": fmt, "file": str(path), "run_dir": str(playback.run_dir), "agent": playback.settings.agent_name,
        "env": playback.settings.env.name, "checkpoint": which, "checkpoint_step": playback.step,
        **_described_inputs(inputs, input_space, layout_of(input_space)),
        "output": {"name": "action", "shape": ["batch", *actions.shape[1:]], "dtype": str(actions.dtype)},
        "action_space": str(action_space), "feeding": graph.feeding, "checked_observations": CHECKED_OBSERVATIONS,
    }
    if ACTION_MASK in inputs:
        description[ACTION_MASK] = {"name": ACTION_MASK, "shape": ["batch", mask_width(action_space)],
                                    "dtype": "bool", "legal": True}
    return description


def _export_recurrent(playback: Any, graph: PolicyGraph, module: torch.nn.Module, written: tuple[str, Path, str],
                      input_space: gym.Space, action_space: gym.Space, masked: bool) -> dict[str, Any]:
    """``export_run`` for a recurrent graph (``module``): its inputs are the observation's (one, or one per key),
    the action mask where there is one, then the state's parts; its outputs the action, then the parts after
    the step. The written file is checked over ``CHECKED_STEPS`` steps of ``CHECKED_OBSERVATIONS`` entries
    from zeros, each run (the module, the file) fed the state it returned the step before."""
    fmt, path, _ = written
    n, seed = CHECKED_OBSERVATIONS, playback.settings.run.seed
    inputs = _observation_inputs(input_space, _observations(input_space, n * CHECKED_STEPS, seed))
    keys = None if layout_of(input_space) is None else list(inputs)
    if masked:
        inputs[ACTION_MASK] = legal_masks(action_space, n * CHECKED_STEPS, seed)
    if graph.previous_actions:  # any previous action (-1: none) and reward
        rng = np.random.default_rng(seed)
        inputs["previous_action"] = rng.integers(-1, graph.previous_actions, size=n * CHECKED_STEPS)
        inputs["previous_reward"] = rng.normal(size=n * CHECKED_STEPS).astype(np.float32)
    names = [f"state_{part}" for part in graph.state_parts]
    module = _Recurrent(module, keys, masked, names, bool(graph.previous_actions))
    steps = [{name: x[t * n:(t + 1) * n] for name, x in inputs.items()} for t in range(CHECKED_STEPS)]
    zeros = {name: np.zeros((n, graph.state_width), np.float32) for name in names}

    def eagerly(feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        with torch.inference_mode():
            return [x.numpy() for x in module(*(torch.as_tensor(x) for x in feed.values()))]

    expected = _unrolled(eagerly, steps, zeros)  # eagerly first, as export_run
    example = {name: x[:2] for name, x in (steps[0] | zeros).items()}
    atomic_write(path, lambda tmp: _WRITERS[fmt](module, example, tmp))
    produced = _unrolled(exported_runner(path, fmt), steps, zeros)
    if masked and not all(_all_legal(out[0], feed[ACTION_MASK], action_space)
                          for out, feed in zip(produced, steps, strict=True)):
        path.unlink(missing_ok=True)
        raise PlaybackError(f"{path}: the written {fmt} file chose masked actions; nothing was kept")
    if not all(actions_agree(mine[0], theirs[0], action_space) and _states_agree(mine[1:], theirs[1:])
               for mine, theirs in zip(expected, produced, strict=True)):
        path.unlink(missing_ok=True)
        raise PlaybackError(f"{path}: the written {fmt} file chose other actions or carried another state than "
                            f"the policy it was written from over {CHECKED_STEPS} steps of {n} observations; "
                            "nothing was kept")
    part = {"shape": ["batch", graph.state_width], "dtype": "float32"}
    description = _described(playback, written, steps[0], input_space, produced[0][0], action_space, graph) | {
        "state": {"inputs": [{"name": name, **part} for name in names],
                  "outputs": [{"name": f"next_{name}", **part} for name in names], "start": STATE_START},
        "checked_steps": CHECKED_STEPS}
    if graph.previous_actions:
        description["previous"] = {"inputs": [{"name": "previous_action", "shape": ["batch"], "dtype": "int64"},
                                              {"name": "previous_reward", "shape": ["batch"], "dtype": "float32"}],
                                   "start": PREVIOUS_START}
    write_json(description_path(path), description)
    return description


def _observation_inputs(space: gym.Space, observations: np.ndarray) -> dict[str, np.ndarray]:
    """The graph's observation inputs by name: ``observation``, or one per key of a Dict or Tuple observation."""
    layout = layout_of(space)
    if layout is None:
        return {"observation": observations}
    return {key: np.ascontiguousarray(value) for key, value in layout.without_mask().unpack(observations).items()}


def _unrolled(run: Callable[[dict[str, np.ndarray]], list[np.ndarray]], steps: list[dict[str, np.ndarray]],
              state: dict[str, np.ndarray]) -> list[list[np.ndarray]]:
    """The outputs of ``run`` on each step's inputs, fed from ``state`` and then the state it returns."""
    outputs = []
    for feed in steps:
        out = run(feed | state)
        outputs.append(out)
        state = dict(zip(state, out[1:], strict=True))
    return outputs


def _states_agree(expected: list[np.ndarray], produced: list[np.ndarray]) -> bool:
    return len(expected) == len(produced) and all(
        mine.shape == theirs.shape and np.allclose(mine, theirs, atol=STATE_TOLERANCE, rtol=0)
        for mine, theirs in zip(expected, produced, strict=True))


def description_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def run_exported(path: str | Path, fmt: str, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The actions the exported file at ``path`` chooses for ``inputs`` (the graph's inputs by name, in its order:
    ``observation``, then ``action_mask`` where there is one): TorchScript through ``torch.jit.load``, ONNX
    through onnxruntime."""
    return exported_runner(path, fmt)(inputs)[0]


def exported_runner(path: str | Path, fmt: str) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    """The exported file at ``path``, loaded once, as a function of its inputs by name (in the graph's order) to
    its outputs: the actions, then a recurrent graph's state after the step."""
    if fmt == "torchscript":
        module = torch.jit.load(str(path), map_location="cpu")

        def by_torchscript(inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
            with torch.inference_mode():
                outputs = module(*(torch.as_tensor(x) for x in inputs.values()))
            return [x.numpy() for x in (outputs if isinstance(outputs, tuple) else (outputs,))]

        return by_torchscript
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return lambda inputs: session.run(None, inputs)


def legal_masks(action_space: gym.Space, n: int, seed: int) -> np.ndarray:
    """``n`` random action masks of ``action_space`` (about half the actions legal), each with a legal value in
    every action dimension (as ``core.layout.check_mask`` requires)."""
    rng = np.random.default_rng(seed)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        sizes = [int(k) for k in action_space.nvec.reshape(-1)]
    elif isinstance(action_space, gym.spaces.MultiBinary):
        sizes = [2] * (mask_width(action_space) // 2)
    else:
        sizes = [mask_width(action_space)]
    masks = rng.random((n, sum(sizes))) < 0.5
    offsets = np.cumsum([0, *sizes[:-1]])
    for offset, size in zip(offsets, sizes, strict=True):
        masks[np.arange(n), offset + rng.integers(size, size=n)] = True
    return masks


def _all_legal(actions: np.ndarray, masks: np.ndarray, action_space: gym.Space) -> bool:
    """Whether every action (a row of indices, or one index) is legal under its row of ``masks``."""
    actions = actions.reshape(len(actions), -1).astype(np.int64)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        actions = actions - action_space.start.reshape(-1) + np.cumsum([0, *action_space.nvec.reshape(-1)[:-1]])
    elif isinstance(action_space, gym.spaces.MultiBinary):
        actions = actions + 2 * np.arange(actions.shape[1])
    return bool(np.take_along_axis(masks, actions, axis=1).all())


def actions_agree(expected: np.ndarray, produced: np.ndarray, action_space: gym.Space) -> bool:
    if expected.shape != produced.shape:
        return False
    if isinstance(action_space, gym.spaces.Box):
        return bool(np.allclose(expected, produced, atol=CONTINUOUS_TOLERANCE, rtol=0))
    return bool((expected == produced).all())


def _described_inputs(inputs: dict[str, np.ndarray], space: gym.Space, layout: Any) -> dict[str, Any]:
    """The graph's observation inputs as the description names them: ``input`` (one array), or ``inputs`` (one
    per key of a Dict or Tuple observation, dotted for nested keys; its space in ``observation_space``)."""
    if layout is None:
        return {"input": {"name": "observation", "shape": ["batch", *space.shape], "dtype": str(space.dtype)}}
    return {"inputs": [{"name": leaf.key, "shape": ["batch", *leaf.shape], "dtype": leaf.dtype.name}
                       for leaf in layout.inputs if leaf.key in inputs],
            "observation_space": str(layout.space)}


class _FromKeys(torch.nn.Module):
    """The graph of a Dict or Tuple observation taking one input per key (the observation as the environment
    gives it, its arrays each in its own dtype and shape) instead of packed rows: the encoders read them as they
    are (rlconf.nn.encoders), nothing packs them."""

    def __init__(self, module: torch.nn.Module, keys: list[str], masked: bool):
        super().__init__()
        self.module, self.keys, self.masked = module, keys, masked

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        observation = dict(zip(self.keys, inputs[:len(self.keys)], strict=True))
        return self.module(observation, inputs[len(self.keys)] if self.masked else None)


class _Recurrent(torch.nn.Module):
    """A recurrent graph with flat inputs, in this order: the observation (one, or one per key of a Dict or
    Tuple: ``keys``), the action mask where there is one, the previous action and reward where the network
    reads them (``previous``), the state's parts (``names``); its outputs: the action, then the state's parts
    after the step (``outputs``, the names ONNX gives them)."""

    def __init__(self, module: torch.nn.Module, keys: list[str] | None, masked: bool, names: list[str],
                 previous: bool = False):
        super().__init__()
        self.module, self.keys, self.masked, self.previous = module, keys, masked, previous
        self.outputs = ["action", *(f"next_{name}" for name in names)]

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        taken = 1 if self.keys is None else len(self.keys)
        observation = inputs[0] if self.keys is None else dict(zip(self.keys, inputs[:taken], strict=True))
        mask = inputs[taken] if self.masked else None
        taken += self.masked
        previous = tuple(inputs[taken:taken + 2]) if self.previous else ()
        taken += len(previous)
        actions, after = self.module(observation, mask, tuple(inputs[taken:]), previous)
        return (actions, *after)


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

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor | None = None,
                state: tuple[torch.Tensor, ...] | None = None, previous: tuple[torch.Tensor, ...] = ()) -> Any:
        """The actions; with a recurrent ``state``, ``(actions, state after the step)`` (``previous``: the
        previous action and reward, where the graph reads them)."""
        if state is None:
            return self._clipped(self.policy(observation, action_mask))
        actions, after = self.policy(observation, action_mask, state, previous)
        return self._clipped(actions), after

    def _clipped(self, actions: torch.Tensor) -> torch.Tensor:
        if self.box:  # elementwise, so each dimension keeps its own bounds (ONNX's Clip takes scalars only)
            actions = torch.minimum(torch.maximum(actions, self.low), self.high)
        return actions


def _write_torchscript(module: torch.nn.Module, example: dict[str, np.ndarray], path: str) -> None:
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # torch.jit's notice that torch.export is its successor
        traced = torch.jit.trace(module, tuple(torch.as_tensor(x) for x in example.values()))
    traced.save(path)


def _write_onnx(module: torch.nn.Module, example: dict[str, np.ndarray], path: str) -> None:
    batch = torch.export.Dim("batch")
    dynamic: tuple = tuple({0: batch} for _ in example)  # every input's first axis is the batch
    if isinstance(module, _FromKeys | _Recurrent):  # inputs taken as ``*inputs``: one argument to torch.export
        dynamic = (dynamic,)
    # The exporter narrates its passes on stdout and logs about packages it can do without (torchvision): the
    # command says one line.
    exporter_log = logging.getLogger("torch.onnx")
    level = exporter_log.level
    exporter_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, tuple(torch.as_tensor(x) for x in example.values()), path, dynamo=True,
                              input_names=list(example), output_names=getattr(module, "outputs", ["action"]),
                              dynamic_shapes=dynamic, external_data=False, verbose=False)
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


def _default_name(fmt: str, which: str, group: str | None = None) -> str:
    tag = ("" if group is None else f"-{group}") + ("" if which == "last" else f"-{which}")
    return f"policy{tag}{FORMATS[fmt]}"


def _team_group(groups: dict[str, Any], group: str | None, env: str) -> str | None:
    """The group whose policy a team's export writes: ``group``, or a team's only one; None for other runs."""
    if not groups:
        if group is not None:
            raise PlaybackError(f"--group {group}: env={env} is not a team of agents; --group picks a team's group")
        return None
    if group is None and len(groups) == 1:
        return next(iter(groups))
    if group not in groups:
        given = "no --group" if group is None else f"--group {group}"
        raise PlaybackError(f"{given}: env={env} has a policy for each group of agents; allowed: "
                            f"{', '.join(f'--group {name}' for name in groups)}")
    return group


def _observations(space: gym.Space, n: int, seed: int) -> np.ndarray:
    """``n`` observations drawn from ``space`` (an unbounded Box's from a normal distribution)."""
    space.seed(seed)
    return np.stack([space.sample() for _ in range(n)]).astype(space.dtype)
