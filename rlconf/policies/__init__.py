"""Policies: how an agent turns values or logits into actions."""

from rlconf.policies.greedy import GreedyPolicy, ParallelGreedyPolicy
from rlconf.policies.softmax import SoftmaxPolicy

__all__ = ["GreedyPolicy", "ParallelGreedyPolicy", "SoftmaxPolicy"]
