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
"""

from __future__ import annotations

import torch

from rlconf.agents._agent import BuildContext, PolicyGraph, TestAgent
from rlconf.agents._off_policy import training_settings
from rlconf.agents._recurrent import CarriedState
from rlconf.agents.dqn import DQN, DQNTestAgent
from rlconf.agents.specs.r2d1 import R2D1Config
from rlconf.approximation import QNetwork
from rlconf.core import StateArray
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


class R2D1(DQN):
    Config = R2D1Config

    def __init__(self, q: QNetwork, policy, replay, clock: Clock, config: R2D1Config, n_envs: int,
                 device: torch.device | str = "cpu"):
        super().__init__(q, policy, replay, clock, config, n_envs)
        self.carried = CarriedState(q.model.state_size, device)
        self._acted_from: torch.Tensor | None = None  # the recurrent state of the last act, for replay

    @classmethod
    def from_config(cls, config: R2D1Config, context: BuildContext) -> R2D1:
        n_actions = context.n_actions("r2d1")
        clock = Clock()
        model = model_settings(context.approximation).recurrent_q(context.observation_space, n_actions)
        model = model.to(context.device)
        q = QNetwork(model, **training_settings(model, config, context, clock))
        policy = cls.epsilon_greedy(q, config, context, clock, n_actions)
        replay = sequence_replay(
            config.replay_buffer_size, context.n_envs, context.observation_space, context.observation_dtype,
            context.action_space, device=context.device, seed=context.seed, state_size=model.state_size,
            sequence_length=config.sequence_length, burn_in=config.burn_in, period=config.period,
            n_steps=config.n_steps, prioritized=config.replay == "prioritized", alpha=config.alpha,
            beta=cls.beta(config, context, clock), eta=config.eta, epsilon=config.priority_epsilon)
        return cls(q, policy, replay, clock, config, context.n_envs, context.device)

    def state_dict(self) -> dict:
        return super().state_dict() | {"carried": self.carried.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.carried.load_state_dict(state["carried"])

    # -- acting --------------------------------------------------------------------------------------
    def _explore(self, states: StateArray) -> torch.Tensor:
        """Epsilon-greedy; the network runs every step, exploring or not, as its state must follow the episode."""
        self._acted_from = self.carried.current(states)
        values, after = self.q.no_grad(states.as_input().unsqueeze(0), self._acted_from)
        self.carried.advance(after, states)
        return self.policy.choose(states, lambda: values[0])

    def _store(self, states: StateArray, actions: torch.Tensor) -> None:
        self.replay.store(states, actions, self._acted_from)

    # -- learning ------------------------------------------------------------------------------------
    def _train(self) -> None:
        """A burst of ``gradient_steps`` updates, each on sequences drawn after the previous update."""
        self._refresh_target()
        for _ in range(self.config.gradient_steps):
            self._update(self.replay.sample(self.config.batch_size))

    def _update(self, batch: Sequences) -> None:  # type: ignore[override]
        """One step on the mean loss of the trained steps that are transitions (importance-weighted under
        prioritized replay); the sequences' new priorities follow their TD errors."""
        burn_in, steps = self.config.burn_in, self.config.sequence_length
        values = self._online_values(batch)  # [steps + n, B, A], from the end of burn-in
        targets = self.td_targets(batch, values.detach())
        taken = values[:steps].gather(2, batch.action[burn_in:burn_in + steps].unsqueeze(2)).squeeze(2)
        valid = batch.valid[burn_in:burn_in + steps].float()
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
            _, state = self.q.no_grad(batch.observation[:burn_in], state, batch.resets[:burn_in])
        return self.q(batch.observation[burn_in:], state, batch.resets[burn_in:])[0]

    def td_targets(self, batch: Sequences, online: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        """``[sequence_length, B]`` n-step targets, double Q (the online network's choice among the legal actions,
        the target's value, unless ``double_q`` is off) and value rescaling (``value_rescaling``)."""
        config = self.config
        burn_in, steps = config.burn_in, config.sequence_length
        target = self.q.target(batch.observation, batch.state, batch.resets)[0][burn_in:]
        returns, discount, last = n_step_returns(batch.reward[burn_in:], batch.done[burn_in:], steps,
                                                 config.n_steps, config.discount_factor)
        at_last = last.unsqueeze(2).expand(-1, -1, target.shape[2])
        bootstrap = target.gather(0, at_last)
        legal = None if batch.action_mask is None else batch.action_mask[burn_in:].gather(0, at_last)
        chosen = legal_argmax((online if config.double_q else target).gather(0, at_last), legal).unsqueeze(2)
        next_values = bootstrap.gather(2, chosen).squeeze(2)
        next_mask = batch.mask[burn_in:].gather(0, last)
        if not config.value_rescaling:
            return returns + discount * next_mask * next_values
        eps = config.rescale_epsilon
        return rescale(returns + discount * next_mask * unrescale(next_values, eps), eps)

    def test_agent(self) -> TestAgent:
        return R2D1TestAgent(self.q, self.policy.n_actions, self.config.eval_epsilon, self.carried.device)


class R2D1TestAgent(DQNTestAgent):
    """Greedy (with ``eval_epsilon``), carrying a recurrent state of its own for each test environment."""

    def __init__(self, q: QNetwork, n_actions: int, epsilon: float, device: torch.device):
        super().__init__(q, n_actions, epsilon)
        self.carried = CarriedState(q.model.state_size, device)

    def policy_graph(self) -> PolicyGraph:
        """The greedy (legal) action and the state after the step, from the state the caller carries."""
        model = self.q.model

        def act(observations: torch.Tensor, state: torch.Tensor, mask: torch.Tensor | None = None):
            values, after = model.step(observations, state)
            return legal_argmax(values, mask), after

        return PolicyGraph(act, {"q": model}, core=model.core)

    def _values(self, states: StateArray) -> torch.Tensor:
        values, after = self.q.eval(states.as_input().unsqueeze(0), self.carried.current(states))
        self.carried.advance(after, states)
        return values[0]
