"""Structured observations (gymnasium ``Dict`` and ``Tuple`` spaces) as one row of bytes per environment copy.

An environment whose observation is a dictionary (an image and a direction, a goal and a position) or a tuple
hands rlconf one uint8 row per copy, laid out by an ``ObservationLayout``: each leaf of the structure (a key,
``goal.position`` for a nested one, ``0``, ``1`` for tuple items) keeps its own dtype's bytes at its own offset.
A uint8 image stays 1 byte a pixel, a float vector 4 bytes a value. Everything that stores or moves
observations (replay, sequences, rollouts, StateArray, the parallel samplers' shared memory, checkpoints) sees
a plain uint8 tensor and needs nothing new; the networks' first module reads the leaves back
(``ObservationLayout.unpack``: views, no copies) and encodes each by what it holds (rlconf.nn.encoders).

The agent is given a ``PackedSpace``: the uint8 Box of the rows, carrying the layout and the original space.

Action masks ride in the same row. An environment may say which actions are legal by an ``action_mask`` key of
its Dict observation or by ``info["action_mask"]`` (gymnasium's and PettingZoo's conventions); ``PackObservations``
puts either into the row under ``action_mask``, and the environment adapter takes it out again into the state's
``action_mask`` (True: legal). A plain observation with a mask travels as ``{observation, action_mask}``, and the
agent sees the plain observation again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.errors import ConfigError

ACTION_MASK = "action_mask"
PLAIN = "observation"  # the key of a plain observation that travels with a mask
ROW_ALIGNMENT = 8  # rows, and the mask's offset, are multiples of the widest element: every leaf's view is aligned

PLAIN_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete)
IMAGE, VECTOR, DISCRETE = "image", "vector", "discrete"


class LayoutError(ConfigError):
    """A space rlconf cannot lay out (a Text mission, a Graph), or a mask that does not fit the actions: bad input,
    one line for the user (a ValueError, as before)."""


@dataclass(frozen=True)
class Field:
    """One leaf of a structured observation: where its bytes lie in a row and what they hold."""

    key: str
    space: gym.Space
    shape: tuple[int, ...]
    dtype: np.dtype  # as stored (float64 as float32, bool as uint8)
    offset: int
    # A 3-d image's channel axis, decided once where the layout is made: "first" ([C, H, W]) or "last"
    # ([H, W, C]); None for every other leaf. Encoders read it (a frame stack changes the channel count).
    channels: str | None = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def kind(self) -> str:
        """What it holds, which picks its default encoder: an ``image`` (a 3-d Box, or a 2-d uint8 one), a
        ``discrete`` value (Discrete, MultiDiscrete: embedded), else a ``vector`` (an MLP's input)."""
        if isinstance(self.space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
            return DISCRETE
        if isinstance(self.space, gym.spaces.Box) and (len(self.shape) == 3 or
                                                       (len(self.shape) == 2 and self.dtype == np.uint8)):
            return IMAGE
        return VECTOR

    @property
    def torch_dtype(self) -> torch.dtype:
        return torch.from_numpy(np.zeros(0, self.dtype)).dtype

    def describe(self) -> str:
        return f"{self.key}: {type(self.space).__name__} {self.dtype.name} {list(self.shape)} ({self.kind})"


def _stored_dtype(space: gym.Space) -> np.dtype:
    if isinstance(space, gym.spaces.Discrete):
        return np.dtype(np.int64)
    if isinstance(space, gym.spaces.MultiBinary):
        return np.dtype(np.uint8)
    dtype = np.dtype(space.dtype)
    if dtype == np.float64 or dtype == np.float16:
        return np.dtype(np.float32)
    if dtype == np.bool_:
        return np.dtype(np.uint8)
    return dtype


def _leaves(space: gym.Space, prefix: str = "") -> list[tuple[str, gym.Space]]:
    """The leaf spaces of ``space`` with their dotted keys, in the space's own order."""
    if isinstance(space, gym.spaces.Dict):
        items = [(str(key), sub) for key, sub in space.spaces.items()]
    elif isinstance(space, gym.spaces.Tuple):
        items = [(str(i), sub) for i, sub in enumerate(space.spaces)]
    elif isinstance(space, PLAIN_SPACES):
        return [(prefix or PLAIN, space)]
    else:
        raise LayoutError(f"observation {prefix or 'space'} is a {type(space).__name__}, which no network takes; "
                          f"allowed: Box, Discrete, MultiBinary, MultiDiscrete, and Dict or Tuple of them "
                          f"(drop it with a wrapper: env.wrappers)")
    leaves = []
    for key, sub in items:
        if "." in key:
            raise LayoutError(f"observation key {key!r} holds a '.', which rlconf uses to name nested keys")
        leaves += _leaves(sub, f"{prefix}.{key}" if prefix else key)
    return leaves


def _channel_axis(space: gym.Space, given: str | None) -> str | None:
    if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 3):
        return None
    if given is not None:
        return given
    return "first" if space.shape[0] < space.shape[-1] else "last"


def _with_leaves(space: gym.Space, leaves: Mapping[str, gym.Space], prefix: str = "") -> gym.Space:
    """``space`` with the leaves ``leaves`` names (dotted keys, as ``_leaves`` gives them) replaced."""
    if isinstance(space, gym.spaces.Dict):
        return gym.spaces.Dict({key: _with_leaves(sub, leaves, f"{prefix}{key}.") for key, sub in space.spaces.items()})
    if isinstance(space, gym.spaces.Tuple):
        return gym.spaces.Tuple([_with_leaves(sub, leaves, f"{prefix}{i}.") for i, sub in enumerate(space.spaces)])
    return leaves.get(prefix[:-1] or PLAIN, space)


def _aligned(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment


class ObservationLayout:
    """Where each leaf of a structured observation lies in a row of bytes.

    Leaves are stored widest element first, so each starts at a multiple of its element size and every view
    (``unpack``) is aligned; ``action_mask``, when there is one, comes last at an aligned offset, so the rest of
    the row (``without_mask``) is a prefix of it. ``fields`` keep the space's own order: the order encoders see.
    """

    def __init__(self, space: gym.Space, mask_space: gym.Space | None = None,
                 channels: Mapping[str, str] | None = None):
        """``channels``: the channel axis (``first``, ``last``) of 3-d image keys whose axis is known (a frame
        stack's); any other's is guessed from its shape: gymnasium's images are [H, W, C], the channels the
        smaller end."""
        self.space = space
        leaves = _leaves(space)
        if mask_space is not None:
            leaves = [leaf for leaf in leaves if leaf[0] != ACTION_MASK] + [(ACTION_MASK, mask_space)]
        by_width = sorted(leaves[:-1] if mask_space is not None else leaves,
                          key=lambda leaf: -_stored_dtype(leaf[1]).itemsize)
        offsets, offset = {}, 0
        for key, sub in by_width:
            dtype = _stored_dtype(sub)
            offset = _aligned(offset, dtype.itemsize)
            offsets[key] = offset
            offset += int(np.prod(sub.shape, dtype=np.int64)) * dtype.itemsize
        if mask_space is not None:
            offset = _aligned(offset, ROW_ALIGNMENT)
            offsets[ACTION_MASK] = offset
            offset += int(np.prod(mask_space.shape, dtype=np.int64))
        self.nbytes = max(_aligned(offset, ROW_ALIGNMENT), ROW_ALIGNMENT)
        self.fields = tuple(Field(key, sub, tuple(int(n) for n in sub.shape), _stored_dtype(sub), offsets[key],
                                  _channel_axis(sub, (channels or {}).get(key)))
                            for key, sub in leaves)
        self._by_key = {field.key: field for field in self.fields}

    # -- what it holds -------------------------------------------------------------------------------------
    def __contains__(self, key: str) -> bool:
        return key in self._by_key

    def __getitem__(self, key: str) -> Field:
        return self._by_key[key]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(field.key for field in self.fields)

    @property
    def has_mask(self) -> bool:
        return ACTION_MASK in self._by_key

    @property
    def inputs(self) -> tuple[Field, ...]:
        """The leaves a network reads: all but the action mask."""
        return tuple(field for field in self.fields if field.key != ACTION_MASK)

    @property
    def plain(self) -> bool:
        """Whether the network's input is a plain observation (one that travels with a mask only)."""
        inputs = self.inputs
        return len(inputs) == 1 and inputs[0].key == PLAIN

    @property
    def input_bytes(self) -> int:
        """The bytes of a row that networks read: the whole row, or the prefix before the mask."""
        return self[ACTION_MASK].offset if self.has_mask else self.nbytes

    def without_mask(self) -> ObservationLayout:
        """The layout of the rows' prefix that networks read (same offsets, the mask dropped)."""
        if not self.has_mask:
            return self
        inner = ObservationLayout.__new__(ObservationLayout)
        inner.space, inner.nbytes = self.space, self.input_bytes
        inner.fields = self.inputs
        inner._by_key = {field.key: field for field in inner.fields}
        return inner

    def replaced(self, spaces: Mapping[str, gym.Space], channels: Mapping[str, str] | None = None
                 ) -> ObservationLayout:
        """The layout of the same structure with the leaves ``spaces`` names (dotted keys) replaced, e.g. by their
        stacks or their normalised bounds; every image keeps its channel axis unless ``channels`` gives another."""
        axes = {field.key: field.channels for field in self.fields if field.channels} | dict(channels or {})
        mask = self[ACTION_MASK].space if self.has_mask else None
        return ObservationLayout(_with_leaves(self.space, spaces), mask, axes)

    def packed_space(self) -> PackedSpace:
        return PackedSpace(self)

    def describe(self) -> list[str]:
        return [field.describe() for field in self.fields]

    # -- rows ------------------------------------------------------------------------------------------------
    def pack(self, observation: Any, mask: np.ndarray | None = None) -> np.ndarray:
        """One copy's observation (nested dicts/tuples of arrays, as its space gives them) as a row of bytes."""
        row = np.zeros(self.nbytes, np.uint8)
        values = dict(_flatten(observation))
        if mask is not None:
            values[ACTION_MASK] = mask
        for field in self.fields:
            value = np.asarray(values[field.key], dtype=field.dtype)
            row[field.offset:field.offset + field.nbytes] = value.reshape(-1).view(np.uint8)
        return row

    def unpack(self, rows: torch.Tensor | np.ndarray) -> dict[str, Any]:
        """The leaves of ``rows`` ([..., nbytes] uint8) as views ``{key: [..., *shape]}`` of their dtypes."""
        return {field.key: self.view(rows, field) for field in self.fields}

    def view(self, rows: torch.Tensor | np.ndarray, field: Field | str) -> Any:
        """One leaf of ``rows`` as a view of its dtype and shape (``rows`` contiguous in their last dimension)."""
        field = self[field] if isinstance(field, str) else field
        part = rows[..., field.offset:field.offset + field.nbytes]
        batch = tuple(rows.shape[:-1])
        if isinstance(part, np.ndarray):
            return part.view(field.dtype).reshape(batch + field.shape)  # a tuple: () for one row's scalar
        return part.view(field.torch_dtype).reshape(batch + field.shape)

    def flat(self, observation: Any) -> dict[str, Any]:
        """A nested observation's leaves by dotted key, as ``pack`` reads them (the inverse of ``nest``)."""
        return dict(_flatten(observation))

    def nest(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Flat ``{dotted key: value}`` back as the nested dictionaries the space has (tuples as dicts of
        ``"0"``, ``"1"``): what a user reads."""
        nested: dict[str, Any] = {}
        for key, value in values.items():
            *parents, leaf = key.split(".")
            node = nested
            for parent in parents:
                node = node.setdefault(parent, {})
            node[leaf] = value
        return nested

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObservationLayout) and self.nbytes == other.nbytes and \
            [(f.key, f.shape, f.dtype, f.offset, f.channels) for f in self.fields] == \
            [(f.key, f.shape, f.dtype, f.offset, f.channels) for f in other.fields]

    def __hash__(self) -> int:
        return hash((self.nbytes, self.keys))

    def __repr__(self) -> str:
        return f"ObservationLayout({', '.join(self.describe())}; {self.nbytes} bytes a row)"


def _flatten(observation: Any, prefix: str = ""):
    """(dotted key, leaf) of a nested observation, matching ``_leaves``."""
    if isinstance(observation, Mapping):
        items = ((str(key), value) for key, value in observation.items())
    elif isinstance(observation, tuple):
        items = ((str(i), value) for i, value in enumerate(observation))
    else:
        yield (prefix or PLAIN), observation
        return
    for key, value in items:
        yield from _flatten(value, f"{prefix}.{key}" if prefix else key)


class PackedSpace(gym.spaces.Box):
    """The space of packed rows: a uint8 Box of ``layout.nbytes`` bytes, carrying the ``layout`` and the
    ``original`` structured space (what a user's observations look like, what ``rlconf check-env`` prints)."""

    def __init__(self, layout: ObservationLayout):
        super().__init__(0, 255, (layout.nbytes,), np.uint8)
        self.layout = layout
        self.original = layout.space

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        return self.layout.pack(self.original.sample())

    def contains(self, x: Any) -> bool:
        return isinstance(x, np.ndarray) and x.shape == self.shape and x.dtype == np.uint8

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PackedSpace) and self.layout == other.layout

    def __hash__(self) -> int:
        return hash(self.layout)

    def __repr__(self) -> str:
        return f"PackedSpace({self.original})"


def layout_of(space: gym.Space) -> ObservationLayout | None:
    """The layout behind a space the agent was given, None for a plain one."""
    return space.layout if isinstance(space, PackedSpace) else None


# -- masks ----------------------------------------------------------------------------------------------------
def mask_width(action_space: gym.Space) -> int | None:
    """How many booleans a mask of ``action_space`` has (a MultiDiscrete's: one per value of each dimension, as
    sb3-contrib's MaskablePPO); None for spaces that cannot be masked (continuous ones)."""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return int(np.sum(action_space.nvec))
    if isinstance(action_space, gym.spaces.MultiBinary):
        return int(np.prod(action_space.shape)) * 2
    return None


def check_mask(mask: Any, action_space: gym.Space, final: bool = False) -> np.ndarray:
    """``mask`` as booleans, or a LayoutError naming what is wrong: its dtype, its shape, no legal action. The
    ``final`` state of an episode may allow nothing (a game that is over): no action is taken there."""
    array = np.asarray(mask)
    width = mask_width(action_space)
    if width is None:
        raise LayoutError(f"action_mask: the actions are {action_space}, which cannot be masked; allowed: masks "
                          f"of Discrete, MultiDiscrete or MultiBinary actions")
    if array.dtype != np.bool_ and not (np.issubdtype(array.dtype, np.integer) and np.isin(array, (0, 1)).all()):
        raise LayoutError(f"action_mask: dtype {array.dtype} with values other than 0 and 1; allowed: bool (True: "
                          f"legal) or integers 0/1")
    if array.shape != (width,):
        raise LayoutError(f"action_mask: shape {array.shape}; allowed: ({width},) for actions {action_space}")
    array = array.astype(bool, copy=False)
    if final:
        return array
    if not array.any():
        raise LayoutError("action_mask: no action is legal (every entry False); a mask needs at least one True")
    if isinstance(action_space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):  # MultiBinary: may be 0, 1
        sizes = action_space.nvec.reshape(-1) if isinstance(action_space, gym.spaces.MultiDiscrete) else \
            np.full(width // 2, 2)
        for i, part in enumerate(np.split(array, np.cumsum(sizes)[:-1])):
            if not part.any():
                raise LayoutError(f"action_mask: no value of action dimension {i} is legal; each dimension needs "
                                  f"at least one True")
    return array


class PackObservations(gym.Wrapper):
    """One copy whose observations are packed rows: its structured observation, and its action mask from an
    ``action_mask`` key or ``info["action_mask"]``. Applied where copies are made (rlconf.environments.gym), so
    vector environments and samplers see a plain uint8 Box."""

    def __init__(self, env: gym.Env, mask_from_info: bool):
        super().__init__(env)
        space = env.observation_space
        self._mask_from_info = mask_from_info
        in_observation = isinstance(space, gym.spaces.Dict) and ACTION_MASK in space.spaces
        masked = mask_from_info or in_observation
        width = mask_width(env.action_space) if masked else None
        if masked and width is None:
            check_mask(np.ones(1, bool), env.action_space)  # the one line: these actions cannot be masked
        inputs = gym.spaces.Dict({k: v for k, v in space.spaces.items() if k != ACTION_MASK}) \
            if in_observation else space
        if in_observation and len(inputs.spaces) == 1 and PLAIN in inputs.spaces:
            inputs = inputs.spaces[PLAIN]  # PettingZoo's {observation, action_mask}
        self.layout = ObservationLayout(inputs, gym.spaces.MultiBinary(width) if masked else None)
        self.observation_space = self.layout.packed_space()

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        return self._packed(observation, info, final=False), info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        return self._packed(observation, info, terminated or truncated), reward, terminated, truncated, info

    def _packed(self, observation: Any, info: dict, final: bool) -> np.ndarray:
        if not self.layout.has_mask:
            return self.layout.pack(observation)
        if self._mask_from_info:
            if ACTION_MASK not in info:
                raise LayoutError("action_mask: the environment gave info['action_mask'] on reset but not on a "
                                  "later step; a masked environment gives it every step")
            mask = info[ACTION_MASK]
        else:
            observation = dict(observation)
            mask = observation.pop(ACTION_MASK)
            if self.layout.plain:
                observation = observation[PLAIN]
        return self.layout.pack(observation, check_mask(mask, self.env.action_space, final))


def packed(env: gym.Env) -> gym.Env:
    """``env`` with packed observations if it needs them (a structured observation, or an action mask, which
    the first reset's info shows), else ``env`` itself: plain environments are stepped as they always were."""
    space = env.observation_space
    if isinstance(space, PackedSpace):
        return env
    if not isinstance(space, PLAIN_SPACES):
        return PackObservations(env, mask_from_info=_info_has_mask(env))
    if _info_has_mask(env):
        return PackObservations(env, mask_from_info=True)
    return env


def _info_has_mask(env: gym.Env) -> bool:
    """Whether ``env`` gives ``info["action_mask"]``: seen on one reset (a run seeds its first reset, so this
    extra one changes no episode). A faulty mask there, or in the observation's ``action_mask`` key, is refused
    now, as the environment is made: before a run writes anything. The environment itself is asked (its
    ``unwrapped`` reset), so that a recorder wrapped around it for ``rlconf watch`` records no extra frame."""
    observation, info = env.unwrapped.reset()
    if ACTION_MASK in info:
        check_mask(info[ACTION_MASK], env.action_space)
        return True
    if isinstance(observation, Mapping) and ACTION_MASK in observation:
        check_mask(observation[ACTION_MASK], env.action_space)
    return False
