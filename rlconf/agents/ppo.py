"""PPO (Schulman et al. 2017): clipped policy-gradient updates on GAE advantages from parallel environments.

The agent collects ``n_steps`` steps from each of its ``n_envs`` environments, computes generalised advantage
estimates, then runs ``epochs`` passes of minibatch updates maximising the clipped surrogate
``min(ratio * A, clip(ratio, 1 - clip, 1 + clip) * A)`` plus an entropy bonus, and regresses the value head on
the returns. Policy and value heads sit on shared features or on a trunk each (``approximation.shared``).
Discrete actions get a softmax policy, Box actions a Gaussian (``_policy_gradient.build_networks``).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from rlconf.agents._agent import BuildContext
from rlconf.agents._policy_gradient import RolloutPolicyGradient, normalized
from rlconf.agents.hyperparameters import PPOConfig
from rlconf.approximation import Approximation, VNetwork
from rlconf.memory import GeneralizedAdvantageBuffer, Rollout
from rlconf.optim import Clock, LinearScheduler, schedule
from rlconf.policies import StochasticPolicy


class PPO(RolloutPolicyGradient):
    Config = PPOConfig

    def __init__(self, features: Approximation, policy: StochasticPolicy, v: VNetwork, clock: Clock,
                 config: PPOConfig, device: torch.device | str = "cpu", seed: int = 0, *,
                 buffer: GeneralizedAdvantageBuffer, clip: float | LinearScheduler):
        super().__init__(features, policy, v, clock, config, device, seed, buffer)
        self.clip = clip

    @classmethod
    def extras(cls, config: PPOConfig, context: BuildContext, clock: Clock) -> dict[str, Any]:
        return {"buffer": cls.rollout_buffer(config, context, lam=config.lam),
                "clip": schedule(config.clip, config.clip_final, context.total_steps, clock, "clip")}

    def _train(self) -> None:
        observations = self.buffer.observation
        with torch.no_grad():
            flat = observations.view(-1, *observations.shape[2:])
            values = self.v.no_grad(self.features.no_grad(flat)).view(observations.shape[:2])
        rollout = self.buffer.rollout(values)
        n, size = rollout.size, self.config.batch_size
        if n == 0:  # every row was an episode's reset step (all environments ended together): nothing to learn
            return
        if n <= size:
            # One minibatch holds the whole rollout: its gradient does not depend on the order of the
            # samples, so shuffling, slicing and normalising once serve every epoch.
            rollout = self._normalized(rollout)
            for _ in range(self.config.epochs):
                self._update(rollout)
            return
        for _ in range(self.config.epochs):
            order = torch.randperm(n, generator=self.generator, device=self.generator.device)
            for start in range(0, n, size):
                index = order[start : start + size]
                self._update(self._normalized(Rollout(*(x[index] for x in rollout))))

    def _normalized(self, batch: Rollout) -> Rollout:
        if not self.config.normalize_advantages:
            return batch
        return batch._replace(advantage=normalized(batch.advantage))

    def _update(self, batch: Rollout) -> None:
        advantages = batch.advantage
        features = self.features(batch.observation)
        distribution = self.policy(features)
        ratio = torch.exp(distribution.log_prob(batch.action) - batch.log_prob)
        clip = float(self.clip)
        surrogate = torch.min(ratio * advantages, ratio.clamp(1.0 - clip, 1.0 + clip) * advantages)
        policy_loss = -surrogate.mean()
        if self.config.entropy_loss_scaling:
            policy_loss = policy_loss - self.config.entropy_loss_scaling * distribution.entropy().mean()
        self._reinforce(policy_loss, F.mse_loss(self.v(features), batch.returns))

