"""Policies: how an agent turns values or logits into actions."""

from rlconf.policies.greedy import GreedyPolicy, ParallelGreedyPolicy
from rlconf.policies.softmax import Categorical, SoftmaxPolicy

__all__ = ["Categorical", "GreedyPolicy", "ParallelGreedyPolicy", "SoftmaxPolicy"]
