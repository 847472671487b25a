"""Deterministic policies for continuous actions (DDPG, TD3): the network's output is the action itself."""

from __future__ import annotations

import torch
from torch import nn

from rlconf.approximation import Approximation
from rlconf.policies.bounds import ActionBounds


class TanhActionBound(nn.Module):
    """tanh, then ``ActionBounds.scale``: any real vector becomes an action strictly inside the Box.

    The squashing keeps the policy's output bounded without clipping, which would cut its gradient.
    """

    def __init__(self, bounds: ActionBounds):
        super().__init__()
        self.bounds = bounds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bounds.scale(torch.tanh(x))


class DeterministicPolicy(Approximation):
    """``policy(observations) -> actions [B, d]`` in the environment's Box.

    ``model`` maps observations to ``d`` unbounded numbers; a ``TanhActionBound`` after it squashes them into
    the Box, so the target network (a copy of both) gives bounded actions too.
    """

    def __init__(self, model: nn.Module, optimizer=None, *, bounds: ActionBounds, name: str = "policy",
                 **kwargs):
        super().__init__(nn.Sequential(model, TanhActionBound(bounds)), optimizer, name=name, **kwargs)
        self.bounds = bounds
