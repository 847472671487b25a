"""Vanilla Policy Gradient (VPG: REINFORCE with a value baseline; Williams 1992), as in the Autonomous
Learning Library, over parallel environments.

The agent learns from complete episodes only: each step's return is the discounted sum of the rewards to
the end of its episode, an unbiased estimate of the action's value,

    G_t = r_{t+1} + gamma * r_{t+2} + ... + gamma^(T-t-1) * r_T  (+ gamma^(T-t) * V(s_T) if a time limit
                                                                  truncated the episode at s_T)

and the value function is only a baseline: the policy ascends ``(G_t - V(s_t)) * log pi(a_t | s_t)`` (plus an
optional entropy bonus) and V regresses on G_t. Environments keep playing their episodes; once the episodes
that have ended hold at least ``min_batch_size`` steps, one update learns from all of them. Episodes still
running wait for the next update (``CompleteEpisodeBuffer``), so their early steps may come from the
previous policy. The buffer holds every observation of a running episode: on Atari, with its long
episodes, mind ``n_envs``.
"""

from __future__ import annotations

from typing import Any

import torch

from rlconf.agents._agent import BuildContext
from rlconf.agents._policy_gradient import PolicyGradient
from rlconf.agents.specs.vpg import VPGConfig
from rlconf.core import StateArray
from rlconf.memory import CompleteEpisodeBuffer
from rlconf.optim import Clock
from rlconf.policies import legal_actions


class VPG(PolicyGradient):
    Config = VPGConfig

    @classmethod
    def extras(cls, config: VPGConfig, context: BuildContext, clock: Clock) -> dict[str, Any]:
        return {"buffer": CompleteEpisodeBuffer(context.n_envs, config.discount_factor, context.device)}

    def act(self, states: StateArray) -> torch.Tensor:
        self.clock.tick(len(states))
        self.buffer.store_state(states)
        if self.buffer.completed_steps >= self.config.min_batch_size:
            self._train()
        actions, _ = self._sample(states)
        self.buffer.store_action(actions, legal_actions(states))
        return self.policy.env_actions(actions)

    def _train(self) -> None:
        # One pass with gradients over the ended episodes' states: their values bootstrap truncated
        # episodes (no gradient), their features carry the loss of every step.
        features = self.features(self.buffer.observations())
        episodes = self.buffer.episodes(self.v.no_grad(features))
        self._actor_critic_step(features[episodes.index], episodes.action, episodes.returns,
                                legal=episodes.action_mask)

