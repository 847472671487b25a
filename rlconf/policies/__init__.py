"""Policies: how an agent turns values or logits into actions."""

from rlconf.policies.bounds import ActionBounds
from rlconf.policies.deterministic import DeterministicPolicy, TanhActionBound
from rlconf.policies.gaussian import (
    DiagonalNormal,
    GaussianHead,
    GaussianPolicy,
    StateDependentHead,
    StateDependentNoise,
)
from rlconf.policies.greedy import (
    ACTION_MASK,
    GreedyPolicy,
    ParallelGreedyPolicy,
    global_random_actions,
    legal_actions,
    legal_argmax,
    legal_max,
    random_actions,
    random_legal,
)
from rlconf.policies.multi import Bernoullis, MultiCategorical, MultiDiscreteLayout
from rlconf.policies.soft_deterministic import SoftDeterministicPolicy
from rlconf.policies.softmax import MASKED_LOGIT, Categorical, SoftmaxPolicy, masked_logits
from rlconf.policies.stochastic import (
    StochasticPolicy,
    action_layout,
    policy_network,
    policy_outputs,
    stochastic_policy,
)

__all__ = ["ActionBounds", "Bernoullis", "Categorical", "MASKED_LOGIT", "MultiCategorical", "MultiDiscreteLayout",
           "masked_logits", "DeterministicPolicy", "DiagonalNormal", "GaussianHead", "GaussianPolicy",
           "GreedyPolicy", "ParallelGreedyPolicy", "SoftDeterministicPolicy", "SoftmaxPolicy", "StateDependentHead",
           "StateDependentNoise", "StochasticPolicy",
           "TanhActionBound", "action_layout", "legal_actions", "legal_argmax", "legal_max", "policy_network",
           "policy_outputs", "random_legal", "stochastic_policy", "ACTION_MASK", "random_actions",
           "global_random_actions"]
