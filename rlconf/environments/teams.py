"""What every environment of the team kind shares (VMAS, PettingZoo's parallel games): its agent groups, the
``TeamState`` it hands over, and the books of its episodes.

The adapters (``rlconf.environments.vmas``, ``rlconf.environments.pettingzoo_parallel``) turn their simulator's
per-agent outputs into tensors over all agents, ``(n_envs, agents, ...)`` in the order of ``self.agents``, and
hand them to ``_team_state``, which cuts them into groups (``rlconf.core.team``), and to ``_keep_books``, which
adds up each agent's return and reports the copies whose episode ended as ``TeamEpisode``s.

Both reset a finished copy on the next step, as rlconf's single-agent copies do: that step's actions are
ignored, it returns the copy's first state (reward 0, not done) and it is not counted in ``steps``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
import torch

from rlconf.core import EnvKind, StateArray
from rlconf.core.team import AgentGroup, TeamEpisode, TeamState, groups_of
from rlconf.environments.base import Environment
from rlconf.errors import ConfigError
from rlconf.settings import VECTORIZATION_MODES


class TeamEnvironment(Environment):
    """The groups, spaces, states and episode books of an environment of the team kind; its subclass sets
    ``name``, ``n_envs``, ``device`` and calls ``_set_groups`` then ``_open_books``."""

    kind = EnvKind.TEAM
    masks_actions = False  # its groups' states carry action_mask (set by an adapter whose game has masks)
    # The env option that switches its agents between discrete and continuous actions, if it has one (VMAS's):
    # what a refusal of its action space names as the fix.
    action_kind_option: str | None = None
    # Why its copies cannot step in sampler worker processes (hardware.sampler=parallel), or None where they can.
    serial_only: str | None = "its copies step in the run's process"

    name: str
    n_envs: int
    device: torch.device
    agents: list[str]
    agent_groups: dict[str, AgentGroup]

    # -- groups and spaces -----------------------------------------------------------------------------------
    def _set_groups(self, env_id: str, agents: Sequence[str], observation_spaces: dict[str, gym.Space],
                    action_spaces: dict[str, gym.Space], state_space: gym.Space, has_state: bool) -> None:
        """The groups of ``agents`` (by name, ``groups_of``); a ConfigError when a group's agents differ."""
        self.agents = list(agents)
        self.agent_groups = {}
        self._members: dict[str, slice | torch.Tensor] = {}
        position = {agent: i for i, agent in enumerate(self.agents)}
        for group, members in groups_of(self.agents).items():
            for what, spaces in (("observation", observation_spaces), ("action", action_spaces)):
                different = next((a for a in members[1:] if spaces[a] != spaces[members[0]]), None)
                if different is not None:
                    raise ConfigError(f"env.id={env_id}: the agents of group {group!r} differ in their {what} spaces "
                                      f"({members[0]}: {spaces[members[0]]}, {different}: {spaces[different]}); "
                                      "a group's agents must see and act alike")
            self.agent_groups[group] = AgentGroup(group, members, observation_spaces[members[0]],
                                                  action_spaces[members[0]], state_space, has_state)
            indices = [position[agent] for agent in members]
            contiguous = indices == list(range(indices[0], indices[0] + len(indices)))
            # A group whose agents lie side by side is a view of the all-agents tensors, else a gather.
            self._members[group] = (slice(indices[0], indices[-1] + 1) if contiguous
                                    else torch.tensor(indices, device=self.device))
        self.observation_space = gym.spaces.Dict({g: group.observation_space for g, group in self.agent_groups.items()})
        self.action_space = gym.spaces.Dict({g: group.action_space for g, group in self.agent_groups.items()})

    def _pick(self, values: torch.Tensor, group: str) -> torch.Tensor:
        """The columns of ``group``'s agents in ``values`` (``(n_envs, agents, ...)`` over all agents)."""
        return values[:, self._members[group]]

    def _team_state(self, observations: dict[str, torch.Tensor], reward: torch.Tensor, done: torch.Tensor,
                    terminated: torch.Tensor, alive: torch.Tensor, global_state: torch.Tensor,
                    action_masks: dict[str, torch.Tensor] | None = None) -> TeamState:
        """The TeamState of every copy: ``observations`` by group; ``reward``, ``done``, ``terminated`` and
        ``alive`` ``(n_envs, agents)`` over all agents; ``global_state`` ``(n_envs, *state)``, every agent's."""
        mask = (~terminated).to(torch.float32)
        groups = {}
        for name, group in self.agent_groups.items():
            shape = (self.n_envs, group.size)
            x = {"observation": observations[name], "reward": self._pick(reward, name),
                 "done": self._pick(done, name), "mask": self._pick(mask, name), "alive": self._pick(alive, name),
                 "global_state": global_state.unsqueeze(1).expand(*shape, *global_state.shape[1:])}
            if action_masks is not None:
                x["action_mask"] = action_masks[name]
            groups[name] = StateArray(x, shape, self.device)
        return TeamState(groups, self.device)

    # -- the books -----------------------------------------------------------------------------------------
    def _open_books(self) -> None:
        """No steps taken, no episode under way."""
        self.steps = 0
        self.completed: list[TeamEpisode] = []
        self._returns = torch.zeros(self.n_envs, len(self.agents), dtype=torch.float64, device=self.device)
        self._lengths = torch.zeros(self.n_envs, dtype=torch.int64, device=self.device)

    def _restart_books(self) -> None:
        """Every copy starts a new episode (``reset``); ``steps`` go on."""
        self.completed = []
        self._returns.zero_()
        self._lengths.zero_()

    def _keep_books(self, reward: torch.Tensor, acted: torch.Tensor, done: torch.Tensor) -> None:
        """One step: ``reward`` ``(n_envs, agents)`` (0 where a copy was reset), ``acted`` the copies that took a
        step (not reset on it), ``done`` those whose episode ended on it: they go to ``completed``."""
        self._returns += reward
        self._lengths += acted
        self.steps += int(acted.sum())
        self.completed = []
        if not bool(done.any()):
            return
        finished = done.nonzero().flatten()
        returns = self._returns[finished]  # (finished copies, agents)
        groups = {name: self._pick(returns, name).mean(1).tolist() for name in self.agent_groups}
        for k, (i, team, length) in enumerate(zip(finished.tolist(), returns.mean(1).tolist(),
                                                 self._lengths[finished].tolist(), strict=True)):
            self.completed.append(TeamEpisode(i, team, int(length), {name: each[k] for name, each in groups.items()}))
        self._returns[finished] = 0.0
        self._lengths[finished] = 0


def float_box(space: gym.Space, env_id: str, what: str) -> gym.spaces.Box:
    """``space`` (a Box of any dtype, gym's or gymnasium's) as a float32 gymnasium Box; a ConfigError if not one."""
    if type(space).__name__ != "Box":
        raise ConfigError(f"env.id={env_id}: {what} {space} are not supported (vectors only: Box)")
    return gym.spaces.Box(np.asarray(space.low, np.float32), np.asarray(space.high, np.float32), dtype=np.float32)


def concatenated_space(spaces: Sequence[gym.spaces.Box]) -> gym.spaces.Box:
    """The space of every agent's observation flattened and concatenated: the global state of a game without
    one (as BenchMARL's centralised critics read VMAS)."""
    low = np.concatenate([np.asarray(s.low, np.float32).ravel() for s in spaces])
    high = np.concatenate([np.asarray(s.high, np.float32).ravel() for s in spaces])
    return gym.spaces.Box(low, high, dtype=np.float32)


def check_team_options(family: str, vectorization: str, wrappers: Sequence[Callable]) -> None:
    """Refusals of the options every family builds with that do not apply to team environments."""
    if vectorization not in VECTORIZATION_MODES:
        raise ConfigError(f"hardware.vectorization={vectorization}: allowed: {', '.join(VECTORIZATION_MODES)}")
    if wrappers:
        raise ConfigError(f"gymnasium wrappers (env.wrappers, video recorders) do not apply to the {family} family's "
                          "copies; videos come from its render() of copy 0")
