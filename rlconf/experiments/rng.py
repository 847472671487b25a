"""Random number generator states for checkpoints: the global ones and every generator an agent holds.

Agents keep their own generators (a numpy Generator in an epsilon-greedy policy, a torch Generator in a
replay buffer or a policy-gradient sampler), created from the run's seed. Rather than asking every agent to
save them, they are found by walking the agent's attributes: each generator is named by its attribute path
(``agent.policy.rng``), which is the same in the agent rebuilt from the same config on resume.

States are captured as tensors and plain Python data (numpy's arrays as lists of ints), so a checkpoint
loads with ``torch.load(weights_only=True)``: no pickled objects.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

# Objects that hold no generator and may be large: not walked into.
_LEAVES = (str, bytes, int, float, bool, type(None), torch.Tensor, np.ndarray, torch.nn.Parameter, type)
_MAX_DEPTH = 12


def seed_everything(seed: int) -> None:
    """Python's, numpy's and torch's global generators from ``seed`` (numpy's takes 32 bits)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def capture(root: Any) -> dict[str, Any]:
    """Python's, numpy's and torch's global states (and CUDA's, where there is one), and the state of every
    generator reachable from ``root``."""
    state: dict[str, Any] = {"python": random.getstate(), "numpy": plain(np.random.get_state(legacy=False)),
                             "torch": torch.get_rng_state(), "generators": {}}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    for path, generator in generators(root):
        state["generators"][path] = _get(generator)
    return state


def restore(root: Any, state: dict[str, Any]) -> None:
    """The inverse of ``capture`` for an object built the same way. A generator the checkpoint does not name
    (the agent's code changed since) keeps its seeded state."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])  # numpy takes its key back from a list
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])
    saved = state.get("generators", {})
    for path, generator in generators(root):
        if path in saved:
            _set(generator, saved[path])


def generators(root: Any, prefix: str = "agent") -> Iterator[tuple[str, Any]]:
    """``(path, generator)`` for every numpy Generator, torch Generator and random.Random reachable from
    ``root``."""
    return reachable(root, (np.random.Generator, torch.Generator, random.Random), prefix)


def reachable(root: Any, kinds: tuple[type, ...], prefix: str = "agent") -> Iterator[tuple[str, Any]]:
    """``(path, object)`` for every instance of ``kinds`` reachable from ``root`` through attributes, lists,
    tuples and dict values; each object once, in a fixed order (the same for an object built the same way)."""
    seen: set[int] = set()
    queue: deque[tuple[str, Any, int]] = deque([(prefix, root, 0)])
    while queue:
        path, obj, depth = queue.popleft()
        if id(obj) in seen or isinstance(obj, _LEAVES):
            continue
        seen.add(id(obj))
        if isinstance(obj, kinds):
            yield path, obj
            continue
        if depth >= _MAX_DEPTH:
            continue
        if isinstance(obj, dict):
            children = [(f"{path}[{k!r}]", v) for k, v in obj.items()]
        elif isinstance(obj, (list, tuple)):
            children = [(f"{path}[{i}]", v) for i, v in enumerate(obj)]
        elif hasattr(obj, "__dict__") and not isinstance(obj, type(random)):  # not into modules
            children = [(f"{path}.{k}", v) for k, v in vars(obj).items()]
        else:
            continue
        queue.extend((p, v, depth + 1) for p, v in children)


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


def _get(generator) -> Any:
    if isinstance(generator, np.random.Generator):
        return plain(generator.bit_generator.state)
    if isinstance(generator, torch.Generator):
        return generator.get_state()
    return generator.getstate()


def _set(generator, state) -> None:
    if isinstance(generator, np.random.Generator):
        generator.bit_generator.state = state
    elif isinstance(generator, torch.Generator):
        generator.set_state(state)
    else:
        generator.setstate(state)
