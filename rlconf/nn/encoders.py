"""Multi-input encoders: the first module of a network whose observations are Dict or Tuple spaces.

Such observations reach a network as packed rows of bytes (rlconf.core.layout). ``MultiInputEncoder`` reads
each leaf back as a view of its own dtype and shape (no copy), encodes it by what it holds, and concatenates
the results: images with convolutions (the Nature DQN's for frames of at least 36x36, small 2x2 ones for small
grids such as MiniGrid's 7x7x3, as the minigrid project's baselines), vectors as they are or through an MLP,
discrete values one-hot or embedded. The model's own hidden layers and heads follow (rlconf.nn.builders).

Each key's encoder can be named in ``approximation.encoders`` (checked without torch in rlconf.nn.schemas;
nested keys as nested mappings: ``encoders: {goal: {position: {type: mlp}}}``); every other key gets the
default of its space (``default_type``). ``check_encoders`` refuses, in one line, an encoder for a key the
observation does not have or one that cannot read its key; ``describe_encoders`` says what each key gets
(``rlconf check-env``).

The encoder also takes the leaves themselves, ``{key: tensor}``: an exported graph's inputs, one per key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlconf.core.layout import DISCRETE, IMAGE, Field, ObservationLayout, layout_of
from rlconf.errors import ConfigError
from rlconf.nn.layers import Flatten, Layers, Linear, Scale, activation
from rlconf.nn.schemas import ENCODER_ARGUMENTS, ENCODERS, NATURE_CONVS, encoder_entries, min_image_side

NATURE_MIN_SIZE = min_image_side(NATURE_CONVS)  # 36: the smallest side the Nature convolutions take
SMALL_CHANNELS = [16, 32, 64]  # the minigrid baselines' convolutions: 2x2 kernels, a 2x2 max-pool after the first
SMALL_KERNEL = 2
MAX_ONE_HOT = 64  # discrete values with more than this many values (in a dimension) are embedded by default
EMBEDDING_SIZE = 16
MLP_HIDDEN = [64]
IMAGE_TYPES = ("cnn", "small_cnn")
DISCRETE_TYPES = ("embedding", "one_hot")


@dataclass(frozen=True)
class Choice:
    """The encoder one key gets: its ``type`` and arguments (those configured over the defaults)."""

    field: Field
    type: str
    args: dict[str, Any] = field(default_factory=dict)
    configured: bool = False


# -- which encoder each key gets ----------------------------------------------------------------------------
def default_type(leaf: Field) -> str:
    """The encoder a key gets unless configured: by what it holds, and an image's size."""
    if leaf.kind == IMAGE:
        side = min(image_size(leaf))
        if side >= NATURE_MIN_SIZE:
            return "cnn"
        return "small_cnn" if side > len(SMALL_CHANNELS) * (SMALL_KERNEL - 1) else "flatten"
    if leaf.kind == DISCRETE:
        return "one_hot" if max(_values(leaf.space)) <= MAX_ONE_HOT else "embedding"
    return "flatten"


def choose_encoders(layout: ObservationLayout, approximation: Any) -> list[Choice]:
    """Each input key's encoder: configured in ``approximation.encoders`` (the approximation group's dict, or a
    model's settings) or the default; a ConfigError, one line, for a configured key the observation lacks or an
    encoder that cannot read its key."""
    entries = encoder_entries(_setting(approximation, "encoders", {}))
    inputs = layout.inputs
    names = [leaf.key for leaf in inputs]
    for key in entries:
        if key not in names:
            raise ConfigError(f"{ENCODERS}.{key}: no such observation key; the observation has: {', '.join(names)}")
    choices = []
    for leaf in inputs:
        entry = dict(entries.get(leaf.key, {}))
        kind = entry.pop("type", None) or default_type(leaf)
        _check_fits(leaf, kind, entry, typed="type" in entries.get(leaf.key, {}))
        choices.append(Choice(leaf, kind, _arguments(leaf, kind, entry, approximation), leaf.key in entries))
    return choices


def check_encoders(space: gym.Space, approximation: Any) -> None:
    """The one-line ConfigError for ``approximation.encoders`` that do not fit the observations of ``space``
    (a PackedSpace, or a plain space, which has no keys to configure); None when they fit."""
    layout = layout_of(space)
    entries = encoder_entries(_setting(approximation, "encoders", {}))
    if layout is None:
        if entries:
            raise ConfigError(f"{ENCODERS}.{next(iter(entries))}: no such observation key; the observation is a "
                              f"plain {type(space).__name__} {list(space.shape)} without keys (encoders are for Dict "
                              f"and Tuple observations)")
        return
    for choice in choose_encoders(layout, approximation):
        _encoder(choice)  # an image too small for its convolutions is said here too


def describe_encoders(layout: ObservationLayout, approximation: Any) -> list[str]:
    """One line per input key: what it holds, the encoder it gets and how many features that makes."""
    lines = []
    for choice in choose_encoders(layout, approximation):
        _, width = _encoder(choice)
        args = ", ".join(f"{name} {value}" for name, value in choice.args.items())
        source = "configured" if choice.configured else "default"
        lines.append(f"{choice.field.key}: {type(choice.field.space).__name__} {choice.field.dtype.name} "
                     f"{list(choice.field.shape)} -> {choice.type}{f' ({args})' if args else ''} [{source}] "
                     f"-> {width} features")
    return lines


def _check_fits(leaf: Field, kind: str, entry: Mapping[str, Any], typed: bool) -> None:
    where = f"{ENCODERS}.{leaf.key}"
    holds = f"{leaf.key} is {type(leaf.space).__name__} {leaf.dtype.name} {list(leaf.shape)}"
    if kind in IMAGE_TYPES and not (isinstance(leaf.space, gym.spaces.Box) and len(leaf.shape) in (2, 3)):
        raise ConfigError(f"{where}.type={kind}: convolutions read images ([H, W, C], [C, H, W] or [H, W]); {holds}; "
                          f"allowed: mlp, flatten{', embedding, one_hot' if leaf.kind == DISCRETE else ''}")
    if kind in DISCRETE_TYPES and leaf.kind != DISCRETE:
        raise ConfigError(f"{where}.type={kind}: reads Discrete or MultiDiscrete values; {holds}; allowed: "
                          f"{'cnn, small_cnn, ' if leaf.kind == IMAGE else ''}mlp, flatten")
    for name in entry:
        if name not in ENCODER_ARGUMENTS[kind]:  # arguments given without a type, for the key's default
            allowed = ", ".join(ENCODER_ARGUMENTS[kind]) or "none"
            raise ConfigError(f"{where}.{name}: not an argument of the {kind} encoder {leaf.key} gets"
                              f"{'' if typed else ' by default'}; allowed: {allowed}")


def _arguments(leaf: Field, kind: str, entry: Mapping[str, Any], approximation: Any) -> dict[str, Any]:
    """The encoder's arguments: the configured ones over the defaults of its type and of the model."""
    defaults: dict[str, Any] = {}
    if "scale" in ENCODER_ARGUMENTS[kind] and leaf.dtype == np.uint8:
        defaults["scale"] = leaf.kind == IMAGE and bool(_setting(approximation, "scale_frames", True))
    if kind in IMAGE_TYPES and len(leaf.shape) == 3:
        defaults["channels_last"] = leaf.channels == "last"  # the layout's (a frame stack's known axis, else guessed)
    if kind == "small_cnn":
        defaults.update(channels=list(SMALL_CHANNELS), kernel=SMALL_KERNEL)
    if kind == "mlp":
        defaults.update(hidden=list(MLP_HIDDEN), activation=_setting(approximation, "activation", "relu"))
    if kind == "embedding":
        defaults["size"] = EMBEDDING_SIZE
    args = {**defaults, **{k: v for k, v in entry.items() if v is not None}}
    if kind in IMAGE_TYPES and len(leaf.shape) == 2:
        args.pop("channels_last", None)  # one channel: nothing to lay out
    if kind == "small_cnn" and args.get("pool") is None:
        channels_last = args.get("channels_last", False)
        args["pool"] = _small_size(image_size(leaf, channels_last), args["channels"], args["kernel"], True) >= 1
    if "scale" in args and leaf.dtype != np.uint8:
        args.pop("scale")  # floats and wider integers are read as they are
    return args


def _setting(approximation: Any, name: str, default: Any) -> Any:
    if isinstance(approximation, Mapping):
        return approximation.get(name, default)
    return getattr(approximation, name, default)


def _values(space: gym.Space) -> list[int]:
    """How many values each dimension of a Discrete or MultiDiscrete space takes."""
    if isinstance(space, gym.spaces.Discrete):
        return [int(space.n)]
    return [int(n) for n in np.asarray(space.nvec).reshape(-1)]


def _starts(space: gym.Space) -> list[int]:
    start = np.asarray(getattr(space, "start", 0))
    return [int(s) for s in np.broadcast_to(start, np.asarray(_values(space)).shape).reshape(-1)]


def image_size(leaf: Field, channels_last: bool | None = None) -> tuple[int, int]:
    """An image key's height and width."""
    if len(leaf.shape) == 2:
        return leaf.shape[0], leaf.shape[1]
    last = leaf.channels == "last" if channels_last is None else channels_last
    return (leaf.shape[0], leaf.shape[1]) if last else (leaf.shape[1], leaf.shape[2])


def _image_channels(leaf: Field, channels_last: bool) -> int:
    if len(leaf.shape) == 2:
        return 1
    return leaf.shape[-1] if channels_last else leaf.shape[0]


def _small_size(size: tuple[int, int], channels: list[int], kernel: int, pool: bool) -> int:
    """The smaller side after the small CNN's convolutions (and max-pool)."""
    side = min(size) - kernel + 1
    if pool:
        side //= 2
    return side - (len(channels) - 1) * (kernel - 1)


# -- the modules --------------------------------------------------------------------------------------------
class ImageInput(nn.Module):
    """An image key as the float [B, C, H, W] convolutions take: a channel axis added to a 2-d image, [H, W, C]
    permuted (a view, which is also the channels-last memory layout CPU convolutions are fastest on), uint8
    scaled to [0, 1] when ``scale``."""

    def __init__(self, dims: int, channels_last: bool, scale: bool):
        super().__init__()
        self.dims, self.channels_last = dims, channels_last
        self.scale = Scale(1 / 255 if scale else 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dims == 2:
            x = x.unsqueeze(1)
        elif self.channels_last:
            x = x.permute(0, 3, 1, 2)
        return self.scale(x)

    def extra_repr(self) -> str:
        return f"dims={self.dims}, channels_last={self.channels_last}"


class FloatInput(nn.Module):
    """Any key as a float vector [B, n]: integers made floats (uint8 scaled to [0, 1] when ``scale``)."""

    def __init__(self, scale: bool = False):
        super().__init__()
        self.factor = 1 / 255 if scale else 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.shape[0], -1)
        return x.float() * self.factor if self.factor != 1.0 or not x.is_floating_point() else x

    def extra_repr(self) -> str:
        return f"factor={self.factor}"


class OneHot(nn.Module):
    """Discrete values [B] or MultiDiscrete ones [B, d] as one-hot vectors, one per dimension side by side:
    comparisons with each slot's value, which every runtime (ONNX included) has."""

    def __init__(self, values: list[int], starts: list[int]):
        super().__init__()
        dims = [d for d, n in enumerate(values) for _ in range(n)]
        slots = [starts[d] + v for d, n in enumerate(values) for v in range(n)]
        self.register_buffer("dims", torch.tensor(dims, dtype=torch.int64), persistent=False)
        self.register_buffer("slots", torch.tensor(slots, dtype=torch.int64), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.shape[0], -1).long()
        return (x.index_select(1, self.dims) == self.slots).float()


class Embedding(nn.Module):
    """Discrete values [B] or MultiDiscrete ones [B, d] as a learned vector per value of each dimension (one
    table, each dimension its own rows), side by side."""

    def __init__(self, values: list[int], starts: list[int], size: int):
        super().__init__()
        offsets = np.concatenate([[0], np.cumsum(values)[:-1]]) - np.asarray(starts)
        self.register_buffer("offsets", torch.tensor(offsets, dtype=torch.int64), persistent=False)
        self.table = nn.Embedding(int(sum(values)), size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.shape[0], -1).long() + self.offsets
        return self.table(x).flatten(1)


def nature_convs(channels: int, size: tuple[int, ...] | list[int],
                 convs: Sequence[Sequence[int]] = NATURE_CONVS) -> tuple[list[nn.Module], int, list[int]]:
    """Convolutions ``convs`` ([out_channels, kernel, stride] each, no padding; the Nature DQN's by default), each
    with its ReLU, on ``channels`` x ``size`` images; and the channels and size they leave."""
    layers: list[nn.Module] = []
    size = list(size)
    for out_channels, kernel, stride in convs:
        layers += [nn.Conv2d(channels, out_channels, kernel, stride=stride), nn.ReLU()]
        channels, size = out_channels, [(n - kernel) // stride + 1 for n in size]
    return layers, channels, size


def _encoder(choice: Choice) -> tuple[nn.Module, int]:
    """The module of one key's encoder and the features it makes."""
    leaf, kind, args = choice.field, choice.type, choice.args
    where = f"{ENCODERS}.{leaf.key}"
    if kind in IMAGE_TYPES:
        last = args.get("channels_last", False)
        channels, size = _image_channels(leaf, last), image_size(leaf, last)
        layers: list[nn.Module] = [ImageInput(len(leaf.shape), last, args.get("scale", False))]
        if kind == "cnn":
            convs, channels, out = nature_convs(channels, size)
            if min(out) < 1:
                raise ConfigError(f"{where}.type=cnn: images of {size[0]}x{size[1]} are too small for the Nature "
                                  f"convolutions (at least {NATURE_MIN_SIZE}x{NATURE_MIN_SIZE}); allowed: small_cnn, "
                                  f"mlp, flatten")
        else:
            convs, channels, out = _small_convs(channels, size, args, where)
        return nn.Sequential(*layers, *convs, Flatten()), channels * out[0] * out[1]
    if kind == "one_hot":
        return OneHot(_values(leaf.space), _starts(leaf.space)), sum(_values(leaf.space))
    if kind == "embedding":
        values = _values(leaf.space)
        return Embedding(values, _starts(leaf.space), args["size"]), len(values) * args["size"]
    width = int(np.prod(leaf.shape, dtype=np.int64))
    flat = FloatInput(args.get("scale", False))
    if kind == "flatten":
        return flat, width
    layers = [flat]
    for size in args["hidden"]:
        layers += [Linear(width, size), activation(args["activation"])()]
        width = size
    return Layers(*layers), width


def _small_convs(channels: int, size: tuple[int, int], args: Mapping[str, Any],
                 where: str) -> tuple[list[nn.Module], int, list[int]]:
    """The small CNN: ``kernel`` x ``kernel`` convolutions of ``channels``, each with a ReLU, a 2x2 max-pool
    after the first (``pool``), as the minigrid baselines' image encoder."""
    kernel, pool = args["kernel"], args["pool"]
    if _small_size(size, args["channels"], kernel, pool) < 1:
        pooled = " and a max-pool" if pool else ""
        raise ConfigError(f"{where}.type=small_cnn: images of {size[0]}x{size[1]} are too small for "
                          f"{len(args['channels'])} convolutions of {kernel}x{kernel}{pooled}; allowed: fewer "
                          "channels, a smaller kernel, pool: false, or type: flatten")
    layers: list[nn.Module] = []
    out = list(size)
    for i, out_channels in enumerate(args["channels"]):
        layers += [nn.Conv2d(channels, out_channels, kernel), nn.ReLU()]
        channels, out = out_channels, [n - kernel + 1 for n in out]
        if i == 0 and pool:
            layers.append(nn.MaxPool2d(2))
            out = [n // 2 for n in out]
    return layers, channels, out


class MultiInputEncoder(nn.Module):
    """Packed rows ``[B, nbytes]`` uint8 (or the leaves themselves, ``{key: [B, *shape]}``) -> the features of
    every input key side by side ``[B, width]``, each key by its own encoder."""

    def __init__(self, layout: ObservationLayout, choices: list[Choice]):
        super().__init__()
        self.layout = layout
        self.leaves = [choice.field for choice in choices]
        built = [_encoder(choice) for choice in choices]
        self.encoders = nn.ModuleList(module for module, _ in built)
        self.width = sum(width for _, width in built)

    @property
    def keys(self) -> list[str]:
        return [leaf.key for leaf in self.leaves]

    def forward(self, x: torch.Tensor | Mapping[str, torch.Tensor]) -> torch.Tensor:
        if isinstance(x, Mapping):
            parts = [encoder(x[leaf.key]) for leaf, encoder in zip(self.leaves, self.encoders, strict=True)]
        else:
            parts = [encoder(self.layout.view(x, leaf)) for leaf, encoder in zip(self.leaves, self.encoders,
                                                                                 strict=True)]
        return torch.cat(parts, dim=-1)

    def extra_repr(self) -> str:
        return f"keys={self.keys}, width={self.width}"


def multi_input(layout: ObservationLayout, approximation: Any) -> tuple[MultiInputEncoder, int]:
    """The encoder of observations laid out by ``layout``, as ``approximation`` configures it, and its width."""
    encoder = MultiInputEncoder(layout, choose_encoders(layout, approximation))
    return encoder, encoder.width
