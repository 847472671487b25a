"""Prioritized experience replay (Schaul et al. 2016) on a sum tree.

Transitions are drawn with probability proportional to ``priority ** alpha`` and corrected with importance
weights ``(N * P(i)) ** -beta`` (normalised by the batch's largest), ``beta`` scheduled towards 1. A new
transition enters with the largest priority seen so far; ``update_priorities`` sets |TD error| + epsilon.

The tree's leaves are the buffer's (row, env) slots. A slot has priority 0 until its transition is complete
(the next row is written), and stays 0 when it leaves an ended episode, so invalid transitions are never
drawn and no rejection sampling is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from rlconf.core.generators import generators_state, load_generators_state
from rlconf.memory.replay import ReplayBuffer


class SumTree:
    """A complete binary tree of float64 sums over ``size`` leaves; vectorised updates and prefix-sum search."""

    def __init__(self, size: int):
        self.leaves = 1 << max(0, (size - 1).bit_length())
        self.tree = np.zeros(2 * self.leaves, dtype=np.float64)
        self.size = size

    @property
    def total(self) -> float:
        return float(self.tree[1])

    def get(self, index: np.ndarray) -> np.ndarray:
        return self.tree[index + self.leaves]

    def set(self, index: np.ndarray, values: np.ndarray) -> None:
        nodes = np.asarray(index, dtype=np.int64) + self.leaves
        self.tree[nodes] = values
        # One level up per pass (all leaves share a depth). A parent listed twice is recomputed twice from
        # the same children: the same value, so no np.unique (a sort per level) is needed.
        while nodes[0] > 1:
            nodes >>= 1
            self.tree[nodes] = self.tree[2 * nodes] + self.tree[2 * nodes + 1]

    def find(self, prefix: np.ndarray) -> np.ndarray:
        """For each prefix sum, the leaf whose cumulative range contains it."""
        nodes = np.ones(len(prefix), dtype=np.int64)
        prefix = prefix.copy()
        while nodes[0] < self.leaves:
            left = 2 * nodes
            go_right = prefix >= self.tree[left]
            prefix -= np.where(go_right, self.tree[left], 0.0)
            nodes = left + go_right
        return np.minimum(nodes - self.leaves, self.size - 1)


def proportional_draw(tree: SumTree, rng: np.random.Generator, n: int, population: int,
                      beta: float) -> tuple[np.ndarray, np.ndarray]:
    """``n`` leaves of ``tree`` drawn in proportion to their values, and their importance weights
    ``(population * P(i)) ** -beta`` normalised by the largest (the transitions of a prioritized replay, or the
    sequences of a prioritized sequence replay)."""
    total = tree.total
    if total <= 0:
        raise RuntimeError("the replay buffer holds nothing to sample yet")
    # Stratified: one draw in each of n equal slices of the total, lower variance than n free draws.
    prefix = (np.arange(n) + rng.random(n)) * (total / n)
    slots = tree.find(np.minimum(prefix, np.nextafter(total, 0)))
    probabilities = tree.get(slots) / total
    weights = (population * probabilities) ** -beta
    return slots, weights / weights.max()


class Priorities:
    """What a prioritized memory keeps beside its contents, as a mixin before ReplayBuffer: a sum tree over its
    slots (transitions here, sequences in rlconf.memory.sequence; None where sampling is uniform), the largest
    priority so far (where new slots enter) and the draws' generator, all in its checkpoints."""

    tree: SumTree | None
    alpha: float
    epsilon: float
    max_priority: float
    rng: np.random.Generator

    def _prioritize(self, alpha: float, beta, epsilon: float, seed: int, slots: int | None) -> None:
        self.alpha = alpha
        self.beta = beta  # a number or a LinearScheduler (towards 1)
        self.epsilon = epsilon
        self.tree = SumTree(slots) if slots is not None else None
        self.max_priority = 1.0
        self.rng = np.random.default_rng(seed)

    def _set_priorities(self, slots: np.ndarray, priorities: torch.Tensor) -> None:
        """Slots' new priorities, |TD error| + epsilon (to the power alpha in the tree)."""
        values = self._tree_values(priorities)
        # A slot that became invalid since it was drawn (its row was overwritten) must stay at zero.
        alive = self.tree.get(slots) > 0
        self.tree.set(slots[alive], values[alive])

    def _tree_values(self, priorities: torch.Tensor) -> np.ndarray:
        """What the tree holds for ``priorities`` (|TD errors|): (p + epsilon) ** alpha; the largest p + epsilon
        so far is kept (``max_priority``, where new entries start)."""
        p = priorities.detach().double().cpu().numpy() + self.epsilon
        self.max_priority = max(self.max_priority, float(p.max()))
        return p ** self.alpha

    def state_dict(self) -> dict:
        state = super().state_dict()
        if self.tree is None:
            return state
        return state | {"tree": torch.from_numpy(self.tree.tree.copy()), "max_priority": self.max_priority}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        if self.tree is not None:
            self.tree.tree[:] = state["tree"].numpy()
            self.max_priority = state["max_priority"]

    def generator_state(self) -> dict[str, Any]:
        return super().generator_state() | generators_state({"numpy": self.rng})

    def load_generator_state(self, state: dict[str, Any]) -> None:
        super().load_generator_state(state)
        load_generators_state({"numpy": self.rng}, state)


class PrioritizedReplayBuffer(Priorities, ReplayBuffer):
    def __init__(self, *args, alpha: float = 0.5, beta=0.5, epsilon: float = 1e-5, seed: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self._prioritize(alpha, beta, epsilon, seed, self.rows * self.n_envs)

    def _slots(self, row: int) -> np.ndarray:
        return np.arange(self.n_envs) + ((row % self.rows) * self.n_envs)

    def _stored(self, row: int) -> None:
        self.tree.set(self._slots(row), np.zeros(self.n_envs))  # no successor yet
        if self._filled == self.rows:  # rows whose frame stacks now reach into overwritten frames
            for k in range(1, self.frame_stack):
                self.tree.set(self._slots(row + k), np.zeros(self.n_envs))
        if self._filled > 1:
            previous = (row - 1) % self.rows
            valid = ~self.done[previous].cpu().numpy()
            self.tree.set(self._slots(previous), np.where(valid, self.max_priority ** self.alpha, 0.0))

    def draw(self, n: int):
        slots, weights = proportional_draw(self.tree, self.rng, n, len(self), float(self.beta))
        slots_t = torch.from_numpy(slots).to(self.device)
        return (slots_t // self.n_envs, slots_t % self.n_envs,
                torch.from_numpy(weights.astype(np.float32)).to(self.device))

    def update_priorities(self, indices, priorities: torch.Tensor) -> None:
        rows, cols = indices
        self._set_priorities((rows * self.n_envs + cols).cpu().numpy(), priorities)
