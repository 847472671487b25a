"""Rollout storage for on-policy agents, with generalised advantage estimation (GAE).

Where the environment says which actions are legal (``state["action_mask"]``), each state's mask is stored with
it: an update recomputes the same masked distribution the action was sampled from (as sb3-contrib's
MaskablePPO). The mask's rows are allocated on the first masked state, so plain environments store nothing more.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from rlconf.core import State, with_rows
from rlconf.core.layout import ACTION_MASK


class Rollout(NamedTuple):
    """The valid transitions of one rollout, flattened: what an on-policy update trains on."""

    observation: torch.Tensor
    action: torch.Tensor
    log_prob: torch.Tensor
    advantage: torch.Tensor
    returns: torch.Tensor
    action_mask: torch.Tensor | None = None  # [size, mask width] bool where the environment masks actions

    @property
    def size(self) -> int:  # not __len__: a NamedTuple's own machinery (_replace) relies on len()
        return len(self.action)

    def rows(self, index: torch.Tensor) -> Rollout:
        """The transitions at ``index`` (a minibatch)."""
        return Rollout(*(None if x is None else x[index] for x in self))


class GeneralizedAdvantageBuffer:
    """Stores ``n_steps`` steps of ``n_envs`` environments, then computes GAE(lambda) advantages.

    Row ``t`` holds the states at step ``t`` (observation, the reward and mask of arriving there, whether the
    episode had ended) and the action taken; row ``n_steps`` holds the states the rollout ends in, whose
    values bootstrap the last advantages. Truncated episodes bootstrap from their final state; terminal
    states do not; the reset step after an episode's end is left out of training.
    """

    def __init__(self, n_steps: int, n_envs: int, observation_shape: tuple[int, ...],
                 observation_dtype: torch.dtype, action_shape: tuple[int, ...] = (),
                 action_dtype: torch.dtype = torch.int64, discount_factor: float = 0.99, lam: float = 0.95,
                 device: str | torch.device = "cpu"):
        self.n_steps = n_steps
        self.n_envs = n_envs
        self.discount_factor = discount_factor
        self.lam = lam
        rows = n_steps + 1
        self.observation = torch.zeros((rows, n_envs, *observation_shape), dtype=observation_dtype, device=device)
        self.reward = torch.zeros((rows, n_envs), device=device)
        self.mask = torch.zeros((rows, n_envs), device=device)
        self.done = torch.zeros((rows, n_envs), dtype=torch.bool, device=device)
        self.action = torch.zeros((n_steps, n_envs, *action_shape), dtype=action_dtype, device=device)
        self.log_prob = torch.zeros((n_steps, n_envs), device=device)
        self.action_mask: torch.Tensor | None = None  # [rows, n_envs, mask width] bool, from the first masked state
        self.t = 0

    @property
    def full(self) -> bool:
        return self.t == self.n_steps

    def store_state(self, states: State, columns: slice = slice(None), t: int | None = None) -> None:
        """Row ``t`` (the next one) of every environment, or of those in ``columns``."""
        t = self.t if t is None else t
        self.observation[t, columns] = states["observation"]
        self.reward[t, columns] = states["reward"]
        self.mask[t, columns] = states["mask"]
        self.done[t, columns] = states["done"]
        if ACTION_MASK in states:
            legal = states[ACTION_MASK]
            if self.action_mask is None:
                self.action_mask = torch.ones((*self.done.shape, legal.shape[-1]), dtype=torch.bool,
                                              device=self.done.device)
            self.action_mask[t, columns] = legal

    def store_action(self, actions: torch.Tensor, log_prob: torch.Tensor, columns: slice | None = None,
                     t: int | None = None) -> None:
        """The actions taken in the states of row ``t``: of every environment, which completes the row, or
        of those in ``columns`` (whose caller says when every row is complete, ``t``)."""
        if columns is None:
            self.action[self.t] = actions
            self.log_prob[self.t] = log_prob
            self.t += 1
            return
        self.action[t, columns] = actions
        self.log_prob[t, columns] = log_prob

    @property
    def valid(self) -> torch.Tensor:
        """``[n_steps, n_envs]``: the rows that are transitions (not the reset step after an episode's end);
        ``rollout`` returns these, in this order (time-major)."""
        return ~self.done[:-1]

    def advantages(self, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE advantages and returns for rows 0..n_steps-1, given V of rows 0..n_steps."""
        gamma, lam = self.discount_factor, self.lam
        deltas = self.reward[1:] + gamma * self.mask[1:] * values[1:] - values[:-1]
        continues = (~self.done[1:]).float() * (gamma * lam)
        advantages = torch.zeros_like(deltas)
        running = torch.zeros_like(deltas[0])
        for t in range(self.n_steps - 1, -1, -1):
            running = deltas[t] + continues[t] * running
            advantages[t] = running
        return advantages, advantages + values[:-1]

    def rollout(self, values: torch.Tensor) -> Rollout:
        """The flattened valid transitions with their advantages; then start the next rollout."""
        advantages, returns = self.advantages(values)
        valid = self.valid
        legal = None if self.action_mask is None else self.action_mask[:-1][valid]
        rollout = Rollout(self.observation[:-1][valid], self.action[valid], self.log_prob[valid],
                          advantages[valid], returns[valid], legal)
        self._carry_last_row()
        return rollout

    def _stored(self) -> tuple[str, ...]:
        """The per-step tensors a checkpoint keeps: the action masks only where the environment has them."""
        names = ("observation", "reward", "mask", "done", "action", "log_prob")
        return names if self.action_mask is None else (*names, "action_mask")

    def _carry_last_row(self) -> None:
        """The states the rollout ended in are the first states of the next one."""
        for name in ("observation", "reward", "mask", "done", "action_mask"):
            tensor = getattr(self, name)
            if tensor is not None:
                tensor[0] = tensor[-1]
        self.t = 0

    def state_dict(self) -> dict:
        """The rows written so far: the states and actions of steps 0..t-1 (row t is written by the next step,
        and row 0 carried over from the last rollout is written again by the first step of the next one).
        Cloned, since torch.save writes a view's whole storage: an Atari rollout's preallocated frames are
        29 MB."""
        return {name: getattr(self, name)[: self.t].clone() for name in self._stored()} | {"t": self.t}

    def load_state_dict(self, state: dict) -> None:
        """Restore a checkpoint's rollout (its leading rows; older checkpoints hold every row). A resumed run
        starts from an environment reset, so the newest stored state's action never gets its outcome: marked
        as the end of its episode, it is left out of training and the advantages before it bootstrap from
        its value."""
        if "action_mask" in state and self.action_mask is None:
            self.action_mask = torch.ones((*self.done.shape, state["action_mask"].shape[-1]), dtype=torch.bool,
                                          device=self.done.device)
        for name in self._stored():
            getattr(self, name)[: len(state[name])].copy_(state[name])
        self.t = state["t"]
        if self.t:
            self.done[self.t - 1] = True


class SequenceRollout(NamedTuple):
    """One rollout as the chunk of each environment, time-major (``[n_steps, n_envs, ...]``): what an agent
    with memory unrolls its recurrent trunk over. ``start`` ``[n_envs, state_size]`` is the recurrent state
    each chunk starts from (zero where an episode begins at its first row), ``resets`` marks the rows where an
    episode begins later in the chunk (the state is zeroed before them), ``valid`` the rows that are
    transitions (not the reset step after an episode's end): the unroll runs through every row, the losses
    count the valid ones. ``action_mask``: each row's legal actions, where the environment masks them."""

    observation: torch.Tensor
    action: torch.Tensor
    log_prob: torch.Tensor
    advantage: torch.Tensor
    returns: torch.Tensor
    valid: torch.Tensor
    resets: torch.Tensor
    start: torch.Tensor
    action_mask: torch.Tensor | None = None

    @property
    def n_envs(self) -> int:
        return self.valid.shape[1]

    def columns(self, envs: torch.Tensor) -> SequenceRollout:
        """The chunks of environments ``envs`` (indices): a minibatch of whole sequences."""
        *steps, start, legal = self
        return SequenceRollout(*(x[:, envs] for x in steps), start[envs], None if legal is None else legal[:, envs])

    def segments(self, length: int, starts: torch.Tensor) -> SequenceRollout:
        """Each environment's chunk cut into segments of ``length`` rows, side by side as the columns of one
        rollout (``[length, segments x n_envs, ...]``, segment-major), each starting from the recurrent state
        before its first row (``starts [segments, n_envs, state_size]``): sequences as SB3-contrib's
        RecurrentPPO trains on. A segment whose first row begins an episode keeps that reset."""
        *steps, _, legal = self

        def cut(x: torch.Tensor) -> torch.Tensor:
            return x.unflatten(0, (-1, length)).transpose(0, 1).flatten(1, 2)

        return SequenceRollout(*(cut(x) for x in steps), starts.flatten(0, 1), None if legal is None else cut(legal))

    def transitions(self) -> Rollout:
        """The valid steps, flattened in time-major order (as ``features[valid]`` orders them)."""
        valid = self.valid
        return Rollout(self.observation[valid], self.action[valid], self.log_prob[valid], self.advantage[valid],
                       self.returns[valid], None if self.action_mask is None else self.action_mask[valid])


class RecurrentAdvantageBuffer(GeneralizedAdvantageBuffer):
    """The rollout buffer of agents with memory: GAE as its parent, plus the recurrent state each environment's
    chunk starts from (``store_start`` at the first row), so that an update unrolls the trunk over the chunk
    from where acting started it, and the rows where episodes begin inside it (``resets``, from ``done``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.start: torch.Tensor | None = None  # [n_envs, state_size] before row 0

    def store_start(self, state: torch.Tensor, columns: slice = slice(None)) -> None:
        """The state every environment's chunk starts from, or those in ``columns`` (the alternating sampler's
        groups start theirs in turn)."""
        rows = state.detach()
        self.start = with_rows(self.start, columns, rows.clone() if columns == slice(None) else rows, self.n_envs)

    @property
    def resets(self) -> torch.Tensor:
        """``[n_steps + 1, n_envs]``: an episode begins at this row, the previous one having ended its last
        (row 0's are already in ``start``, zeroed where acting began an episode)."""
        resets = torch.zeros_like(self.done)
        resets[1:] = self.done[:-1]
        return resets

    def sequences(self, values: torch.Tensor) -> SequenceRollout:
        """Rows 0..n_steps-1 of every environment with their advantages (given V of rows 0..n_steps); then
        start the next rollout. Copies: the next rollout overwrites the buffer's rows."""
        advantages, returns = self.advantages(values)
        legal = None if self.action_mask is None else self.action_mask[:-1].clone()
        sequences = SequenceRollout(self.observation[:-1].clone(), self.action.clone(), self.log_prob.clone(),
                                    advantages, returns, self.valid, self.resets[:-1], self.start, legal)
        self._carry_last_row()
        return sequences

    def state_dict(self) -> dict:
        state = super().state_dict()
        return state if self.start is None else state | {"start": self.start.clone()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.start = state["start"].to(self.done.device) if "start" in state else None
