"""Softmax (categorical) policies for discrete actions."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from rlconf.approximation import Approximation


class Categorical:
    """A categorical distribution over the last dimension of ``logits``.

    Holds the normalised log-probabilities once and answers ``sample``, ``log_prob``, ``entropy`` and
    ``mode`` from them: a third of the tensor operations of ``torch.distributions.Categorical``, which
    matters when small policies are evaluated thousands of times a second.
    """

    def __init__(self, logits: torch.Tensor):
        self.log_probs = F.log_softmax(logits, dim=-1)

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
    """A policy network whose outputs are action logits; calling it gives a ``Categorical`` distribution."""

    def __init__(self, model, optimizer=None, name: str = "policy", **kwargs):
        super().__init__(model, optimizer, name=name, **kwargs)

    def __call__(self, *inputs) -> Categorical:
        return Categorical(self._forward(*inputs))

    @torch.no_grad()
    def no_grad(self, *inputs) -> Categorical:
        return Categorical(self._forward(*inputs))

    def greedy(self, *inputs) -> torch.Tensor:
        """The most probable action, evaluated without gradients (for test agents)."""
        return self.eval(*inputs).argmax(-1)

    def env_actions(self, actions: torch.Tensor) -> torch.Tensor:
        """The environment's actions for sampled ones: the same indices (GaussianPolicy rescales)."""
        return actions
