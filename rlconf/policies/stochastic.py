"""The stochastic policy an action space calls for: softmax over a Discrete space (independent categoricals
over a MultiDiscrete one, Bernoullis over a MultiBinary one: ``rlconf.policies.multi``), Gaussian over a Box.

On-policy agents build their policy through these three functions and never ask which kind they have, so
one code path serves CartPole, Atari, Pendulum and multi-dimensional discrete actions:

    layers = settings.head(observation_space, policy_outputs(action_space))
    network = policy_network(action_space, layers)                  # what the optimiser trains
    policy = stochastic_policy(action_space, network, optimizer, ...)
"""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

from rlconf.errors import ConfigError
from rlconf.policies.bounds import ActionBounds
from rlconf.policies.gaussian import GaussianHead, GaussianPolicy, StateDependentHead
from rlconf.policies.multi import action_offset, distributions
from rlconf.policies.softmax import SoftmaxPolicy

StochasticPolicy = SoftmaxPolicy | GaussianPolicy
DISCRETE_SPACES = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)  # softmax policies


def _check(space: gym.Space) -> None:
    if not isinstance(space, (*DISCRETE_SPACES, gym.spaces.Box)):
        raise ConfigError(f"env action space {space}: policy-gradient agents need one of its kinds; "
                          "allowed: Discrete, MultiDiscrete, MultiBinary, Box")
    if isinstance(space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)) and len(space.shape) != 1:
        raise ConfigError(f"env action space {space}: policy-gradient agents need its actions as one vector; "
                          f"allowed: {type(space).__name__} spaces of one dimension (shape (n,))")


def policy_outputs(space: gym.Space) -> int:
    """How many numbers the policy network outputs: one logit per action (per value of each dimension of a
    MultiDiscrete space, per dimension of a MultiBinary one), or one mean per dimension of a Box."""
    _check(space)
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return int(space.nvec.sum())
    if isinstance(space, gym.spaces.MultiBinary):
        return int(space.shape[0])
    return ActionBounds(space).dim


def policy_network(space: gym.Space, layers: nn.Module, log_std_init: float = 0.0,
                   state_dependent: bool = False) -> nn.Module:
    """The module the policy trains: the logit layers themselves, or the mean layers with a learned log std
    (with ``state_dependent``, gSDE's: ``agent.gsde``)."""
    _check(space)
    if isinstance(space, DISCRETE_SPACES):
        if state_dependent:
            raise ConfigError(f"agent.gsde=true: state-dependent exploration perturbs a Gaussian's continuous "
                              f"actions, and the env's action space is {space}; allowed: agent.gsde=false")
        return layers
    if state_dependent:
        return StateDependentHead(layers, policy_outputs(space), log_std_init)
    return GaussianHead(layers, policy_outputs(space), log_std_init)


def stochastic_policy(space: gym.Space, network: nn.Module, optimizer=None, squash: str = "clip",
                      **kwargs) -> StochasticPolicy:
    """The policy over ``space`` around ``network`` (from ``policy_network``); ``squash``: how a Box's Gaussian
    samples reach its bounds (GaussianPolicy; discrete spaces have none); kwargs go to Approximation."""
    _check(space)
    device = next(network.parameters()).device
    if isinstance(space, gym.spaces.Discrete):
        return SoftmaxPolicy(network, optimizer, **kwargs)
    if isinstance(space, DISCRETE_SPACES):
        return SoftmaxPolicy(network, optimizer, distribution=distributions(space, device),
                             offset=action_offset(space, device), **kwargs)
    return GaussianPolicy(network, optimizer, bounds=ActionBounds(space, device), squash=squash, **kwargs)


def action_layout(space: gym.Space) -> tuple[tuple[int, ...], torch.dtype]:
    """Shape and dtype of one sampled action, for rollout storage: an index, a vector of indices (of 0 and 1
    for a MultiBinary space), or a float vector."""
    _check(space)
    if isinstance(space, gym.spaces.Discrete):
        return (), torch.int64
    if isinstance(space, DISCRETE_SPACES):
        return tuple(space.shape), torch.int64
    return tuple(space.shape), torch.float32
