"""Gaussian policies for continuous (Box) actions, in the normalised action space [-1, 1]^d.

The network outputs the mean of each action dimension; the log standard deviation is a learned vector that
does not depend on the state, as in PPO's reference implementation and its successors (OpenAI baselines,
Stable-Baselines3, CleanRL). Andrychowicz et al. (2021, "What matters in on-policy RL") found it as good as
a state-dependent one and steadier early in training: the network cannot shrink the noise in the states it
happens to visit first.

How a sample reaches the Box is ``squash`` (``agent.squash``):

- ``clip`` (the default, as Stable-Baselines3's and CleanRL's PPO and the MAPPO authors' code): the environment
  gets ``bounds.scale(sample)`` and the environment adapter clips it to the Box. A mean that drifts past a bound
  acts as the bound, and the return no longer tells it where to go.
- ``tanh`` (as BenchMARL's and SAC's squashed Gaussians): the environment gets ``bounds.scale(tanh(sample))``,
  inside the Box by construction. The agents still store and score the Gaussian sample ``u``: the density of
  ``tanh(u)`` is the Gaussian's times ``prod(1 - tanh(u)^2)``, a factor that depends on ``u`` alone, so it cancels
  from PPO's ratio and leaves every policy gradient the Gaussian's. The entropy bonus stays the Gaussian's too
  (the squashed distribution's has no closed form).

With ``agent.gsde`` (rollout agents) the noise is state-dependent instead: generalised state-dependent
exploration (gSDE; Raffin, Kober & Stulp 2022, "Smooth exploration for robotic reinforcement learning"). The
policy's last hidden features z(s) (``StateDependentHead``) multiply a noise matrix W drawn from N(0, sigma^2),
sigma a learned ``[features, d]`` matrix, and an environment copy acts ``mean(s) + z(s) W`` with the same W for
a while (``StateDependentNoise``): its exploration changes smoothly with the state, and a state met twice before
W is drawn again gets the same action. One action's law, W unknown, is the Gaussian of variance ``z(s)^2 sigma^2``,
which the policy's distribution scores: PPO's ratio and entropy are that Gaussian's.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from rlconf.approximation import Approximation
from rlconf.policies.bounds import ActionBounds
from rlconf.settings import SQUASHES

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
VARIANCE_FLOOR = 1e-6  # gSDE: added to z(s)^2 sigma^2, whose features may all be zero in some state (ReLU)


class DiagonalNormal:
    """Independent Gaussians over the last dimension of ``mean`` (``[..., d]``), one log std per dimension.

    ``log_std`` is ``[d]`` or broadcastable to ``mean``. The formulas are written out instead of using
    ``torch.distributions.Normal``, which validates its arguments and broadcasts on every call: several
    times the cost on the per-step path of small policies.
    """

    def __init__(self, mean: torch.Tensor, log_std: torch.Tensor, latent: torch.Tensor | None = None):
        self.mean = mean
        self.log_std = log_std
        self.latent = latent  # gSDE: the features z(s) its noise matrices multiply (StateDependentNoise)

    @property
    def std(self) -> torch.Tensor:
        return self.log_std.exp()

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        noise = torch.randn(self.mean.shape, generator=generator, device=self.mean.device, dtype=self.mean.dtype)
        return self.mean + self.std * noise

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """The joint log-density of each action vector: the sum over its dimensions."""
        z = (actions - self.mean) * torch.exp(-self.log_std)
        return (-0.5 * z.square() - self.log_std).sum(-1) - self.mean.shape[-1] * LOG_SQRT_2PI

    def entropy(self) -> torch.Tensor:
        per_dimension = (0.5 + LOG_SQRT_2PI + self.log_std).expand_as(self.mean)
        return per_dimension.sum(-1)

    @property
    def mode(self) -> torch.Tensor:
        return self.mean


class GaussianHead(nn.Module):
    """Means from ``model`` and a state-independent log standard deviation, a parameter of this module so
    the policy's optimiser and checkpoints include it. ``forward`` returns ``(mean, log_std)``."""

    def __init__(self, model: nn.Module, dim: int, log_std_init: float = 0.0):
        super().__init__()
        self.model = model
        self.log_std = nn.Parameter(torch.full((dim,), float(log_std_init)))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model(x), self.log_std


def split_output(layers: nn.Module) -> tuple[nn.Module, nn.Linear]:
    """The layers of a policy network before its output layer, and that (linear) layer: ``Layers(..., out)``,
    an output layer alone, or a sequence whose last part is one of these."""
    if isinstance(layers, nn.Linear):
        return nn.Identity(), layers
    if isinstance(layers, nn.Sequential) and len(layers):
        *before, last = layers
        inner, output = split_output(last)
        kept = [*before] if isinstance(inner, nn.Identity) else [*before, inner]
        return (type(layers)(*kept) if kept else nn.Identity()), output
    raise TypeError(f"no output layer to find in {type(layers).__name__}")


class StateDependentHead(nn.Module):
    """gSDE's policy network (the module's docstring): the means from ``layers``, whose output layer reads the
    features z(s), and the learned log of sigma, ``[features, d]``. ``forward`` returns ``(mean, log_std,
    z)``: the log standard deviation of each action dimension in each state, ``0.5 log(z^2 sigma^2)``, and z.
    z is detached where it meets sigma (as gSDE's authors' default): the features learn through the mean, not
    through the noise's scale."""

    def __init__(self, layers: nn.Module, dim: int, log_std_init: float = 0.0):
        super().__init__()
        self.latent, self.output = split_output(layers)
        self.log_std = nn.Parameter(torch.full((self.output.in_features, dim), float(log_std_init)))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        latent = self.latent(x)
        held = latent.detach()
        variance = held.square() @ (2 * self.log_std).exp()
        return self.output(latent), 0.5 * torch.log(variance + VARIANCE_FLOOR), held


class StateDependentNoise:
    """gSDE's noise matrices (the module's docstring): one W ``[features, d]`` for each of ``rows`` environment
    copies, drawn at the start of every rollout and, with ``every``, every ``every`` steps of it."""

    def __init__(self, rows: int, every: int = 0):
        self.rows = rows
        self.every = every
        self.weights: torch.Tensor | None = None  # [rows, features, d]

    def due(self, t: int) -> bool:
        """Whether the matrices are drawn again before the action of the rollout's row ``t``."""
        return self.weights is None or t == 0 or (self.every > 0 and t % self.every == 0)

    def draw(self, log_std: torch.Tensor, generator: torch.Generator, copies: slice = slice(None)) -> None:
        """New matrices for the copies ``copies``, from N(0, exp(log_std)^2)."""
        std = log_std.detach().exp()
        if self.weights is None:
            self.weights = torch.zeros((self.rows, *std.shape), dtype=std.dtype, device=std.device)
        shape = self.weights[copies].shape
        self.weights[copies] = torch.randn(shape, generator=generator, dtype=std.dtype, device=std.device) * std

    def sample(self, distribution: DiagonalNormal, copies: slice = slice(None)) -> torch.Tensor:
        """The actions of the copies ``copies``: the mean plus their features times their matrices."""
        noise = torch.bmm(distribution.latent.unsqueeze(1), self.weights[copies]).squeeze(1)
        return distribution.mean + noise

    def state_dict(self) -> dict:
        return {"weights": self.weights}

    def load_state_dict(self, state: dict) -> None:
        self.weights = state["weights"]


class GaussianPolicy(Approximation):
    """A policy over a Box: calling it gives a ``DiagonalNormal`` over normalised actions.

    ``model`` is a ``GaussianHead`` (or any module returning ``(mean, log_std)``). Agents store and learn from
    the normalised samples; ``env_actions`` maps them to the environment's Box through ``bounds``, the one
    place actions are rescaled.
    """

    def __init__(self, model: nn.Module, optimizer=None, *, bounds: ActionBounds, squash: str = "clip",
                 name: str = "policy", **kwargs):
        super().__init__(model, optimizer, name=name, **kwargs)
        if squash not in SQUASHES:
            raise ValueError(f"squash={squash!r}; allowed: {', '.join(SQUASHES)}")
        self.bounds = bounds
        self.squash = squash

    # ``mask``: the softmax policies' action mask, which a Box never has (rlconf.core.layout.check_mask refuses one).
    def __call__(self, *inputs, mask: None = None) -> DiagonalNormal:
        return DiagonalNormal(*self._forward(*inputs))

    @torch.no_grad()
    def no_grad(self, *inputs, mask: None = None) -> DiagonalNormal:
        mean, log_std, *latent = self._forward(*inputs)
        return DiagonalNormal(mean, log_std.detach(), *latent)  # a parameter handed through keeps requires_grad

    def greedy(self, *inputs, mask: None = None) -> torch.Tensor:
        """The mean action (normalised), evaluated without gradients (for test agents)."""
        return self.eval(*inputs)[0]

    def env_actions(self, actions: torch.Tensor) -> torch.Tensor:
        """Normalised actions as the environment's: [-1, 1] -> [low, high] (the environment clips), through tanh
        first with ``squash="tanh"``."""
        return self.bounds.scale(torch.tanh(actions) if self.squash == "tanh" else actions)
