"""QDist: a distribution over returns for every action, on a fixed support of atoms (Bellemare et al. 2017)."""

from __future__ import annotations

import torch

from rlconf.approximation.approximation import Approximation


class QDist(Approximation):
    """The model outputs logits ``[B, actions, atoms]``; this approximation hands out probabilities.

    ``project`` maps a shifted, scaled distribution (the Bellman target) back onto the support, splitting
    each atom's mass between its two neighbours.
    """

    def __init__(self, model, optimizer, n_actions: int, atoms: int, v_min: float, v_max: float,
                 name: str = "q_dist", **kwargs):
        super().__init__(model, optimizer, name=name, **kwargs)
        self.n_actions = n_actions
        device = next(model.parameters()).device
        self.support = torch.linspace(v_min, v_max, atoms, device=device)
        self.v_min, self.v_max = v_min, v_max
        self.delta = (v_max - v_min) / (atoms - 1)

    def __call__(self, *inputs) -> torch.Tensor:
        return torch.softmax(self._forward(*inputs), dim=-1)

    def log_probs(self, *inputs) -> torch.Tensor:
        """Log-probabilities with gradients: the numerically safe input of a cross-entropy loss."""
        return torch.log_softmax(self._forward(*inputs), dim=-1)

    def no_grad(self, *inputs) -> torch.Tensor:
        return torch.softmax(super().no_grad(*inputs), dim=-1)

    def eval(self, *inputs) -> torch.Tensor:
        return torch.softmax(super().eval(*inputs), dim=-1)

    def target(self, *inputs) -> torch.Tensor:
        return torch.softmax(super().target(*inputs), dim=-1)

    def expected(self, probabilities: torch.Tensor) -> torch.Tensor:
        """Action values: the mean of each action's distribution."""
        return (probabilities * self.support).sum(-1)

    @torch.no_grad()
    def project(self, rewards: torch.Tensor, discounts: torch.Tensor, probabilities: torch.Tensor) -> torch.Tensor:
        """The distribution of ``rewards + discounts * Z`` (Z ~ ``probabilities``), projected on the support.

        ``discounts`` already include the mask: 0 after a terminal state collapses Z to the reward.
        """
        atoms = len(self.support)
        shifted = (rewards.unsqueeze(-1) + discounts.unsqueeze(-1) * self.support).clamp(self.v_min, self.v_max)
        position = (shifted - self.v_min) / self.delta
        lower, upper = position.floor().long(), position.ceil().long()
        # An atom landing exactly on the support would give both neighbours zero weight: split it apart.
        lower[(upper > 0) & (lower == upper)] -= 1
        upper[(lower < atoms - 1) & (lower == upper)] += 1
        projected = torch.zeros_like(probabilities)
        projected.scatter_add_(-1, lower, probabilities * (upper.float() - position))
        projected.scatter_add_(-1, upper, probabilities * (position - lower.float()))
        return projected
