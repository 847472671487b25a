"""Sequence replay: fixed-length sequences of steps and the recurrent state they began from (R2D2's replay).

The steps live in ReplayBuffer's preallocated time-major rows (frames stored once, frame stacks rebuilt at sample
time); this buffer adds what sequences need. A sequence may start at every ``period``-th row (rlpyt's
``store_rnn_state_interval``), and only there is the recurrent state the agent acted from stored: one state per
``period`` rows and environment. A sampled sequence is ``burn_in + sequence_length`` steps from its start row
plus ``n_steps`` rows after them, the states its last n-step targets bootstrap from. Sequences overlap when
``period`` is shorter than they are (R2D2: 80 steps every 40 rows).

A sequence can be sampled once every row it covers is written and none is overwritten (nor a row its first
frame stack reaches back into). Episodes may end inside one: ``Sequences.resets`` says where the recurrent state
returns to zero (the step after a ``done``), ``Sequences.valid`` which steps are transitions (a step leaving a
``done`` state is the vector environment's reset, no transition).

Prioritized sampling draws sequences in proportion to ``priority ** alpha`` from a sum tree over the start
slots, with importance weights ``(N * P) ** -beta``; a sequence's priority is R2D2's mixture ``eta * max |delta| +
(1 - eta) * mean |delta|`` of its trained steps' TD errors (``sequence_priorities``). A sequence enters at the
largest priority so far, the moment its last row is written, or with ``input_priority`` (R2D1's
``agent.input_priorities``) at the priority that function gives it from its rows, the Q-values the agent acted on
among them (``acted_values``, stored per row); sequences that lose a row to the ring drop to zero.

With ``previous_action`` the sequences carry each step's previous action and reward too (the inputs of R2D1's
``agent.prev_action_reward``): the action of the row before and the row's own reward (received on arriving),
-1 and 0 where an episode begins. A sequence's first step reads the previous action stored with its start (as
the recurrent state is), since the row before may belong to no sequence still held.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch

from rlconf.core import State
from rlconf.memory.prioritized import Priorities, proportional_draw
from rlconf.memory.replay import ReplayBuffer, check_fits


class Sequences(NamedTuple):
    """A batch of B sequences of T = burn_in + sequence_length + n_steps steps, time-major.

    ``state``: the recurrent state each sequence began from ``[B, S]``; ``resets [T, B]``: where the state
    returns to zero before a step (after a ``done``); ``valid [T, B]``: the steps that are transitions (not
    leaving a ``done`` state). ``weights``: importance weights (None for uniform sampling); ``indices``: the
    sequences' (start row, environment) for ``update_priorities``. ``action_mask [T, B, n_actions]``: the legal
    actions of each step (None when the environment has no action masks). ``previous_action``,
    ``previous_reward [T, B]``: each step's previous action (-1: none) and reward (0 where an episode begins),
    ``acted_values [T, B, n_actions]``: the Q-values the agent acted on, where the replay keeps them (else None).
    ``observation`` is None in the sequences gathered for an input priority, which reads none."""

    observation: torch.Tensor | None
    action: torch.Tensor
    reward: torch.Tensor
    mask: torch.Tensor
    done: torch.Tensor
    resets: torch.Tensor
    valid: torch.Tensor
    state: torch.Tensor
    weights: torch.Tensor | None
    indices: tuple[torch.Tensor, torch.Tensor]
    action_mask: torch.Tensor | None = None
    previous_action: torch.Tensor | None = None
    previous_reward: torch.Tensor | None = None
    acted_values: torch.Tensor | None = None


class SequenceReplay(Priorities, ReplayBuffer):
    """Sequences of ``burn_in + sequence_length`` steps starting every ``period`` rows, with the recurrent state
    (``state_size`` numbers) stored at each start; uniform, or ``prioritized`` (``alpha``, ``beta``, ``eta``).
    ``previous_action``: the sequences carry the previous actions and rewards; ``acted_values``: the number of
    actions whose Q-values acting computed, stored per row (0: none); ``input_priority``: the priority of new
    sequences (each ``[B]`` from a batch), instead of the largest so far."""

    _STATE = (*ReplayBuffer._STATE, "acted_values")

    def __init__(self, capacity: int, n_envs: int, observation_shape: tuple[int, ...],
                 observation_dtype: torch.dtype, *, state_size: int, sequence_length: int, burn_in: int = 0,
                 period: int | None = None, n_steps: int = 1, prioritized: bool = False, alpha: float = 0.9,
                 beta=0.6, eta: float = 0.9, epsilon: float = 1e-5, seed: int = 0, frame_stack: int = 1,
                 previous_action: bool = False, acted_values: int = 0,
                 input_priority: Callable[[Sequences], torch.Tensor] | None = None, **options: Any):
        self.burn_in = burn_in
        self.sequence_length = sequence_length
        self.period = period or sequence_length
        self.n_steps = n_steps
        self.span = burn_in + sequence_length + n_steps  # rows a sampled sequence reads
        # Whole periods, and room for a sequence and the frames its first stack reaches back into.
        rows = max(math.ceil(capacity / n_envs), self.span + frame_stack)
        rows = math.ceil(rows / self.period) * self.period
        super().__init__(rows * n_envs, n_envs, observation_shape, observation_dtype, frame_stack=frame_stack,
                         **options)
        assert self.rows == rows
        self.starts = rows // self.period  # start slots per environment
        self.recurrent_state = torch.zeros((self.starts, n_envs, state_size), device=self.device)
        # The previous action at each start (-1 where it begins an episode); the acted Q-values of each row.
        self.previous_action = (torch.full((self.starts, n_envs), -1, dtype=torch.int64, device=self.device)
                                if previous_action else None)
        self.acted_values = (torch.zeros((rows, n_envs, acted_values), device=self.device) if acted_values
                             else None)
        self.input_priority = input_priority
        self.eta = eta
        self._prioritize(alpha, beta, epsilon, seed, self.starts * n_envs if prioritized else None)

    # -- storing -------------------------------------------------------------------------------------
    def store(self, states: State, actions: torch.Tensor, recurrent_state: torch.Tensor,  # type: ignore[override]
              previous_action: torch.Tensor | None = None, acted_values: torch.Tensor | None = None) -> None:
        """Record the states, the actions chosen and the recurrent state they were chosen from (kept only at
        a sequence's start row), with ``previous_action`` (the agent's input, -1 where an episode begins: kept
        at start rows too) and the Q-values acting computed (``[n_envs, n_actions]``) where the replay keeps them."""
        row = self._next_row
        if row % self.period == 0:
            self.recurrent_state[row // self.period] = recurrent_state
            if self.previous_action is not None:
                self.previous_action[row // self.period] = previous_action
        if self.acted_values is not None:
            self.acted_values[row] = acted_values
        super().store(states, actions)

    def _stored(self, row: int) -> None:
        if self.tree is None:
            return
        # The sequences that read ``row`` (now another step) or reach into it with a frame stack lose their
        # priority, except the one that ``row`` completes, which enters at the largest so far.
        affected = range(row - self.span + 1, row + self.frame_stack)
        starts = np.array([s % self.rows for s in affected if s % self.period == 0], dtype=np.int64)
        if not len(starts):
            return
        complete = self._sampleable(torch.as_tensor(starts)).numpy() & (starts == (row - self.span + 1) % self.rows)
        for start, enters in zip(starts, complete, strict=True):
            self.tree.set(self._slots(start), self._entering(int(start)) if enters else np.zeros(self.n_envs))

    def _entering(self, start: int) -> np.ndarray:
        """What the tree holds for the sequences starting at row ``start`` as they enter: the largest priority
        so far, or the ``input_priority`` of each (to the power alpha)."""
        if self.input_priority is None:
            return np.full(self.n_envs, self.max_priority ** self.alpha)
        cols = torch.arange(self.n_envs)
        sequences = self.gather_sequences(torch.full_like(cols, start), cols, observations=False)
        return self._tree_values(self.input_priority(sequences))

    def _slots(self, start: int) -> np.ndarray:
        return (start // self.period) * self.n_envs + np.arange(self.n_envs)

    # -- which sequences exist ---------------------------------------------------------------------------
    def _sampleable(self, starts: torch.Tensor) -> torch.Tensor:
        """Whether sequences starting at rows ``starts`` can be sampled: every row from the first frame of the
        start's stack to the sequence's last row written since the oldest row still held (once the ring is full,
        the oldest rows' stacks reach into overwritten ones: ReplayBuffer.draw's ``skip``)."""
        skip = self.frame_stack - 1 if self._filled == self.rows else 0
        oldest = (self._next_row - self._filled) % self.rows
        offset = (starts - oldest) % self.rows
        return (offset >= skip) & (offset + self.span <= self._filled)

    def _sampleable_starts(self) -> torch.Tensor:
        starts = torch.arange(0, self.rows, self.period)
        return starts[self._sampleable(starts)]

    def __len__(self) -> int:
        """The number of sequences that can be sampled."""
        return len(self._sampleable_starts()) * self.n_envs

    def holds(self, transitions: int) -> bool:
        return len(self) > 0 and self._filled * self.n_envs >= min(transitions, self.rows * self.n_envs)

    # -- sampling ------------------------------------------------------------------------------------
    def sample(self, batch_size: int) -> Sequences:
        starts, cols, weights = self.draw(batch_size)
        return self.gather_sequences(starts, cols, weights)

    def draw(self, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``n`` sequences: their start rows, environments, and importance weights (None when uniform)."""
        if self.tree is not None:
            slots, weights = proportional_draw(self.tree, self.rng, n, len(self), float(self.beta))
            slots = torch.from_numpy(slots)
            return ((slots // self.n_envs) * self.period, slots % self.n_envs,
                    torch.from_numpy(weights.astype(np.float32)).to(self.device))
        starts = self._sampleable_starts()
        if not len(starts):
            raise RuntimeError("the sequence replay holds no complete sequence yet")
        chosen = torch.randint(len(starts) * self.n_envs, (n,), generator=self.generator)
        return starts[chosen // self.n_envs], chosen % self.n_envs, None

    def gather_sequences(self, starts: torch.Tensor, cols: torch.Tensor, weights: torch.Tensor | None = None,
                         observations: bool = True) -> Sequences:
        """The sequences starting at rows ``starts`` of environments ``cols``, time-major (without their
        observations unless ``observations``)."""
        starts, cols = starts.to(self.device), cols.to(self.device)
        rows = (starts.unsqueeze(0) + torch.arange(self.span, device=self.device).unsqueeze(1)) % self.rows
        columns = cols.expand_as(rows)
        observation = None
        if observations:
            observation = self.observations(rows.flatten(), columns.flatten())
            observation = observation.view(*rows.shape, *observation.shape[1:])
        action, reward, done = self.action[rows, columns], self.reward[rows, columns], self.done[rows, columns]
        # The state returns to zero before the step after a done; the stored state already did at step 0.
        resets = torch.cat([torch.zeros_like(done[:1]), done[:-1]])
        previous = (None, None) if self.previous_action is None else self._previous(starts, cols, action, reward,
                                                                                      resets)
        return Sequences(observation=observation, action=action, reward=reward, mask=self.mask[rows, columns],
                         done=done, resets=resets, valid=~done,
                         state=self.recurrent_state[starts // self.period, cols], weights=weights,
                         indices=(starts, cols),
                         action_mask=None if self.action_mask is None else self.action_mask[rows, columns],
                         previous_action=previous[0], previous_reward=previous[1],
                         acted_values=None if self.acted_values is None else self.acted_values[rows, columns])

    def _previous(self, starts: torch.Tensor, cols: torch.Tensor, action: torch.Tensor, reward: torch.Tensor,
                  resets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each step's previous action and reward ``[T, B]``: the step before's action (at the first step the
        one stored with the start) and the step's reward, -1 and 0 where an episode begins (after a ``done``,
        or at a start that began one)."""
        first = self.previous_action[starts // self.period, cols]
        begins = torch.cat([(first < 0).unsqueeze(0), resets[1:]])
        previous = torch.cat([first.unsqueeze(0), action[:-1]]).masked_fill(begins, -1)
        return previous, reward.masked_fill(begins, 0.0)

    def update_priorities(self, indices: tuple[torch.Tensor, torch.Tensor], priorities: torch.Tensor) -> None:
        """Each sampled sequence's new priority (``sequence_priorities``); no-op under uniform sampling."""
        if self.tree is None:
            return
        starts, cols = indices
        self._set_priorities(((starts // self.period) * self.n_envs + cols).cpu().numpy(), priorities)

    @property
    def bytes_per_transition(self) -> float:
        kept = [t for t in (self.recurrent_state, self.previous_action, self.acted_values) if t is not None]
        stored = sum(t.element_size() * t.nelement() for t in kept)
        return super().bytes_per_transition + stored / (self.rows * self.n_envs)

    # -- checkpoints ---------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """ReplayBuffer's rows written so far, the states stored at their sequence starts, the priorities."""
        starts = self.starts if self._filled == self.rows else math.ceil(self._filled / self.period)
        state = super().state_dict() | {"recurrent_state": self.recurrent_state[:starts].clone()}
        if self.previous_action is not None:
            state["previous_action"] = self.previous_action[:starts].clone()
        return state

    def load_state_dict(self, state: dict) -> None:
        """As ReplayBuffer's (the newest row ends its episode: a resumed run restarts its environments)."""
        super().load_state_dict(state)
        self.recurrent_state[: len(state["recurrent_state"])].copy_(state["recurrent_state"])
        if self.previous_action is not None:
            self.previous_action[: len(state["previous_action"])].copy_(state["previous_action"])


def sequence_priorities(td_errors: torch.Tensor, valid: torch.Tensor, eta: float) -> torch.Tensor:
    """R2D2's priority of each sequence ``[B]`` from the TD errors of its trained steps ``[T, B]``:
    ``eta * max |delta| + (1 - eta) * mean |delta|`` over the valid steps (0 for a sequence with none)."""
    size = td_errors.detach().abs() * valid
    count = valid.sum(0)
    mean = size.sum(0) / count.clamp(min=1)
    return eta * size.max(0).values + (1 - eta) * mean


def n_step_returns(reward: torch.Tensor, done: torch.Tensor, steps: int, n: int,
                   gamma: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For the transitions leaving the first ``steps`` rows of a sequence's ``reward`` and ``done`` ``[T, B]``
    (T >= steps + n): the discounted sum of up to ``n`` rewards (fewer where the episode ends first), ``gamma ** k``
    for the k steps taken, and the row ``t + k`` their target bootstraps from, each ``[steps, B]``, as
    ReplayBuffer's n-step transitions (an ended episode bootstraps, or not, from its last state: its mask says)."""
    returns = torch.zeros_like(reward[:steps])
    discount = torch.ones_like(returns)
    last = torch.arange(steps, device=reward.device).unsqueeze(1).expand_as(returns).clone()
    alive = torch.ones_like(returns, dtype=torch.bool)
    for k in range(1, n + 1):
        returns += torch.where(alive, discount * reward[k:k + steps], 0.0)
        last += alive.long()
        discount = torch.where(alive, discount * gamma, discount)
        alive = alive & ~done[k:k + steps]
    return returns, discount, last


def sequence_replay(capacity: int, n_envs: int, space, dtype: torch.dtype, action_space, *, device, seed: int,
                    **options: Any) -> SequenceReplay:
    """The sequence replay of ``capacity`` steps an agent's config asks for; stacked uint8 frames (k, H, W) are
    stored deduplicated, and a replay too large for the memory it would live in is refused in one line."""
    frame_stack = space.shape[0] if dtype == torch.uint8 and len(space.shape) == 3 else 1
    check_fits(capacity, space, dtype, frame_stack, action_space, device)
    return SequenceReplay(capacity, n_envs, space.shape, dtype, device=device, seed=seed, frame_stack=frame_stack,
                          generator=torch.Generator().manual_seed(seed), **options)
