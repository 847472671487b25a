"""Advantage Actor-Critic (A2C; Mnih et al. 2016, the synchronous version of A3C), as in the Autonomous
Learning Library: parallel environments instead of replay decorrelate the samples.

The agent collects ``n_steps`` steps from each of its ``n_envs`` environments, then takes one gradient step
on all of them. With ``lam`` 1 (the default, as the paper and Stable-Baselines3) the return of each step is
n-step: the discounted rewards up to the end of the rollout plus the discounted value of the state the
rollout ends in (up to ``n_steps`` rewards ahead, fewer for later steps), cut where an episode ends:

    G_t = r_{t+1} + gamma * r_{t+2} + ... + gamma^k * mask_{t+k} * V(s_{t+k})

where ``s_{t+k}`` is the rollout's last state or the last state of the episode, whose value counts when a
time limit truncated the episode (``mask`` 1) and not when it ended (``mask`` 0). A ``lam`` below 1 makes
the advantages generalised advantage estimates (Schulman et al. 2016) and G their lambda-return
``A + V(s)``, as Stable-Baselines3's ``gae_lambda``; the rollout buffer is PPO's either way. The policy
ascends ``A * log pi(a | s)`` plus an entropy bonus, A normalised over the rollout with
``normalize_advantages`` (off by default, as SB3's A2C); V regresses on G.

With a recurrent trunk (``approximation.recurrent``) the pass through the features is one unroll over each
environment's chunk of the rollout, from the recurrent state acting started it from, with the state zeroed
where an episode begins: the gradient step backpropagates through the whole chunk (truncated BPTT).
"""

from __future__ import annotations

from typing import Any

import torch

from rlconf.agents._agent import BuildContext
from rlconf.agents._policy_gradient import RolloutPolicyGradient, normalized
from rlconf.agents.specs.a2c import A2CConfig
from rlconf.optim import Clock


class A2C(RolloutPolicyGradient):
    Config = A2CConfig

    @classmethod
    def extras(cls, config: A2CConfig, context: BuildContext, clock: Clock) -> dict[str, Any]:
        return {"buffer": cls.rollout_buffer(config, context, lam=config.lam)}

    def _train(self) -> None:
        if not self.buffer.valid.any():  # every row is an episode's reset step (all environments ended at once)
            self.buffer.rollout(torch.zeros_like(self.buffer.reward))  # nothing to learn: on to the next rollout
            return
        # [n_steps + 1, n_envs, ...]: the last row bootstraps. A copy: starting the next rollout overwrites
        # the buffer's first row, which a shared trunk's backward pass still needs.
        observations = self.buffer.observation.clone()
        # One pass with gradients through the features of every state; the returns need the values of all
        # of them, the loss those of the transitions.
        features = self._rollout_features(self.features, observations)
        values = self.v.no_grad(features.flatten(0, 1)).view(observations.shape[:2])
        valid = self.buffer.valid  # the rows the rollout holds, read before it starts the next one
        rollout = self.buffer.rollout(values)
        steps = features[:-1][valid]
        # Without normalisation the step takes A = G - V(s) itself, from the values it computes with gradients.
        advantages = normalized(rollout.advantage) if self.config.normalize_advantages else None
        self._actor_critic_step(steps, rollout.action, rollout.returns, advantages, rollout.action_mask)

