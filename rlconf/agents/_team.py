"""What the team agents share: how they are built, and how a group's state becomes the lanes a learner sees.

A team agent acts on a ``TeamState`` (rlconf.core.team) and returns each group's actions. Its learners are built
for one group at a time, from a ``TeamBuildContext``: the groups' spaces, never the environment.

A *lane* is one agent of one copy. ``Lanes`` turns a group's ``(n_envs, agents)`` state into the ``StateArray``
of lanes a single-agent learner acts on: of all ``n_envs x agents`` lanes when the group's agents share one
learner (parameter sharing), or of one agent's ``n_envs`` lanes each when they do not. Each lane's observation is
the agent's own view, then, for a critic that reads more (a centralised critic), the critic's input: the global
state (``BuildContext.critic_inputs`` tells the learner where it starts). Where agents share a learner, a one-hot
of each agent's index follows each part, so that one network can still tell them apart (``agent.agent_id``). An
agent that is not alive (it finished before its game) is a lane whose episode is over: its steps are no
transitions, and its actions are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from rlconf.agents._agent import NotExportable, PolicyGraph, TestAgent
from rlconf.core import AgentGroup, StateArray
from rlconf.core.layout import ACTION_MASK
from rlconf.optim import Clock, schedule


@dataclass
class TeamBuildContext:
    """What a team agent's builder may know about the run: its groups, sizes, device and budget."""

    groups: dict[str, AgentGroup]
    n_envs: int
    device: torch.device
    total_steps: int  # joint steps of all copies, as the run's budget counts them
    approximation: dict
    logger_of: Callable[[str], Any] = lambda name: None  # noqa: E731 - the logger of a learner, naming it
    seed: int = 0

    def seed_of(self, *stream: int) -> int:
        """A seed of its own for each learner (a group's, or an agent's of a group), drawn from the run's."""
        return int(np.random.SeedSequence([self.seed, *stream]).generate_state(1)[0])


def _features(space: gym.Space) -> int:
    return int(np.prod(space.shape)) if space.shape else 1


class Lanes:
    """A group's states as lanes (see the module's docstring): ``shared`` learner or one per agent, with the
    critic reading ``critic`` (``"global_state"``, ``"observation"``, or None: no input of its own)."""

    def __init__(self, group: AgentGroup, shared: bool, agent_id: bool, critic: str | None):
        self.group = group
        self.shared = shared
        self.critic = critic
        self.ids = torch.eye(group.size) if shared and agent_id and group.size > 1 else None
        self.id_width = 0 if self.ids is None else group.size  # the one-hot's, ending the actor's inputs
        self.actor_inputs = _features(group.observation_space) + self.id_width
        critic_space = group.state_space if critic == "global_state" else group.observation_space
        self.critic_inputs = 0 if critic is None else _features(critic_space) + self.id_width

    def same_critic_inputs(self, centralised: bool) -> bool:
        """Whether every lane of a frame gives a ``centralised`` critic the same inputs: the group's agents share
        it and it reads no agent index. It then computes one value a frame, as BenchMARL's shared critic does."""
        return centralised and self.shared and self.ids is None

    @property
    def learners(self) -> int:
        """How many learners the group has: one shared, or one per agent."""
        return 1 if self.shared else self.group.size

    @property
    def lanes_per_copy(self) -> int:
        """Lanes each learner has in each copy."""
        return self.group.size if self.shared else 1

    @property
    def actor_space(self) -> gym.spaces.Box:
        """What the actor reads of each lane: the agent's own view (and its one-hot index)."""
        return gym.spaces.Box(-np.inf, np.inf, (self.actor_inputs,), np.float32)

    @property
    def observation_space(self) -> gym.spaces.Box:
        """What each lane's observation is to a learner: the actor's inputs, then the critic's."""
        return gym.spaces.Box(-np.inf, np.inf, (self.actor_inputs + self.critic_inputs,), np.float32)

    def of(self, states: StateArray) -> list[StateArray]:
        """Each learner's lanes of the group's ``(n_envs, agents)`` ``states``."""
        grid = self.grid(states)
        if self.shared:
            return [flat_lanes(grid)]
        return [grid[:, a] for a in range(self.group.size)]

    def fed_ids(self, graph: PolicyGraph) -> PolicyGraph:
        """``graph`` (an exported group policy on the actor's inputs), told that the caller appends each agent's
        one-hot index where the group's shared networks read one."""
        if self.ids is not None:
            graph.fed_by_caller(f"each agent's observation is followed by a one-hot of its index among the "
                                f"{self.group.size} agents of group {self.group.name} ({', '.join(self.group.agents)})",
                                lambda space: space)
        return graph

    def actions(self, each: list[torch.Tensor], n_envs: int) -> torch.Tensor:
        """The group's actions ``(n_envs, agents, ...)`` from each learner's actions for its lanes."""
        if self.shared:
            return each[0].view(n_envs, self.group.size, *each[0].shape[1:])
        return torch.stack(each, dim=1)

    def grid(self, states: StateArray) -> StateArray:
        """The group's lanes as a ``(n_envs, agents)`` ``StateArray``, for a learner that reads a whole copy's
        agents side by side (QMIX's mixer)."""
        return StateArray(self._lanes(states), states.shape, states.device)

    def _lanes(self, states: StateArray) -> dict[str, torch.Tensor]:
        observation = states["observation"]
        n_envs, agents = observation.shape[:2]
        ids = None if self.ids is None else self.ids.to(observation.device).expand(n_envs, agents, agents)
        parts = self._with_id(observation, ids)
        if self.critic is not None:
            parts += self._with_id(states[self.critic], ids)
        alive = states["alive"]
        values = {"observation": torch.cat(parts, dim=-1), "reward": states["reward"],
                  "done": states["done"] | ~alive, "mask": states["mask"]}
        if ACTION_MASK in states:
            values[ACTION_MASK] = states[ACTION_MASK]
        return values

    @staticmethod
    def _with_id(values: torch.Tensor, ids: torch.Tensor | None) -> list[torch.Tensor]:
        flat = values.flatten(2).float()
        return [flat] if ids is None else [flat, ids]


def flat_lanes(grid: StateArray) -> StateArray:
    """A group's ``(n_envs, agents)`` lanes in one row, copy-major (reshape, not view: a group's agents need not
    lie side by side among a game's, so its tensors may not be contiguous)."""
    n = grid.shape[0] * grid.shape[1]
    return StateArray({k: v.reshape(n, *v.shape[2:]) for k, v in grid.items()}, (n,), grid.device)


def lanes_act(lanes: dict[str, Lanes], actors: dict[str, list[Any]], team) -> dict[str, torch.Tensor]:
    """Every group's actions for the ``TeamState`` ``team``: each of the group's actors (its learners, or their
    test agents) acting on its lanes."""
    actions = {}
    for name, view in lanes.items():
        each = [actor.act(states) for actor, states in zip(actors[name], view.of(team[name]), strict=True)]
        actions[name] = view.actions(each, team.n_envs)
    return actions


class AgentNetworks(nn.Module):
    """A group's agents' networks on their lanes side by side: ``[B, lanes, width] -> [B, lanes, out]``, from one
    network every lane shares or one network per lane (``agent.share_parameters=false``)."""

    def __init__(self, networks: list[nn.Module]):
        super().__init__()
        self.networks = nn.ModuleList(networks)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if len(self.networks) == 1:
            return self.networks[0](inputs.flatten(0, 1)).view(*inputs.shape[:2], -1)
        return torch.stack([network(inputs[:, a]) for a, network in enumerate(self.networks)], dim=1)


def group_schedule(team: Any, team_config: Any, own: Any, key: str, clock: Clock, group: str) -> Any:
    """The team's schedule ``team`` of ``key`` (the settings ``key``, ``key_final``, ``key_decay_steps``), or, where
    group ``group``'s own config ``own`` sets it otherwise (``agent.groups``), a schedule of the group's own."""
    trio = (key, f"{key}_final", f"{key}_decay_steps")
    if all(getattr(own, k) == getattr(team_config, k) for k in trio):
        return team
    return schedule(*(getattr(own, k) for k in trio), clock, f"{key}/{group}")


class GroupsTestAgent(TestAgent):
    """Base of a team's test agent: a policy per group, exported one group at a time (``group_graph``)."""

    def policy_graph(self):
        raise NotExportable("a team acts with one policy per group of agents (rlconf export --group NAME)")

    @staticmethod
    def shared(each: list[Any], group: str, what: str) -> Any:
        """The one learner or network of ``each`` that group ``group``'s agents share, to export; NotExportable
        where each agent learns ``what`` of its own."""
        first, *others = each
        if others:
            raise NotExportable(f"group {group}'s agents each learn {what} of their own "
                                "(agent.share_parameters=false): there is no one policy of the group to export")
        return first
