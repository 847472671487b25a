"""Softmax (categorical) policies for discrete actions."""

from __future__ import annotations

import torch
from torch.distributions import Categorical

from rlconf.approximation import Approximation


class SoftmaxPolicy(Approximation):
    """A policy network whose outputs are action logits; calling it gives a ``Categorical`` distribution."""

    def __init__(self, model, optimizer=None, name: str = "policy", **kwargs):
        super().__init__(model, optimizer, name=name, **kwargs)

    def __call__(self, *inputs) -> Categorical:
        return Categorical(logits=self.model(*inputs), validate_args=False)

    @torch.no_grad()
    def no_grad(self, *inputs) -> Categorical:
        return Categorical(logits=self.model(*inputs), validate_args=False)

    def greedy(self, *inputs) -> torch.Tensor:
        """The most probable action, evaluated without gradients (for test agents)."""
        return self.eval(*inputs).argmax(-1)
