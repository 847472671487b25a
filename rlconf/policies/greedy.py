"""Epsilon-greedy policies over a QNetwork.

A state may say which actions are legal (``action_mask``, True = legal: board games). Then both the greedy
choice and the random one are among the legal actions only; states without a mask cost nothing extra and
draw the same random numbers as before masks existed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from rlconf.approximation import QNetwork
from rlconf.core import ALL_COPIES, State
from rlconf.core.generators import generators_state, load_generators_state
from rlconf.core.layout import ACTION_MASK


def legal_actions(states: State) -> torch.Tensor | None:
    """The legal actions of ``states`` as a batch (bool, True: legal) where the environment masks them, else None."""
    return states.as_input(ACTION_MASK) if ACTION_MASK in states else None


def legal_argmax(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """The argmax over the last dimension among legal actions (all of them without a mask)."""
    if mask is None:
        return values.argmax(-1)
    return values.masked_fill(~mask.bool(), -torch.inf).argmax(-1)


def legal_max(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """The max over the last dimension among legal actions; 0 where no action is legal (a terminal state,
    whose value the mask zeroes anyway: 0, not -inf, so that 0 * value stays 0)."""
    if mask is None:
        return values.max(-1).values
    mask = mask.bool()
    best = values.masked_fill(~mask, -torch.inf).max(-1).values
    return torch.where(mask.any(-1), best, torch.zeros_like(best))


def random_legal(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One uniformly random legal action per row of ``mask`` ([n, n_actions], True = legal): the legal action
    with the largest uniform key. A row with no legal action gets action 0."""
    keys = rng.random(mask.shape)
    return np.where(mask, keys, -1.0).argmax(-1)


def random_actions(rng: np.random.Generator, n: int, n_actions: int, mask: torch.Tensor | None) -> torch.Tensor:
    """``n`` uniformly random actions from ``rng`` (on the CPU), legal ones only where there is a ``mask``."""
    if mask is None:
        return torch.from_numpy(rng.integers(n_actions, size=n))
    return torch.from_numpy(random_legal(rng, mask.bool().cpu().numpy()))


def global_random_actions(n: int, n_actions: int, mask: torch.Tensor | None) -> torch.Tensor:
    """The same from torch's global generator, which ``evaluate`` seeds, so a test agent's coins repeat."""
    if mask is None:
        return torch.randint(n_actions, (n,))
    return torch.rand(n, n_actions).masked_fill(~mask.bool().cpu(), -1.0).argmax(-1)


class GreedyPolicy:
    """Acts greedily with respect to ``q``, except with probability ``epsilon`` a uniformly random action.

    ``epsilon`` may be a number or a LinearScheduler; it is read at every call. For one state.
    """

    def __init__(self, q: QNetwork, n_actions: int, epsilon=0.0, rng: np.random.Generator | None = None):
        self.q = q
        self.n_actions = n_actions
        self.epsilon = epsilon
        self.rng = rng or np.random.default_rng()

    def __call__(self, state: State) -> int:
        if self.rng.random() < float(self.epsilon):
            if ACTION_MASK in state:
                return int(random_legal(self.rng, state[ACTION_MASK].bool().cpu().numpy()[None])[0])
            return int(self.rng.integers(self.n_actions))
        return self.greedy(state)

    def greedy(self, state: State) -> int:
        return int(legal_argmax(state.apply(self.q.no_grad), state.get(ACTION_MASK)))

    def eval(self, state: State) -> int:
        return int(legal_argmax(state.apply(self.q.eval), state.get(ACTION_MASK)))

    def generator_state(self) -> dict[str, Any]:
        """The exploration coins' generator (the network is saved by its owner, the agent)."""
        return generators_state({"rng": self.rng})

    def load_generator_state(self, state: dict[str, Any]) -> None:
        load_generators_state({"rng": self.rng}, state)


class ParallelGreedyPolicy(GreedyPolicy):
    """Epsilon-greedy for a StateArray: each environment flips its own coin (with its own epsilon, where
    ``epsilon`` is an array of one per copy).

    The network is only evaluated when at least one environment exploits, which at high epsilon saves most
    forward passes.
    """

    def __call__(self, states: State, copies: slice = ALL_COPIES) -> torch.Tensor:
        return self.choose(states, lambda: self.q.no_grad(states.as_input()), copies)

    def choose(self, states: State, values: Callable[[], torch.Tensor], copies: slice = ALL_COPIES) -> torch.Tensor:
        """Epsilon-greedy over the action values ``values()`` of ``states`` (the states of the environment
        copies ``copies``), asked for only when some environment exploits. A recurrent agent computes them
        anyway (its state must advance every step) and hands them over."""
        n = len(states)
        mask = legal_actions(states)
        explore = self.rng.random(n) < self._epsilon(copies)
        if explore.all():
            return random_actions(self.rng, n, self.n_actions, mask).to(states.device)
        actions = legal_argmax(values(), mask)
        if explore.any():
            drawn = random_actions(self.rng, n, self.n_actions, mask).to(actions.device)
            actions = torch.where(torch.from_numpy(explore).to(actions.device), drawn, actions)
        return actions

    def _epsilon(self, copies: slice = ALL_COPIES) -> float | np.ndarray:
        """Epsilon now; an array of one per environment copy (``exploration.per_copy_epsilons``) compares copy
        by copy, those of ``copies``."""
        return self.epsilon[copies] if isinstance(self.epsilon, np.ndarray) else float(self.epsilon)

    def eval(self, states: State) -> torch.Tensor:
        mask = legal_actions(states)
        return legal_argmax(self.q.eval(states.as_input()), mask)
