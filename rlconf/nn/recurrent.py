"""Recurrent networks: an encoder applied to each step, an LSTM or GRU core over time, heads on its outputs.

Every recurrent model here maps time-major sequences ``[T, B, *obs]``, the recurrent state before their first
step ``[B, state_size]`` and where episodes (re)start ``resets [T, B]`` to outputs ``[T, B, ...]`` and the state
after their last step. Acting is a sequence of one step (``T = 1``); training runs whole sequences.

The state is one flat tensor per batch entry (an LSTM's ``h`` and ``c`` side by side), so buffers store it as
one more column of numbers and agents carry it without knowing which core produced it. A reset zeroes it
before the step it marks, as an episode's first state must not remember the previous episode.

A network built with ``previous_actions`` (R2D1's ``agent.prev_action_reward``, as rlpyt's R2D1 model and R2D2)
also reads, at every step, the action taken at the step before (one-hot over that many actions; -1 is none: an
episode's first step) and the reward received on arriving (``State.reward``; 0 at an episode's first step),
concatenated with the encoder's features before the core.
"""

from __future__ import annotations

import torch
from torch import nn

RECURRENT_CORES = ("lstm", "gru")


class RecurrentCore(nn.Module):
    """One LSTM or GRU layer of ``hidden`` units on ``inputs`` features per step."""

    def __init__(self, kind: str, inputs: int, hidden: int):
        super().__init__()
        if kind not in RECURRENT_CORES:
            raise ValueError(f"unknown recurrent core {kind!r}; allowed: {', '.join(RECURRENT_CORES)}")
        self.kind = kind
        self.hidden = hidden
        self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(inputs, hidden)

    def orthogonal_(self) -> None:
        """Orthogonal weights and zero biases, as CleanRL's LSTM PPO starts its core (``ortho_init``)."""
        for name, parameter in self.rnn.named_parameters():
            if "bias" in name:
                nn.init.zeros_(parameter)
            else:
                nn.init.orthogonal_(parameter)

    @property
    def state_size(self) -> int:
        return 2 * self.hidden if self.kind == "lstm" else self.hidden

    @property
    def state_parts(self) -> tuple[str, ...]:
        """The parts of the flat state, in its order, each ``hidden`` wide: an LSTM's ``h`` and ``c``, a GRU's
        ``h`` (what an exported graph takes and returns as inputs of their own)."""
        return ("h", "c") if self.kind == "lstm" else ("h",)

    def forward(self, x: torch.Tensor, state: torch.Tensor,
                resets: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``x [T, B, inputs]`` from ``state [B, state_size]`` -> ``([T, B, hidden], state after step T)``.

        The sequence runs in segments between the steps where some entry resets: one cuDNN / oneDNN call
        per segment instead of one per step. A sequence without resets is one call."""
        if resets is None or not bool(resets.any()):
            y, state = self.rnn(x, self._unflat(state))
            return y, self._flat(state)
        starts = resets.any(dim=1).nonzero().flatten().tolist()
        bounds = sorted({0, *starts, len(x)})
        outputs = []
        for start, end in zip(bounds[:-1], bounds[1:], strict=True):
            state = state * (~resets[start]).unsqueeze(1).to(state.dtype)
            y, hidden = self.rnn(x[start:end], self._unflat(state))
            outputs.append(y)
            state = self._flat(hidden)
        return torch.cat(outputs), state

    def _unflat(self, state: torch.Tensor):
        state = state.unsqueeze(0).contiguous()
        if self.kind == "lstm":
            h, c = state.chunk(2, dim=-1)
            return h.contiguous(), c.contiguous()
        return state

    def _flat(self, state) -> torch.Tensor:
        if self.kind == "lstm":
            return torch.cat(state, dim=-1).squeeze(0)
        return state.squeeze(0)


class RecurrentNetwork(nn.Module):
    """``encoder`` on every step, the ``core`` over time, ``head`` on every output: the recurrent counterpart
    of a feed-forward model ``head(encoder(x))``."""

    def __init__(self, encoder: nn.Module, core: RecurrentCore, head: nn.Module | None = None,
                 previous_actions: int = 0):
        super().__init__()
        self.encoder = encoder
        self.core = core
        self.head = head if head is not None else nn.Identity()
        # With previous_actions: the core's inputs end with the previous action, one-hot, and reward.
        self.previous_actions = previous_actions
        if previous_actions:  # compared with the action for its one-hot (-1 matches none); not in checkpoints
            self.register_buffer("action_indices", torch.arange(previous_actions), persistent=False)

    @property
    def state_size(self) -> int:
        return self.core.state_size

    def forward(self, x: torch.Tensor, state: torch.Tensor, resets: torch.Tensor | None = None,
                previous_action: torch.Tensor | None = None,
                previous_reward: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``x [T, B, *obs]`` from ``state`` -> ``([T, B, ...], state after step T)``; a network with
        ``previous_actions`` also takes each step's ``previous_action`` (int, -1: none) and ``previous_reward``,
        each ``[T, B]``."""
        steps, batch = x.shape[:2]
        features = self.encoder(x.flatten(0, 1)).view(steps, batch, -1)
        features = self._with_previous(features, previous_action, previous_reward)
        y, state = self.core(features, state, resets)
        out = self.head(y.flatten(0, 1))
        return out.view(steps, batch, *out.shape[1:]), state

    def step(self, x: torch.Tensor | dict[str, torch.Tensor], state: torch.Tensor,
             previous_action: torch.Tensor | None = None,
             previous_reward: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of a batch without its time axis, ``x [B, *obs]`` or a Dict observation's ``{key: [B, ...]}``
        (what an exported graph takes), from ``state`` (and the previous action and reward ``[B]`` where the
        network reads them): the outputs ``[B, ...]`` and the state after it, as ``forward`` computes them for
        a sequence of one step."""
        features = self.encoder(x)
        features = features.reshape(1, features.shape[0], -1)
        if self.previous_actions:
            features = self._with_previous(features, previous_action.unsqueeze(0), previous_reward.unsqueeze(0))
        y, state = self.core(features, state)
        return self.head(y[0]), state

    def _with_previous(self, features: torch.Tensor, action: torch.Tensor | None,
                       reward: torch.Tensor | None) -> torch.Tensor:
        """``features [T, B, width]``, followed where the network reads them by the one-hot previous action
        (zeros for -1, no action) and the previous reward (rlpyt's R2D1 model feeds its LSTM so)."""
        if not self.previous_actions:
            return features
        if action is None or reward is None:
            raise ValueError("this recurrent network reads the previous action and reward: pass both")
        one_hot = (action.unsqueeze(-1) == self.action_indices).to(features.dtype)
        return torch.cat([features, one_hot, reward.unsqueeze(-1).to(features.dtype)], dim=-1)


class SideBySide(nn.Module):
    """Several recurrent networks on the same input, their outputs and states concatenated: separate
    recurrent trunks for an actor and a critic (``approximation.shared: false``) behind one interface.
    ``Part`` takes one network's outputs back."""

    def __init__(self, *networks: RecurrentNetwork):
        super().__init__()
        self.networks = nn.ModuleList(networks)
        self._sizes = [network.state_size for network in networks]

    @property
    def state_size(self) -> int:
        return sum(self._sizes)

    def forward(self, x: torch.Tensor, state: torch.Tensor,
                resets: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        outputs, states = zip(*(network(x, part, resets) for network, part
                                in zip(self.networks, state.split(self._sizes, dim=-1), strict=True)), strict=True)
        return torch.cat(outputs, dim=-1), torch.cat(states, dim=-1)


class Part(nn.Module):
    """Features ``[start, start + width)`` of the last dimension."""

    def __init__(self, start: int, width: int):
        super().__init__()
        self.start = start
        self.width = width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.narrow(-1, self.start, self.width)

    def extra_repr(self) -> str:
        return f"start={self.start}, width={self.width}"


def initial_state(model: nn.Module, batch: int, device: torch.device | str) -> torch.Tensor:
    """The state of ``batch`` entries before their first step: zeros."""
    return torch.zeros((batch, model.state_size), device=device)
