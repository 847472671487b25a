"""Exploration beyond one epsilon and white Gaussian noise: the pieces rlpyt's agents and the DDPG paper use.

- ``per_copy_epsilons``: Ape-X's fixed epsilons, one for each environment copy on a log-spaced scale
  (Horgan et al. 2018: epsilon_i = epsilon^(1 + alpha i / (N - 1))), so that some copies explore a lot and
  others hardly at all; a ``ParallelGreedyPolicy`` given this array flips each copy's coin with its own epsilon.
- ``OrnsteinUhlenbeck``: temporally correlated action noise (Uhlenbeck and Ornstein 1930, used by Lillicrap et
  al. 2016 with theta 0.15, sigma 0.2): each copy's noise reverts to 0 at rate theta, so consecutive actions of an
  episode are pushed the same way, which explores physical systems with momentum better than independent draws.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from rlconf.core import ALL_COPIES


def per_copy_epsilons(n_copies: int, epsilon: float, alpha: float) -> np.ndarray:
    """Ape-X's epsilon of each of ``n_copies`` copies: ``epsilon ** (1 + alpha * i / (n_copies - 1))``, from
    ``epsilon`` for copy 0 down to ``epsilon ** (1 + alpha)`` for the last; one copy explores with ``epsilon``."""
    if n_copies == 1:
        return np.array([epsilon])
    return epsilon ** (1 + alpha * np.arange(n_copies) / (n_copies - 1))


class OrnsteinUhlenbeck:
    """Each environment copy's Ornstein-Uhlenbeck process, discretised with step ``dt`` (Euler-Maruyama):

        x <- x - theta * x * dt + sigma * sqrt(dt) * N(0, 1)

    Starting from 0, its stationary standard deviation is sigma / sqrt(theta (2 - theta dt)) (sigma / sqrt(2
    theta) as dt -> 0). A copy's process restarts from 0 when its episode ends (``reset``). Its state is part of
    the agent's checkpoint, so a resumed run continues the same noise."""

    def __init__(self, n_copies: int, dim: int, theta: float, dt: float, device: torch.device | str = "cpu"):
        self.theta = theta
        self.dt = dt
        self.state = torch.zeros((n_copies, dim), device=device)

    def sample(self, sigma: float, generator: torch.Generator, copies: slice = ALL_COPIES) -> torch.Tensor:
        """The next value of the noise of the copies ``copies`` (``[copies, dim]``; all of them by default),
        drawn from ``generator``; the other copies' processes wait for their turn (the alternating sampler)."""
        state = self.state[copies]
        shock = torch.randn(state.shape, generator=generator, device=state.device)
        value = state * (1 - self.theta * self.dt) + sigma * math.sqrt(self.dt) * shock
        self._replace(copies, value)
        return value

    def reset(self, ended: torch.Tensor, copies: slice = ALL_COPIES) -> None:
        """Restart the processes of the copies (of ``copies``) whose episodes ``ended`` (a bool per copy)."""
        self._replace(copies, torch.where(ended.to(self.state.device).view(-1, 1), 0.0, self.state[copies]))

    def _replace(self, copies: slice, value: torch.Tensor) -> None:
        """A new state tensor with ``copies``' rows replaced: values handed out earlier stay as they were."""
        state = self.state.clone()
        state[copies] = value
        self.state = state

    def state_dict(self) -> dict:
        return {"state": self.state.clone()}

    def load_state_dict(self, state: dict) -> None:
        self.state = state["state"].to(self.state.device).clone()
