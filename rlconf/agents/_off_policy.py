"""What the off-policy agents (DQN and its kin, DDPG, TD3, SAC) share, so that each of their files holds only
its algorithm: how it explores and what one minibatch update does.

- ``OffPolicy``: the agent base. Every ``act`` stores the states and the chosen actions in replay. Learning
  starts after ``replay_start_size`` environment steps, once the replay holds as many (so a run resumed
  without its replay refills it first: ``ReplayBuffer.holds``); from then on every ``update_frequency``
  environment steps bring a burst of ``gradient_steps`` minibatch updates.
- ``off_policy_replay``: the replay an agent's config asks for; ``minibatches``: the minibatches of one burst.
- ``ContinuousOffPolicy``: the base of DDPG, TD3 and SAC: actions in a Box, uniformly random ones during the
  warm-up; their test agent (``ActorTestAgent``) and the builders of their critics, optimisers and
  generator.
- ``training_settings``: the optimiser, target network and clipping of a value network of the DQN family.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.agents._agent import Buildable, BuildContext, ParallelAgent, PolicyGraph, ReplayLearner, TestAgent
from rlconf.agents.specs._plays import CONTINUOUS
from rlconf.approximation import PolyakTarget, QContinuous, learning_rate, make_target, training
from rlconf.core import ALL_COPIES, StateArray
from rlconf.errors import ConfigError
from rlconf.memory import ReplayBuffer, Transitions, replay_buffer
from rlconf.nn import model_settings
from rlconf.optim import Clock
from rlconf.policies import ActionBounds


class OffPolicy(ReplayLearner, ParallelAgent, Buildable):
    """Base of the agents that learn from replay: acting, storing, the warm-up and the update cadence.

    A subclass says how it explores (``_explore``) and what one update does (``_update``); ``_train`` (one
    burst) is here for agents whose updates take a minibatch each."""

    # What it can do (data-parallel learners, the async runner, whose acting and learning processes share its
    # replay and the weights ``acting_approximations`` name) is declared in its spec (rlconf.agents.specs).

    def __init__(self, replay: ReplayBuffer, clock: Clock, config: Any, n_envs: int):
        self.replay = replay
        self.clock = clock
        self.config = config
        self.n_envs = n_envs
        # Periods are given in environment steps; with n_envs environments one act() is n_envs steps.
        self._train_every = max(1, config.update_frequency // n_envs)
        self._calls = 0
        # False in the acting process of the async runner: it explores and stores, the learning process learns.
        self.learns = True
        # With the alternating sampler: the groups that have acted on this step so far, by their first column.
        self._row: dict[int, tuple[slice, StateArray, torch.Tensor]] = {}

    def act(self, states: StateArray, lanes: slice | None = None) -> torch.Tensor:
        if lanes is not None:
            return self._act_in_lane(states, lanes)
        self._count(len(states))
        actions = self._explore(states, ALL_COPIES)
        self._stored_and_learned(states, actions)
        return actions

    def _act_in_lane(self, states: StateArray, lanes: slice) -> torch.Tensor:
        """Act on the group of copies ``lanes`` (the alternating sampler's): its columns of this step are kept
        until every group has acted, then the whole step is stored and a burst of updates comes when one is due,
        as when acting on every copy at once. The clock moves by a step of every copy when the step's first group
        acts, so each group explores at the step counts acting on all of them would: the step is one act."""
        if not self._row:
            self._count(self.n_envs)
        actions = self._explore(states, lanes)
        self._row[lanes.start] = (lanes, states, actions)
        if sum(group.stop - group.start for group, _, _ in self._row.values()) == self.n_envs:
            row = [self._row[start] for start in sorted(self._row)]
            self._row.clear()
            self._stored_and_learned(StateArray.cat([s for _, s, _ in row]), torch.cat([a for _, _, a in row]))
        return actions

    def _stored_and_learned(self, states: StateArray, actions: torch.Tensor) -> None:
        self._store(states, actions)
        if self.learns:
            self._learn()

    def learn_as_if_acted(self, n_envs: int) -> None:
        """What ``act`` does besides acting, for the learning process of the async runner, whose acting happens
        in another process: the clock and the count of acts move as if it had acted on ``n_envs`` states, and a
        burst of updates comes when one is due. Called once for every act of the acting process, it makes the
        updates the synchronous agent makes, at the same steps."""
        self._count(n_envs)
        self._learn()

    def _count(self, n_envs: int) -> None:
        self.clock.tick(n_envs)
        self._calls += 1

    @property
    def updates(self) -> int:
        """Optimiser steps of the networks acting reads so far (the async runner publishes them every few)."""
        return sum(approximation.updates for approximation in self.acting_approximations().values())

    def acting_approximations(self) -> dict[str, Any]:  # pragma: no cover - interface
        """The approximations whose weights acting reads (the async runner copies them to its acting process)."""
        raise NotImplementedError

    def _store(self, states: StateArray, actions: torch.Tensor) -> None:
        """Into replay (an agent with memory also stores the recurrent state it acted from)."""
        self.replay.store(states, actions)

    def state_dict(self) -> dict:
        return super().state_dict() | {"calls": self._calls}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self._calls = state["calls"]

    def generators(self) -> dict[str, Any]:
        # The replay's own (the contents are saved only with checkpoint.replay, the generator always).
        return {"replay": self.replay}

    def _explore(self, states: StateArray, copies: slice) -> torch.Tensor:  # pragma: no cover - interface
        """Actions for ``states``, the states of the environment copies ``copies`` (``ALL_COPIES``, or one
        group's with the alternating sampler): what the agent keeps per copy (an epsilon, a noise process, a
        recurrent state) is read and moved for those copies only."""
        raise NotImplementedError

    def _learn(self) -> None:
        """After each act: a burst of updates when one is due."""
        if self._due(self._train_every) and self._learning():
            self._train()

    def _due(self, every: int) -> bool:
        """Whether this act() is an ``every``-th one."""
        return self._calls % every == 0

    def _warming_up(self) -> bool:
        """Within the first ``replay_start_size`` environment steps."""
        return self.clock.steps < self.config.replay_start_size

    def _learning(self) -> bool:
        """Past the warm-up, with the replay holding as many steps (refilled after a resume without it; on
        the very first step it holds no complete transition)."""
        return not self._warming_up() and self.replay.holds(self.config.replay_start_size)

    def _train(self) -> None:
        for batch in minibatches(self.replay, self.config.gradient_steps, self.config.batch_size):
            self._update(batch)

    def _update(self, batch: Transitions) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def _bootstrap(self, batch: Transitions, next_values: torch.Tensor) -> torch.Tensor:
        """r + gamma^n * mask' * next_values; mask' is 0 only after a terminal state (an episode cut off by a
        time limit still bootstraps)."""
        return batch.reward + self._discount(batch) * batch.next_mask * next_values

    def _discount(self, batch: Transitions) -> float | torch.Tensor:
        """gamma, or each n-step transition's gamma^n."""
        return self.config.discount_factor if batch.discount is None else batch.discount


# -- minibatches -----------------------------------------------------------------------------------------
def draws(replay: ReplayBuffer, n: int, size: int, one_by_one: bool = False) -> Iterator[Transitions]:
    """What a burst of ``n`` updates on minibatches of ``size`` samples from replay: one draw of ``n * size``
    transitions (one indexing pass), or, ``one_by_one``, ``n`` draws of ``size``, each taken after the
    previous update (prioritized replay: each draw sees the priorities the previous update left)."""
    if one_by_one:
        for _ in range(n):
            yield replay.sample(size)
    else:
        yield replay.sample(n * size)


def parts(draw: Transitions, size: int) -> Iterator[slice]:
    """The minibatches of ``size`` in one draw, as slices."""
    for start in range(0, len(draw.reward), size):
        yield slice(start, start + size)


def part_of(draw: Transitions, part: slice) -> Transitions:
    """One minibatch of a draw (None fields stay None; index pairs are sliced pairwise)."""
    return Transitions(*(_slice(field, part) for field in draw))


def minibatches(replay: ReplayBuffer, n: int, size: int) -> Iterator[Transitions]:
    """The ``n`` minibatches of ``size`` of one burst, from one draw."""
    for draw in draws(replay, n, size):
        for part in parts(draw, size):
            yield part_of(draw, part)


def _slice(field, part: slice):
    if field is None:
        return None
    if isinstance(field, tuple):
        return tuple(t[part] for t in field)
    return field[part]


def off_policy_replay(config: Any, context: BuildContext, **options: Any) -> ReplayBuffer:
    """The replay of ``replay_buffer_size`` transitions of the context's observations and actions, seeded from
    the run's seed, giving ``n_steps``-step transitions discounted by ``discount_factor`` (the DQN family's and
    DDPG's, TD3's and SAC's alike); ``options``: how it samples (``rlconf.memory.replay_buffer``)."""
    return replay_buffer(config.replay_buffer_size, context.n_envs, context.observation_space,
                         context.observation_dtype, device=context.device, seed=context.seed,
                         action_space=context.action_space, n_steps=config.n_steps,
                         discount_factor=config.discount_factor, **options)


# -- value networks of the DQN family --------------------------------------------------------------------
def training_settings(model: torch.nn.Module, config: Any, context: BuildContext, clock: Clock) -> dict:
    """Optimiser (``approximation.optimizer``, learning rate schedule), target network, clipping and logger of a
    value network: the keyword arguments of its Approximation, the same for every agent of the DQN family."""
    lr = learning_rate(config.lr, config.lr_final, context.total_steps, clock, "lr", context.approximation)
    return dict(**training(model.parameters(), lr, context.approximation, config.adam_eps),
                target=make_target(config.target, 0, config.target_rate),
                clip_grad=config.clip_grad, logger=context.logger)


# -- continuous actions: DDPG, TD3, SAC ------------------------------------------------------------------
class ContinuousOffPolicy(OffPolicy):
    """Base of the off-policy actor-critics: actions in ``bounds``, uniformly random ones (from
    ``generator``) during the warm-up, which fill the replay with diverse experience, the policy's after.
    Their critics' targets scale the rewards by ``reward_scale`` and are clipped to +-``q_target_clip`` where
    one is given (rlpyt's options; n-step transitions come from the replay, ``off_policy_replay``)."""

    bounds: ActionBounds
    generator: torch.Generator

    def _bootstrap(self, batch: Transitions, next_values: torch.Tensor) -> torch.Tensor:
        """reward_scale * r + gamma^n * mask' * next_values, clipped to +-q_target_clip where one is given."""
        scale, clip = self.config.reward_scale, self.config.q_target_clip
        if scale != 1:  # the default leaves the rewards' floats untouched
            batch = batch._replace(reward=scale * batch.reward)
        targets = super()._bootstrap(batch, next_values)
        return targets if clip is None else targets.clamp(-clip, clip)

    def _explore(self, states: StateArray, copies: slice) -> torch.Tensor:
        if self._warming_up():
            return random_actions(self.bounds, len(states), self.generator)
        return self._policy_actions(states, copies)

    def _policy_actions(self, states: StateArray, copies: slice) -> torch.Tensor:  # pragma: no cover - interface
        raise NotImplementedError


class ActorTestAgent(TestAgent):
    """The actor's action, without exploration: ``action`` maps observations to it (a deterministic
    policy's output, the most likely action of a stochastic one)."""

    def __init__(self, action: Callable[[torch.Tensor], torch.Tensor], network: torch.nn.Module):
        self.action = action
        self.network = network  # the module ``action`` runs

    def act(self, states: StateArray) -> torch.Tensor:
        return self.action(states.as_input())

    def policy_graph(self) -> PolicyGraph:
        return PolicyGraph(self.action, {"policy": self.network})


def action_bounds(context: BuildContext, agent: str) -> ActionBounds:
    """The bounds of the continuous actions ``agent`` acts in; anything else is a ConfigError, one line."""
    space = context.action_space
    # The pairing refusal (experiments.pairing), also for an agent built directly; a Box of several dimensions too.
    if CONTINUOUS.refuses_actions(space) or len(space.shape) != 1:
        raise ConfigError(CONTINUOUS.actions_refusal(agent, space))
    shape = context.observation_space.shape
    if len(shape) != 1:
        raise ConfigError(f"agent={agent}: its critic takes vector observations (concatenated with the action), "
                          f"not observations of shape {shape}; allowed: envs with vector observations")
    return ActionBounds(space, context.device)


def critic(config: Any, context: BuildContext, bounds: ActionBounds, name: str, every: int = 1) -> QContinuous:
    """Q(s, a): the approximation group's network on the observation and action side by side, with Adam at
    ``lr_q`` and a Polyak target moved after every ``every``-th update."""
    settings = model_settings(context.approximation)
    encoder, width = settings.observation_encoder(context.observation_space)  # Dict observations: encoded first
    space = gym.spaces.Box(-np.inf, np.inf, (width + bounds.dim,), np.float32)
    model = settings.head(space, 1).to(context.device)
    parts = torch.nn.ModuleList([part.to(context.device) for part in (encoder, model) if part is not None])
    return QContinuous(model, **optimizer(parts, config.lr_q, config, context.approximation), name=name,
                       encoder=encoder, target=PolyakTarget(config.polyak_rate, every), logger=context.logger)


def optimizer(model: torch.nn.Module, lr: float, config: Any, approximation: Any) -> dict[str, Any]:
    """The chosen optimiser (``approximation``: the approximation group's settings) of ``model`` at a constant
    learning rate, or one a torch.optim.lr_scheduler moves: an Approximation's ``optimizer`` and ``scheduler``.
    (These agents' rates have no ``lr_final``: rlconf.optim.choice refuses linear and cosine schedules.)"""
    return training(model.parameters(), lr, approximation, config.adam_eps)


def generator(context: BuildContext) -> torch.Generator:
    """The agent's own random numbers (exploration, target smoothing), seeded, on the networks' device."""
    return torch.Generator(device=context.device).manual_seed(context.seed)


def random_actions(bounds: ActionBounds, n: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` actions drawn uniformly from the Box."""
    uniform = torch.rand((n, bounds.dim), generator=generator, device=bounds.low.device)
    return bounds.scale(uniform * 2 - 1).view(n, *bounds.shape)


def gaussian(like: torch.Tensor, std: float, generator: torch.Generator) -> torch.Tensor:
    """Noise of standard deviation ``std`` shaped like ``like``."""
    return std * torch.randn(like.shape, generator=generator, device=like.device, dtype=like.dtype)
