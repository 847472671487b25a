"""Epsilon-greedy policies over a QNetwork."""

from __future__ import annotations

import numpy as np
import torch

from rlconf.approximation import QNetwork
from rlconf.core import State


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
            return int(self.rng.integers(self.n_actions))
        return self.greedy(state)

    def greedy(self, state: State) -> int:
        return int(state.apply(self.q.no_grad).argmax())

    def eval(self, state: State) -> int:
        return int(state.apply(self.q.eval).argmax())


class ParallelGreedyPolicy(GreedyPolicy):
    """Epsilon-greedy for a StateArray: each environment flips its own coin.

    The network is only evaluated when at least one environment exploits, which at high epsilon saves most
    forward passes.
    """

    def __call__(self, states: State) -> torch.Tensor:
        n = len(states)
        explore = self.rng.random(n) < float(self.epsilon)
        if explore.all():
            return torch.from_numpy(self.rng.integers(self.n_actions, size=n)).to(states.device)
        actions = self.q.no_grad(states.as_input()).argmax(-1)
        if explore.any():
            random_actions = torch.from_numpy(self.rng.integers(self.n_actions, size=n)).to(actions.device)
            actions = torch.where(torch.from_numpy(explore).to(actions.device), random_actions, actions)
        return actions

    def eval(self, states: State) -> torch.Tensor:
        return self.q.eval(states.as_input()).argmax(-1)
