"""Frame stacks of a structured observation's image keys (``body=frame_stack``): memory of the last few views
for an agent without a recurrent core, as the atari body gives one of an Atari screen.

The environment hands over packed rows (rlconf.core.layout); the agent is handed rows of another layout, in which
each stacked key (``body.frame_stack_keys``, by default every image key) holds its last ``body.frame_stack``
values on its channel axis, oldest first, and every other key its newest value. The stacked keys' channel axes
are written into the new layout (``Field.channels``), so encoders read a [H, W, k*C] stack as channels last
whatever its shape. Stacks are per copy of the environment and start again with each episode; they are not
learned, so nothing goes into checkpoints (a resumed run starts new episodes). Replay and rollouts store the
stacked rows as they are: Atari's one-frame-a-row deduplication is for plain frames only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
import torch

from rlconf.bodies.body import Body
from rlconf.core import StateArray
from rlconf.core.layout import IMAGE, Field, ObservationLayout, layout_of


class StackImageKeys(Body):
    """Stacks the last ``frame_stack`` values of ``frame_stack_keys`` (None: every image key) of packed rows of
    ``observation_space`` (the space the body is handed, a ``PackedSpace``). The first state of an episode is
    stacked with ``frame_stack`` copies of its own value, as ``FrameStack`` does."""

    def __init__(self, agent, frame_stack: int = 4, frame_stack_keys: Sequence[str] | None = None,
                 observation_space: gym.Space | None = None):
        super().__init__(agent)
        self.size = frame_stack
        self.keys_option = None if frame_stack_keys is None else list(frame_stack_keys)
        self.source = layout_of(observation_space)
        self.layout = layout_of(self.transform_space(observation_space, frame_stack, frame_stack_keys))
        self.stacked = stacked_keys(self.source, frame_stack_keys)
        self._stacks: dict[str, torch.Tensor] | None = None  # the last stack of each key handed to the agent
        self._done: torch.Tensor | None = None  # done flags of the last state: who starts anew now

    @classmethod
    def transform_space(cls, space: gym.Space, frame_stack: int = 4, frame_stack_keys: Sequence[str] | None = None
                        ) -> gym.Space:
        layout = layout_of(space)
        if layout is None:
            raise TypeError(f"stacks image keys of a Dict or Tuple observation, not {space}; allowed: body=atari "
                            "for frames")
        spaces, channels = {}, {}
        for key in stacked_keys(layout, frame_stack_keys):
            field = layout[key]
            box = field.space
            if len(field.shape) == 2:  # one channel: the stack is the channels, first
                low, high = np.stack([box.low] * frame_stack), np.stack([box.high] * frame_stack)
            else:
                axis = 0 if field.channels == "first" else -1
                low = np.concatenate([box.low] * frame_stack, axis)
                high = np.concatenate([box.high] * frame_stack, axis)
            spaces[key] = gym.spaces.Box(low, high, dtype=box.dtype)
            channels[key] = field.channels or "first"
        return layout.replaced(spaces, channels).packed_space()

    def process_state(self, states: StateArray) -> StateArray:
        rows = states.observation
        leaves = self.source.unpack(rows)
        values = {key: _with_channels(self.source[key], leaves[key]) for key in self.stacked}
        if self._stacks is None:
            stacks = {key: self._fresh(self.source[key], value) for key, value in values.items()}
        else:
            stacks = {key: self._rolled(self.source[key], self._stacks[key], value, self._done)
                      for key, value in values.items()}
        self._stacks, self._done = stacks, states.done
        return states.update("observation", self._pack({**leaves, **stacks}, len(rows), rows.device))

    def _fresh(self, field: Field, value: torch.Tensor) -> torch.Tensor:
        """Each copy's value (with its channel axis) repeated ``size`` times on that axis: the stack an episode
        starts from."""
        dim = _dim(field) % value.dim()
        return value.repeat(*[self.size if d == dim else 1 for d in range(value.dim())])

    def _rolled(self, field: Field, stack: torch.Tensor, value: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """The stack with its oldest value dropped and ``value`` added; a fresh one where an episode starts."""
        dim = _dim(field)
        channels = value.shape[dim]
        rolled = torch.cat((stack.narrow(dim, channels, stack.shape[dim] - channels), value), dim=dim)
        if value.device.type == "cpu" and not starts.any():  # most steps: nothing to refill
            return rolled
        return torch.where(starts.view(-1, *[1] * (value.dim() - 1)), self._fresh(field, value), rolled)

    def _pack(self, values: dict[str, torch.Tensor], n: int, device: torch.device) -> torch.Tensor:
        """Rows of the stacked layout (padding zero, so equal observations are equal rows)."""
        rows = torch.zeros((n, self.layout.nbytes), dtype=torch.uint8, device=device)
        for field in self.layout.inputs:
            rows[:, field.offset:field.offset + field.nbytes] = \
                values[field.key].reshape(n, -1).contiguous().view(torch.uint8)
        return rows

    def exported_feeding(self) -> tuple[str, Callable[[gym.Space], gym.Space]]:
        keys = ", ".join(self.stacked)
        return (f"{keys}: the last {self.size} observations stacked on the channel axis, oldest first (an "
                f"episode's first repeated {self.size} times)",
                lambda space: self.transform_space(space, self.size, self.keys_option))

    def _forget(self) -> None:
        self._stacks = self._done = None


def stacked_keys(layout: ObservationLayout, keys: Sequence[str] | None) -> tuple[str, ...]:
    """The keys a frame stack stacks: ``keys``, or every image key; a TypeError (one line: the user's choice)
    for a key the observation lacks or one that is not an image, or an observation without images."""
    images = [field.key for field in layout.inputs if field.kind == IMAGE]
    if keys is None:
        if not images:
            raise TypeError(f"stacks image keys; the observation has none ({', '.join(layout.describe())}); "
                            "allowed: body=none")
        return tuple(images)
    wrong = [key for key in keys if key not in images]
    if wrong or not keys:
        raise TypeError(f"body.frame_stack_keys={list(keys)}: {', '.join(wrong) or 'no key'} is not an image key "
                        f"of the observation; allowed: {', '.join(images) or 'none (it has no image)'}")
    return tuple(keys)


def _dim(field: Field) -> int:
    """The channel dimension of a batch of ``field``'s values (2-d images gain one, first)."""
    return -1 if field.channels == "last" else 1


def _with_channels(field: Field, value: torch.Tensor) -> torch.Tensor:
    return value.unsqueeze(1) if len(field.shape) == 2 else value
