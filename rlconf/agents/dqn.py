"""DQN (Mnih et al. 2015): Q-learning with experience replay and a target network.

Every step the agent picks an epsilon-greedy action and stores the state in replay. Every
``update_frequency`` environment steps it takes ``gradient_steps`` minibatch steps on the squared (or Huber)
TD error against ``r + gamma * max_a' Q_target(s', a')``; the target network is refreshed every
``target_update_frequency`` environment steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from rlconf.agents._agent import Buildable, BuildContext, ParallelAgent, TestAgent
from rlconf.approximation import FixedTarget, QNetwork, adam, make_target
from rlconf.config import require
from rlconf.core import StateArray
from rlconf.memory import ReplayBuffer
from rlconf.nn import MLPSettings, mlp_head
from rlconf.optim import Clock, schedule
from rlconf.policies import ParallelGreedyPolicy

LOSSES = {"mse": F.mse_loss, "huber": F.smooth_l1_loss}
TARGETS = ("fixed", "polyak", "trivial")


@dataclass
class DQNConfig:
    discount_factor: float = 0.99
    lr: float = 1e-3
    lr_final: float | None = None  # decay the learning rate linearly to this over the run
    adam_eps: float = 1e-8
    loss: str = "mse"  # mse or huber
    clip_grad: float = 0.0  # max gradient norm; 0 disables
    batch_size: int = 64
    replay_buffer_size: int = 100_000
    replay_start_size: int = 1_000  # environment steps before the first update
    update_frequency: int = 4  # environment steps between bursts of updates
    gradient_steps: int = 1  # minibatch updates per burst
    target: str = "fixed"  # fixed, polyak or trivial
    target_update_frequency: int = 1_000  # environment steps (fixed target)
    target_rate: float = 0.005  # polyak target
    epsilon: float = 1.0  # exploration: start ...
    epsilon_final: float = 0.02  # ... end ...
    epsilon_decay_steps: int = 10_000  # ... after this many environment steps
    eval_epsilon: float = 0.0  # exploration of the test agent

    def __post_init__(self):
        require(self.loss in LOSSES, "agent.loss", self.loss, f"allowed: {', '.join(LOSSES)}")
        require(self.target in TARGETS, "agent.target", self.target, f"allowed: {', '.join(TARGETS)}")
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        for key in ("batch_size", "replay_buffer_size", "update_frequency", "gradient_steps",
                    "target_update_frequency", "epsilon_decay_steps"):
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")
        for key in ("epsilon", "epsilon_final", "eval_epsilon", "target_rate"):
            require(0 <= getattr(self, key) <= 1, f"agent.{key}", getattr(self, key), "must be in [0, 1]")


class DQN(ParallelAgent, Buildable):
    Config = DQNConfig

    def __init__(self, q: QNetwork, policy: ParallelGreedyPolicy, replay: ReplayBuffer, clock: Clock,
                 config: DQNConfig, n_envs: int):
        self.q = q
        self.policy = policy
        self.replay = replay
        self.clock = clock
        self.config = config
        self.loss = LOSSES[config.loss]
        # Periods are given in environment steps; with n_envs environments one act() is n_envs steps.
        self._train_every = max(1, config.update_frequency // n_envs)
        self._sync_every = max(1, config.target_update_frequency // n_envs)
        self._calls = 0
        self._target_stale = False

    @classmethod
    def from_config(cls, config: DQNConfig, context: BuildContext) -> DQN:
        space = context.observation_space
        n_actions = int(context.action_space.n)
        clock = Clock()
        model = mlp_head(MLPSettings(**context.approximation), space, n_actions).to(context.device)
        lr = schedule(config.lr, config.lr_final, context.total_steps, clock, "lr")
        optimizer, lr_schedule = adam(model.parameters(), lr, config.adam_eps)
        target = make_target(config.target, 0, config.target_rate)
        q = QNetwork(model, optimizer, clip_grad=config.clip_grad, scheduler=lr_schedule, target=target,
                     logger=context.logger)
        epsilon = schedule(config.epsilon, config.epsilon_final, config.epsilon_decay_steps, clock, "epsilon")
        policy = ParallelGreedyPolicy(q, n_actions, epsilon, np.random.default_rng(context.seed))
        replay = ReplayBuffer(config.replay_buffer_size, context.n_envs, space.shape,
                              context.observation_dtype, device=context.device,
                              generator=torch.Generator().manual_seed(context.seed))
        return cls(q, policy, replay, clock, config, context.n_envs)

    def act(self, states: StateArray) -> torch.Tensor:
        self.clock.tick(len(states))
        self._calls += 1
        actions = self.policy(states)
        self.replay.store(states, actions)
        if self._calls % self._sync_every == 0:
            # Weights only change inside _train, so copying them just before the next burst is the same
            # as copying them now, and several refreshes between two bursts cost one copy.
            self._target_stale = True
        if self.clock.steps >= self.config.replay_start_size and self._calls % self._train_every == 0:
            self._train()
        return actions

    def _train(self) -> None:
        n, b = self.config.gradient_steps, self.config.batch_size
        # One draw for the whole burst: n independent uniform minibatches, gathered in one indexing op.
        batch = self.replay.sample(n * b)
        fixed_target = isinstance(self.q.target_network, FixedTarget)
        if fixed_target:
            if self._target_stale:
                self.q.target_network.sync()
                self._target_stale = False
            # The target network does not move during a burst, so all its targets come from one pass.
            targets = self._td_targets(batch.reward, batch.next_observation, batch.next_mask)
        for i in range(n):
            part = slice(i * b, (i + 1) * b)
            target = targets[part] if fixed_target else self._td_targets(
                batch.reward[part], batch.next_observation[part], batch.next_mask[part])
            values = self.q(batch.observation[part]).gather(1, batch.action[part].unsqueeze(1)).squeeze(1)
            self.q.reinforce(self.loss(values, target))

    def _td_targets(self, reward, next_observation, next_mask) -> torch.Tensor:
        next_values = self.q.target(next_observation).max(-1).values
        return reward + self.config.discount_factor * next_mask * next_values

    def test_agent(self) -> TestAgent:
        return DQNTestAgent(self.q, self.policy.n_actions, self.config.eval_epsilon)

    def state_dict(self) -> dict:
        return {"q": self.q.state_dict(), "steps": self.clock.steps, "calls": self._calls,
                "target_stale": self._target_stale}

    def load_state_dict(self, state: dict) -> None:
        self.q.load_state_dict(state["q"])
        self.clock.steps = state["steps"]
        self._calls = state["calls"]
        self._target_stale = state["target_stale"]


class DQNTestAgent(TestAgent):
    """Greedy with respect to Q, with an optional small evaluation epsilon."""

    def __init__(self, q: QNetwork, n_actions: int, epsilon: float = 0.0):
        self.policy = ParallelGreedyPolicy(q, n_actions, epsilon)

    def act(self, states: StateArray) -> torch.Tensor:
        if self.policy.epsilon:
            return self.policy(states)
        return self.policy.eval(states)
