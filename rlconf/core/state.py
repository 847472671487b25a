"""States: what an agent is allowed to see.

A ``State`` is a dictionary of tensors describing one moment of one environment: the ``observation``, the
``reward`` received on arriving there, whether the episode ended (``done``) and whether the value of what
follows counts (``mask``: 0 for a true terminal state, 1 otherwise, so a time-limit truncation still
bootstraps). Any other key (``truncated``, ``lives``, ``time`` ...) may ride along. A ``StateArray`` is the same
for a batch of environments: every value has the batch ``shape`` as its leading dimensions.

A ``MultiagentState`` is a State of a multi-agent environment: it also names the ``agent`` (the player) whose
turn it is, so that a multi-agent learner can hand it to that player's agent.

Environments build them; agents read them. Neither side needs to know the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

CPU = torch.device("cpu")  # the default device, built once: states are made every step
_STANDARD_KEYS = ("observation", "reward", "done", "mask")


# The columns of every environment copy: what an agent acts on unless the alternating sampler hands it one group
# of copies (a slice of them) at a time.
ALL_COPIES = slice(None)


def with_rows(whole: torch.Tensor | None, copies: slice, rows: torch.Tensor, n_envs: int | None,
              fill: float | bool = 0) -> torch.Tensor:
    """A tensor of one row per environment copy, ``whole``, with the rows of ``copies`` now ``rows``: ``rows``
    itself where they are every copy's; with the alternating sampler's groups, ``whole`` written in place, made
    on a group's first write (``n_envs`` rows of ``fill``, the other groups' until they act)."""
    if copies == ALL_COPIES:
        return rows
    if whole is None or len(whole) != n_envs:
        if n_envs is None:
            raise ValueError("rows written a group of copies at a time need the number of copies, n_envs")
        whole = rows.new_full((n_envs, *rows.shape[1:]), fill)
    whole[copies] = rows
    return whole


class State(dict):
    """One environment state: a dict of tensors with convenient accessors."""

    def __init__(self, x: dict[str, Any], device: str | torch.device = "cpu"):
        if "observation" not in x:
            raise KeyError("A State needs an 'observation'")
        x = dict(x)
        x.setdefault("reward", 0.0)
        x.setdefault("done", False)
        x.setdefault("mask", 0.0 if x["done"] else 1.0)
        super().__init__(x)
        self.device = torch.device(device)

    # -- the standard components ---------------------------------------------------------------------
    @property
    def observation(self) -> torch.Tensor:
        return self["observation"]

    @property
    def reward(self):
        return self["reward"]

    @property
    def done(self):
        return self["done"]

    @property
    def mask(self):
        return self["mask"]

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    def __len__(self) -> int:  # a single state behaves as one element, not as its number of keys
        return 1

    # -- building new states ---------------------------------------------------------------------------
    def update(self, key: str, value: Any) -> State:  # type: ignore[override]
        """A new state with ``key`` set to ``value`` (states are treated as immutable)."""
        x = dict(self.items())
        x[key] = value
        return self._like(x)

    def _like(self, x: dict[str, Any]) -> State:
        return State(x, self.device)

    def to(self, device: str | torch.device) -> State:
        if (device if isinstance(device, torch.device) else torch.device(device)) == self.device:
            return self  # the per-step case: a state built where it is used
        moved = {k: v.to(device) if torch.is_tensor(v) else v for k, v in self.items()}
        return self._moved(moved, device)

    def _moved(self, x: dict[str, Any], device) -> State:
        return State(x, device)

    # -- feeding models ------------------------------------------------------------------------------
    def as_input(self, key: str = "observation") -> torch.Tensor:
        """The component as a batch of one, ready for a batch-style module."""
        return self[key].unsqueeze(0)

    def as_output(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.squeeze(0)

    def apply(self, model: Callable, *keys: str) -> torch.Tensor:
        """Run ``model`` on the given components (default: the observation), reshaped as a batch."""
        keys = keys or ("observation",)
        return self.as_output(model(*(self.as_input(k) for k in keys)))

    def apply_mask(self, tensor: torch.Tensor) -> torch.Tensor:
        """Zero ``tensor`` where the state is terminal (no value flows past the end of an episode)."""
        return tensor * self.mask

    @classmethod
    def array(cls, states: Iterable[State]) -> StateArray:
        """Stack states of equal shape into a StateArray whose first dimension indexes them."""
        states = list(states)
        device = states[0].device
        keys = [k for k in states[0] if all(k in s for s in states)]
        x = {}
        for key in keys:
            values = [s[key] for s in states]
            if torch.is_tensor(values[0]):
                x[key] = torch.stack(values)
            else:
                x[key] = torch.as_tensor(values, device=device)
        return StateArray(x, (len(states), *states[0].shape), device)


class StateArray(State):
    """A batch of states; each component's leading dimensions equal ``shape``."""

    def __init__(self, x: dict[str, Any], shape: tuple[int, ...], device: str | torch.device = CPU):
        # Skip State.__init__'s defaults: environments always hand over complete batches, and this
        # constructor sits on the per-step path.
        dict.__init__(self, x)
        self.device = torch.device(device) if not isinstance(device, torch.device) else device
        self._shape = tuple(shape)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    def __len__(self) -> int:
        return self._shape[0] if self._shape else 1

    def _like(self, x: dict[str, Any]) -> StateArray:
        return StateArray(x, self._shape, self.device)

    def _moved(self, x: dict[str, Any], device) -> StateArray:
        return StateArray(x, self._shape, device)

    def as_input(self, key: str = "observation") -> torch.Tensor:
        value = self[key]
        return value.reshape(-1, *value.shape[len(self._shape):])

    def as_output(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.view(*self._shape, *tensor.shape[1:])

    def apply_mask(self, tensor: torch.Tensor) -> torch.Tensor:
        mask = self.mask
        return tensor * mask.view(*mask.shape, *([1] * (tensor.dim() - mask.dim())))

    def __getitem__(self, key):
        if isinstance(key, str):
            return dict.__getitem__(self, key)
        # Index the batch: an int gives a State, a slice or index tensor a smaller StateArray.
        x = {k: v[key] for k, v in self.items()}
        first = x["observation"]
        batch_dims = first.dim() - (self["observation"].dim() - len(self._shape))
        if batch_dims == 0:
            return State(x, self.device)
        return StateArray(x, tuple(first.shape[:batch_dims]), self.device)

    def view(self, shape: tuple[int, ...]) -> StateArray:
        x = {k: v.view(*shape, *v.shape[len(self._shape):]) for k, v in self.items()}
        return StateArray(x, shape, self.device)

    def flatten(self) -> StateArray:
        n = 1
        for d in self._shape:
            n *= d
        return self.view((n,))

    @classmethod
    def cat(cls, arrays: list[StateArray], axis: int = 0) -> StateArray:
        keys = [k for k in arrays[0] if all(k in a for a in arrays)]
        x = {k: torch.cat([a[k] for a in arrays], dim=axis) for k in keys}
        shape = list(arrays[0].shape)
        shape[axis] = sum(a.shape[axis] for a in arrays)
        return StateArray(x, tuple(shape), arrays[0].device)

    def batch_execute(self, minibatch_size: int, fn: Callable[[StateArray], torch.Tensor]) -> torch.Tensor:
        """Apply ``fn`` to consecutive slices of a flat array, bounding peak memory."""
        flat = self.flatten()
        outputs = [fn(flat[i : i + minibatch_size]) for i in range(0, len(flat), minibatch_size)]
        return torch.cat(outputs)


class MultiagentState(State):
    """The state of one player of a multi-agent environment: a State with an ``agent`` entry naming the
    player whose turn it is (e.g. ``player_1``). Everything else is that player's view: its observation, the
    reward it received since its last turn, whether its episode ended, and (board games) its legal moves in
    ``action_mask``."""

    def __init__(self, x: dict[str, Any], device: str | torch.device = "cpu"):
        if "agent" not in x:
            raise KeyError("A MultiagentState needs an 'agent'")
        super().__init__(x, device)

    @property
    def agent(self) -> str:
        return self["agent"]

    def _like(self, x: dict[str, Any]) -> MultiagentState:
        return MultiagentState(x, self.device)

    def _moved(self, x: dict[str, Any], device) -> MultiagentState:
        return MultiagentState(x, device)
