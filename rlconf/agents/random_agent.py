"""The random agent (``agent=random``): uniformly random actions, legal ones only where states carry an
``action_mask``. A baseline for any environment, and the opponent a multi-agent test plays against
(``agent.test_against=random``). It learns nothing; its checkpoint is empty.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from rlconf.agents._agent import Buildable, BuildContext, ParallelAgent, TestAgent
from rlconf.agents.specs.random_agent import RandomConfig
from rlconf.core import StateArray
from rlconf.core.generators import generators_state, load_generators_state
from rlconf.errors import ConfigError
from rlconf.policies import global_random_actions, legal_actions, random_actions


def check_space(space: gym.Space) -> gym.Space:
    """Discrete, MultiDiscrete or MultiBinary actions (one dimension of them), or a Box with finite bounds (where
    "uniform" means something); else one line."""
    bounded = isinstance(space, gym.spaces.Box) and bool(np.isfinite(space.low).all() and np.isfinite(space.high).all())
    if not (isinstance(space, gym.spaces.Discrete) or bounded or _choice_sizes(space) is not None):
        raise ConfigError(f"agent=random: draws Discrete, MultiDiscrete or MultiBinary actions (one dimension of them) "
                          f"or Box actions within finite bounds, not {space}")
    return space


def _choice_sizes(space: gym.Space) -> np.ndarray | None:
    """The number of values of each dimension of a MultiDiscrete or MultiBinary space (a MultiBinary dimension is
    a choice of 0 or 1; its mask, as sb3-contrib's, has a pair of booleans a dimension); None for other spaces."""
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return space.nvec
    if isinstance(space, gym.spaces.MultiBinary) and len(space.shape) == 1:
        return np.full(space.shape[0], 2)
    return None


def _per_dimension(keys: torch.Tensor, sizes: np.ndarray, mask: torch.Tensor | None) -> torch.Tensor:
    """One value per dimension: where the uniform ``keys`` [n, sum(sizes)] are largest among the dimension's legal
    values (all of them without a ``mask``), which makes each value of a dimension equally likely."""
    if mask is not None:
        keys = keys.masked_fill(~mask.bool().cpu(), -1.0)
    return torch.stack([part.argmax(-1) for part in keys.split(sizes.tolist(), dim=-1)], dim=-1)


def _offset(space: gym.Space, actions: torch.Tensor) -> torch.Tensor:
    start = getattr(space, "start", None)  # a MultiDiscrete's values may start elsewhere than 0
    return actions + torch.as_tensor(start) if start is not None and np.any(start) else actions


class RandomAgent(ParallelAgent, Buildable):
    """Uniform random actions for every environment, drawn from its own seeded generator."""

    Config = RandomConfig

    def __init__(self, action_space: gym.Space, rng: np.random.Generator):
        self.action_space = check_space(action_space)
        self.rng = rng

    @classmethod
    def from_config(cls, config: RandomConfig, context: BuildContext) -> RandomAgent:
        return cls(context.action_space, np.random.default_rng(context.seed))

    def act(self, states: StateArray) -> torch.Tensor:
        n, space = len(states), self.action_space
        if isinstance(space, gym.spaces.Box):
            actions = torch.from_numpy(self.rng.uniform(space.low, space.high, (n, *space.shape)).astype(np.float32))
        elif (sizes := _choice_sizes(space)) is not None:
            keys = torch.from_numpy(self.rng.random((n, int(sizes.sum()))))
            actions = _offset(space, _per_dimension(keys, sizes, legal_actions(states)))
        else:
            actions = random_actions(self.rng, n, int(space.n), legal_actions(states))
        return actions.to(states.device)

    def test_agent(self) -> TestAgent:
        return RandomTestAgent(self.action_space)

    # Nothing learned; the generator continues where it was (a resumed run draws what it would have).
    def state_dict(self) -> dict:
        return {"generators": generators_state({"rng": self.rng})}

    def load_state_dict(self, state: dict) -> None:
        load_generators_state({"rng": self.rng}, state.get("generators", {}))


class RandomTestAgent(TestAgent):
    """The same, drawing from torch's global generator, which ``evaluate`` seeds: a test repeats exactly."""

    def __init__(self, action_space: gym.Space):
        self.action_space = check_space(action_space)

    def act(self, states: StateArray) -> torch.Tensor:
        n, space = len(states), self.action_space
        if isinstance(space, gym.spaces.Box):
            low, high = torch.as_tensor(space.low), torch.as_tensor(space.high)
            actions = low + torch.rand(n, *space.shape) * (high - low)
        elif (sizes := _choice_sizes(space)) is not None:
            actions = _offset(space, _per_dimension(torch.rand(n, int(sizes.sum())), sizes, legal_actions(states)))
        else:
            actions = global_random_actions(n, int(space.n), legal_actions(states))
        return actions.to(states.device)
