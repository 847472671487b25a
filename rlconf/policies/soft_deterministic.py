"""SAC's policy: a Gaussian squashed by tanh into the action Box, sampled with the reparameterisation trick.

With ``u ~ N(mean, std)`` and the action ``a = scale(tanh(u))``, the change of variables gives

    log pi(tanh(u)) = sum_i [ log N(u_i; mean_i, std_i) - log(1 - tanh(u_i)^2) ]

The log-probability is the density of ``tanh(u)`` in the normalised action space [-1, 1]^d, before
``ActionBounds.scale``: the entropy target -dim(A) of Haarnoja et al. (2018) is meant there, so the
temperature tuning works alike whatever the Box's units (the scale only shifts log pi by a constant).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from rlconf.approximation import Approximation
from rlconf.core.generators import generators_state, load_generators_state
from rlconf.policies.bounds import ActionBounds
from rlconf.policies.deterministic import TanhActionBound

# Bounds of the log standard deviation (as Stable-Baselines3): exp(-20) is numerically a point mass and
# exp(2) already spreads tanh(u) over the whole interval, so nothing is lost outside them.
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
LOG_2 = math.log(2.0)


def squashed_log_prob(u: torch.Tensor, noise: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log pi(tanh(u)) for ``u = mean + exp(log_std) * noise``, summed over the last dimension.

    ``log(1 - tanh(u)^2)`` is written as ``2 (log 2 - u - softplus(-2u))``: the same function, finite where
    tanh(u) rounds to +-1 in float32 (|u| > 9), which the textbook form turns into log(0).
    """
    gaussian = -0.5 * noise.square() - log_std - LOG_SQRT_2PI
    log_det = 2.0 * (LOG_2 - u - F.softplus(-2.0 * u))
    return (gaussian - log_det).sum(-1)


class SoftDeterministicPolicy(Approximation):
    """``policy(observations) -> (actions [B, d], log_probs [B])``, actions in the environment's Box.

    ``model`` outputs ``2d`` numbers per observation: the means of ``u`` and their log standard deviations
    (clamped to [LOG_STD_MIN, LOG_STD_MAX]). Calling the policy draws a reparameterised sample (gradients
    flow through it into the model); ``no_grad`` draws one without; ``greedy`` is the squashed mean, the
    action the test agent takes. Noise comes from ``generator`` (the global generator when None).
    """

    def __init__(self, model: nn.Module, optimizer=None, *, bounds: ActionBounds,
                 generator: torch.Generator | None = None, name: str = "policy", **kwargs):
        super().__init__(model, optimizer, name=name, **kwargs)
        self.bounds = bounds
        self.squash = TanhActionBound(bounds)
        self.generator = generator

    def __call__(self, *inputs) -> tuple[torch.Tensor, torch.Tensor]:
        return self._sample(self._forward(*inputs))

    @torch.no_grad()
    def no_grad(self, *inputs) -> tuple[torch.Tensor, torch.Tensor]:
        return self._sample(self._forward(*inputs))

    def greedy(self, *inputs) -> torch.Tensor:
        """The squashed mean: the most likely action of the Gaussian, without gradients."""
        mean, _ = self.eval(*inputs).chunk(2, dim=-1)
        return self.squash(mean)

    def _sample(self, outputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = outputs.chunk(2, dim=-1)
        log_std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
        noise = torch.randn(mean.shape, generator=self.generator, device=mean.device, dtype=mean.dtype)
        u = mean + log_std.exp() * noise
        return self.squash(u), squashed_log_prob(u, noise, log_std)

    def generator_state(self) -> dict[str, Any]:
        """The sampling noise's generator (the weights are in ``state_dict``, as every Approximation's)."""
        return generators_state({"torch": self.generator})

    def load_generator_state(self, state: dict[str, Any]) -> None:
        load_generators_state({"torch": self.generator}, state)
