"""The checkpoint format: where a run keeps its checkpoints, how one is written and how one is read back.

A checkpoint is a dict of tensors and plain Python data only, so it loads with ``torch.load(weights_only=True)``
(``load_checkpoint``), which runs no pickled code. Its counters are checked against ``saved.CHECKPOINT_SCHEMA``
and its weights must be finite (rlconf never writes others). Checkpoints of older versions load: those that
kept the components' generators under ``rng["generators"]`` have them moved to where components read them now
(``_move_found_generators``); ``saved.CHECKPOINT_FORMAT`` is the version a checkpoint records.
"""

from __future__ import annotations

import pickle
import re
import warnings
from pathlib import Path
from typing import Any

import torch

from rlconf import distributed
from rlconf.errors import first_line
from rlconf.experiments.rundir.directory import CHECKPOINT
from rlconf.experiments.rundir.saved import CHECKPOINT_SCHEMA, conform

BEST = "best.pt"  # the agent of the best periodic evaluation


def numbered_checkpoints(run_dir: Path) -> dict[int, Path]:
    """The numbered checkpoints a run keeps (checkpoint.keep), by step, oldest first."""
    steps = (p.stem.partition("-")[2] for p in Path(run_dir).glob("checkpoint-*.pt"))
    return {step: Path(run_dir) / f"checkpoint-{step}.pt" for step in sorted(int(s) for s in steps if s.isdigit())}


def checkpoint_path(folder: Path, which: str) -> Path:
    """The file ``which`` names in a run directory: ``last`` (checkpoint.pt), ``best`` (best.pt, the agent of the
    best periodic evaluation) or a step (checkpoint-STEP.pt, kept with checkpoint.keep); a one-line ValueError
    naming what there is when it is not there (the caller says which option named it)."""
    if which == "last":
        return folder / CHECKPOINT
    if which == "best":
        if not (folder / BEST).is_file():
            raise ValueError(f"{folder}: no {BEST} (written when a periodic evaluation beats the best so far; "
                             "this run had none: eval_every=0, or it stopped before its first); allowed: last")
        return folder / BEST
    if which.isdigit():
        path = folder / f"checkpoint-{int(which)}.pt"
        if not path.is_file():
            kept = [str(step) for step in numbered_checkpoints(folder)]
            allowed = ", ".join(["best", "last", *kept]) if kept else "best, last (checkpoint.keep=N keeps the last N)"
            raise ValueError(f"{folder} keeps no checkpoint of step {int(which):,}; allowed: {allowed}")
        return path
    raise ValueError("allowed: best, last, or the step of a kept checkpoint (checkpoint-STEP.pt)")


def load_checkpoint(path: str | Path, map_location: str | torch.device | None = None) -> dict[str, Any]:
    """A checkpoint written by ``save_checkpoint``, loaded as tensors and plain data only (``weights_only``:
    no pickled code runs), its counters checked against ``saved.CHECKPOINT_SCHEMA`` and its weights finite
    (rlconf never writes others). Anything else, or a file that is not a checkpoint, raises a one-line
    ValueError (a ConfigError: the caller names the file)."""
    try:
        with warnings.catch_warnings():  # torch's remarks on other files' pickle protocols
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        if "weights only" not in str(error).lower():
            raise ValueError(f"unreadable checkpoint: {first_line(error)}") from None
        raise ValueError("it holds objects other than tensors and plain data (written by an older rlconf, or "
                         "not by rlconf): not loaded") from None
    except Exception as error:  # truncated, corrupt, not torch's format: torch's errors vary (EOFError, KeyError)
        raise ValueError(f"unreadable checkpoint: {first_line(error)}") from None
    if not isinstance(state, dict) or "agent" not in state:
        raise ValueError("not an rlconf checkpoint")
    conform(state, CHECKPOINT_SCHEMA, "")
    poisoned = first_non_finite_weight(state["agent"])
    if poisoned is not None:
        raise ValueError(f"agent.{poisoned}: rlconf never writes non-finite weights (altered?): not loaded")
    _move_found_generators(state)
    return state


# Checkpoints written before components saved their own generators keep them in ``rng["generators"]`` under
# the attribute path where they were found (``agent.agent.policy.rng``, wrappers first): the end of each path
# says which component's generator it was, and the key the component now saves it under.
_FOUND_GENERATORS = {"policy.rng": ("policy", "rng"), "policy.generator": ("policy", "torch"),
                     "replay.generator": ("replay", "torch"), "replay.buffer.generator": ("replay", "torch"),
                     "replay.rng": ("replay", "numpy"), "replay.buffer.rng": ("replay", "numpy"),
                     "generator": ("generator", None), "rng": ("rng", None)}
_FOUND_PATH = re.compile(r"agent(?:\.agent)*(?:\.agents\['(?P<player>[^']+)'\](?:\.agent)*)?\.(?P<tail>.+)")


def _move_found_generators(state: dict[str, Any]) -> None:
    """Move an older checkpoint's generators (see ``_FOUND_GENERATORS``) into its agent's state, where the
    components now read them; a path the table does not know is dropped (that generator starts seeded)."""
    found = state.get("rng", {}).pop("generators", None) or {}
    for path, generator in found.items():
        match = _FOUND_PATH.fullmatch(path)
        if match is None or match["tail"] not in _FOUND_GENERATORS:
            continue
        agent_state = state["agent"][match["player"]] if match["player"] else state["agent"]
        name, key = _FOUND_GENERATORS[match["tail"]]
        generators = agent_state.setdefault("generators", {})
        if key is None:
            generators[name] = generator
        else:
            generators.setdefault(name, {})[key] = generator


def write_checkpoint(state: dict[str, Any], path: str) -> None:
    """torch.save through a file that remembers the OSError of a failed write (a full disk): torch reports it
    as a RuntimeError of its zip writer, or not at all until the end, and the OSError says what happened."""
    with open(path, "wb") as file:
        writer = _RememberingWriter(file)
        try:
            torch.save(state, writer)
        except RuntimeError:
            if writer.error is not None:
                raise writer.error from None
            raise
        if writer.error is not None:
            raise writer.error


class _RememberingWriter:
    def __init__(self, file):
        self.file = file
        self.error: OSError | None = None

    def write(self, data) -> int:
        try:
            return self.file.write(data)
        except OSError as error:
            self.error = self.error or error
            raise

    def flush(self) -> None:
        self.file.flush()


def learner_state(state: dict[str, Any]) -> dict[str, Any]:
    """This learner's part of a checkpoint: its agent, generators (and replay). A checkpoint of data-parallel
    learners holds the first learner's at the top, as a single learner's, and the others' under ``learners``."""
    learners = 1 + len(state.get("learners", ()))
    if learners != distributed.size():
        raise ValueError(f"the checkpoint holds the state of {learners} learner(s), this run has {distributed.size()}")
    rank = distributed.rank()
    return state if rank == 0 else state["learners"][rank - 1]


def first_non_finite(state: Any, path: str = "") -> str | None:
    """``<path> holds nan`` (or inf) for the first floating-point tensor of a state dict that is not finite,
    else None: the check before a checkpoint is written (once per checkpoint, so every weight is read)."""
    if isinstance(state, torch.Tensor):
        if state.is_floating_point() and not bool(torch.isfinite(state).all()):
            kind = "nan" if bool(torch.isnan(state).any()) else "inf"
            return f"{path or 'a tensor'} holds {kind}"
        return None
    if isinstance(state, dict):
        items = state.items()
    elif isinstance(state, (list, tuple)):
        items = enumerate(state)
    else:
        return None
    for key, value in items:
        found = first_non_finite(value, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


WEIGHTS = ("model", "target")  # where an Approximation's state_dict keeps its network's and target's weights


def first_non_finite_weight(state: Any, path: str = "") -> str | None:
    """``first_non_finite`` over the networks' weights in an agent's state dict (every ``model`` and
    ``target`` an Approximation saves). Other state may hold nan on purpose (a bandit's not yet computed
    quantiles), so it is not judged here."""
    if not isinstance(state, dict):
        return None
    for key, value in state.items():
        where = f"{path}.{key}" if path else str(key)
        found = first_non_finite(value, where) if key in WEIGHTS else first_non_finite_weight(value, where)
        if found is not None:
            return found
    return None
