"""What the policy-gradient agents (VPG, VAC, A2C, PPO) share, so that each of their files holds only its
algorithm: what it learns from and when.

- ``PolicyGradientConfig``: the hyperparameters of the networks and their optimisation.
- ``build_networks``: features, a stochastic policy head and a value head. The policy is a softmax over a
  Discrete action space and a Gaussian over a Box (``rlconf.policies.stochastic_policy``), so every agent
  here acts in both through one code path. With ``approximation.shared`` (the Nature CNN's default) both
  heads sit on one trunk, a ``FeatureNetwork``; otherwise each head is a network of its own.
- ``PolicyGradient``: the agent base with sampling, the advantage actor-critic step, the greedy test agent
  and checkpoints.
- ``RolloutPolicyGradient``: agents that learn from fixed-length rollouts of every environment (A2C, PPO):
  their acting and their rollout buffer.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from rlconf.agents._agent import Buildable, BuildContext, Checkpointed, ParallelAgent, TestAgent
from rlconf.agents._plays import Plays
from rlconf.agents.hyperparameters import PolicyGradientConfig
from rlconf.approximation import Approximation, FeatureNetwork, Identity, VNetwork, adam, reinforce_together
from rlconf.core import StateArray
from rlconf.memory import CompleteEpisodeBuffer, GeneralizedAdvantageBuffer
from rlconf.nn import model_settings
from rlconf.optim import Clock, LinearScheduler, schedule
from rlconf.policies import StochasticPolicy, action_layout, policy_network, policy_outputs, stochastic_policy


def build_networks(config: PolicyGradientConfig, context: BuildContext,
                   clock: Clock) -> tuple[Approximation, StochasticPolicy, VNetwork]:
    """Features, policy and value head for the context's spaces, each with its own Adam and gradient
    clipping. Features and policy learn at ``lr``, the value head at ``lr_v`` (as the Autonomous Learning
    Library's VAC and VPG): its targets are returns, often far larger than its first outputs, which a
    policy's learning rate moves too slowly. With ``lr_final`` both decay linearly over the run, keeping
    their ratio.

    Output layers start small under ``ortho_init``: the policy's (gain 0.01) so the first policy is close to
    uniform, or to the Gaussian's mean 0, whatever the observation.
    """
    space, device = context.observation_space, context.device
    outputs = policy_outputs(context.action_space)
    settings = model_settings(context.approximation)
    lr = schedule(config.lr, config.lr_final, context.total_steps, clock, "lr")
    lr_v = lr
    if config.lr_v is not None:
        final = None if config.lr_final is None else config.lr_final * config.lr_v / config.lr
        lr_v = schedule(config.lr_v, final, context.total_steps, clock, "lr_v")

    def training(model: torch.nn.Module, name: str, rate: float | LinearScheduler) -> dict[str, Any]:
        optimizer, lr_schedule = adam(model.parameters(), rate, config.adam_eps)
        return dict(optimizer=optimizer, clip_grad=config.clip_grad, scheduler=lr_schedule, name=name,
                    logger=context.logger)

    if settings.shared:
        trunk, width = settings.trunk(space)
        trunk = trunk.to(device)
        features: Approximation = FeatureNetwork(trunk, **training(trunk, "features", lr))
        policy_layers, value_model = settings.linear(width, outputs, 0.01), settings.linear(width, 1, 1.0)
    else:
        features = Identity()
        policy_layers = settings.head(space, outputs, out_gain=0.01)
        value_model = settings.head(space, 1, out_gain=1.0)
    network = policy_network(context.action_space, policy_layers, config.log_std_init).to(device)
    policy = stochastic_policy(context.action_space, network, **training(network, "policy", lr))
    value_model = value_model.to(device)
    v = VNetwork(value_model, **training(value_model, "v", lr_v))
    return features, policy, v


def normalized(advantages: torch.Tensor) -> torch.Tensor:
    """Advantages shifted and scaled to mean 0 and std 1 over the batch (as Stable-Baselines3 and CleanRL do
    when asked): the step size no longer follows the scale of the rewards. One sample is left as it is."""
    if len(advantages) < 2:
        return advantages
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)


class PolicyGradient(Checkpointed, ParallelAgent, Buildable):
    """Base of the policy-gradient agents: ``features`` -> ``policy`` and ``v`` heads, a step counter, and a
    generator that makes sampling reproducible from the run's seed (checkpoints save it, ``generators``)."""

    plays = Plays.single_agent(gym.spaces.Discrete, gym.spaces.Box)  # softmax or Gaussian policies

    def __init__(self, features: Approximation, policy: StochasticPolicy, v: VNetwork, clock: Clock,
                 config: PolicyGradientConfig, device: torch.device | str = "cpu", seed: int = 0,
                 buffer: GeneralizedAdvantageBuffer | CompleteEpisodeBuffer | None = None):
        self.features = features
        self.policy = policy
        self.v = v
        self.clock = clock
        self.config = config
        # Sampling happens where the policy's outputs live: CUDA sampling needs a CUDA generator.
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)
        self.buffer = buffer  # the experience an update learns from; None where each step is learned at once

    def state_dict(self) -> dict:
        state = super().state_dict() | {"features": self.features.state_dict(), "policy": self.policy.state_dict(),
                                        "v": self.v.state_dict()}
        return state if self.buffer is None else state | {"buffer": self.buffer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.features.load_state_dict(state["features"])
        self.policy.load_state_dict(state["policy"])
        self.v.load_state_dict(state["v"])
        if self.buffer is not None:
            self.buffer.load_state_dict(state["buffer"])

    def generators(self) -> dict[str, Any]:
        return {"generator": self.generator}

    @classmethod
    def from_config(cls, config: PolicyGradientConfig, context: BuildContext) -> PolicyGradient:
        clock = Clock()
        features, policy, v = build_networks(config, context, clock)
        return cls(features, policy, v, clock, config, context.device, context.seed,
                   **cls.extras(config, context, clock))

    @classmethod
    def extras(cls, config: PolicyGradientConfig, context: BuildContext, clock: Clock) -> dict[str, Any]:
        """What an algorithm adds to its networks (its buffer, its schedules), built after them."""
        return {}

    def _sample(self, states: StateArray) -> tuple[torch.Tensor, torch.Tensor]:
        """Actions for ``states`` from the current policy, without gradients, and their log-probabilities.
        The actions are the policy's own (normalised, for a Box); ``policy.env_actions`` maps them."""
        with torch.no_grad():
            distribution = self.policy.no_grad(self.features.no_grad(states.as_input()))
            actions = distribution.sample(self.generator)
            return actions, distribution.log_prob(actions)

    def _actor_critic_step(self, features: torch.Tensor, actions: torch.Tensor, returns: torch.Tensor,
                           advantages: torch.Tensor | None = None) -> None:
        """One update of policy, value head and features on a batch of steps with their return estimates G:
        the advantage is ``G - V(s)`` unless given, the policy ascends ``A * log pi(a|s)`` plus the entropy
        bonus, and V regresses on G. ``features`` come from ``self.features(...)`` (with gradients) for these
        steps."""
        values = self.v(features)
        distribution = self.policy(features)
        if advantages is None:
            advantages = returns - values.detach()
        policy_loss = -(advantages * distribution.log_prob(actions)).mean()
        if self.config.entropy_loss_scaling:
            policy_loss = policy_loss - self.config.entropy_loss_scaling * distribution.entropy().mean()
        self._reinforce(policy_loss, (returns - values).square().mean())

    def _reinforce(self, policy_loss: torch.Tensor, value_loss: torch.Tensor) -> None:
        """One optimiser step of both heads from one backward pass, then of the shared features."""
        reinforce_together((self.policy, policy_loss), (self.v, self.config.value_loss_scaling * value_loss))
        self.features.reinforce()

    def test_agent(self) -> TestAgent:
        return PolicyGradientTestAgent(self.features, self.policy)


class RolloutPolicyGradient(PolicyGradient):
    """Collects ``n_steps`` steps of every environment into ``self.buffer`` and trains on the full rollout."""

    buffer: GeneralizedAdvantageBuffer
    recurrent = "optional"

    @staticmethod
    def rollout_buffer(config, context: BuildContext, lam: float) -> GeneralizedAdvantageBuffer:
        """Room for ``config.n_steps`` steps of each environment (and the state after them), GAE at ``lam``."""
        action_shape, action_dtype = action_layout(context.action_space)
        return GeneralizedAdvantageBuffer(
            config.n_steps, context.n_envs, context.observation_space.shape, context.observation_dtype,
            action_shape, action_dtype, discount_factor=config.discount_factor, lam=lam, device=context.device)

    def act(self, states: StateArray) -> torch.Tensor:
        self.clock.tick(len(states))
        self.buffer.store_state(states)
        if self.buffer.full:
            self._train()
        actions, log_prob = self._sample(states)
        self.buffer.store_action(actions, log_prob)
        return self.policy.env_actions(actions)

    def _train(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class PolicyGradientTestAgent(TestAgent):
    """Takes the policy's most probable action: the argmax of the softmax, the mean of the Gaussian."""

    def __init__(self, features: Approximation, policy: StochasticPolicy):
        self.features = features
        self.policy = policy

    def act(self, states: StateArray) -> torch.Tensor:
        return self.policy.env_actions(self.policy.greedy(self.features.eval(states.as_input())))
