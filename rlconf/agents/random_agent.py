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
from rlconf.policies import ACTION_MASK, global_random_actions, random_actions


def check_space(space: gym.Space) -> gym.Space:
    """Discrete actions, or a Box with finite bounds (where "uniform" means something); else one line."""
    bounded = isinstance(space, gym.spaces.Box) and bool(np.isfinite(space.low).all() and np.isfinite(space.high).all())
    if not (isinstance(space, gym.spaces.Discrete) or bounded):
        raise ConfigError(f"agent=random: draws Discrete actions or Box actions within finite bounds, not {space}")
    return space


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
        else:
            actions = random_actions(self.rng, n, int(space.n), _mask(states))
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
        else:
            actions = global_random_actions(n, int(space.n), _mask(states))
        return actions.to(states.device)


def _mask(states: StateArray) -> torch.Tensor | None:
    return states.as_input(ACTION_MASK) if ACTION_MASK in states else None
