"""Teams: ``n_envs`` copies of a game whose agents all act at once, in groups (PettingZoo's parallel API, VMAS).

An environment of the team kind declares its ``agent_groups``: each ``AgentGroup`` names its agents, which share
one observation space and one action space (the agents of a group can share one network), and the space of the
global state its centralised critics and mixers read. A group is what BenchMARL and PettingZoo call one: VMAS's
``agent_0``, ``agent_1``... are the group ``agent``; MPE's ``adversary_0`` and ``agent_0`` are two groups.

A ``TeamState`` is the state of every copy: for each group, a ``StateArray`` of shape ``(n_envs, agents)`` with

- ``observation``: each agent's own view, ``(n_envs, agents, *observation_shape)``;
- ``reward``: what each agent received on this step (a team reward is every agent's: VMAS's shared rewards);
- ``done`` / ``mask``: the agent's episode is over; ``mask`` is 0 only where it truly ended (not at a time limit),
  as in single-agent states, so values bootstrap across a truncation;
- ``alive``: the agent acts on this step: an agent that finished before its game did (PettingZoo removes it)
  is not alive until its copy resets; its actions are ignored and learners skip its steps;
- ``global_state``: the group's view of the whole game for centralised critics, ``(n_envs, agents, *state)``
  (the same for every agent of a copy: an expanded view, no copy): the game's own ``state()`` where it has one,
  else every agent's observation concatenated (as BenchMARL's centralised critics read VMAS, which has none);
- ``action_mask`` where the game has one.

The copy's episode is over when every agent's is (``TeamState.done``). As single-agent copies do, a finished copy
shows its final state once, then the next ``step`` resets it: its actions there are ignored. Actions go back
as a dict of tensors, a group's ``(n_envs, agents, *action_shape)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch

from rlconf.core.state import StateArray


@dataclass(frozen=True)
class AgentGroup:
    """A group of agents that see alike and act alike (one network can serve them all)."""

    name: str
    agents: tuple[str, ...]
    observation_space: gym.Space  # one agent's
    action_space: gym.Space  # one agent's
    state_space: gym.Space  # the global state each agent's centralised critic reads
    has_state: bool = False  # whether the game provides a global state (else the observations concatenated)

    @property
    def size(self) -> int:
        return len(self.agents)


@dataclass
class TeamEpisode:
    """One finished episode of one copy: the team's return (the mean over all agents of each agent's
    undiscounted return: what evaluations and the loop read), the copy's steps, and each group's return (the
    mean over its agents)."""

    env_index: int
    returns: float
    length: int
    group_returns: dict[str, float]
    stalled: bool = False  # as single-agent episodes: never cut short for want of rewards here


def group_of(agent: str) -> str:
    """The group an agent's name puts it in, as BenchMARL and PettingZoo name them: ``agent_0`` -> ``agent``,
    ``adversary_2`` -> ``adversary``; a name without a numbered suffix is a group of its own."""
    stem, _, index = agent.rpartition("_")
    return stem if stem and index.isdigit() else agent


def groups_of(agents: list[str]) -> dict[str, tuple[str, ...]]:
    """The agents by group, each group in the order its first agent comes."""
    found: dict[str, list[str]] = {}
    for agent in agents:
        found.setdefault(group_of(agent), []).append(agent)
    return {name: tuple(members) for name, members in found.items()}


class TeamState(dict):
    """Every copy's state, a ``StateArray`` of shape ``(n_envs, agents)`` per group (see the module's docstring)."""

    def __init__(self, groups: dict[str, StateArray], device: str | torch.device = "cpu"):
        super().__init__(groups)
        self.device = torch.device(device)

    @property
    def n_envs(self) -> int:
        return next(iter(self.values())).shape[0]

    @property
    def done(self) -> torch.Tensor:
        """Whether each copy's episode is over: every agent of every group is done, ``(n_envs,)``."""
        return torch.stack([group["done"].all(dim=1) for group in self.values()]).all(dim=0)

    def groups(self) -> Iterator[tuple[str, StateArray]]:
        return iter(self.items())

    def to(self, device: str | torch.device) -> TeamState:
        device = torch.device(device)
        if device == self.device:
            return self
        return TeamState({name: group.to(device) for name, group in self.items()}, device)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return dict.__getitem__(self, key)
        # Copies: an index or slice of the copies, as a StateArray indexes its batch (the alternating sampler).
        return TeamState({name: group[key] for name, group in self.items()}, self.device)
