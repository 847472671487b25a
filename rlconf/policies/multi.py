"""Distributions over MultiDiscrete and MultiBinary action spaces, for the softmax policies of the policy
gradients: one independent distribution per action dimension, whose log-probability and entropy are sums over
the dimensions (as Stable-Baselines3's MultiCategorical and Bernoulli distributions).

- ``MultiDiscrete(nvec)``: the network outputs ``sum(nvec)`` logits, dimension after dimension; each dimension's
  slice is the logits of its own categorical. They are gathered into one ``[..., dims, max(nvec)]`` tensor (a
  view when every dimension has as many values) and padded with masked logits, so that all dimensions sample,
  score and take their entropy in one ``Categorical`` at once. A mask holds ``sum(nvec)`` booleans, split the
  same way.
- ``MultiBinary(n)``: ``n`` logits, one Bernoulli per dimension. A mask holds ``2 * n`` booleans: for each
  dimension whether 0, then whether 1, may be chosen (sb3-contrib's convention, a MultiDiscrete of twos); a
  dimension allowed only one value takes it with probability 1.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F

from rlconf.policies.softmax import MASKED_LOGIT, Categorical


class MultiDiscreteLayout:
    """How a MultiDiscrete space's ``sum(nvec)`` logits (or mask booleans) split into its dimensions; calling it
    on logits (and a mask) gives their ``MultiCategorical``."""

    def __init__(self, nvec, device: torch.device | str = "cpu"):
        nvec = [int(n) for n in np.asarray(nvec).reshape(-1)]
        self.dims, self.width = len(nvec), max(nvec)
        self.equal = len(set(nvec)) == 1  # one view, no gather, no padding
        offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
        columns = np.arange(self.width)
        self.index = torch.as_tensor([[o + min(j, n - 1) for j in columns] for o, n in zip(offsets, nvec, strict=True)],
                                     device=device)
        self.padding = torch.as_tensor([[j >= n for j in columns] for n in nvec], device=device)

    def split(self, flat: torch.Tensor) -> torch.Tensor:
        """``[..., sum(nvec)]`` -> ``[..., dims, max(nvec)]`` (padding repeats each dimension's last value)."""
        if self.equal:
            return flat.unflatten(-1, (self.dims, self.width))
        return flat[..., self.index]

    def legal(self, mask: torch.Tensor | None) -> torch.Tensor | None:
        """The split mask, padding illegal; None where nothing is masked."""
        if mask is None:
            return None if self.equal else ~self.padding
        legal = self.split(mask.bool())
        return legal if self.equal else legal & ~self.padding

    def __call__(self, logits: torch.Tensor, mask: torch.Tensor | None = None) -> MultiCategorical:
        return MultiCategorical(Categorical(self.split(logits), self.legal(mask)))

    def greedy(self, logits: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return Categorical.greedy(self.split(logits), self.legal(mask))


class MultiCategorical:
    """Independent categoricals, one per action dimension (``per_dimension``: over ``[..., dims, width]``);
    actions are ``[..., dims]`` index vectors."""

    def __init__(self, per_dimension: Categorical):
        self.per_dimension = per_dimension

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        return self.per_dimension.sample(generator)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.per_dimension.log_prob(actions).sum(-1)

    def entropy(self) -> torch.Tensor:
        return self.per_dimension.entropy().sum(-1)

    @property
    def mode(self) -> torch.Tensor:
        return self.per_dimension.mode


class Bernoullis:
    """Independent Bernoullis over the last dimension of ``logits`` (the log-odds of 1); actions are ``[..., n]``
    vectors of 0 and 1 (int64). ``mask`` ``[..., 2 * n]``: whether each dimension may be 0, may be 1."""

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor | None = None):
        self.logits = self.masked(logits, mask)

    @staticmethod
    def masked(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Log-odds forced to +-``MASKED_LOGIT`` where the mask allows only one value (never neither: the mask's
        check, ``rlconf.core.layout.check_mask``, refuses a dimension with no legal value)."""
        if mask is None:
            return logits
        allowed = mask.bool().unflatten(-1, (logits.shape[-1], 2))
        big = min(-MASKED_LOGIT, torch.finfo(logits.dtype).max)
        logits = logits.masked_fill(~allowed[..., 1], -big)
        return logits.masked_fill(~allowed[..., 0], big)

    @classmethod
    def greedy(cls, logits: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return (cls.masked(logits, mask) > 0).long()

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        coins = torch.rand(self.logits.shape, generator=generator, device=self.logits.device,
                           dtype=self.logits.dtype)
        return (coins < torch.sigmoid(self.logits)).long()

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return -F.binary_cross_entropy_with_logits(self.logits, actions.to(self.logits.dtype),
                                                   reduction="none").sum(-1)

    def entropy(self) -> torch.Tensor:
        p = torch.sigmoid(self.logits)
        return F.binary_cross_entropy_with_logits(self.logits, p, reduction="none").sum(-1)

    @property
    def mode(self) -> torch.Tensor:
        return (self.logits > 0).long()


def distributions(space: gym.Space, device: torch.device | str = "cpu"):
    """What a softmax policy over ``space`` (Discrete, MultiDiscrete, MultiBinary) makes of its logits and mask:
    a callable ``(logits, mask) -> distribution`` with a ``greedy(logits, mask)``."""
    if isinstance(space, gym.spaces.MultiDiscrete):
        return MultiDiscreteLayout(space.nvec, device)
    if isinstance(space, gym.spaces.MultiBinary):
        return Bernoullis
    return Categorical


def action_offset(space: gym.Space, device: torch.device | str = "cpu") -> torch.Tensor | None:
    """What the environment's actions add to sampled indices: a MultiDiscrete space's ``start``, if not 0."""
    start = space.start if isinstance(space, gym.spaces.MultiDiscrete) else None
    if start is None or not np.any(start):
        return None
    return torch.as_tensor(np.asarray(start).reshape(-1), dtype=torch.int64, device=device)
