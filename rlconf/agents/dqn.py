"""DQN (Mnih et al. 2015): Q-learning with experience replay and a target network; and Double DQN.

Every step the agent picks an epsilon-greedy action and stores the state in replay. Every
``update_frequency`` environment steps it takes ``gradient_steps`` minibatch steps on the squared (or Huber)
TD error against ``r + gamma * max_a' Q_target(s', a')``; the target network is refreshed every
``target_update_frequency`` environment steps. With ``double_q`` (van Hasselt et al. 2016) the online network
picks the next action and the target network values it, ``r + gamma * Q_target(s', argmax_a' Q(s', a'))``,
which removes most of Q-learning's overestimation. Replay may be prioritized and n-step: the loss is then
weighted by the importance weights and the sampled transitions' priorities follow their TD errors.
Where states say which actions are legal (``action_mask``: board games), acting and the target's max (or the
online network's choice) count only the legal ones. With ``epsilon_per_copy`` each environment copy explores with
its own fixed epsilon, Ape-X's log-spaced scale (``rlconf.policies.exploration``), as C51, Rainbow and R2D1 do.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from rlconf.agents._agent import BuildContext, PolicyGraph, TestAgent
from rlconf.agents._off_policy import OffPolicy, draws, off_policy_replay, part_of, parts, training_settings
from rlconf.agents.specs.dqn import DDQNConfig, DQNConfig
from rlconf.approximation import FixedTarget, QNetwork
from rlconf.core import StateArray
from rlconf.memory import ReplayBuffer, Transitions
from rlconf.nn import model_settings
from rlconf.optim import Clock, schedule
from rlconf.policies import ParallelGreedyPolicy, global_random_actions, legal_actions, legal_argmax, legal_max
from rlconf.policies.exploration import per_copy_epsilons

# Element-wise, so prioritized replay can weight each sample.
LOSS_FUNCTIONS = {"mse": lambda x, y: F.mse_loss(x, y, reduction="none"),
                  "huber": lambda x, y: F.smooth_l1_loss(x, y, reduction="none")}


class DQN(OffPolicy):
    Config = DQNConfig

    @property
    def targets_per_burst(self) -> bool:
        """Targets computed once per burst depend on the target network alone: not so for double Q-learning,
        whose online network's choices change with every update of a burst."""
        return not self.config.double_q

    def __init__(self, q: QNetwork, policy: ParallelGreedyPolicy, replay: ReplayBuffer, clock: Clock,
                 config: DQNConfig, n_envs: int):
        self.q = q
        self.policy = policy
        super().__init__(replay, clock, config, n_envs)
        self.loss = LOSS_FUNCTIONS[config.loss]
        self._sync_every = max(1, config.target_update_frequency // n_envs)
        self._target_stale = False

    def state_dict(self) -> dict:
        return super().state_dict() | {"q": self.q.state_dict(), "target_stale": self._target_stale}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.q.load_state_dict(state["q"])
        self._target_stale = state["target_stale"]

    def generators(self) -> dict[str, Any]:
        return super().generators() | {"policy": self.policy}

    @classmethod
    def from_config(cls, config: DQNConfig, context: BuildContext) -> DQN:
        n_actions = context.n_actions(cls.__name__.lower())
        clock = Clock()
        q = context.share("q", lambda: cls.build_q(config, context, clock, n_actions))
        policy = cls.epsilon_greedy(cls.action_values(q), config, context, clock, n_actions)
        prioritized = config.replay == "prioritized"
        beta = cls.beta(config, context, clock)
        replay = off_policy_replay(config, context, prioritized=prioritized, alpha=config.alpha, beta=beta,
                                   epsilon=config.priority_epsilon)
        return cls(q, policy, replay, clock, config, context.n_envs)

    @staticmethod
    def epsilon_greedy(q, config: DQNConfig, context: BuildContext, clock: Clock,
                       n_actions: int) -> ParallelGreedyPolicy:
        """Epsilon-greedy over ``q``, epsilon decaying linearly on the agent's clock, or with ``epsilon_per_copy``
        Ape-X's fixed epsilon for each environment copy; coins from the run's seed."""
        if config.epsilon_per_copy:
            epsilon = per_copy_epsilons(context.n_envs, config.epsilon_copy_base, config.epsilon_copy_alpha)
        else:
            epsilon = schedule(config.epsilon, config.epsilon_final, config.epsilon_decay_steps, clock, "epsilon")
        return ParallelGreedyPolicy(q, n_actions, epsilon, np.random.default_rng(context.seed))

    @staticmethod
    def beta(config: DQNConfig, context: BuildContext, clock: Clock):
        """Prioritized replay's importance-sampling exponent, annealed to 1 over the run; built (and logged with
        verbose=true) only where replay is prioritized."""
        if config.replay != "prioritized":
            return config.beta
        return schedule(config.beta, 1.0, context.total_steps, clock, "beta")

    @classmethod
    def build_q(cls, config: DQNConfig, context: BuildContext, clock: Clock, n_actions: int) -> QNetwork:
        model = model_settings(context.approximation).q(context.observation_space, n_actions).to(context.device)
        return QNetwork(model, **training_settings(model, config, context, clock))

    @staticmethod
    def action_values(q):
        """What the epsilon-greedy policy maximises (Q itself here; the mean of a distribution in C51)."""
        return q

    def _explore(self, states: StateArray, copies: slice) -> torch.Tensor:
        return self.policy(states, copies)

    def acting_approximations(self) -> dict[str, Any]:
        return {"q": self.q}

    def _learn(self) -> None:
        if self._due(self._sync_every):
            # Weights only change inside _train, so copying them just before the next burst is the same
            # as copying them now, and several refreshes between two bursts cost one copy.
            self._target_stale = True
        super()._learn()

    def _train(self) -> None:
        """A burst of ``gradient_steps`` updates. Prioritized replay draws each minibatch after the previous
        update (it sees the priorities that update left); uniform replay draws the whole burst at once."""
        self._refresh_target()
        size = self.config.batch_size
        for draw in draws(self.replay, self.config.gradient_steps, size, self.config.replay == "prioritized"):
            # A fixed target does not move during a burst, so a draw's targets can all come from one pass.
            targets = self.td_targets(draw) if self._fixed_targets() else None
            for part in parts(draw, size):
                self._update(part_of(draw, part), None if targets is None else targets[part])

    def _refresh_target(self) -> None:
        """The fixed target's copy, when a refresh fell due since the last burst."""
        if self._target_stale and isinstance(self.q.target_network, FixedTarget):
            self.q.target_network.sync()
            self._target_stale = False

    def _fixed_targets(self) -> bool:
        return self.targets_per_burst and isinstance(self.q.target_network, FixedTarget)

    def _update(self, batch: Transitions, targets: torch.Tensor | None = None) -> None:
        """One step on the minibatch's losses (importance-weighted under prioritized replay), which then
        learns the minibatch's new priorities."""
        losses, priorities = self._losses(batch, self.td_targets(batch) if targets is None else targets)
        self.q.reinforce(losses.mean() if batch.weights is None else (batch.weights * losses).mean())
        self.replay.update_priorities(batch.indices, priorities)

    def _losses(self, batch: Transitions, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each transition's loss and its priority: the size of its TD error."""
        values = self.q(batch.observation).gather(1, batch.action.unsqueeze(1)).squeeze(1)
        return self.loss(values, targets), (targets - values).detach().abs()

    def td_targets(self, batch: Transitions) -> torch.Tensor:
        """r + gamma^n * mask' * max_a Q_target(s', a), the max over the legal actions a of s'; with double Q,
        Q_target(s', a*) where a* is the online network's best legal action."""
        next_values = self.q.target(batch.next_observation)
        if not self.config.double_q:
            return self._bootstrap(batch, legal_max(next_values, batch.next_action_mask))
        chosen = legal_argmax(self.q.no_grad(batch.next_observation), batch.next_action_mask).unsqueeze(1)
        return self._bootstrap(batch, next_values.gather(1, chosen).squeeze(1))

    def test_agent(self) -> TestAgent:
        return DQNTestAgent(self.action_values(self.q), self.policy.n_actions, self.config.eval_epsilon)


class DDQN(DQN):
    """Double DQN: DQN with ``double_q`` and prioritized replay on by default (ddqn.yaml)."""

    Config = DDQNConfig


class DQNTestAgent(TestAgent):
    """Greedy with respect to Q (in eval mode: noisy layers at their means), with an optional small evaluation
    epsilon. Its coins are drawn from torch's global generator, which ``evaluate`` seeds: an evaluation with
    a seed is repeatable (``rlconf eval`` reproduces a run's final test)."""

    def __init__(self, q: QNetwork, n_actions: int, epsilon: float = 0.0):
        self.q = q
        self.n_actions = n_actions
        self.epsilon = float(epsilon)

    def act(self, states: StateArray) -> torch.Tensor:
        mask = legal_actions(states)
        actions = legal_argmax(self._values(states), mask)
        if not self.epsilon:
            return actions
        n = len(states)  # drawn on the CPU: the same coins on every device
        explore = torch.rand(n) < self.epsilon
        drawn = global_random_actions(n, self.n_actions, mask)
        return torch.where(explore.to(actions.device), drawn.to(actions.device), actions)

    def _values(self, states: StateArray) -> torch.Tensor:
        """The action values the test agent acts on."""
        return self.q.eval(states.as_input())

    def policy_graph(self) -> PolicyGraph:
        """The greedy (legal) action (``eval_epsilon``'s random actions are left to the caller)."""
        return PolicyGraph(lambda observations, mask=None: legal_argmax(self.q.eval(observations), mask),
                           {"q": self.q.model})
