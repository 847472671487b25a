"""DQN (Mnih et al. 2015): Q-learning with experience replay and a target network.

Every step the agent picks an epsilon-greedy action and stores the state in replay. Every
``update_frequency`` environment steps it takes ``gradient_steps`` minibatch steps on the squared (or Huber)
TD error against ``r + gamma * max_a' Q_target(s', a')``; the target network is refreshed every
``target_update_frequency`` environment steps. Replay may be prioritized and n-step: the loss is then
weighted by the importance weights and the sampled transitions' priorities follow their TD errors.
Where states say which actions are legal (``action_mask``: board games), acting and the target's max count
only the legal ones.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from rlconf.agents._agent import Buildable, BuildContext, ParallelAgent, ReplayLearner, TestAgent
from rlconf.agents._plays import DISCRETE
from rlconf.agents.hyperparameters import DQNConfig
from rlconf.approximation import FixedTarget, QNetwork, adam, make_target
from rlconf.core import StateArray
from rlconf.memory import Transitions, replay_buffer
from rlconf.nn import model_settings
from rlconf.optim import Clock, schedule
from rlconf.policies import ACTION_MASK, ParallelGreedyPolicy, global_random_actions, legal_argmax, legal_max

# Element-wise, so prioritized replay can weight each sample.
LOSS_FUNCTIONS = {"mse": lambda x, y: F.mse_loss(x, y, reduction="none"),
                  "huber": lambda x, y: F.smooth_l1_loss(x, y, reduction="none")}


class DQN(ReplayLearner, ParallelAgent, Buildable):
    Config = DQNConfig
    plays = DISCRETE
    checkpointed = ("q",)
    counters = {"calls": "_calls", "target_stale": "_target_stale"}
    targets_per_burst = True  # targets depend on the target network alone (not so for double Q-learning)

    def __init__(self, q: QNetwork, policy: ParallelGreedyPolicy, replay, clock: Clock,
                 config: DQNConfig, n_envs: int):
        self.q = q
        self.policy = policy
        self.replay = replay
        self.clock = clock
        self.config = config
        self.loss = LOSS_FUNCTIONS[config.loss]
        # Periods are given in environment steps; with n_envs environments one act() is n_envs steps.
        self._train_every = max(1, config.update_frequency // n_envs)
        self._sync_every = max(1, config.target_update_frequency // n_envs)
        self._calls = 0
        self._target_stale = False

    @classmethod
    def from_config(cls, config: DQNConfig, context: BuildContext) -> DQN:
        n_actions = context.n_actions(cls.__name__.lower())
        clock = Clock()
        q = context.share("q", lambda: cls.build_q(config, context, clock, n_actions))
        epsilon = schedule(config.epsilon, config.epsilon_final, config.epsilon_decay_steps, clock, "epsilon")
        policy = ParallelGreedyPolicy(cls.action_values(q), n_actions, epsilon, np.random.default_rng(context.seed))
        replay = replay_buffer(
            config.replay_buffer_size, context.n_envs, context.observation_space, context.observation_dtype,
            device=context.device, seed=context.seed, prioritized=config.replay == "prioritized",
            alpha=config.alpha, beta=schedule(config.beta, 1.0, context.total_steps, clock, "beta"),
            epsilon=config.priority_epsilon, n_steps=config.n_steps, discount_factor=config.discount_factor)
        return cls(q, policy, replay, clock, config, context.n_envs)

    @classmethod
    def build_q(cls, config: DQNConfig, context: BuildContext, clock: Clock, n_actions: int) -> QNetwork:
        model = model_settings(context.approximation).q(context.observation_space, n_actions).to(context.device)
        return QNetwork(model, **training_settings(model, config, context, clock))

    @staticmethod
    def action_values(q):
        """What the epsilon-greedy policy maximises (Q itself here; the mean of a distribution in C51)."""
        return q

    def act(self, states: StateArray) -> torch.Tensor:
        self.clock.tick(len(states))
        self._calls += 1
        actions = self.policy(states)
        self.replay.store(states, actions)
        if self._calls % self._sync_every == 0:
            # Weights only change inside _train, so copying them just before the next burst is the same
            # as copying them now, and several refreshes between two bursts cost one copy.
            self._target_stale = True
        if self._calls % self._train_every == 0 and self.replay.holds(self.config.replay_start_size):
            self._train()
        return actions

    def _train(self) -> None:
        n, b = self.config.gradient_steps, self.config.batch_size
        if self._target_stale and isinstance(self.q.target_network, FixedTarget):
            self.q.target_network.sync()
            self._target_stale = False
        if self.config.replay == "prioritized":
            for _ in range(n):  # each draw sees the priorities the previous update left
                self._update(self.replay.sample(b))
            return
        # One draw for the whole burst: n independent uniform minibatches, gathered in one indexing op.
        batch = self.replay.sample(n * b)
        # A fixed target does not move during a burst, so all its targets can come from one pass.
        targets = self._td_targets(batch) if self.targets_per_burst and isinstance(
            self.q.target_network, FixedTarget) else None
        for i in range(n):
            part = slice(i * b, (i + 1) * b)
            self._update(Transitions(*(_slice(x, part) for x in batch)), None if targets is None else targets[part])

    def _update(self, batch: Transitions, targets: torch.Tensor | None = None) -> None:
        if targets is None:
            targets = self._td_targets(batch)
        values = self.q(batch.observation).gather(1, batch.action.unsqueeze(1)).squeeze(1)
        self.q.reinforce(self._weighted_loss(values, targets, batch))

    def _td_targets(self, batch) -> torch.Tensor:
        """r + gamma^n * mask' * max_a Q_target(s', a), the max over the legal actions a of s'."""
        return self._bootstrap(batch, legal_max(self.q.target(batch.next_observation), batch.next_action_mask))

    def _bootstrap(self, batch, next_values: torch.Tensor) -> torch.Tensor:
        discount = self.config.discount_factor if batch.discount is None else batch.discount
        return batch.reward + discount * batch.next_mask * next_values

    def _weighted_loss(self, values: torch.Tensor, targets: torch.Tensor, batch) -> torch.Tensor:
        return self._weighted_mean(self.loss(values, targets), batch, (targets - values).detach().abs())

    def _weighted_mean(self, losses: torch.Tensor, batch, priorities: torch.Tensor) -> torch.Tensor:
        """The mean loss, weighted by importance weights under prioritized replay, which then learns the
        sampled transitions' new priorities."""
        if batch.weights is None:
            return losses.mean()
        self.replay.update_priorities(batch.indices, priorities)
        return (batch.weights * losses).mean()

    def test_agent(self) -> TestAgent:
        return DQNTestAgent(self.action_values(self.q), self.policy.n_actions, self.config.eval_epsilon)


class DQNTestAgent(TestAgent):
    """Greedy with respect to Q (in eval mode: noisy layers at their means), with an optional small evaluation
    epsilon. Its coins are drawn from torch's global generator, which ``evaluate`` seeds: an evaluation with
    a seed is repeatable (``rlconf eval`` reproduces a run's final test)."""

    def __init__(self, q: QNetwork, n_actions: int, epsilon: float = 0.0):
        self.q = q
        self.n_actions = n_actions
        self.epsilon = float(epsilon)

    def act(self, states: StateArray) -> torch.Tensor:
        mask = states.as_input(ACTION_MASK) if ACTION_MASK in states else None
        actions = legal_argmax(self.q.eval(states.as_input()), mask)
        if not self.epsilon:
            return actions
        n = len(states)  # drawn on the CPU: the same coins on every device
        explore = torch.rand(n) < self.epsilon
        drawn = global_random_actions(n, self.n_actions, mask)
        return torch.where(explore.to(actions.device), drawn.to(actions.device), actions)


def training_settings(model, config, context: BuildContext, clock: Clock) -> dict:
    """Optimiser (Adam, learning rate schedule), target network, clipping and logger of a value network:
    the keyword arguments of its Approximation, the same for every agent of the DQN family."""
    lr = schedule(config.lr, config.lr_final, context.total_steps, clock, "lr")
    optimizer, lr_schedule = adam(model.parameters(), lr, config.adam_eps)
    return dict(optimizer=optimizer, scheduler=lr_schedule, target=make_target(config.target, 0, config.target_rate),
                clip_grad=config.clip_grad, logger=context.logger)


def _slice(x, part: slice):
    """One minibatch of a field of Transitions (None stays None; index pairs are sliced pairwise)."""
    if x is None:
        return None
    if isinstance(x, tuple):
        return tuple(t[part] for t in x)
    return x[part]
