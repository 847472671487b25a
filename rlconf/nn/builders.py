"""Model builders named by the approximation group's ``model`` key.

Each model is a settings dataclass, checked against the config before anything is built, whose methods build
the networks agents ask for: ``q`` (action values), ``q_dist`` (return-distribution logits), ``head`` (a
network of its own with any number of outputs), ``trunk`` (shared features) and ``linear`` (a head layer on a
trunk); with ``recurrent`` (lstm, gru), ``recurrent_q`` and ``recurrent_trunk`` build the same networks around
a recurrent core (rlconf.nn.recurrent). Agents call these methods and never name a layer, so every agent runs on
every model: DQN on an MLP for CartPole and on the Nature CNN for Atari with the same code. Dict and Tuple
observations (a PackedSpace: rlconf.core.layout) begin with the multi-input encoder of rlconf.nn.encoders, one
encoder per key, and the model's own layers follow. ``model_settings`` picks the class from the registry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from torch import nn

from rlconf import registry
from rlconf.core.layout import layout_of
from rlconf.errors import require
from rlconf.nn.encoders import multi_input, nature_convs
from rlconf.nn.layers import (
    CategoricalDueling,
    ChannelsLast,
    Dueling,
    Flatten,
    Layers,
    Linear,
    Linear0,
    NoisyFactorizedLinear,
    Scale,
    activation,
)
from rlconf.nn.recurrent import Part, RecurrentCore, RecurrentNetwork, SideBySide
from rlconf.nn.schemas import MLPConfig, NatureCNNConfig, min_image_side
from rlconf.optim.choice import OPTIMIZATION_KEYS

HIDDEN_GAIN = math.sqrt(2)  # orthogonal gain of layers followed by a ReLU-like activation


class ModelSettings:
    """The builder methods every model offers; a model says what its layers are, this class assembles them.

    A subclass is also one of the settings dataclasses of rlconf.nn.schemas, which have the fields
    ``shared``, ``ortho_init``, ``dueling``, ``noisy`` and ``noisy_sigma``, and defines ``_features`` (the
    layers every head shares), ``_head_hidden`` (the hidden layer sizes each head adds on them; dueling
    streams get a copy each, as in Wang et al.) and ``_activation``. ``dueling`` and ``noisy`` shape the
    value-based heads (``q``, ``q_dist``) only.
    """

    shared: bool  # actor-critics: one trunk for policy and value heads, or a network each
    ortho_init: bool
    dueling: bool
    noisy: bool
    noisy_sigma: float
    recurrent: str  # none, lstm or gru
    recurrent_hidden: int
    # Output layers start at zero (Linear0) unless ortho_init; a model tuned on torch's default says False.
    zero_output: ClassVar[bool] = True

    # -- what agents call ---------------------------------------------------------------------------------
    def q(self, space: gym.Space, n_actions: int) -> nn.Module:
        """Observations ``[B, *space.shape]`` -> action values ``[B, n_actions]``."""
        return self._action_values(space, n_actions, None)

    def q_dist(self, space: gym.Space, n_actions: int, atoms: int) -> nn.Module:
        """Observations -> logits ``[B, n_actions, atoms]``; the approximation applies the softmax."""
        return self._action_values(space, n_actions, atoms)

    def head(self, space: gym.Space, outputs: int, out_gain: float = 1.0) -> nn.Module:
        """Observations -> ``[B, outputs]``, a network of its own (actor-critics with ``shared: false``)."""
        layers, width = self._trunk_layers(space)
        out = self._output(width, outputs, noisy=False)
        return self._initialised(Layers(*layers, out), {out: out_gain})

    def trunk(self, space: gym.Space) -> tuple[nn.Module, int]:
        """Features for several heads to share, and their width; heads come from ``linear``."""
        layers, width = self._trunk_layers(space)
        return self._initialised(Layers(*layers), {}), width

    def linear(self, width: int, outputs: int, gain: float = 1.0) -> nn.Module:
        """A head layer on ``width`` trunk features; ``gain`` is its orthogonal gain under ``ortho_init``."""
        out = self._output(width, outputs, noisy=False)
        return self._initialised(out, {out: gain})

    def recurrent_q(self, space: gym.Space, n_actions: int, atoms: int | None = None,
                    previous_action_reward: bool = False) -> RecurrentNetwork:
        """Sequences ``[T, B, *space.shape]`` -> action values ``[T, B, n_actions]`` (logits ``[T, B, n_actions,
        atoms]`` with ``atoms``): the shared layers, the core, then the value-based head with its hidden layer
        (dueling and noisy as configured), R2D2's layout: Nature convolutions, an LSTM, a dueling head. With
        ``previous_action_reward`` the core also reads the previous action (one-hot) and reward (R2D2's inputs:
        rlconf.nn.recurrent.RecurrentNetwork)."""
        layers, width = self._features(space)
        previous = n_actions if previous_action_reward else 0
        core = self._core(width + (previous + 1 if previous else 0))
        head = self._action_values_on(layers=[], width=self.recurrent_hidden, n_actions=n_actions, atoms=atoms)
        return self._recurrent(Layers(*layers), core, head, previous)

    def recurrent_trunk(self, space: gym.Space, critic_inputs: int = 0) -> tuple[RecurrentNetwork | SideBySide, int]:
        """Sequences -> features ``[T, B, width]`` for policy and value heads (from ``linear``): every hidden
        layer, then the core, as CleanRL's LSTM PPO. Unless ``shared``, the actor and the critic each get a
        trunk and a core of their own (Stable-Baselines3's RecurrentPPO), side by side: the first half of the
        features is the actor's (``rlconf.nn.recurrent.Part``). With ``critic_inputs`` (a centralised critic's
        global state, the last features of each observation) they are side by side whatever ``shared`` says,
        the actor's trunk reading the features before those and the critic's those alone."""
        def trunk(start: int = 0, width: int | None = None) -> RecurrentNetwork:
            if width is None:
                layers, features = self._trunk_layers(space)
            else:
                layers, features = self._trunk_layers(part_space(space, start, width))
                layers = [Part(start, width), *layers]
            return self._recurrent(Layers(*layers), self._core(features), None)

        if critic_inputs:
            actor = flat_size(space) - critic_inputs
            return SideBySide(trunk(0, actor), trunk(actor, critic_inputs)), 2 * self.recurrent_hidden
        if self.shared:
            return trunk(), self.recurrent_hidden
        return SideBySide(trunk(), trunk()), 2 * self.recurrent_hidden

    def observation_encoder(self, space: gym.Space) -> tuple[nn.Module | None, int]:
        """What a network that takes more than the observation (a critic's Q(s, a)) reads the observation with:
        for Dict and Tuple observations the multi-input encoder (rlconf.nn.encoders) and its width, its features
        then concatenated with the rest; None and the flat size for plain ones, which are concatenated as
        they are."""
        layout = layout_of(space)
        if layout is None:
            return None, flat_size(space)
        encoder, width = multi_input(layout, self)
        return self._initialised(encoder, {}), width

    # -- what a model defines -----------------------------------------------------------------------------
    def _features(self, space: gym.Space) -> tuple[list[nn.Module], int]:
        """The layers every head shares, and their output width."""
        raise NotImplementedError

    def _head_hidden(self) -> list[int]:
        raise NotImplementedError

    def _activation(self) -> nn.Module:
        raise NotImplementedError

    # -- assembly -----------------------------------------------------------------------------------------
    def _action_values(self, space: gym.Space, n_actions: int, atoms: int | None) -> nn.Module:
        layers, width = self._features(space)
        return self._action_values_on(layers, width, n_actions, atoms)

    def _action_values_on(self, layers: list[nn.Module], width: int, n_actions: int, atoms: int | None) -> nn.Module:
        per_action = atoms or 1
        if self.dueling:
            value = self._stream(width, per_action)
            advantage = self._stream(width, n_actions * per_action)
            combine = CategoricalDueling(value, advantage) if atoms else Dueling(value, advantage)
            return self._initialised(Layers(*layers, combine), {value[-1]: 1.0, advantage[-1]: 1.0})
        # Not dueling: one flat Sequential, since every nested module costs a Python call per forward.
        stream = list(self._stream(width, n_actions * per_action))
        unflatten = [nn.Unflatten(1, (n_actions, atoms))] if atoms else []
        return self._initialised(Layers(*layers, *stream, *unflatten), {stream[-1]: 1.0})

    def _trunk_layers(self, space: gym.Space) -> tuple[list[nn.Module], int]:
        layers, width = self._features(space)
        hidden, width = self._dense(width, self._head_hidden(), noisy=False)
        return layers + hidden, width

    def _stream(self, width: int, outputs: int) -> Layers:
        """The head's hidden layers and an output layer, noisy throughout when ``noisy``."""
        hidden, width = self._dense(width, self._head_hidden(), noisy=self.noisy)
        return Layers(*hidden, self._output(width, outputs, noisy=self.noisy))

    def _dense(self, width: int, sizes: list[int], noisy: bool) -> tuple[list[nn.Module], int]:
        """Linear layers of ``sizes``, each followed by the activation."""
        layers: list[nn.Module] = []
        for size in sizes:
            layers += [self._linear_layer(width, size, noisy), self._activation()]
            width = size
        return layers, width

    def _linear_layer(self, width: int, size: int, noisy: bool) -> nn.Linear:
        return NoisyFactorizedLinear(width, size, self.noisy_sigma) if noisy else Linear(width, size)

    def _output(self, width: int, outputs: int, noisy: bool) -> nn.Linear:
        # Noisy outputs keep Fortunato et al.'s initialisation: their noise is what explores.
        if noisy or self.ortho_init or not self.zero_output:
            return self._linear_layer(width, outputs, noisy)
        return Linear0(width, outputs)

    def _core(self, width: int) -> RecurrentCore:
        return RecurrentCore(self.recurrent, width, self.recurrent_hidden)

    def _recurrent(self, encoder: nn.Module, core: RecurrentCore, head: nn.Module | None,
                   previous_actions: int = 0) -> RecurrentNetwork:
        """The three parts, encoder and head initialised as their feed-forward counterparts were (each part
        on its own: the head's layers were initialised when built), the core orthogonally under ``ortho_init``."""
        if self.ortho_init:
            core.orthogonal_()
        return RecurrentNetwork(self._initialised(encoder, {}), core, head, previous_actions)

    def _initialised(self, model: nn.Module, output_gains: dict[nn.Module, float]) -> nn.Module:
        """``model`` with orthogonal weights and zero biases under ``ortho_init``, else as built.

        Orthogonal initialisation runs after every layer exists and in module order (gain sqrt 2, or the
        output's own gain), so a network draws its random numbers in the order it always has: the MLP
        presets were tuned on exactly these weights.
        """
        if self.ortho_init:
            for module in model.modules():
                if isinstance(module, (nn.Linear, nn.Conv2d)):
                    nn.init.orthogonal_(module.weight, output_gains.get(module, HIDDEN_GAIN))
                    nn.init.zeros_(module.bias)
        return model


def input_layers(space: gym.Space, scale_frames: bool = True) -> list[nn.Module]:
    """Layers that turn observations into float tensors: uint8 frames are scaled to [0, 1] in the model (or
    only made floats, ``scale_frames=False``), so replay and environments keep them in uint8, a quarter of the
    memory."""
    return [Scale(1 / 255 if scale_frames else 1.0)] if space.dtype == np.uint8 else []


def flat_size(space: gym.Space) -> int:
    return int(np.prod(space.shape))


class MLPSettings(MLPConfig, ModelSettings):
    """Fully connected layers on the flattened observation (the settings: ``schemas.MLPConfig``)."""

    # The presets were tuned on torch's default initialisation of the output layer.
    zero_output: ClassVar[bool] = False

    def _features(self, space: gym.Space) -> tuple[list[nn.Module], int]:
        layout = layout_of(space)
        if layout is not None:  # Dict and Tuple observations: each key encoded, then the hidden layers
            encoder, width = multi_input(layout, self)
            hidden, width = self._dense(width, self.hidden[:-1], noisy=False)
            return [encoder, *hidden], width
        # Vector observations need no Flatten: one module fewer on the per-step path.
        flatten = [Flatten()] if len(space.shape) > 1 else []
        hidden, width = self._dense(flat_size(space), self.hidden[:-1], noisy=False)
        return [*input_layers(space), *flatten, *hidden], width

    def _head_hidden(self) -> list[int]:
        return self.hidden[-1:]

    def _activation(self) -> nn.Module:
        return activation(self.activation)()


class NatureCNNSettings(NatureCNNConfig, ModelSettings):
    """Convolutions on channels-first frames (the Nature DQN's unless ``convs`` names others), then a fully
    connected layer per head (the settings: ``schemas.NatureCNNConfig``). Dict and Tuple observations' images
    go through the encoders of rlconf.nn.encoders, configured there (``approximation.encoders``)."""

    def _features(self, space: gym.Space) -> tuple[list[nn.Module], int]:
        layout = layout_of(space)
        if layout is not None:  # Dict and Tuple observations: images by these convolutions, the rest by theirs
            encoder, width = multi_input(layout, self)
            return [encoder], width
        require(len(space.shape) == 3, "approximation.model", self.model,
                f"needs image observations [channels, height, width]; got shape {tuple(space.shape)}")
        channels, *size = space.shape
        # The layout first: uint8 copies cheaply.
        convs, channels, size = nature_convs(channels, size, self.convs)
        layers: list[nn.Module] = [ChannelsLast(), *input_layers(space, self.scale_frames), *convs]
        side = min_image_side(self.convs)
        require(min(size) >= 1, "approximation.convs", self.convs,
                f"frames of {tuple(space.shape[1:])} are too small for these convolutions (at least {side}x{side})")
        return [*layers, Flatten()], channels * size[0] * size[1]

    def _head_hidden(self) -> list[int]:
        return [self.hidden]

    def _activation(self) -> nn.Module:
        return nn.ReLU()


def model_settings(approximation: Mapping[str, Any]) -> ModelSettings:
    """The settings object of the model ``approximation['model']`` names: what agents build networks from."""
    # The optimiser's keys (rlconf.optim.choice) share the group; they shape no network.
    network = {key: value for key, value in approximation.items() if key not in OPTIMIZATION_KEYS}
    return registry.get("model", approximation.get("model", "mlp"))(**network)


def part_space(space: gym.spaces.Box, start: int, width: int) -> gym.spaces.Box:
    """The features ``[start, start + width)`` of a flat Box's observations, as a Box of their own (what a
    network reading only that part, behind ``Part(start, width)``, is built for)."""
    return gym.spaces.Box(space.low[start : start + width], space.high[start : start + width])
