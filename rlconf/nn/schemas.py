"""The settings of the built-in models: the fields of the approximation group, their defaults and the checks
of their values, importing no torch (a config is checked without it: ``rlconf.config.validate``). The
builders of rlconf.nn.builders (``MLPSettings``, ``NatureCNNSettings``) are these settings with the methods
that build the networks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlconf.errors import require

ACTIVATION_NAMES = ("relu", "tanh", "elu", "gelu", "silu")  # the modules: rlconf.nn.layers.ACTIVATIONS
RECURRENT_NAMES = ("none", "lstm", "gru")  # approximation.recurrent: rlconf.nn.recurrent.RECURRENT_CORES or none


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
    hidden: int = 512  # width of the fully connected layer after the convolutions
    scale_frames: bool = True  # frames to [0, 1] (false: the raw 0-255, as Tianshou's atari_dqn)
    shared: bool = True  # actor-critics: the convolutions and the hidden layer serve policy and value
    ortho_init: bool = False
    dueling: bool = False
    noisy: bool = False
    noisy_sigma: float = 0.5
    recurrent: str = "none"
    recurrent_hidden: int = 512  # R2D2's LSTM

    def __post_init__(self):
        require(self.hidden >= 1, "approximation.hidden", self.hidden, "must be at least 1")
        check_heads(self)


def check_heads(settings: Any) -> None:
    """What every model's heads and core need (``dueling`` and ``noisy`` shape only the value-based heads)."""
    require(settings.noisy_sigma > 0, "approximation.noisy_sigma", settings.noisy_sigma, "must be positive")
    require(settings.recurrent in RECURRENT_NAMES, "approximation.recurrent", settings.recurrent,
            f"allowed: {', '.join(RECURRENT_NAMES)}")
    require(settings.recurrent_hidden >= 1, "approximation.recurrent_hidden", settings.recurrent_hidden,
            "must be at least 1")
