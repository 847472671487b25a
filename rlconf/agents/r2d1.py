"""R2D1: R2D2 (Kapturowski et al. 2019, "Recurrent Experience Replay in Distributed Reinforcement Learning") on
one machine, as rlpyt's R2D1.

A recurrent Q-network (encoder, LSTM, dueling head: ``approximation.recurrent``) acts epsilon-greedily, carrying
its recurrent state per environment from step to step (zeroed where an episode begins). Every step goes into a
sequence replay, with the recurrent state the agent acted from at each sequence's start. An update samples
sequences (prioritized by R2D2's max/mean mixture of their TD errors), unrolls the online and the target network
from the stored states over the first ``burn_in`` steps without gradients (the stored state is stale: burn-in
refreshes it), then trains on the next ``sequence_length`` steps towards double-Q n-step targets under value
rescaling:

    y_t = h(sum_{k<n} gamma^k r_{t+k+1} + gamma^n h^-1(Q_target(s_{t+n}, argmax_a Q(s_{t+n}, a))))

with h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x, which shrinks large returns so one network fits every game's
scale without clipping rewards. The target network is refreshed every ``target_update_frequency`` steps.

Departures from R2D2, because this is one learner: exploration follows one epsilon schedule (as DQN) unless
``epsilon_per_copy`` gives each environment copy Ape-X's fixed epsilon, and updates come every
``update_frequency`` steps of the acting loop instead of from a learner running beside 256 actors.

Two options of R2D2 and rlpyt's R2D1. ``prev_action_reward``: the LSTM also reads the previous action (one-hot)
and the previous reward (the reward the state arrived with), zeros at an episode's first step, in acting, in
testing and over replayed sequences (rlconf.memory.sequence builds them from the stored actions and rewards,
zeroed where an episode starts inside a sequence; rlpyt's replay does not zero them there). ``input_priorities``:
a new sequence enters the replay at R2D2's priority of its TD errors computed from the Q-values the acting
network computed along it (kept per step, as rlpyt keeps them in agent_info), not at the largest priority so far
(``input_priorities`` below). Departures from rlpyt's ``compute_input_priorities``: the TD errors are those of
the sequence's trained steps (after burn-in) with the learner's n-step targets (gamma^n, bootstrapping from the
state n steps on: rlpyt bootstraps from n - 1 steps on, undiscounted), the max over the legal actions standing for
double Q (the acting values are all there is: no target network).
"""

from __future__ import annotations

import functools

import torch

from rlconf.agents._agent import BuildContext, PolicyGraph, TestAgent
from rlconf.agents._off_policy import training_settings
from rlconf.agents._recurrent import CarriedState
from rlconf.agents.dqn import DQN, DQNTestAgent
from rlconf.agents.specs.r2d1 import R2D1Config
from rlconf.approximation import QNetwork
from rlconf.core import ALL_COPIES, StateArray, with_rows
from rlconf.memory.sequence import Sequences, n_step_returns, sequence_priorities, sequence_replay
from rlconf.nn import model_settings
from rlconf.optim import Clock
from rlconf.policies import legal_argmax


def rescale(x: torch.Tensor, eps: float) -> torch.Tensor:
    """h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x (Pohlen et al. 2018, R2D2's value rescaling)."""
    return torch.sign(x) * (torch.sqrt(x.abs() + 1) - 1) + eps * x


def unrescale(x: torch.Tensor, eps: float) -> torch.Tensor:
    """h^-1, exactly: sign(x)(((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1)."""
    root = (torch.sqrt(1 + 4 * eps * (x.abs() + 1 + eps)) - 1) / (2 * eps)
    return torch.sign(x) * (root ** 2 - 1)


def n_step_targets(config: R2D1Config, batch: Sequences, choosing: torch.Tensor,
                   valuing: torch.Tensor) -> torch.Tensor:
    """``[sequence_length, B]`` n-step targets of the trained steps: the discounted rewards, bootstrapped (where
    the mask allows) from ``valuing``'s value of the legal action ``choosing`` prefers at the state the n steps
    reach (both ``[sequence_length + n, B, A]``, from the end of burn-in), under value rescaling
    (``value_rescaling``)."""
    burn_in, steps = config.burn_in, config.sequence_length
    returns, discount, last = n_step_returns(batch.reward[burn_in:], batch.done[burn_in:], steps,
                                             config.n_steps, config.discount_factor)
    at_last = last.unsqueeze(2).expand(-1, -1, valuing.shape[2])
    bootstrap = valuing.gather(0, at_last)
    legal = None if batch.action_mask is None else batch.action_mask[burn_in:].gather(0, at_last)
    chosen = legal_argmax(choosing.gather(0, at_last), legal).unsqueeze(2)
    next_values = bootstrap.gather(2, chosen).squeeze(2)
    next_mask = batch.mask[burn_in:].gather(0, last)
    if not config.value_rescaling:
        return returns + discount * next_mask * next_values
    eps = config.rescale_epsilon
    return rescale(returns + discount * next_mask * unrescale(next_values, eps), eps)


def trained(config: R2D1Config, batch: Sequences, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The values ``[steps + n, B, A]`` (from the end of burn-in) of the actions taken on the trained steps, and
    which of those steps are transitions, each ``[sequence_length, B]``."""
    burn_in, steps = config.burn_in, config.sequence_length
    taken = values[:steps].gather(2, batch.action[burn_in:burn_in + steps].unsqueeze(2)).squeeze(2)
    return taken, batch.valid[burn_in:burn_in + steps].float()


def input_priorities(batch: Sequences, config: R2D1Config) -> torch.Tensor:
    """The priority ``[B]`` a new sequence enters the replay with (``input_priorities``): R2D2's mixture of the
    TD errors of its trained steps, as the learner's (``sequence_priorities``), computed from the Q-values acting
    computed along it (``batch.acted_values``), which both value the steps and, by their legal max, bootstrap."""
    values = batch.acted_values[config.burn_in:]
    taken, valid = trained(config, batch, values)
    return sequence_priorities(n_step_targets(config, batch, values, values) - taken, valid, config.eta)


def unrolled(batch: Sequences, part: slice, state: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
    """The Q-network's arguments for the steps ``part`` of ``batch`` from ``state``: the observations, the state,
    the resets, and the previous actions and rewards where the sequences carry them (``prev_action_reward``)."""
    inputs = (batch.observation[part], state, batch.resets[part])
    if batch.previous_action is None:
        return inputs
    return (*inputs, batch.previous_action[part], batch.previous_reward[part])


class PreviousStep:
    """The previous action and reward of each environment copy, the extra inputs of ``prev_action_reward``: the
    action chosen at the copy's previous step and the reward its state arrived with, -1 (none) and 0 where an
    episode begins. Not saved in checkpoints: a resumed run restarts its environments, so every copy begins an
    episode (CarriedState's ``starts``)."""

    def __init__(self, n_envs: int | None = None):
        self.n_envs = n_envs  # every copy's row, where groups of copies act in turn
        self.action: torch.Tensor | None = None  # [n_envs] int64: the last action chosen for each copy

    def inputs(self, states: StateArray, starts: torch.Tensor,
               copies: slice = ALL_COPIES) -> tuple[torch.Tensor, torch.Tensor]:
        """``(previous action, previous reward)`` ``[len(states)]`` for ``states`` (those of ``copies``), where
        ``starts`` says which begin an episode."""
        reward = torch.as_tensor(states["reward"], device=starts.device).reshape(len(states)).float()
        if self.action is None or (copies == ALL_COPIES and len(self.action) != len(states)):
            action = torch.full((len(states),), -1, dtype=torch.int64, device=starts.device)
        else:
            action = self.action[copies]
        return action.to(starts.device).masked_fill(starts, -1), reward.masked_fill(starts, 0.0)

    def chose(self, actions: torch.Tensor, copies: slice = ALL_COPIES) -> None:
        """Keep the ``actions`` chosen for ``copies``: their previous actions at their next step."""
        self.action = with_rows(self.action, copies, actions.reshape(-1).long().clone(), self.n_envs, fill=-1)


def step_inputs(states: StateArray, state: torch.Tensor,
                previous: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor | None, ...]:
    """The Q-network's arguments for one step of ``states`` from ``state``, with the ``previous`` action and
    reward where it reads them (no resets: the state given is already zero where an episode begins)."""
    observation = states.as_input().unsqueeze(0)
    if not previous:
        return observation, state
    return (observation, state, None, *(x.unsqueeze(0) for x in previous))


class R2D1(DQN):
    Config = R2D1Config

    def __init__(self, q: QNetwork, policy, replay, clock: Clock, config: R2D1Config, n_envs: int,
                 device: torch.device | str = "cpu"):
        super().__init__(q, policy, replay, clock, config, n_envs)
        self.carried = CarriedState(q.model.state_size, device, n_envs)
        self.previous = PreviousStep(n_envs) if config.prev_action_reward else None
        # What each copy acted from on the last step, for replay, by the name replay.store gives it: the recurrent
        # state, and with the options the previous action and the Q-values acting computed.
        self._acted: dict[str, torch.Tensor] = {}

    @classmethod
    def from_config(cls, config: R2D1Config, context: BuildContext) -> R2D1:
        n_actions = context.n_actions("r2d1")
        clock = Clock()
        model = model_settings(context.approximation).recurrent_q(
            context.observation_space, n_actions, previous_action_reward=config.prev_action_reward)
        model = model.to(context.device)
        q = QNetwork(model, **training_settings(model, config, context, clock))
        policy = cls.epsilon_greedy(q, config, context, clock, n_actions)
        replay = sequence_replay(
            config.replay_buffer_size, context.n_envs, context.observation_space, context.observation_dtype,
            context.action_space, device=context.device, seed=context.seed, state_size=model.state_size,
            sequence_length=config.sequence_length, burn_in=config.burn_in, period=config.period,
            n_steps=config.n_steps, prioritized=config.replay == "prioritized", alpha=config.alpha,
            beta=cls.beta(config, context, clock), eta=config.eta, epsilon=config.priority_epsilon,
            previous_action=config.prev_action_reward, acted_values=n_actions if config.input_priorities else 0,
            input_priority=functools.partial(input_priorities, config=config) if config.input_priorities else None)
        return cls(q, policy, replay, clock, config, context.n_envs, context.device)

    def state_dict(self) -> dict:
        return super().state_dict() | {"carried": self.carried.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.carried.load_state_dict(state["carried"])

    # -- acting --------------------------------------------------------------------------------------
    def _explore(self, states: StateArray, copies: slice) -> torch.Tensor:
        """Epsilon-greedy; the network runs every step, exploring or not, as its state must follow the episode."""
        previous = () if self.previous is None else self.previous.inputs(
            states, self.carried.starts(states, copies), copies)
        acted_from = self.carried.current(states, copies)
        values, after = self.q.no_grad(*step_inputs(states, acted_from, previous))
        self.carried.advance(after, states, copies)
        self._keep_acted(copies, recurrent_state=acted_from)
        if previous:
            self._keep_acted(copies, previous_action=previous[0])
        if self.config.input_priorities:
            self._keep_acted(copies, acted_values=values[0])
        actions = self.policy.choose(states, lambda: values[0], copies)
        if self.previous is not None:
            self.previous.chose(actions, copies)
        return actions

    def _keep_acted(self, copies: slice, **acted: torch.Tensor) -> None:
        """What each copy acted from on this step, for replay (which stores the whole step once every group of
        copies has acted on it, with the alternating sampler)."""
        for name, value in acted.items():
            self._acted[name] = with_rows(self._acted.get(name), copies, value, self.n_envs)

    def _store(self, states: StateArray, actions: torch.Tensor) -> None:
        self.replay.store(states, actions, **self._acted)

    # -- learning ------------------------------------------------------------------------------------
    def _train(self) -> None:
        """A burst of ``gradient_steps`` updates, each on sequences drawn after the previous update."""
        self._refresh_target()
        for _ in range(self.config.gradient_steps):
            self._update(self.replay.sample(self.config.batch_size))

    def _update(self, batch: Sequences) -> None:  # type: ignore[override]
        """One step on the mean loss of the trained steps that are transitions (importance-weighted under
        prioritized replay); the sequences' new priorities follow their TD errors."""
        values = self._online_values(batch)  # [steps + n, B, A], from the end of burn-in
        targets = self.td_targets(batch, values.detach())
        taken, valid = trained(self.config, batch, values)
        losses = self.loss(taken, targets) * valid
        if batch.weights is not None:
            losses = losses * batch.weights
        self.q.reinforce(losses.sum() / valid.sum().clamp(min=1))
        self.replay.update_priorities(batch.indices, sequence_priorities(targets - taken, valid, self.config.eta))

    def _online_values(self, batch: Sequences) -> torch.Tensor:
        """Q over the steps after burn-in, with gradients, from the state the burn-in steps led to."""
        burn_in = self.config.burn_in
        state = batch.state
        if burn_in:
            _, state = self.q.no_grad(*unrolled(batch, slice(None, burn_in), state))
        return self.q(*unrolled(batch, slice(burn_in, None), state))[0]

    def td_targets(self, batch: Sequences, online: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        """``[sequence_length, B]`` n-step targets, double Q (the online network's choice among the legal actions,
        the target's value, unless ``double_q`` is off) and value rescaling (``value_rescaling``)."""
        target = self.q.target(*unrolled(batch, slice(None), batch.state))[0][self.config.burn_in:]
        return n_step_targets(self.config, batch, online if self.config.double_q else target, target)

    def test_agent(self) -> TestAgent:
        return R2D1TestAgent(self.q, self.policy.n_actions, self.config.eval_epsilon, self.carried.device,
                             self.config.prev_action_reward)


class R2D1TestAgent(DQNTestAgent):
    """Greedy (with ``eval_epsilon``), carrying a recurrent state of its own for each test environment (and with
    ``prev_action_reward`` each one's previous action)."""

    def __init__(self, q: QNetwork, n_actions: int, epsilon: float, device: torch.device,
                 prev_action_reward: bool = False):
        super().__init__(q, n_actions, epsilon)
        self.carried = CarriedState(q.model.state_size, device)
        self.previous = PreviousStep() if prev_action_reward else None

    def act(self, states: StateArray) -> torch.Tensor:
        actions = super().act(states)
        if self.previous is not None:
            self.previous.chose(actions)
        return actions

    def policy_graph(self) -> PolicyGraph:
        """The greedy (legal) action and the state after the step, from the state the caller carries (and the
        previous action and reward it carries, where the network reads them)."""
        model = self.q.model

        def act(observations: torch.Tensor, state: torch.Tensor, mask: torch.Tensor | None = None,
                *previous: torch.Tensor):
            values, after = model.step(observations, state, *previous)
            return legal_argmax(values, mask), after

        return PolicyGraph(act, {"q": model}, core=model.core, previous_actions=model.previous_actions)

    def _values(self, states: StateArray) -> torch.Tensor:
        previous = () if self.previous is None else self.previous.inputs(states, self.carried.starts(states))
        values, after = self.q.eval(*step_inputs(states, self.carried.current(states), previous))
        self.carried.advance(after, states)
        return values[0]
