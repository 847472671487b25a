"""Tabular agents for small discrete worlds (gymnasium's toy text, ``env=tabular/<name>``): a table of action
values ``q[s, a]``, one row per state, instead of a network.

Q-learning (``agent=q_learning``) moves ``q[s, a]`` towards ``r + gamma * max_b q[s', b]`` after every step.
It learns the values of the greedy policy whatever it explores with (off-policy): on CliffWalking it learns
the shortest path along the cliff's edge, although its own random steps keep falling off it.

SARSA(lambda) (``agent=sarsa_lambda``) moves towards ``r + gamma * q[s', a']`` for the action ``a'`` it is
about to take (on-policy: it learns the values of its epsilon-greedy behaviour, so it keeps away from the
cliff), and spreads each TD error back over the pairs visited earlier in the episode through eligibility
traces. A visited pair's trace is set to 1 (replacing traces) or raised by 1 (accumulating traces), and every
trace decays by ``gamma * lambda`` a step: lambda 0 is one-step SARSA, lambda 1 close to Monte Carlo.

Dyna-Q (``agent=dyna_q``) is Q-learning that also learns a model of the world: how often each outcome
``(s', r, terminal)`` followed each ``(s, a)``. After every real step it makes ``planning_steps`` imagined
ones: a pair seen before, drawn uniformly, and one of its outcomes, drawn in proportion to its count (right
for stochastic worlds such as slippery FrozenLake, where a move goes astray), each learned from as Q-learning
would. More updates per environment step: fewer environment steps to learn a task.

All three act epsilon-greedily (epsilon decaying linearly) and break ties among equal values at random: a
zero-initialised table is all ties at first, and always taking the first action would walk into the same
wall forever. Per step they work in Python and numpy scalars: the tables are tiny, and torch's overhead per
call would cost more than the arithmetic.

The environments end an episode with ``done``; the next step of that copy is gymnasium's reset step (its
action ignored, its reward 0), so no transition leads out of a done state. A terminated step (``mask`` 0) has
no future value; a truncated one (a time limit, ``mask`` 1) bootstraps as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

from rlconf.agents._agent import (
    Buildable,
    BuildContext,
    Checkpointed,
    ParallelAgent,
    TestAgent,
    arrays_state,
    load_arrays,
)
from rlconf.agents.specs.tabular import DynaQConfig, QLearningConfig, SarsaLambdaConfig, TabularConfig
from rlconf.core import StateArray
from rlconf.errors import ConfigError
from rlconf.optim import Clock, schedule


def table_size(space: gym.Space, agent: str, what: str) -> int:
    """The number of rows (observations) or columns (actions) of a table for ``space``; else one clear line."""
    if not isinstance(space, gym.spaces.Discrete) or int(space.start) != 0:
        raise ConfigError(f"agent={agent}: a table needs Discrete {what} (numbered from 0), not {space}; allowed: "
                          "env=tabular/<name>, e.g. env=tabular/taxi (rlconf list env)")
    return int(space.n)


class TabularAgent(Checkpointed, ParallelAgent, Buildable):
    """The table, epsilon-greedy acting and the bookkeeping of each environment's last step; subclasses say
    what ``_step`` learns from a transition."""

    name: ClassVar[str]  # as configs and error messages call the agent

    def __init__(self, config: TabularConfig, n_states: int, n_actions: int, n_envs: int, *,
                 rng: np.random.Generator | None = None, total_steps: int = 0):
        self.config = config
        self.n_actions = n_actions
        self.q = np.full((n_states, n_actions), config.initial_value, dtype=np.float64)
        self.clock = Clock()
        self.epsilon = schedule(config.epsilon, config.epsilon_final, config.epsilon_decay_steps, self.clock,
                                "epsilon")
        self.alpha = schedule(config.alpha, config.alpha_final, max(total_steps, 1), self.clock, "alpha")
        self.rng = rng or np.random.default_rng()
        # Each environment's last (state, action), to learn from when its outcome arrives; None where there is
        # nothing to learn from: before the first step, and after a done state (the next step is a reset).
        self._previous: list[tuple[int, int] | None] = [None] * n_envs

    @classmethod
    def from_config(cls, config: TabularConfig, context: BuildContext) -> TabularAgent:
        n_states = table_size(context.observation_space, cls.name, "observations")
        n_actions = table_size(context.action_space, cls.name, "actions")
        return cls(config, n_states, n_actions, context.n_envs, rng=context.generator("tabular"),
                   total_steps=context.total_steps)

    def act(self, states: StateArray) -> torch.Tensor:
        self.clock.tick(len(states))
        # One conversion per key per call; everything after works on Python scalars.
        observations = states["observation"].tolist()
        rewards = states["reward"].tolist()
        dones = states["done"].tolist()
        masks = states["mask"].tolist()
        alpha, epsilon = float(self.alpha), float(self.epsilon)
        actions = [self._step(env, observations[env], rewards[env], dones[env], masks[env] == 0.0, alpha, epsilon)
                   for env in range(len(observations))]
        return torch.tensor(actions, dtype=torch.int64)

    def _step(self, env: int, state: int, reward: float, done: bool, terminal: bool, alpha: float,
              epsilon: float) -> int:  # pragma: no cover - interface
        """Learn from environment ``env``'s transition into ``state`` (if it had a previous step) and return
        its next action."""
        raise NotImplementedError

    def _choose(self, state: int, epsilon: float) -> int:
        if self.rng.random() < epsilon:
            # random() rather than integers(): a third of the cost, and this runs on every step.
            return int(self.rng.random() * self.n_actions)
        return self._greedy(state)

    def _greedy(self, state: int) -> int:
        return best_action(self.q[state].tolist(), lambda n: int(self.rng.random() * n))

    def _q_learning_update(self, state: int, action: int, reward: float, next_state: int, terminal: bool,
                           alpha: float) -> None:
        """``q[s, a] += alpha * (r + gamma * max_b q[s', b] - q[s, a])``, no future after a terminal state."""
        target = reward if terminal else reward + self.config.discount_factor * max(self.q[next_state].tolist())
        self.q[state, action] += alpha * (target - self.q[state, action])

    def generators(self) -> dict[str, Any]:
        return {"rng": self.rng}

    def state_dict(self) -> dict:
        return super().state_dict() | arrays_state(self, ("q",))

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        load_arrays(self, ("q",), state)
        # The loop resets its environments after a load: the steps in progress ended with the checkpoint.
        self._previous = [None] * len(self._previous)

    def test_agent(self) -> TestAgent:
        return TabularTestAgent(self.q, self.config.eval_epsilon)


class QLearning(TabularAgent):
    """Q-learning: learn from the step just taken, then choose the next action from the updated table."""

    Config = QLearningConfig
    name = "q_learning"

    def _step(self, env: int, state: int, reward: float, done: bool, terminal: bool, alpha: float,
              epsilon: float) -> int:
        previous = self._previous[env]
        if previous is not None:
            self._learn(*previous, reward, state, terminal, alpha)
        action = self._choose(state, epsilon)
        self._previous[env] = None if done else (state, action)
        return action

    def _learn(self, state: int, action: int, reward: float, next_state: int, terminal: bool, alpha: float) -> None:
        self._q_learning_update(state, action, reward, next_state, terminal, alpha)


class SarsaLambda(TabularAgent):
    """SARSA(lambda): choose the next action first (its value is the target), then update every pair in
    proportion to its eligibility trace. One trace table per environment: each runs its own episode."""

    Config = SarsaLambdaConfig
    name = "sarsa_lambda"

    def __init__(self, config: SarsaLambdaConfig, n_states: int, n_actions: int, n_envs: int, **kwargs):
        super().__init__(config, n_states, n_actions, n_envs, **kwargs)
        self.traces = np.zeros((n_envs, n_states, n_actions), dtype=np.float64)
        self._trace_decay = config.discount_factor * config.lam
        self._accumulate = config.traces == "accumulating"

    def state_dict(self) -> dict:
        return super().state_dict() | arrays_state(self, ("traces",))

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        load_arrays(self, ("traces",), state)

    def _step(self, env: int, state: int, reward: float, done: bool, terminal: bool, alpha: float,
              epsilon: float) -> int:
        action = self._choose(state, epsilon)
        previous = self._previous[env]
        traces = self.traces[env]
        if previous is None:
            traces.fill(0.0)  # a new episode: no earlier pair deserves credit for what comes
        else:
            last_state, last_action = previous
            future = 0.0 if terminal else self.config.discount_factor * self.q[state, action]
            delta = reward + future - self.q[last_state, last_action]
            if self._accumulate:
                traces[last_state, last_action] += 1.0
            else:
                traces[last_state, last_action] = 1.0
            self.q += (alpha * delta) * traces
            traces *= self._trace_decay
        self._previous[env] = None if done else (state, action)
        return action


class OutcomeModel:
    """A count of every outcome ``(next_state, reward, terminal)`` seen after each ``(state, action)``.

    Sampling draws a pair uniformly among those seen, then one of its outcomes in proportion to its count:
    the maximum-likelihood model of a stochastic world. (Keeping only the last outcome, as Dyna-Q for
    deterministic worlds does, would plan with whichever way the ice last slipped.)
    """

    def __init__(self):
        self.pairs: list[tuple[int, int]] = []  # in the order first seen, for uniform draws by index
        self.counts: dict[tuple[int, int], dict[tuple[int, float, bool], int]] = {}
        self.totals: dict[tuple[int, int], int] = {}

    def record(self, state: int, action: int, next_state: int, reward: float, terminal: bool) -> None:
        pair = (state, action)
        outcomes = self.counts.get(pair)
        if outcomes is None:
            self.pairs.append(pair)
            outcomes = self.counts[pair] = {}
            self.totals[pair] = 0
        outcome = (next_state, reward, terminal)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        self.totals[pair] += 1

    def sample(self, rng: np.random.Generator, n: int) -> Iterator[tuple[int, int, float, int, bool]]:
        """``n`` imagined transitions ``(state, action, reward, next_state, terminal)``; the model must hold one.
        Their random numbers are drawn in one call: per-call overhead would dominate the planning loop."""
        uniforms = rng.random(2 * n).tolist()
        pairs = self.pairs
        for k in range(n):
            pair = pairs[int(uniforms[2 * k] * len(pairs))]
            next_state, reward, terminal = _draw(self.counts[pair], uniforms[2 * k + 1] * self.totals[pair])
            yield pair[0], pair[1], reward, next_state, terminal

    def __len__(self) -> int:
        return len(self.pairs)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Tensors only (a checkpoint loads with ``weights_only``): one row per (pair, outcome), in the order
        they were seen, so that a loaded model samples exactly as the saved one."""
        rows = [(index, next_state, reward, terminal, count) for index, pair in enumerate(self.pairs)
                for (next_state, reward, terminal), count in self.counts[pair].items()]
        index, next_state, reward, terminal, count = zip(*rows, strict=True) if rows else ((),) * 5
        return {"pairs": torch.tensor(self.pairs, dtype=torch.int64).reshape(-1, 2),
                "pair": torch.tensor(index, dtype=torch.int64),
                "next_state": torch.tensor(next_state, dtype=torch.int64),
                "reward": torch.tensor(reward, dtype=torch.float64),
                "terminal": torch.tensor(terminal, dtype=torch.bool),
                "count": torch.tensor(count, dtype=torch.int64)}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.pairs = [tuple(pair) for pair in state["pairs"].tolist()]
        self.counts = {pair: {} for pair in self.pairs}
        self.totals = dict.fromkeys(self.pairs, 0)
        columns = (state[key].tolist() for key in ("pair", "next_state", "reward", "terminal", "count"))
        for index, next_state, reward, terminal, count in zip(*columns, strict=True):
            pair = self.pairs[index]
            self.counts[pair][(next_state, reward, terminal)] = count
            self.totals[pair] += count


def _draw(counts: dict[tuple[int, float, bool], int], point: float) -> tuple[int, float, bool]:
    """The outcome whose share of ``[0, total)`` holds ``point``: few outcomes, so a linear scan beats bisection."""
    for outcome, count in counts.items():
        point -= count
        if point < 0:
            return outcome
    return outcome  # rounding can leave ``point`` at 0 after the last count: the last outcome


class DynaQ(QLearning):
    """Dyna-Q: Q-learning on each real transition, which also goes into the model; then ``planning_steps``
    Q-learning updates on transitions sampled from the model."""

    Config = DynaQConfig
    name = "dyna_q"

    def __init__(self, config: DynaQConfig, n_states: int, n_actions: int, n_envs: int, **kwargs):
        super().__init__(config, n_states, n_actions, n_envs, **kwargs)
        self.model = OutcomeModel()
        self.planning_steps = config.planning_steps

    def state_dict(self) -> dict:
        return super().state_dict() | {"model": self.model.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.model.load_state_dict(state["model"])

    def _learn(self, state: int, action: int, reward: float, next_state: int, terminal: bool, alpha: float) -> None:
        self._q_learning_update(state, action, reward, next_state, terminal, alpha)
        self.model.record(state, action, next_state, reward, terminal)
        for transition in self.model.sample(self.rng, self.planning_steps):
            self._q_learning_update(*transition, alpha)


class TabularTestAgent(TestAgent):
    """Greedy on a snapshot of the table. Its random numbers (ties, ``eval_epsilon``) come from numpy's global
    generator, which ``evaluate`` seeds: an evaluation repeats exactly."""

    def __init__(self, q: np.ndarray, epsilon: float = 0.0):
        self.q = q.copy()
        self.epsilon = epsilon

    def act(self, states: StateArray) -> torch.Tensor:
        return torch.tensor([self._act(state) for state in states["observation"].tolist()], dtype=torch.int64)

    def _act(self, state: int) -> int:
        n_actions = self.q.shape[1]
        if self.epsilon > 0 and np.random.random() < self.epsilon:
            return int(np.random.randint(n_actions))
        return best_action(self.q[state].tolist(), np.random.randint)


def best_action(values: list[float], pick: Callable[[int], int]) -> int:
    """The action of the largest value; among equal ones, the ``pick(count)``-th (a draw from the caller's
    generator, made only when there is a tie)."""
    best = max(values)
    if values.count(best) == 1:
        return values.index(best)
    ties = [action for action, value in enumerate(values) if value == best]
    return ties[pick(len(ties))]
