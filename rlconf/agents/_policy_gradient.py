"""What the policy-gradient agents (VPG, VAC, A2C, PPO) share, so that each of their files holds only its
algorithm: what it learns from and when.

- ``PolicyGradientConfig``: the hyperparameters of the networks and their optimisation.
- ``build_networks``: features, a stochastic policy head and a value head. The policy is a softmax over a
  Discrete action space (independent categoricals over a MultiDiscrete one, Bernoullis over a MultiBinary one)
  and a Gaussian over a Box (``rlconf.policies.stochastic_policy``), so every agent here acts in all of them
  through one code path. Where states say which actions are legal (``action_mask``), the policy's logits are
  masked in acting, in the update (the buffers keep each step's mask) and in the greedy test agent. With
  ``approximation.shared`` (the Nature CNN's default) both heads sit on one trunk, a ``FeatureNetwork``;
  otherwise each head is a network of its own. With ``approximation.recurrent`` (A2C and PPO) the features are
  a recurrent trunk (``RecurrentFeatureNetwork``), one shared or an actor's and a critic's side by side, and
  both heads are linear layers on it.
- ``PolicyGradient``: the agent base with sampling, the advantage actor-critic step, the greedy test agent
  and checkpoints.
- ``RolloutPolicyGradient``: agents that learn from fixed-length rollouts of every environment (A2C, PPO):
  their acting and their rollout buffer. With a recurrent trunk the agent carries each environment's state from
  step to step (``CarriedState``), its buffer keeps the state each environment's chunk of the rollout started
  from, and updates unroll the trunk over whole chunks from there (``_rollout_features``, ``SequenceRollout``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import torch
from torch import nn

from rlconf.agents._agent import (
    Buildable,
    BuildContext,
    Checkpointed,
    ParallelAgent,
    PolicyGraph,
    TestAgent,
)
from rlconf.agents._recurrent import CarriedState
from rlconf.agents.specs._policy_gradient import PolicyGradientConfig
from rlconf.approximation import (
    Approximation,
    FeatureNetwork,
    Identity,
    RecurrentFeatureNetwork,
    VNetwork,
    learning_rate,
    reinforce_together,
    training,
)
from rlconf.core import ALL_COPIES, StateArray
from rlconf.memory import CompleteEpisodeBuffer, GeneralizedAdvantageBuffer, RecurrentAdvantageBuffer
from rlconf.nn import ModelSettings, model_settings
from rlconf.nn.builders import part_space
from rlconf.nn.layers import OncePerFrame
from rlconf.nn.recurrent import Part, SideBySide
from rlconf.optim import Clock, LinearScheduler
from rlconf.policies import (
    StateDependentHead,
    StateDependentNoise,
    StochasticPolicy,
    action_layout,
    legal_actions,
    policy_network,
    policy_outputs,
    stochastic_policy,
)


def build_networks(config: PolicyGradientConfig, context: BuildContext,
                   clock: Clock) -> tuple[Approximation, StochasticPolicy, VNetwork]:
    """Features, policy and value head for the context's spaces, each with its own optimiser (the chosen one:
    ``approximation.optimizer``) and gradient clipping. Features and policy learn at ``lr``, the value head at
    ``lr_v`` (as the Autonomous Learning Library's VAC and VPG): its targets are returns, often far larger than
    its first outputs, which a policy's learning rate moves too slowly. With ``lr_final`` both decay over the
    run (linearly, or as ``approximation.lr_schedule`` says), keeping their ratio.

    Output layers start small under ``ortho_init``: the policy's (gain 0.01) so the first policy is close to
    uniform, or to the Gaussian's mean 0, whatever the observation.
    """
    space, device = context.observation_space, context.device
    outputs = policy_outputs(context.action_space)
    settings = model_settings(context.approximation)
    choice = context.approximation
    lr = learning_rate(config.lr, config.lr_final, context.total_steps, clock, "lr", choice)
    lr_v = lr
    if config.lr_v is not None:
        final = None if config.lr_final is None else config.lr_final * config.lr_v / config.lr
        lr_v = learning_rate(config.lr_v, final, context.total_steps, clock, "lr_v", choice)

    def trained(model: torch.nn.Module, name: str, rate: float | LinearScheduler) -> dict[str, Any]:
        return dict(**training(model.parameters(), rate, choice, config.adam_eps), clip_grad=config.clip_grad,
                    name=name, logger=context.logger)

    # With critic_inputs the actor must not see the critic's: a network (a recurrent trunk) each, whatever is shared.
    if settings.recurrent != "none":
        trunk, width = settings.recurrent_trunk(space, context.critic_inputs)
        trunk = trunk.to(device)
        features: Approximation = RecurrentFeatureNetwork(trunk, **trained(trunk, "features", lr))
        side_by_side = bool(context.critic_inputs) or not settings.shared
        policy_layers, value_model = heads_on_recurrent_trunk(settings, width, outputs, side_by_side)
    elif context.critic_inputs:
        features = Identity()
        policy_layers, value_model = actor_and_critic_heads(
            settings, space, outputs, context.critic_inputs,
            once_per_frame=context.frame_lanes if context.same_critic_inputs else 1)
    elif settings.shared:
        trunk, width = settings.trunk(space)
        trunk = trunk.to(device)
        features = FeatureNetwork(trunk, **trained(trunk, "features", lr))
        policy_layers, value_model = settings.linear(width, outputs, 0.01), settings.linear(width, 1, 1.0)
    else:
        features = Identity()
        policy_layers = settings.head(space, outputs, out_gain=0.01)
        value_model = settings.head(space, 1, out_gain=1.0)
    network = policy_network(context.action_space, policy_layers, config.log_std_init,
                             state_dependent=getattr(config, "gsde", False)).to(device)
    policy = stochastic_policy(context.action_space, network, squash=config.squash, **trained(network, "policy", lr))
    value_model = value_model.to(device)
    v = VNetwork(value_model, **trained(value_model, "v", lr_v))
    return features, policy, v


def actor_and_critic_heads(settings: ModelSettings, space: gym.spaces.Box, outputs: int, critic_inputs: int,
                           once_per_frame: int = 1) -> tuple[nn.Module, nn.Module]:
    """A policy head on the first features of each observation and a value head on its last ``critic_inputs``
    (a centralised critic's global state beside an agent's own view): each reads only its own part. With
    ``once_per_frame`` lanes a frame that read the same critic inputs, the value head runs once a frame."""
    actor = space.shape[0] - critic_inputs
    critic = (Part(actor, critic_inputs), settings.head(part_space(space, actor, critic_inputs), 1, out_gain=1.0))
    return (nn.Sequential(Part(0, actor), settings.head(part_space(space, 0, actor), outputs, out_gain=0.01)),
            OncePerFrame(*critic, once_per_frame) if once_per_frame > 1 else nn.Sequential(*critic))


def heads_on_recurrent_trunk(settings: ModelSettings, width: int, outputs: int,
                             side_by_side: bool) -> tuple[nn.Module, nn.Module]:
    """Linear policy and value layers on a recurrent trunk's ``width`` features: all of them when actor and
    critic share the trunk, else (``side_by_side``) each its own half of the pair (the actor's first)."""
    if not side_by_side:
        return settings.linear(width, outputs, 0.01), settings.linear(width, 1, 1.0)
    half = width // 2
    return (nn.Sequential(Part(0, half), settings.linear(half, outputs, 0.01)),
            nn.Sequential(Part(half, half), settings.linear(half, 1, 1.0)))


def acting_features(forward: Callable, states: StateArray, carried: CarriedState | None,
                    copies: slice = ALL_COPIES) -> torch.Tensor:
    """The features of ``states`` (those of the environment copies ``copies``) as an agent acts on them:
    ``forward`` (the features' ``no_grad`` or ``eval``) on the batch, or, with memory, one step of the recurrent
    trunk from each environment's carried state."""
    return forward(states.as_input()) if carried is None else carried.step(forward, states, copies)


def normalized(advantages: torch.Tensor) -> torch.Tensor:
    """Advantages shifted and scaled to mean 0 and std 1 over the batch (as Stable-Baselines3 and CleanRL do
    when asked): the step size no longer follows the scale of the rewards. One sample is left as it is."""
    if len(advantages) < 2:
        return advantages
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)


class PolicyGradient(Checkpointed, ParallelAgent, Buildable):
    """Base of the policy-gradient agents: ``features`` -> ``policy`` and ``v`` heads, a step counter, and a
    generator that makes sampling reproducible from the run's seed (checkpoints save it, ``generators``)."""

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
        # With a recurrent trunk: its state for each environment, from one act to the next.
        recurrent = isinstance(features, RecurrentFeatureNetwork)
        self.carried = CarriedState(features.state_size, device) if recurrent else None
        self.exploration: StateDependentNoise | None = None  # gSDE's noise matrices (rollout agents: agent.gsde)

    def state_dict(self) -> dict:
        state = super().state_dict() | {"features": self.features.state_dict(), "policy": self.policy.state_dict(),
                                        "v": self.v.state_dict()}
        if self.carried is not None:
            state["carried"] = self.carried.state_dict()
        if self.exploration is not None:
            state["exploration"] = self.exploration.state_dict()
        return state if self.buffer is None else state | {"buffer": self.buffer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.features.load_state_dict(state["features"])
        self.policy.load_state_dict(state["policy"])
        self.v.load_state_dict(state["v"])
        if self.carried is not None:
            self.carried.load_state_dict(state["carried"])
        if self.exploration is not None:
            self.exploration.load_state_dict(state["exploration"])
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

    def _sample(self, states: StateArray, copies: slice = ALL_COPIES) -> tuple[torch.Tensor, torch.Tensor]:
        """Actions for ``states`` (of the environment copies ``copies``) from the current policy (among their
        legal ones), without gradients, and their log-probabilities. The actions are the policy's own
        (normalised, for a Box); ``policy.env_actions`` maps them."""
        with torch.no_grad():
            features = acting_features(self.features.no_grad, states, self.carried, copies)
            distribution = self.policy.no_grad(features, mask=legal_actions(states))
            if self.exploration is None:
                actions = distribution.sample(self.generator)
            else:
                actions = self.exploration.sample(distribution, copies)
            return actions, distribution.log_prob(actions)

    def _actor_critic_step(self, features: torch.Tensor, actions: torch.Tensor, returns: torch.Tensor,
                           advantages: torch.Tensor | None = None, legal: torch.Tensor | None = None) -> None:
        """One update of policy, value head and features on a batch of steps with their return estimates G:
        the advantage is ``G - V(s)`` unless given, the policy ascends ``A * log pi(a|s)`` plus the entropy
        bonus, and V regresses on G. ``features`` come from ``self.features(...)`` (with gradients) for these
        steps; ``legal``: their action masks, if any (pi is then the masked distribution acting sampled from)."""
        values = self.v(features)
        distribution = self.policy(features, mask=legal)
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
        own = None if self.carried is None else CarriedState(self.carried.size, self.carried.device)
        return PolicyGradientTestAgent(self.features, self.policy, own)


class RolloutPolicyGradient(PolicyGradient):
    """Collects ``n_steps`` steps of every environment into ``self.buffer`` and trains on the full rollout; with
    a recurrent trunk, on each environment's chunk of it as a sequence.

    With the alternating sampler it acts on one group of the environments at a time (``act(states, lanes)``):
    each group fills its columns of the rollout, and the update waits for the group that completes the rollout
    last. A group that completes it first needs an action before the update: drawn from the policy before it,
    it becomes the first action of the next rollout, with its log-probability (rlpyt's alternating sampler does
    the same; PPO's ratio weighs it as the older policy's, A2C takes it as on-policy). With a recurrent trunk each
    group's chunk starts from the state it acted on its row 0 from, that early action's included."""

    buffer: GeneralizedAdvantageBuffer

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lane_rows: dict[int, int] = {}  # with the alternating sampler: rows each group has written ...
        self._waiting: dict[int, tuple] = {}  # ... and the groups done with the rollout, with their next actions
        self._lane_widths: dict[int, int] = {}  # ... and how many environments each group has
        if self.carried is not None:  # groups of copies act in turn: the carried state keeps every copy's row
            self.carried.n_envs = self.buffer.n_envs
        if isinstance(self.policy.model, StateDependentHead):
            self.exploration = StateDependentNoise(self.buffer.n_envs, self.config.gsde_every)

    @staticmethod
    def rollout_buffer(config, context: BuildContext, lam: float) -> GeneralizedAdvantageBuffer:
        """Room for ``config.n_steps`` steps of each environment (and the state after them), GAE at ``lam``;
        with a recurrent trunk, also the state each environment's chunk starts from."""
        action_shape, action_dtype = action_layout(context.action_space)
        recurrent = model_settings(context.approximation).recurrent != "none"
        return (RecurrentAdvantageBuffer if recurrent else GeneralizedAdvantageBuffer)(
            config.n_steps, context.n_envs, context.observation_space.shape, context.observation_dtype,
            action_shape, action_dtype, discount_factor=config.discount_factor, lam=lam, device=context.device)

    def act(self, states: StateArray, lanes: slice | None = None) -> torch.Tensor:
        if lanes is not None:
            return self._act_in_lane(states, lanes)
        self.clock.tick(len(states))
        self.buffer.store_state(states)
        if self.buffer.full:
            self._train()
        if self.carried is not None and self.buffer.t == 0:  # a chunk begins: where its unroll will start
            self.buffer.store_start(self.carried.current(states))
        self._explore(self.buffer.t)
        actions, log_prob = self._sample(states)
        self.buffer.store_action(actions, log_prob)
        return self.policy.env_actions(actions)

    def _act_in_lane(self, states: StateArray, lanes: slice) -> torch.Tensor:
        """Act on the group of environments ``lanes`` (columns of the rollout), as the class docstring says."""
        self.clock.tick(len(states))
        rows, waiting = self._lane_rows, self._waiting
        t = rows.get(lanes.start, self.buffer.t)
        self.buffer.store_state(states, lanes, t)
        if t == self.buffer.n_steps:
            columns = (lanes.stop - lanes.start) + sum(group.stop - group.start for group, *_ in waiting.values())
            if columns < self.buffer.n_envs:  # another group has yet to complete the rollout
                start = self._chunk_start(states, lanes)
                self._explore(0, lanes)  # the next rollout's first action
                actions, log_prob = self._sample(states, lanes)
                waiting[lanes.start] = (lanes, actions, log_prob, start)
                rows[lanes.start] = 1
                return self.policy.env_actions(actions)
            self.buffer.t = self.buffer.n_steps
            self._train()  # the rollout's last states become the next one's first (row 0)
            for group, actions, log_prob, start in waiting.values():
                self.buffer.store_action(actions, log_prob, group, 0)
                if start is not None:
                    self.buffer.store_start(start, group)
            waiting.clear()
            t = 0
        if self.carried is not None and t == 0:  # the group's chunk begins: where its unroll will start
            self.buffer.store_start(self._chunk_start(states, lanes), lanes)
        self._explore(t, lanes)
        actions, log_prob = self._sample(states, lanes)
        self.buffer.store_action(actions, log_prob, lanes, t)
        rows[lanes.start] = t + 1
        self._lane_widths[lanes.start] = lanes.stop - lanes.start
        if not waiting and sum(self._lane_widths.values()) == self.buffer.n_envs:
            self.buffer.t = min(rows.values())  # the rows every group has written: what a checkpoint keeps
        return self.policy.env_actions(actions)

    def _explore(self, t: int, copies: slice = ALL_COPIES) -> None:
        """With gSDE, new noise matrices for the copies ``copies`` where their row ``t`` of the rollout calls for
        them (StateDependentNoise.due)."""
        if self.exploration is not None and self.exploration.due(t):
            self.exploration.draw(self.policy.model.log_std, self.generator, copies)

    def _chunk_start(self, states: StateArray, lanes: slice) -> torch.Tensor | None:
        """With a recurrent trunk, the state the group ``lanes`` acts on ``states`` from: where its chunk of the
        next rollout starts when these are its row 0."""
        return None if self.carried is None else self.carried.current(states, lanes)

    def _train(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def _rollout_features(self, forward: Callable, observations: torch.Tensor) -> torch.Tensor:
        """Features ``[n_steps + 1, n_envs, width]`` of every row of the rollout (``observations``, the buffer's
        or a copy): ``forward`` (the features, with or without gradients) on each state, or with memory one
        unroll of the trunk over each environment's chunk from the state acting started it from, zeroed where
        an episode begins: the features acting computed, now as one sequence to backpropagate through."""
        if self.carried is None:
            features = forward(observations.flatten(0, 1))
            return features.view(*observations.shape[:2], *features.shape[1:])
        features, _ = forward(observations, self.buffer.start, self.buffer.resets)
        return features

    def _segment_features(self, forward: Callable, observations: torch.Tensor,
                          length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """With a recurrent trunk, ``_rollout_features`` unrolled ``length`` rows at a time, and the state before
        each segment's first row ``[n_steps // length, n_envs, state_size]``: with the parameters acting used,
        the state acting had there, from which an update can unroll the segment alone. With ``length = n_steps``
        it is ``_rollout_features``' one unroll, the chunks' starts stacked."""
        state, resets = self.buffer.start, self.buffer.resets
        n_steps = len(observations) - 1
        bounds = [*range(0, n_steps, length), n_steps + 1]  # the last segment also takes the bootstrap row
        features, starts = [], []
        for first, end in zip(bounds[:-1], bounds[1:], strict=True):
            starts.append(state)
            part, state = forward(observations[first:end], state, resets[first:end])
            features.append(part)
        return torch.cat(features), torch.stack(starts)


class PolicyGradientTestAgent(TestAgent):
    """Takes the policy's most probable action: the argmax of the softmax, the mean of the Gaussian. With a
    recurrent trunk it carries its own state for each environment (``carried``), apart from the training
    agent's."""

    def __init__(self, features: Approximation, policy: StochasticPolicy, carried: CarriedState | None = None):
        self.features = features
        self.policy = policy
        self.carried = carried

    def act(self, states: StateArray) -> torch.Tensor:
        features = acting_features(self.features.eval, states, self.carried)
        return self.policy.env_actions(self.policy.greedy(features, mask=legal_actions(states)))

    def policy_graph(self) -> PolicyGraph:
        if self.carried is not None:
            return self._recurrent_graph()
        return PolicyGraph(lambda observations, mask=None: self.policy.env_actions(self.policy.greedy(
            self.features.eval(observations), mask=mask)),
            {"features": self.features.model, "policy": self.policy.model})

    def _recurrent_graph(self) -> PolicyGraph:
        """The greedy action and the actor's state after the step. Of a side-by-side pair only the actor's trunk
        (the first) is in the graph: the critic's chooses nothing, and its features are the ones the policy's
        ``Part(0, width)`` keeps anyway."""
        model = self.features.model
        actor = model.networks[0] if isinstance(model, SideBySide) else model

        def act(observations: torch.Tensor, state: torch.Tensor, mask: torch.Tensor | None = None):
            features, after = actor.step(observations, state)
            return self.policy.env_actions(self.policy.greedy(features, mask=mask)), after

        return PolicyGraph(act, {"features": actor, "policy": self.policy.model}, core=actor.core)
