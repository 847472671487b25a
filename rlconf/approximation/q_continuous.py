"""QContinuous: action values Q(s, a) of continuous actions, for DDPG, TD3 and SAC."""

from __future__ import annotations

import torch
from torch import nn

from rlconf.approximation.approximation import Approximation


class QContinuous(Approximation):
    """``q(observations [B, n], actions [B, d]) -> values [B]``: the model sees the two concatenated.

    ``model`` maps ``[B, n + d]`` to ``[B, 1]`` (any MLP head will do); with an ``encoder`` (Dict and Tuple
    observations: rlconf.nn.encoders) the observations are encoded first, ``n`` its width. Besides the usual
    forward passes, ``frozen`` is the pass actor-critics differentiate their policy through: gradients flow to
    the actions but not into the critic's weights, so the policy's loss can share one backward pass with the critic's
    own (``reinforce_together``) without touching the critic's gradients, and no weight gradients of the
    critic are computed for it.
    """

    def __init__(self, model: nn.Module, optimizer=None, name: str = "q", encoder: nn.Module | None = None,
                 **kwargs):
        super().__init__(_StateAction(model, encoder), optimizer, name=name, **kwargs)

    def frozen(self, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Q(s, a) with gradients with respect to ``actions`` (and ``observations``) only."""
        # Weights that do not require gradients are constants to autograd for this pass (and 30% cheaper
        # than torch.func.functional_call with detached copies); the passes recorded before are unaffected.
        for parameter in self._params:
            parameter.requires_grad_(False)
        try:
            return self._forward(observations, actions)
        finally:
            for parameter in self._params:
                parameter.requires_grad_(True)


class _StateAction(nn.Module):
    def __init__(self, model: nn.Module, encoder: nn.Module | None = None):
        super().__init__()
        self.model = model
        self.encoder = encoder  # None (plain observations) registers nothing: their checkpoints are as they were

    def forward(self, observations: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        if self.encoder is not None:
            observations = self.encoder(observations)
        return self.model(torch.cat((observations, actions), dim=-1)).squeeze(-1)
