"""The settings of the built-in models: the fields of the approximation group, their defaults and the checks
of their values, importing no torch (a config is checked without it: ``rlconf.config.validate``). The
builders of rlconf.nn.builders (``MLPSettings``, ``NatureCNNSettings``) are these settings with the methods
that build the networks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlconf.errors import require

ACTIVATION_NAMES = ("relu", "tanh", "elu", "gelu", "silu")  # the modules: rlconf.nn.layers.ACTIVATIONS
RECURRENT_NAMES = ("none", "lstm", "gru")  # approximation.recurrent: rlconf.nn.recurrent.RECURRENT_CORES or none
# [out_channels, kernel, stride] of the Nature DQN's convolutions (Mnih et al. 2015): nature_cnn's default stack.
NATURE_CONVS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))


@dataclass
class MLPConfig:
    """Fully connected layers on the flattened observation."""

    model: str = "mlp"
    hidden: list[int] = field(default_factory=lambda: [64, 64])
    activation: str = "relu"
    # PPO and other actor-critics: one trunk shared by policy and value heads, or a trunk each.
    shared: bool = False
    # Orthogonal initialisation (hidden gain sqrt 2, small policy head), as PPO implementations use.
    ortho_init: bool = False
    dueling: bool = False  # value and advantage streams, each with its own last hidden layer
    noisy: bool = False  # factorised noisy linears in the value-based heads instead of epsilon-greedy
    noisy_sigma: float = 0.5  # their initial noise scale, divided by sqrt(fan-in)
    recurrent: str = "none"  # an LSTM or GRU core between the hidden layers and the heads (agents with memory)
    recurrent_hidden: int = 64  # the core's units
    # Dict and Tuple observations: each key's encoder (rlconf.nn.encoders), by key; unnamed keys get defaults.
    encoders: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        require(self.activation in ACTIVATION_NAMES, "approximation.activation", self.activation,
                f"allowed: {', '.join(ACTIVATION_NAMES)}")
        require(all(size >= 1 for size in self.hidden), "approximation.hidden", self.hidden,
                "layer sizes must be at least 1")
        check_heads(self)


@dataclass
class NatureCNNConfig:
    """The Nature DQN convolutions on channels-first frames, then a fully connected layer per head."""

    model: str = "nature_cnn"
    # The convolutions, each [out_channels, kernel, stride] with a ReLU: Nature's by default; Data-Efficient
    # Rainbow's two 5x5 ones of stride 5 are [[32, 5, 5], [64, 5, 5]] (van Hasselt et al. 2019).
    convs: list[Any] = field(default_factory=lambda: [list(conv) for conv in NATURE_CONVS])
    hidden: int = 512  # width of the fully connected layer after the convolutions
    scale_frames: bool = True  # frames to [0, 1] (false: the raw 0-255, as Tianshou's atari_dqn)
    shared: bool = True  # actor-critics: the convolutions and the hidden layer serve policy and value
    ortho_init: bool = False
    dueling: bool = False
    noisy: bool = False
    noisy_sigma: float = 0.5
    recurrent: str = "none"
    recurrent_hidden: int = 512  # R2D2's LSTM
    encoders: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        require(self.hidden >= 1, "approximation.hidden", self.hidden, "must be at least 1")
        check_convs(self.convs)
        check_heads(self)


def check_convs(convs: Any) -> None:
    """``approximation.convs``: at least one convolution, each [out_channels, kernel, stride] of whole numbers
    of at least 1."""
    require(isinstance(convs, list) and bool(convs)
            and all(isinstance(conv, list) and len(conv) == 3 and all(_whole(n) and n >= 1 for n in conv)
                    for conv in convs),
            "approximation.convs", convs, "a list of convolutions, each [out_channels, kernel, stride] of whole "
            "numbers at least 1, e.g. [[32, 8, 4], [64, 4, 2], [64, 3, 1]]")


def min_image_side(convs: Any) -> int:
    """The smallest image side from which the convolutions ``convs`` ([out_channels, kernel, stride] each, no
    padding) leave at least one pixel."""
    side = 1
    for _, kernel, stride in reversed(convs):
        side = (side - 1) * stride + kernel
    return side


def check_heads(settings: Any) -> None:
    """What every model's heads and core need (``dueling`` and ``noisy`` shape only the value-based heads)."""
    require(settings.noisy_sigma > 0, "approximation.noisy_sigma", settings.noisy_sigma, "must be positive")
    require(settings.recurrent in RECURRENT_NAMES, "approximation.recurrent", settings.recurrent,
            f"allowed: {', '.join(RECURRENT_NAMES)}")
    require(settings.recurrent_hidden >= 1, "approximation.recurrent_hidden", settings.recurrent_hidden,
            "must be at least 1")
    for key, entry in encoder_entries(settings.encoders).items():
        check_encoder(key, entry)


# -- approximation.encoders: the encoder of each key of a Dict or Tuple observation (rlconf.nn.encoders) -------
# Each type's arguments; ``type`` itself may be left out (the key's default encoder, chosen from its space).
ENCODER_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "cnn": ("scale", "channels_last"),  # the Nature DQN convolutions, images of at least 36x36
    "small_cnn": ("channels", "kernel", "pool", "scale", "channels_last"),  # 2x2 convolutions: MiniGrid's 7x7
    "mlp": ("hidden", "activation", "scale"),
    "flatten": ("scale",),  # the values as floats, as they are: the model's own hidden layers read them
    "embedding": ("size",),  # Discrete, MultiDiscrete: a learned vector per value (of each dimension)
    "one_hot": (),  # Discrete, MultiDiscrete: one-hot per dimension
}
ENCODERS = "approximation.encoders"


def encoder_entries(encoders: Mapping[str, Any] | None, prefix: str = "") -> dict[str, dict[str, Any]]:
    """``approximation.encoders`` as ``{dotted key: its encoder's settings}``. A mapping with a ``type``, or with
    any value that is not a mapping (its arguments), or an empty one, is one key's encoder; a mapping of
    mappings is a group of nested keys (``goal: {position: {type: mlp}}`` configures ``goal.position``)."""
    entries: dict[str, dict[str, Any]] = {}
    for key, node in (encoders or {}).items():
        name = f"{prefix}.{key}" if prefix else str(key)
        require(isinstance(node, Mapping), f"{ENCODERS}.{name}", node,
                "an encoder is a mapping of its settings, e.g. {type: mlp, hidden: [64]}")
        if not node or isinstance(node.get("type"), str) or any(not isinstance(v, Mapping) for v in node.values()):
            entries[name] = dict(node)
        else:
            entries.update(encoder_entries(node, name))
    return entries


def check_encoder(key: str, entry: Mapping[str, Any]) -> None:
    """One key's encoder settings: a known type, its own arguments, values of their types."""
    where = f"{ENCODERS}.{key}"
    kind = entry.get("type")
    require(kind is None or kind in ENCODER_ARGUMENTS, f"{where}.type", kind,
            f"unknown encoder; allowed: {', '.join(ENCODER_ARGUMENTS)}")
    allowed = ENCODER_ARGUMENTS[kind] if kind else sorted({a for args in ENCODER_ARGUMENTS.values() for a in args})
    for name, value in entry.items():
        if name == "type":
            continue
        require(name in allowed, f"{where}.{name}", value,
                f"not an argument of {'a ' + kind if kind else 'any'} encoder; allowed: "
                f"{', '.join(('type', *allowed)) if not kind else ', '.join(allowed) or 'none'}")
        _check_argument(f"{where}.{name}", name, value)


def _check_argument(where: str, name: str, value: Any) -> None:
    if name in ("hidden", "channels"):
        require(isinstance(value, list) and bool(value) and all(_whole(v) and v >= 1 for v in value), where, value,
                "a list of sizes, each at least 1, e.g. [64]")
    elif name in ("kernel", "size"):
        require(_whole(value) and value >= 1, where, value, "a whole number, at least 1")
    elif name == "activation":
        require(value in ACTIVATION_NAMES, where, value, f"allowed: {', '.join(ACTIVATION_NAMES)}")
    elif name == "scale":
        require(isinstance(value, bool), where, value, "true (uint8 images to [0, 1]) or false (as they are)")
    else:  # pool, channels_last: null lets the encoder decide from the image
        require(value is None or isinstance(value, bool), where, value, "true, false or null (decided by the image)")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
