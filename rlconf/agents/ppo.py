"""PPO (Schulman et al. 2017): clipped policy-gradient updates on GAE advantages from parallel environments.

The agent collects ``n_steps`` steps from each of its ``n_envs`` environments, computes generalised advantage
estimates, then runs ``epochs`` passes of minibatch updates maximising the clipped surrogate
``min(ratio * A, clip(ratio, 1 - clip, 1 + clip) * A)`` plus an entropy bonus, and regresses the value head on
the returns. Policy and value heads sit on shared features or on a trunk each (``approximation.shared``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from rlconf.agents._agent import Buildable, BuildContext, ParallelAgent, TestAgent
from rlconf.approximation import (
    Approximation,
    FeatureNetwork,
    Identity,
    VNetwork,
    adam,
    reinforce_together,
)
from rlconf.config import require
from rlconf.core import StateArray
from rlconf.memory import GeneralizedAdvantageBuffer, Rollout
from rlconf.nn import model_settings
from rlconf.optim import Clock, schedule
from rlconf.policies import SoftmaxPolicy


@dataclass
class PPOConfig:
    discount_factor: float = 0.99
    lam: float = 0.95  # GAE lambda
    lr: float = 3e-4
    lr_final: float | None = None  # decay the learning rate linearly to this over the run
    adam_eps: float = 1e-5
    clip: float = 0.2  # surrogate clipping range ...
    clip_final: float | None = None  # ... optionally decayed linearly to this over the run
    n_steps: int = 128  # steps per environment in each rollout
    epochs: int = 4
    batch_size: int = 64  # minibatch size
    entropy_loss_scaling: float = 0.0
    value_loss_scaling: float = 0.5
    clip_grad: float = 0.5
    normalize_advantages: bool = True

    def __post_init__(self):
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        for key in ("discount_factor", "lam"):
            require(0 <= getattr(self, key) <= 1, f"agent.{key}", getattr(self, key), "must be in [0, 1]")
        for key in ("n_steps", "epochs", "batch_size"):
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")
        require(self.clip > 0, "agent.clip", self.clip, "must be positive")


class PPO(ParallelAgent, Buildable):
    Config = PPOConfig

    def __init__(self, features: Approximation, v: VNetwork, policy: SoftmaxPolicy,
                 buffer: GeneralizedAdvantageBuffer, clock: Clock, config: PPOConfig, clip):
        self.features = features
        self.v = v
        self.policy = policy
        self.buffer = buffer
        self.clock = clock
        self.config = config
        self.clip = clip
        # Sampling happens where the policy's outputs live: a CUDA multinomial needs a CUDA generator.
        self.generator = torch.Generator(device=buffer.observation.device)

    @classmethod
    def from_config(cls, config: PPOConfig, context: BuildContext) -> PPO:
        space, device = context.observation_space, context.device
        n_actions = int(context.action_space.n)
        settings = model_settings(context.approximation)
        clock = Clock()
        lr = schedule(config.lr, config.lr_final, context.total_steps, clock, "lr")

        def approximation(kind, model, name):
            model = model.to(device)
            optimizer, lr_schedule = adam(model.parameters(), lr, config.adam_eps)
            return kind(model, optimizer, clip_grad=config.clip_grad, scheduler=lr_schedule, name=name,
                        logger=context.logger)

        if settings.shared:
            trunk, width = settings.trunk(space)
            features = approximation(FeatureNetwork, trunk, "features")
            policy_model, value_model = settings.linear(width, n_actions, 0.01), settings.linear(width, 1, 1.0)
        else:
            features = Identity()
            policy_model = settings.head(space, n_actions, out_gain=0.01)
            value_model = settings.head(space, 1, out_gain=1.0)
        policy = approximation(SoftmaxPolicy, policy_model, "policy")
        v = approximation(VNetwork, value_model, "v")
        buffer = GeneralizedAdvantageBuffer(
            config.n_steps, context.n_envs, space.shape, context.observation_dtype,
            discount_factor=config.discount_factor, lam=config.lam, device=device)
        clip = schedule(config.clip, config.clip_final, context.total_steps, clock, "clip")
        agent = cls(features, v, policy, buffer, clock, config, clip)
        agent.generator.manual_seed(context.seed)
        return agent

    def act(self, states: StateArray) -> torch.Tensor:
        self.clock.tick(len(states))
        self.buffer.store_state(states)
        if self.buffer.full:
            self._train()
        with torch.no_grad():
            distribution = self.policy.no_grad(self.features.no_grad(states.as_input()))
            actions = distribution.sample(self.generator)
            self.buffer.store_action(actions, distribution.log_prob(actions))
        return actions

    def _train(self) -> None:
        observations = self.buffer.observation
        with torch.no_grad():
            flat = observations.view(-1, *observations.shape[2:])
            values = self.v.no_grad(self.features.no_grad(flat)).view(observations.shape[:2])
        rollout = self.buffer.rollout(values)
        n, size = rollout.size, self.config.batch_size
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
        if not self.config.normalize_advantages or batch.size < 2:
            return batch
        advantages = batch.advantage
        return batch._replace(advantage=(advantages - advantages.mean()) / (advantages.std() + 1e-8))

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
        value_loss = F.mse_loss(self.v(features), batch.returns)
        reinforce_together((self.policy, policy_loss), (self.v, self.config.value_loss_scaling * value_loss))
        self.features.reinforce()

    def test_agent(self) -> TestAgent:
        return PPOTestAgent(self.features, self.policy)

    def state_dict(self) -> dict:
        return {"features": self.features.state_dict(), "policy": self.policy.state_dict(),
                "v": self.v.state_dict(), "buffer": self.buffer.state_dict(), "steps": self.clock.steps}

    def load_state_dict(self, state: dict) -> None:
        self.features.load_state_dict(state["features"])
        self.policy.load_state_dict(state["policy"])
        self.v.load_state_dict(state["v"])
        self.buffer.load_state_dict(state["buffer"])
        self.clock.steps = state["steps"]


class PPOTestAgent(TestAgent):
    """Takes the policy's most probable action."""

    def __init__(self, features: Approximation, policy: SoftmaxPolicy):
        self.features = features
        self.policy = policy

    def act(self, states: StateArray) -> torch.Tensor:
        return self.policy.greedy(self.features.eval(states.as_input()))
