"""Vanilla Q-learning (VQN) and SARSA (VSarsa) over parallel environments, as in the Autonomous Learning
Library: no replay and no target network, one TD(0) update per step on the batch of transitions the
``n_envs`` environments just produced. Many environments decorrelate the batch that replay would
otherwise decorrelate.

VQN bootstraps from ``max_a Q(s', a)`` (off-policy); VSarsa from ``Q(s', a')`` for the action it is about
to take (on-policy).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from rlconf.agents._agent import Buildable, BuildContext, Checkpointed, ParallelAgent, TestAgent
from rlconf.agents.dqn import DQNTestAgent
from rlconf.agents.specs.vqn import VQNConfig
from rlconf.approximation import QNetwork, learning_rate, training
from rlconf.core import StateArray
from rlconf.nn import model_settings
from rlconf.optim import Clock, schedule
from rlconf.policies import ParallelGreedyPolicy


class VQN(Checkpointed, ParallelAgent, Buildable):
    Config = VQNConfig

    def __init__(self, q: QNetwork, policy: ParallelGreedyPolicy, clock: Clock, config: VQNConfig):
        self.q = q
        self.policy = policy
        self.clock = clock
        self.config = config
        self._state: StateArray | None = None
        self._action: torch.Tensor | None = None

    def generators(self) -> dict[str, Any]:
        return {"policy": self.policy}

    def state_dict(self) -> dict:
        return super().state_dict() | {"q": self.q.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.q.load_state_dict(state["q"])

    @classmethod
    def from_config(cls, config: VQNConfig, context: BuildContext) -> VQN:
        n_actions = context.n_actions(cls.__name__.lower())
        clock = Clock()
        model = model_settings(context.approximation).q(context.observation_space, n_actions).to(context.device)
        lr = learning_rate(config.lr, config.lr_final, context.total_steps, clock, "lr", context.approximation)
        q = QNetwork(model, **training(model.parameters(), lr, context.approximation, config.adam_eps),
                     clip_grad=config.clip_grad, logger=context.logger)
        epsilon = schedule(config.epsilon, config.epsilon_final, config.epsilon_decay_steps, clock, "epsilon")
        policy = ParallelGreedyPolicy(q, n_actions, epsilon, np.random.default_rng(context.seed))
        return cls(q, policy, clock, config)

    def act(self, states: StateArray) -> torch.Tensor:
        self.clock.tick(len(states))
        actions = self.policy(states)
        # Not from a step that leaves ended episodes only (every environment's reset): it holds no transition,
        # and an optimiser step on a zero loss still moves the weights by Adam's momentum.
        if self._state is not None and not bool(self._state["done"].all()):
            self._train(states, actions)
        self._state, self._action = states, actions
        return actions

    def _train(self, states: StateArray, actions: torch.Tensor) -> None:
        with torch.no_grad():
            target = states["reward"] + self.config.discount_factor * states["mask"] * self._next_values(
                states, actions)
        values = self.q(self._state.as_input()).gather(1, self._action.unsqueeze(1)).squeeze(1)
        # A step leaving an ended episode is the vector env's reset, not a transition: leave it out.
        weights = (~self._state["done"]).float()
        loss = (weights * (values - target) ** 2).sum() / weights.sum().clamp(min=1.0)
        self.q.reinforce(loss)

    def _next_values(self, states: StateArray, actions: torch.Tensor) -> torch.Tensor:
        return self.q.no_grad(states.as_input()).max(-1).values

    def test_agent(self) -> TestAgent:
        return DQNTestAgent(self.q, self.policy.n_actions, self.config.eval_epsilon)


class VSarsa(VQN):
    def _next_values(self, states: StateArray, actions: torch.Tensor) -> torch.Tensor:
        return self.q.no_grad(states.as_input()).gather(1, actions.unsqueeze(1)).squeeze(1)
