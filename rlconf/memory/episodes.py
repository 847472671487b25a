"""Complete episodes for Monte-Carlo policy gradients (VPG / REINFORCE), over parallel environments."""

from __future__ import annotations

from typing import NamedTuple

import torch

from rlconf.core import State


class EpisodeSteps(NamedTuple):
    """The steps of complete episodes an update learns from, with their discounted returns."""

    index: torch.Tensor  # positions of the steps among the rows ``observations()`` returned
    action: torch.Tensor
    returns: torch.Tensor
    action_mask: torch.Tensor | None = None  # the legal actions of each step, where the environment masks them

    @property
    def size(self) -> int:
        return len(self.action)


class CompleteEpisodeBuffer:
    """Keeps every environment's steps until its episode ends; hands out the complete episodes.

    Rows are time steps of all ``n_envs`` environments, as the agent saw them: row ``t`` holds the states
    (observation, the reward and mask of arriving there, done) and the actions taken. An environment's
    episode is complete at its ``done`` row; the return of a step is the discounted sum of the rewards up to
    that row, plus the discounted value of the last state when the episode was truncated rather than ended
    (``mask`` 1): a time limit is not a terminal state. Episodes still running stay for the next update, so
    no environment step is thrown away; the steps they took before an update were sampled by the policy
    before it, a lag of at most one update.

    ``completed_steps`` counts the steps of complete episodes not learned from yet. An update is two calls:
    ``observations()`` gives the states of those episodes (every step and every episode's last state), and
    ``episodes(values)``, given V of those states, gives the steps with their returns and forgets them.
    """

    def __init__(self, n_envs: int, discount_factor: float = 0.99, device: str | torch.device = "cpu"):
        self.n_envs = n_envs
        self.discount_factor = discount_factor
        self.device = torch.device(device)
        self._observation: list[torch.Tensor] = []
        self._reward: list[torch.Tensor] = []
        self._mask: list[torch.Tensor] = []
        self._done: list[torch.Tensor] = []
        self._action: list[torch.Tensor] = []
        self._action_mask: list[torch.Tensor] = []  # with the actions, where states have an ``action_mask``
        self._start = torch.zeros(n_envs, dtype=torch.int64, device=self.device)  # first row not learned from
        self._length = torch.zeros(n_envs, dtype=torch.int64, device=self.device)  # steps of running episodes
        self._region: torch.Tensor | None = None
        self.completed_steps = 0

    def store_state(self, states: State) -> None:
        done = states["done"]
        # Copies: an environment may hand over views of arrays it overwrites on its next step.
        self._observation.append(states["observation"].clone())
        self._reward.append(states["reward"].clone())
        self._mask.append(states["mask"].clone())
        self._done.append(done.clone())
        if done.any():
            self.completed_steps += int(self._length[done].sum())
            self._length[done] = 0
        self._length += ~done

    def store_action(self, actions: torch.Tensor, action_mask: torch.Tensor | None = None) -> None:
        """The actions taken in the last stored states, and those states' legal actions if they are masked."""
        self._action.append(actions.clone())
        if action_mask is not None:
            self._action_mask.append(action_mask.clone())

    def observations(self) -> torch.Tensor:
        """The states of the complete episodes not learned from yet, flattened (time-major)."""
        done = torch.stack(self._done)
        rows = torch.arange(len(done), device=self.device).unsqueeze(1)
        last_done = torch.where(done, rows, -1).max(0).values
        self._region = (rows >= self._start) & (rows <= last_done)
        return torch.stack(self._observation)[self._region]

    def episodes(self, values: torch.Tensor) -> EpisodeSteps:
        """The steps among ``observations()`` with their returns, given V of those states; then drop them."""
        region = self._region
        done, reward, mask = torch.stack(self._done), torch.stack(self._reward), torch.stack(self._mask)
        value = torch.zeros_like(reward)
        value[region] = values.to(reward.dtype)
        # G_t = r_{t+1} + gamma * (G_{t+1}, or mask * V(s_{t+1}) where the episode ends at t + 1). Rows after
        # an environment's last done belong to a running episode; their returns are never read.
        returns = torch.zeros_like(reward)
        running = torch.zeros_like(reward[0])
        last = int(torch.where(region.any(1))[0].max()) if region.any() else 0
        for t in range(last - 1, -1, -1):
            after = torch.where(done[t + 1], mask[t + 1] * value[t + 1], running)
            running = reward[t + 1] + self.discount_factor * after
            returns[t] = running
        steps = region & ~done
        actions = torch.stack(self._action)
        taken = steps[: len(actions)]
        legal = torch.stack(self._action_mask)[taken] if self._action_mask else None
        batch = EpisodeSteps(steps[region].nonzero().squeeze(1), actions[taken], returns[steps], legal)
        self._forget(region, done)
        return batch

    def _forget(self, region: torch.Tensor, done: torch.Tensor) -> None:
        """Mark the learned rows and drop the rows no environment needs any more."""
        rows = torch.arange(len(done), device=self.device).unsqueeze(1)
        learned = region.any(0)
        self._start = torch.where(learned, torch.where(done & region, rows, -1).max(0).values + 1, self._start)
        cut = int(self._start.min())
        for rows_list in (self._observation, self._reward, self._mask, self._done, self._action, self._action_mask):
            del rows_list[:cut]
        self._start -= cut
        self._region = None
        self.completed_steps = 0

    def state_dict(self) -> dict:
        state = {"observation": self._observation, "reward": self._reward, "mask": self._mask, "done": self._done,
                 "action": self._action, "start": self._start, "length": self._length,
                 "completed_steps": self.completed_steps}
        return state | {"action_mask": self._action_mask} if self._action_mask else state

    def load_state_dict(self, state: dict) -> None:
        for name in ("observation", "reward", "mask", "done", "action"):
            setattr(self, f"_{name}", list(state[name]))
        self._action_mask = list(state.get("action_mask", []))
        self._start = state["start"].to(self.device)
        self._length = state["length"].to(self.device)
        self.completed_steps = state["completed_steps"]
