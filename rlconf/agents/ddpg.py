"""DDPG (Lillicrap et al. 2016): Q-learning for continuous actions, with a deterministic policy that climbs
the critic's gradient.

Every step the agent acts with its policy plus Gaussian noise, or with ``noise_process=ou`` an Ornstein-Uhlenbeck
process per environment copy as in the paper (uniformly random actions for the first ``replay_start_size``
steps, which fill the replay with diverse experience) and stores the state in replay.
Every ``update_frequency`` environment steps it takes ``gradient_steps`` minibatch steps, each training

- the critic on ``(Q(s, a) - y)^2`` with ``y = r + gamma * mask' * Q_target(s', policy_target(s'))``,
- the policy on ``-Q(s, policy(s))``, through the critic's weights as they are (``QContinuous.frozen``),

in one backward pass (so the policy follows the critic as it was before this step's update, as in rlkit;
it is one of thousands of steps); both target networks then move a ``polyak_rate`` step towards their
networks.
``mask'`` is 0 only after a terminal state: an episode cut off by a time limit still bootstraps. With
``n_steps`` > 1 ``r`` is the discounted sum of n rewards and gamma is gamma^n (the replay's n-step transitions);
``reward_scale`` and ``q_target_clip`` shape the target (``ContinuousOffPolicy``).

Acting, replay, the warm-up and the update cadence are the off-policy base's (``_off_policy.py``); TD3
builds on this file.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from rlconf.agents._agent import BuildContext, TestAgent
from rlconf.agents._off_policy import (
    ActorTestAgent,
    ContinuousOffPolicy,
    action_bounds,
    critic,
    gaussian,
    generator,
    off_policy_replay,
    optimizer,
)
from rlconf.agents.specs.ddpg import DDPGConfig
from rlconf.approximation import PolyakTarget, QContinuous, reinforce_together
from rlconf.core import StateArray
from rlconf.memory import ReplayBuffer, Transitions
from rlconf.nn import model_settings
from rlconf.optim import Clock
from rlconf.policies import ActionBounds, DeterministicPolicy
from rlconf.policies.exploration import OrnsteinUhlenbeck


class DDPG(ContinuousOffPolicy):
    Config = DDPGConfig

    def __init__(self, q: QContinuous, policy: DeterministicPolicy, replay: ReplayBuffer, clock: Clock,
                 config: DDPGConfig, n_envs: int, generator: torch.Generator):
        self.q = q
        self.policy = policy
        self.bounds = policy.bounds
        super().__init__(replay, clock, config, n_envs)
        self.generator = generator
        self.ou = None  # the Ornstein-Uhlenbeck noise of each copy, where asked for
        if config.noise_process == "ou":
            self.ou = OrnsteinUhlenbeck(n_envs, self.bounds.dim, config.ou_theta, config.ou_dt, self.bounds.low.device)

    def state_dict(self) -> dict:
        state = super().state_dict() | {"q": self.q.state_dict(), "policy": self.policy.state_dict()}
        return state if self.ou is None else state | {"ou": self.ou.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.q.load_state_dict(state["q"])
        self.policy.load_state_dict(state["policy"])
        if self.ou is not None:
            self.ou.load_state_dict(state["ou"])

    def generators(self) -> dict[str, Any]:
        return super().generators() | {"generator": self.generator}  # the warm-up's and the noise's

    @classmethod
    def from_config(cls, config: DDPGConfig, context: BuildContext) -> DDPG:
        bounds = action_bounds(context, "ddpg")
        policy = deterministic_policy(config, context, bounds)
        q = critic(config, context, bounds, "q")
        return cls(q, policy, off_policy_replay(config, context), Clock(), config, context.n_envs,
                   generator(context))

    def acting_approximations(self) -> dict[str, Any]:
        return {"policy": self.policy}

    def _policy_actions(self, states: StateArray, copies: slice) -> torch.Tensor:
        actions = self.policy.no_grad(states.as_input())
        return self.bounds.clip(actions + self.bounds.half_range * self._noise(actions, states, copies))

    def _noise(self, actions: torch.Tensor, states: StateArray, copies: slice) -> torch.Tensor:
        """Gaussian draws, or the next OU value of each of the copies ``copies`` (its process restarting where
        the episode ended)."""
        if self.ou is None:
            return gaussian(actions, self.config.noise, self.generator)
        noise = self.ou.sample(self.config.noise, self.generator, copies).view_as(actions)
        self.ou.reset(states["done"], copies)
        return noise

    def _update(self, batch: Transitions) -> None:
        q_loss = F.mse_loss(self.q(batch.observation, batch.action), self.td_targets(batch))
        policy_loss = -self.q.frozen(batch.observation, self.policy(batch.observation)).mean()
        reinforce_together((self.q, q_loss), (self.policy, policy_loss))

    def td_targets(self, batch: Transitions) -> torch.Tensor:
        """r + gamma * mask' * Q_target(s', policy_target(s'))."""
        return self._bootstrap(batch, self.q.target(batch.next_observation, self.policy.target(batch.next_observation)))

    def test_agent(self) -> TestAgent:
        return ActorTestAgent(self.policy.eval, self.policy.model)


def deterministic_policy(config: DDPGConfig, context: BuildContext, bounds: ActionBounds) -> DeterministicPolicy:
    """s -> a in the Box: the approximation group's network, Adam at ``lr_pi``, a Polyak target (DDPG, TD3)."""
    model = model_settings(context.approximation).head(context.observation_space, bounds.dim).to(context.device)
    return DeterministicPolicy(model, **optimizer(model, config.lr_pi, config, context.approximation), bounds=bounds,
                               target=PolyakTarget(config.polyak_rate), logger=context.logger)
