"""Replay memory on preallocated tensors.

Observations are stored once, in time-major rows of ``n_envs`` columns (as rlpyt does): row ``t`` holds every
environment's state at step ``t`` and the action taken there. The next state of a transition is simply the
next row, so nothing is stored twice. A transition leaving a state whose episode had ended (the step on which
the vector environment resets) is never sampled.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from rlconf.core import State


class Transitions(NamedTuple):
    """A batch of transitions (s, a, r, s', mask'); ``weights`` is None for uniform replay."""

    observation: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    next_observation: torch.Tensor
    next_mask: torch.Tensor
    weights: torch.Tensor | None = None


class ReplayBuffer:
    """Uniform experience replay over the last ``capacity`` transitions."""

    def __init__(self, capacity: int, n_envs: int, observation_shape: tuple[int, ...],
                 observation_dtype: torch.dtype, action_shape: tuple[int, ...] = (),
                 action_dtype: torch.dtype = torch.int64, device: str | torch.device = "cpu",
                 generator: torch.Generator | None = None):
        self.n_envs = n_envs
        self.rows = max(2, math.ceil(capacity / n_envs))
        self.device = torch.device(device)
        self.generator = generator
        rows, envs = self.rows, n_envs
        self.observation = torch.zeros((rows, envs, *observation_shape), dtype=observation_dtype, device=device)
        self.action = torch.zeros((rows, envs, *action_shape), dtype=action_dtype, device=device)
        self.reward = torch.zeros((rows, envs), dtype=torch.float32, device=device)
        self.mask = torch.zeros((rows, envs), dtype=torch.float32, device=device)
        self.done = torch.zeros((rows, envs), dtype=torch.bool, device=device)
        self._next_row = 0
        self._filled = 0

    def __len__(self) -> int:
        """The number of transitions that can be sampled (rows with a successor, times environments)."""
        return max(0, self._filled - 1) * self.n_envs

    def store(self, states: State, actions: torch.Tensor) -> None:
        """Record every environment's current state and the action chosen in it."""
        row = self._next_row
        self.observation[row] = states["observation"]
        self.reward[row] = states["reward"]
        self.mask[row] = states["mask"]
        self.done[row] = states["done"]
        self.action[row] = actions
        self._next_row = (row + 1) % self.rows
        self._filled = min(self._filled + 1, self.rows)

    def _sample_indices(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        oldest = (self._next_row - self._filled) % self.rows
        rows = torch.empty(n, dtype=torch.int64)
        cols = torch.empty(n, dtype=torch.int64)
        todo = torch.arange(n)
        while len(todo):  # rejection sampling keeps the draw uniform over valid transitions
            k = len(todo)
            r = (oldest + torch.randint(self._filled - 1, (k,), generator=self.generator)) % self.rows
            c = torch.randint(self.n_envs, (k,), generator=self.generator)
            rows[todo], cols[todo] = r, c
            todo = todo[self.done[r, c].cpu()]
        return rows.to(self.device), cols.to(self.device)

    def sample(self, batch_size: int) -> Transitions:
        if len(self) == 0:
            raise RuntimeError("the replay buffer holds no complete transition yet")
        rows, cols = self._sample_indices(batch_size)
        nxt = (rows + 1) % self.rows
        return Transitions(
            observation=self.observation[rows, cols],
            action=self.action[rows, cols],
            reward=self.reward[nxt, cols],
            next_observation=self.observation[nxt, cols],
            next_mask=self.mask[nxt, cols],
        )

    def state_dict(self) -> dict:
        return {name: getattr(self, name) for name in ("observation", "action", "reward", "mask", "done")} | {
            "next_row": self._next_row, "filled": self._filled}

    def load_state_dict(self, state: dict) -> None:
        for name in ("observation", "action", "reward", "mask", "done"):
            getattr(self, name).copy_(state[name])
        self._next_row, self._filled = state["next_row"], state["filled"]
