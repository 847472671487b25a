"""Policies: how an agent turns values or logits into actions."""

from rlconf.policies.bounds import ActionBounds
from rlconf.policies.greedy import GreedyPolicy, ParallelGreedyPolicy
from rlconf.policies.softmax import Categorical, SoftmaxPolicy

__all__ = ["ActionBounds", "Categorical", "GreedyPolicy", "ParallelGreedyPolicy", "SoftmaxPolicy"]
