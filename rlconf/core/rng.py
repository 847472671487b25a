"""The process-global random generators' states for checkpoints: Python's, numpy's, torch's (and CUDA's).

Generators a component owns (an epsilon-greedy policy's, a replay buffer's, a policy-gradient sampler's)
are saved by that component in the agent's state dict (``rlconf.core.generators``).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

from rlconf.core.generators import plain
from rlconf.errors import ConfigError


def seed_everything(seed: int) -> None:
    """Python's, numpy's and torch's global generators from ``seed`` (numpy's takes 32 bits)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def capture() -> dict[str, Any]:
    """Python's, numpy's and torch's global states (and CUDA's, where there is one)."""
    state: dict[str, Any] = {"python": random.getstate(), "numpy": plain(np.random.get_state(legacy=False)),
                             "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def check(state: Any) -> None:
    """A ConfigError naming the generator unless ``restore`` takes ``state``: found by restoring each state,
    then putting the process's own back, so a checkpoint's generators are judged by the very calls that
    restore them (before a resume touches its run directory)."""
    if not isinstance(state, dict) or not {"python", "numpy", "torch"} <= state.keys():
        raise ConfigError("rng: not the states of Python's, numpy's and torch's generators")
    mine = capture()
    setters = {"python": random.setstate, "numpy": np.random.set_state, "torch": torch.set_rng_state}
    try:
        for name, setter in setters.items():
            try:
                setter(state[name])
            except (ValueError, TypeError, KeyError, RuntimeError, IndexError, OverflowError) as error:
                text = " ".join(str(error).split())[:100] or type(error).__name__
                raise ConfigError(f"rng.{name}: not a state {name}'s generator takes ({text})") from None
    finally:
        restore(mine)


def restore(state: dict[str, Any]) -> None:
    """The inverse of ``capture``."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])  # numpy takes its key back from a list
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])
