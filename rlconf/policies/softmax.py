"""Softmax (categorical) policies for discrete actions: Discrete, and with ``rlconf.policies.multi``'s
distributions MultiDiscrete and MultiBinary; each optionally masked by the states' ``action_mask`` (True =
legal; its conventions and checks: ``rlconf.core.layout.check_mask``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from rlconf.approximation import Approximation
from rlconf.policies.greedy import legal_argmax

# A masked logit, as sb3-contrib's MaskablePPO sets it: far below any logit, so the softmax gives the action
# probability 0 and sampling never draws it; finite, so that the entropy's p * log p is 0 for it (not NaN).
MASKED_LOGIT = -1e8


def masked_logits(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """``logits`` with those of illegal actions (``legal`` False) set to ``MASKED_LOGIT`` (the dtype's lowest
    where that is higher: half precision)."""
    return logits.masked_fill(~legal, max(MASKED_LOGIT, torch.finfo(logits.dtype).min))


class Categorical:
    """A categorical distribution over the last dimension of ``logits``.

    Holds the normalised log-probabilities once and answers ``sample``, ``log_prob``, ``entropy`` and
    ``mode`` from them: a third of the tensor operations of ``torch.distributions.Categorical``, which
    matters when small policies are evaluated thousands of times a second.

    With ``mask`` (bool, True = legal) the illegal actions' logits are masked before the softmax, as
    MaskablePPO does: sampling, ``log_prob``, ``entropy`` and ``mode`` are those of the masked distribution.
    """

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor | None = None):
        if mask is not None:
            logits = masked_logits(logits, mask)
        self.log_probs = F.log_softmax(logits, dim=-1)

    @staticmethod
    def greedy(logits: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The most probable (legal) action of each row of ``logits``, without building the distribution."""
        return legal_argmax(logits, mask)

    @property
    def probs(self) -> torch.Tensor:
        return self.log_probs.exp()

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        flat = self.probs.reshape(-1, self.log_probs.shape[-1])
        return torch.multinomial(flat, 1, generator=generator).view(self.log_probs.shape[:-1])

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        return -(self.probs * self.log_probs).sum(-1)

    @property
    def mode(self) -> torch.Tensor:
        return self.log_probs.argmax(-1)


class SoftmaxPolicy(Approximation):
    """A policy network whose outputs are action logits; calling it on features (and the states' action
    ``mask``, if any) gives a distribution: a ``Categorical`` over a Discrete space, or what ``distribution``
    makes of the logits (``multi.distributions``: independent categoricals or Bernoullis). ``offset``: what the
    environment's actions add to the sampled indices (a MultiDiscrete space's ``start``; None: nothing)."""

    def __init__(self, model, optimizer=None, name: str = "policy", distribution=Categorical,
                 offset: torch.Tensor | None = None, **kwargs):
        super().__init__(model, optimizer, name=name, **kwargs)
        self.distribution = distribution
        self.offset = offset

    def __call__(self, *inputs, mask: torch.Tensor | None = None):
        return self.distribution(self._forward(*inputs), mask)

    @torch.no_grad()
    def no_grad(self, *inputs, mask: torch.Tensor | None = None):
        return self.distribution(self._forward(*inputs), mask)

    def greedy(self, *inputs, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The most probable (legal) action, evaluated without gradients (for test agents)."""
        return self.distribution.greedy(self.eval(*inputs), mask)

    def env_actions(self, actions: torch.Tensor) -> torch.Tensor:
        """The environment's actions for sampled ones: the same indices, shifted by ``offset`` if any
        (GaussianPolicy rescales)."""
        return actions if self.offset is None else actions + self.offset
