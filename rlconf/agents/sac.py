"""SAC (Haarnoja et al. 2018): an off-policy actor-critic that maximises reward plus the policy's entropy.

Every step the agent samples an action from its squashed Gaussian policy (uniformly random actions for the
first ``replay_start_size`` steps) and stores the state in replay. Every ``update_frequency`` environment
steps it takes ``gradient_steps`` minibatch steps, each training in one backward pass

- twin critics on ``(Q_i(s, a) - y)^2``, ``y = r + gamma * mask' * (min_i Q_i,target(s', a') - alpha log pi(a'|s'))``
  with ``a' ~ pi(s')``: the soft Bellman target, with TD3's clipped double Q;
- the policy on ``alpha log pi(a|s) - min_i Q_i(s, a)``, ``a ~ pi(s)`` reparameterised so the gradient flows
  through the sample into the policy (the critics' weights held as they are);
- the temperature alpha (as log alpha) towards the entropy target: alpha grows while the policy's entropy
  is below ``entropy_target`` (default -dim(A)) and shrinks while it is above. A ``temperature`` given in
  the config fixes alpha instead (the first SAC paper's fixed entropy weight): no temperature loss, no step.

All three losses are taken from the networks as they are before the step (one backward pass, as in rlkit).
Every critic update moves the critics' targets a ``polyak_rate`` step; the policy has no target network.
``mask'`` is 0 only after a terminal state: an episode cut off by a time limit still bootstraps. ``n_steps``,
``reward_scale`` and ``q_target_clip`` are DDPG's (ddpg.py); the entropy term enters at the bootstrap state only.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from rlconf.agents._agent import BuildContext, TestAgent
from rlconf.agents._off_policy import (
    ActorTestAgent,
    ContinuousOffPolicy,
    action_bounds,
    critic,
    generator,
    off_policy_replay,
    optimizer,
)
from rlconf.agents.specs.sac import SACConfig
from rlconf.approximation import Approximation, QContinuous, reinforce_together
from rlconf.core import StateArray
from rlconf.memory import ReplayBuffer, Transitions
from rlconf.nn import model_settings
from rlconf.optim import Clock
from rlconf.policies import SoftDeterministicPolicy


class LogTemperature(nn.Module):
    """log alpha, learned in log space so that alpha stays positive."""

    def __init__(self, initial: float):
        super().__init__()
        self.log_alpha = nn.Parameter(torch.tensor(math.log(initial)))

    def forward(self) -> torch.Tensor:
        return self.log_alpha


def tuned_temperature(config: SACConfig, action_dim: int, device: torch.device, logger: Any,
                      approximation: Any) -> tuple[Approximation, float]:
    """log alpha as an Approximation (Adam at ``lr_temperature``; fixed where ``temperature`` is given), and the
    entropy it steers towards (``entropy_target``, default -dim(A)): SAC's, and each MASAC group's."""
    fixed = config.temperature is not None
    log_alpha = LogTemperature(config.temperature if fixed else config.temperature_initial).to(device)
    log_alpha.requires_grad_(not fixed)
    temperature = Approximation(log_alpha, **optimizer(log_alpha, config.lr_temperature, config, approximation),
                                name="temperature", logger=logger)
    return temperature, -action_dim if config.entropy_target is None else config.entropy_target


def log_temperature(policy: SoftDeterministicPolicy, alpha: torch.Tensor, log_probs: torch.Tensor) -> None:
    """alpha and the policy's entropy (the mean of -log pi) as debug scalars, when the policy's logger wants them."""
    logger = policy.logger
    if logger is not None and logger.wants_debug(policy.updates):
        logger.add_scalar("debug/temperature", alpha.item())
        logger.add_scalar("debug/entropy", -log_probs.detach().mean().item())


class SAC(ContinuousOffPolicy):
    Config = SACConfig

    def __init__(self, q_1: QContinuous, q_2: QContinuous, policy: SoftDeterministicPolicy,
                 temperature: Approximation, replay: ReplayBuffer, clock: Clock, config: SACConfig, n_envs: int,
                 entropy_target: float):
        self.q_1, self.q_2 = q_1, q_2
        self.policy = policy
        self.bounds = policy.bounds
        self.temperature = temperature
        super().__init__(replay, clock, config, n_envs)
        self.entropy_target = entropy_target

    @classmethod
    def from_config(cls, config: SACConfig, context: BuildContext) -> SAC:
        bounds = action_bounds(context, "sac")
        # Means and log standard deviations of the Gaussian, one of each per action dimension.
        model = model_settings(context.approximation).head(context.observation_space, 2 * bounds.dim)
        model = model.to(context.device)
        policy = SoftDeterministicPolicy(model, **optimizer(model, config.lr_pi, config, context.approximation),
                                         bounds=bounds, generator=generator(context), logger=context.logger)
        q_1, q_2 = (critic(config, context, bounds, name) for name in ("q_1", "q_2"))
        temperature, entropy_target = tuned_temperature(config, bounds.dim, context.device, context.logger,
                                                        context.approximation)
        return cls(q_1, q_2, policy, temperature, off_policy_replay(config, context), Clock(), config,
                   context.n_envs, entropy_target)

    def state_dict(self) -> dict:
        return super().state_dict() | {"q_1": self.q_1.state_dict(), "q_2": self.q_2.state_dict(),
                                       "policy": self.policy.state_dict(), "temperature": self.temperature.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.q_1.load_state_dict(state["q_1"])
        self.q_2.load_state_dict(state["q_2"])
        self.policy.load_state_dict(state["policy"])
        self.temperature.load_state_dict(state["temperature"])

    def generators(self) -> dict[str, Any]:
        return super().generators() | {"policy": self.policy}  # its generator also draws the warm-up's actions

    @property
    def generator(self) -> torch.Generator:
        """The policy's: the warm-up's random actions and the policy's samples come from one generator."""
        return self.policy.generator

    def acting_approximations(self) -> dict[str, Any]:
        return {"policy": self.policy}

    def _policy_actions(self, states: StateArray, copies: slice) -> torch.Tensor:
        return self.policy.no_grad(states.as_input())[0]

    def _update(self, batch: Transitions) -> None:
        log_alpha = self.temperature()
        alpha = log_alpha.detach().exp()  # a constant in the critics' and the policy's losses
        targets = self.td_targets(batch, alpha)
        q_1_loss = F.mse_loss(self.q_1(batch.observation, batch.action), targets)
        q_2_loss = F.mse_loss(self.q_2(batch.observation, batch.action), targets)

        actions, log_probs = self.policy(batch.observation)
        values = torch.min(self.q_1.frozen(batch.observation, actions), self.q_2.frozen(batch.observation, actions))
        policy_loss = (alpha * log_probs - values).mean()

        # d/d(log alpha) = -(log pi + target): alpha rises while the entropy -log pi is below the target.
        losses = [(self.q_1, q_1_loss), (self.q_2, q_2_loss), (self.policy, policy_loss)]
        if self.config.temperature is None:
            losses.append((self.temperature, -(log_alpha * (log_probs.detach() + self.entropy_target)).mean()))
        reinforce_together(*losses)
        log_temperature(self.policy, alpha, log_probs)

    def td_targets(self, batch: Transitions, alpha: torch.Tensor) -> torch.Tensor:
        """r + gamma * mask' * (min_i Q_i,target(s', a') - alpha log pi(a'|s')), a' ~ pi(s')."""
        next_observation = batch.next_observation
        actions, log_probs = self.policy.no_grad(next_observation)
        next_values = torch.min(self.q_1.target(next_observation, actions), self.q_2.target(next_observation, actions))
        return self._bootstrap(batch, next_values - alpha * log_probs)

    def test_agent(self) -> TestAgent:
        """The squashed mean of the policy's Gaussian: its most likely action, without sampling."""
        return ActorTestAgent(self.policy.greedy, self.policy.model)
