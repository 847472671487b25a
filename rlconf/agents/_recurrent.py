"""What the agents with memory (R2D1, recurrent PPO and A2C) share: the recurrent state each carries for each
of its environments between two ``act`` calls, and the checks of a config that asks for memory.

An environment starts a new episode on the step after a ``done`` state, so that is where a carried state
returns to zero: the first state of an episode is seen with no memory of the previous one, in training, in
tests (a test agent carries its own) and after a resume (environments restart there).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rlconf.core import ALL_COPIES, StateArray, with_rows


class CarriedState:
    """The recurrent state ``[n_envs, size]`` of each environment, from one step to the next.

        state = carried.current(states)          # zero where an episode begins
        outputs, after = network(x, state)
        carried.advance(after, states)           # kept for the next step

    With the alternating sampler ``states`` are one group's, the copies ``copies`` of the ``n_envs`` (a slice):
    their rows are read and written, the other group's wait for its turn.
    """

    def __init__(self, size: int, device: torch.device | str = "cpu", n_envs: int | None = None):
        self.size = size
        self.device = torch.device(device)
        self.n_envs = n_envs  # every copy's row, where groups of them are acted on in turn
        self.state: torch.Tensor | None = None  # after the last step, [n_envs, size]
        self.ended: torch.Tensor | None = None  # [n_envs] bool: the last state ended its episode

    def current(self, states: StateArray, copies: slice = ALL_COPIES) -> torch.Tensor:
        """The state to process ``states`` from: the carried one, zeroed for environments whose previous state
        ended its episode (all of them on the first call)."""
        if not self._carries(states, copies):
            return torch.zeros((len(states), self.size), device=self.device)
        return self.state[copies] * (~self.ended[copies]).unsqueeze(1).to(self.state.dtype)

    def starts(self, states: StateArray, copies: slice = ALL_COPIES) -> torch.Tensor:
        """``[n_envs]`` bool: where ``states`` begin an episode (no memory: the first call, or after ``done``)."""
        if not self._carries(states, copies):
            return torch.ones(len(states), dtype=torch.bool, device=self.device)
        return self.ended[copies].clone()

    def _carries(self, states: StateArray, copies: slice) -> bool:
        """Whether a state is carried for ``states``: one was kept, for as many copies."""
        return self.state is not None and (copies != ALL_COPIES or len(self.state) == len(states))

    def step(self, forward: Callable[..., tuple[torch.Tensor, torch.Tensor]], states: StateArray,
             copies: slice = ALL_COPIES) -> torch.Tensor:
        """One step of a recurrent network (``forward``: the network, or an approximation's ``no_grad`` / ``eval``
        of it) on ``states`` (those of the copies ``copies``), every environment in one batch from its carried
        state: the outputs ``[n_envs, ...]``; the state after the step is carried to the next."""
        outputs, after = forward(states.as_input().unsqueeze(0), self.current(states, copies))
        self.advance(after, states, copies)
        return outputs[0]

    def advance(self, state: torch.Tensor, states: StateArray, copies: slice = ALL_COPIES) -> None:
        ended = torch.as_tensor(states["done"], device=self.device).reshape(len(states)).bool()
        # A group's first step: the other copies' rows wait unstarted (zero, their episodes "ended").
        self.state = with_rows(self.state, copies, state.detach(), self.n_envs)
        self.ended = with_rows(self.ended, copies, ended, self.n_envs, fill=True)

    def state_dict(self) -> dict:
        return {} if self.state is None else {"state": self.state.clone(), "ended": self.ended.clone()}

    def load_state_dict(self, state: dict) -> None:
        """The saved state, every environment marked as ended: a resumed run restarts its environments, whose
        first states begin new episodes."""
        if not state:
            self.state = self.ended = None
            return
        self.state = state["state"].to(self.device)
        self.ended = torch.ones_like(state["ended"], device=self.device)
