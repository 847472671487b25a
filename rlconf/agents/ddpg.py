"""DDPG (Lillicrap et al. 2016): Q-learning for continuous actions, with a deterministic policy that climbs
the critic's gradient.

Every step the agent acts with its policy plus Gaussian noise (uniformly random actions for the first
``replay_start_size`` steps, which fill the replay with diverse experience) and stores the state in replay.
Every ``update_frequency`` environment steps it takes ``gradient_steps`` minibatch steps, each training

- the critic on ``(Q(s, a) - y)^2`` with ``y = r + gamma * mask' * Q_target(s', policy_target(s'))``,
- the policy on ``-Q(s, policy(s))``, through the critic's weights as they are (``QContinuous.frozen``),

in one backward pass (so the policy follows the critic as it was before this step's update, as in rlkit;
it is one of thousands of steps); both target networks then move a ``polyak_rate`` step towards their
networks.
``mask'`` is 0 only after a terminal state: an episode cut off by a time limit still bootstraps.

TD3 and SAC (td3.py, sac.py) build on the helpers at the end of this file.
"""

from __future__ import annotations

from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F

from rlconf.agents._agent import Buildable, BuildContext, ParallelAgent, ReplayLearner, TestAgent
from rlconf.agents._plays import CONTINUOUS
from rlconf.agents.hyperparameters import DDPGConfig
from rlconf.approximation import PolyakTarget, QContinuous, adam, reinforce_together
from rlconf.core import StateArray
from rlconf.errors import ConfigError
from rlconf.memory import ReplayBuffer, Transitions, replay_buffer
from rlconf.nn import model_settings
from rlconf.optim import Clock
from rlconf.policies import ActionBounds, DeterministicPolicy


class DDPG(ReplayLearner, ParallelAgent, Buildable):
    Config = DDPGConfig
    plays = CONTINUOUS
    checkpointed = ("q", "policy")
    counters = {"calls": "_calls"}

    def __init__(self, q: QContinuous, policy: DeterministicPolicy, replay: ReplayBuffer, clock: Clock,
                 config: DDPGConfig, n_envs: int, generator: torch.Generator):
        self.q = q
        self.policy = policy
        self.bounds = policy.bounds
        self.replay = replay
        self.clock = clock
        self.config = config
        self.generator = generator
        # Periods are given in environment steps; with n_envs environments one act() is n_envs steps.
        self._train_every = max(1, config.update_frequency // n_envs)
        self._calls = 0

    @classmethod
    def from_config(cls, config: DDPGConfig, context: BuildContext) -> DDPG:
        bounds = action_bounds(context, "ddpg")
        policy = deterministic_policy(config, context, bounds)
        q = critic(config, context, bounds, "q")
        return cls(q, policy, off_policy_replay(config, context), Clock(), config, context.n_envs,
                   generator(context))

    def act(self, states: StateArray) -> torch.Tensor:
        self.clock.tick(len(states))
        self._calls += 1
        actions = self._explore(states)
        self.replay.store(states, actions)
        if self._learning() and self._calls % self._train_every == 0:
            self._train()
        return actions

    def _learning(self) -> bool:
        """Past the random steps, with the replay holding as many (refilled after a resume without it)."""
        return self.clock.steps >= self.config.replay_start_size and self.replay.holds(self.config.replay_start_size)

    def _explore(self, states: StateArray) -> torch.Tensor:
        if self.clock.steps < self.config.replay_start_size:
            return random_actions(self.bounds, len(states), self.generator)
        actions = self.policy.no_grad(states.as_input())
        return self.bounds.clip(actions + self.bounds.half_range * gaussian(actions, self.config.noise, self.generator))

    def _train(self) -> None:
        for batch in minibatches(self.replay, self.config.gradient_steps, self.config.batch_size):
            self._update(batch)

    def _update(self, batch: Transitions) -> None:
        q_loss = F.mse_loss(self.q(batch.observation, batch.action), self._td_targets(batch))
        policy_loss = -self.q.frozen(batch.observation, self.policy(batch.observation)).mean()
        reinforce_together((self.q, q_loss), (self.policy, policy_loss))

    def _td_targets(self, batch: Transitions) -> torch.Tensor:
        """r + gamma * mask' * Q_target(s', policy_target(s'))."""
        next_values = self.q.target(batch.next_observation, self.policy.target(batch.next_observation))
        return batch.reward + self.config.discount_factor * batch.next_mask * next_values

    def test_agent(self) -> TestAgent:
        return DDPGTestAgent(self.policy)


class DDPGTestAgent(TestAgent):
    """The policy's action, without exploration noise."""

    def __init__(self, policy: DeterministicPolicy):
        self.policy = policy

    def act(self, states: StateArray) -> torch.Tensor:
        return self.policy.eval(states.as_input())


# -- what DDPG, TD3 and SAC share ---------------------------------------------------------------------------
def action_bounds(context: BuildContext, agent: str) -> ActionBounds:
    """The bounds of the continuous actions ``agent`` acts in; anything else is a ConfigError, one line."""
    space = context.action_space
    if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
        raise ConfigError(f"agent={agent}: needs continuous (Box) actions, not {space}; allowed: envs with Box "
                          "actions, e.g. env=classic/pendulum or env=mujoco/half_cheetah (rlconf list env)")
    shape = context.observation_space.shape
    if len(shape) != 1:
        raise ConfigError(f"agent={agent}: its critic takes vector observations (concatenated with the action), "
                          f"not observations of shape {shape}; allowed: envs with vector observations")
    return ActionBounds(space, context.device)


def deterministic_policy(config, context: BuildContext, bounds: ActionBounds) -> DeterministicPolicy:
    """s -> a in the Box: the approximation group's network, Adam at ``lr_pi``, a Polyak target (DDPG, TD3)."""
    model = model_settings(context.approximation).head(context.observation_space, bounds.dim).to(context.device)
    return DeterministicPolicy(model, optimizer(model, config.lr_pi, config), bounds=bounds,
                               target=PolyakTarget(config.polyak_rate), logger=context.logger)


def critic(config, context: BuildContext, bounds: ActionBounds, name: str, every: int = 1) -> QContinuous:
    """Q(s, a): the approximation group's network on the observation and action side by side, with Adam at
    ``lr_q`` and a Polyak target moved after every ``every``-th update."""
    inputs = int(np.prod(context.observation_space.shape)) + bounds.dim
    space = gym.spaces.Box(-np.inf, np.inf, (inputs,), np.float32)
    model = model_settings(context.approximation).head(space, 1).to(context.device)
    return QContinuous(model, optimizer(model, config.lr_q, config), name=name,
                       target=PolyakTarget(config.polyak_rate, every), logger=context.logger)


def optimizer(model: torch.nn.Module, lr: float, config) -> torch.optim.Adam:
    """Fused Adam at a constant learning rate."""
    return adam(model.parameters(), lr, config.adam_eps)[0]


def off_policy_replay(config, context: BuildContext) -> ReplayBuffer:
    return replay_buffer(config.replay_buffer_size, context.n_envs, context.observation_space,
                         context.observation_dtype, device=context.device, seed=context.seed,
                         action_space=context.action_space)


def generator(context: BuildContext) -> torch.Generator:
    """The agent's own random numbers (exploration, target smoothing), seeded, on the networks' device."""
    return torch.Generator(device=context.device).manual_seed(context.seed)


def random_actions(bounds: ActionBounds, n: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` actions drawn uniformly from the Box."""
    uniform = torch.rand((n, bounds.dim), generator=generator, device=bounds.low.device)
    return bounds.scale(uniform * 2 - 1).view(n, *bounds.shape)


def gaussian(like: torch.Tensor, std: float, generator: torch.Generator) -> torch.Tensor:
    return std * torch.randn(like.shape, generator=generator, device=like.device, dtype=like.dtype)


def minibatches(replay: ReplayBuffer, n: int, size: int) -> Iterator[Transitions]:
    """``n`` uniform minibatches of ``size`` from one draw of ``n * size`` transitions (one indexing pass)."""
    batch = replay.sample(n * size)
    if n == 1:
        yield batch
        return
    for i in range(n):
        part = slice(i * size, (i + 1) * size)
        yield Transitions(batch.observation[part], batch.action[part], batch.reward[part],
                          batch.next_observation[part], batch.next_mask[part])
