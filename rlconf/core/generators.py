"""A random generator's state as checkpoint data, for the components that own generators.

Each component (a policy, a replay buffer, an agent) saves the generators it holds under names it writes
out, and restores them by the same names; nothing is found by walking attributes. States are tensors and
plain Python data (numpy's arrays as lists of ints), so a checkpoint loads with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import random
from typing import Any, Protocol

import numpy as np
import torch

Generator = np.random.Generator | torch.Generator | random.Random


class OwnsGenerators(Protocol):
    """A component that saves and restores the generators it holds (its contents are saved elsewhere)."""

    def generator_state(self) -> dict[str, Any]: ...

    def load_generator_state(self, state: dict[str, Any]) -> None: ...


def generators_state(owned: dict[str, Generator | OwnsGenerators | None]) -> dict[str, Any]:
    """``{name: state}`` for each generator, or component owning generators, in ``owned`` (None: skipped)."""
    return {name: _state(item) for name, item in owned.items() if item is not None}


def load_generators_state(owned: dict[str, Generator | OwnsGenerators | None], state: dict[str, Any]) -> None:
    """The inverse of ``generators_state``. A name the checkpoint does not hold keeps its seeded state, and so
    does a torch generator whose saved state is another device's (see ``_load``)."""
    for name, item in owned.items():
        if item is not None and name in state:
            _load(item, state[name])


def plain(value: Any) -> Any:
    """``value`` with numpy's arrays and scalars as Python lists and numbers (numpy's bit generators take
    their states back in that form), for checkpoints that load without unpickling numpy objects."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(item) for item in value)
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


def _state(item: Generator | OwnsGenerators) -> Any:
    if isinstance(item, np.random.Generator):
        return plain(item.bit_generator.state)
    if isinstance(item, torch.Generator):
        return item.get_state()
    if isinstance(item, random.Random):
        return item.getstate()
    return item.generator_state()


def _load(item: Generator | OwnsGenerators, state: Any) -> None:
    if isinstance(item, np.random.Generator):
        item.bit_generator.state = state
    elif isinstance(item, torch.Generator):
        # A CPU generator (Mersenne Twister) and a CUDA one (Philox: a seed and an offset) keep states of other
        # sizes, and neither can continue the other's stream: a run trained on the GPU and evaluated, loaded or
        # resumed on the CPU (or the other way) draws from its seeded generator instead.
        if state.numel() == item.get_state().numel():
            item.set_state(state)
    elif isinstance(item, random.Random):
        item.setstate(state)
    else:
        item.load_generator_state(state)
