"""Target networks: slowly moving copies of a model that give stable regression targets."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod

import torch
from torch import nn

from rlconf.approximation.compiled import compiled


class TargetNetwork(ABC):
    """Holds the network ``Approximation.target`` evaluates; ``update`` runs after every optimiser step."""

    @abstractmethod
    def init(self, model: nn.Module) -> None: ...

    @abstractmethod
    def __call__(self, *inputs) -> torch.Tensor: ...

    @abstractmethod
    def update(self) -> None: ...

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class TrivialTarget(TargetNetwork):
    """No separate target: the model itself, evaluated without gradients."""

    def init(self, model: nn.Module) -> None:
        self.model = model
        self._forward = compiled(model)

    @torch.no_grad()
    def __call__(self, *inputs) -> torch.Tensor:
        return self._forward(*inputs)

    def update(self) -> None:
        pass


class _CopiedTarget(TargetNetwork):
    def init(self, model: nn.Module) -> None:
        self.source = model
        self.model = copy.deepcopy(model)
        self.model.requires_grad_(False)
        self._forward = compiled(self.model)
        self._pairs = list(zip(self.model.parameters(), self.source.parameters(), strict=True))

    @torch.no_grad()
    def __call__(self, *inputs) -> torch.Tensor:
        return self._forward(*inputs)

    def state_dict(self) -> dict:
        return {"model": self.model.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])


class FixedTarget(_CopiedTarget):
    """A copy refreshed every ``update_frequency`` calls of ``update`` (optimiser steps), or on demand.

    With ``update_frequency=0`` it is only refreshed by ``sync()``: agents that count the period in
    environment steps (as DQN does) call that themselves.
    """

    def __init__(self, update_frequency: int = 0):
        self.update_frequency = update_frequency
        self._updates = 0

    def update(self) -> None:
        self._updates += 1
        if self.update_frequency and self._updates % self.update_frequency == 0:
            self.sync()

    @torch.no_grad()
    def sync(self) -> None:
        targets, sources = zip(*self._pairs, strict=True)
        torch._foreach_copy_(list(targets), list(sources))
        for target, source in zip(self.model.buffers(), self.source.buffers(), strict=True):
            target.copy_(source)

    def state_dict(self) -> dict:
        return {**super().state_dict(), "updates": self._updates}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self._updates = state.get("updates", 0)


class PolyakTarget(_CopiedTarget):
    """target <- (1 - rate) * target + rate * model after every optimiser step, or every ``every``-th
    (TD3 moves its critics' targets only with its delayed policy updates)."""

    def __init__(self, rate: float, every: int = 1):
        self.rate = rate
        self.every = every
        self._updates = 0

    @torch.no_grad()
    def update(self) -> None:
        self._updates += 1
        if self._updates % self.every:
            return
        targets, sources = zip(*self._pairs, strict=True)
        torch._foreach_lerp_(list(targets), list(sources), self.rate)

    def state_dict(self) -> dict:
        return {**super().state_dict(), "updates": self._updates}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self._updates = state.get("updates", 0)


def make_target(kind: str, period: int = 0, rate: float = 0.005) -> TargetNetwork:
    """The target network named in a config: ``trivial``, ``fixed`` (every ``period``) or ``polyak``."""
    if kind == "trivial":
        return TrivialTarget()
    if kind == "fixed":
        return FixedTarget(period)
    if kind == "polyak":
        return PolyakTarget(rate)
    raise ValueError(f"unknown target network {kind!r}; allowed: trivial, fixed, polyak")
