"""Vanilla Actor-Critic (VAC): the one-step actor-critic of Sutton and Barto (2018, section 13.5), over
parallel environments, as in the Autonomous Learning Library.

Every step is an update, on the batch of transitions the ``n_envs`` environments just produced:

    G = r + gamma * mask' * V(s')          (the one-step return; mask' is 0 only at a terminal state)
    A = G - V(s)                           (the TD error, as the advantage)
    policy: ascend A * log pi(a | s) (+ entropy bonus);  value: regress V(s) on G

A time-limit truncation keeps mask' = 1 and bootstraps from the value of the last observation. The
forward pass that chose the actions is kept (with its graph) and trained on at the next step, so each
state goes through the networks once with gradients; the weights cannot have changed in between, since the
update of the previous transition ran before that forward pass. (That pass is not checkpointed: a restored
agent starts learning at its second step.)
"""

from __future__ import annotations

import torch

from rlconf.agents._policy_gradient import PolicyGradient
from rlconf.agents.specs.vac import VACConfig
from rlconf.approximation import Approximation, VNetwork
from rlconf.core import StateArray
from rlconf.optim import Clock
from rlconf.policies import StochasticPolicy, legal_actions


class VAC(PolicyGradient):
    Config = VACConfig

    def __init__(self, features: Approximation, policy: StochasticPolicy, v: VNetwork, clock: Clock,
                 config: VACConfig, device: torch.device | str = "cpu", seed: int = 0):
        super().__init__(features, policy, v, clock, config, device, seed)
        # The previous step: features of its states (with their graph), its actions, which envs had ended, and
        # its states' legal actions where the environment masks them.
        self._features: torch.Tensor | None = None
        self._actions: torch.Tensor | None = None
        self._done: torch.Tensor | None = None
        self._legal: torch.Tensor | None = None

    def act(self, states: StateArray) -> torch.Tensor:
        self.clock.tick(len(states))
        if self._features is not None:
            self._train(states)
        self._features = self.features(states.as_input())
        self._legal = legal_actions(states)
        self._actions = self.policy.no_grad(self._features, mask=self._legal).sample(self.generator)
        self._done = states["done"]
        return self.policy.env_actions(self._actions)

    def _train(self, states: StateArray) -> None:
        with torch.no_grad():
            next_values = self.v.no_grad(self.features.no_grad(states.as_input()))
            returns = states["reward"] + self.config.discount_factor * states["mask"] * next_values
        # An environment that had ended was reset by this step: no transition, nothing to learn.
        learn = ~self._done
        legal = self._legal
        if learn.all():
            self._actor_critic_step(self._features, self._actions, returns, legal=legal)
        elif learn.any():
            self._actor_critic_step(self._features[learn], self._actions[learn], returns[learn],
                                    legal=None if legal is None else legal[learn])
