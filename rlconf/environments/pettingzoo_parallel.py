"""PettingZoo's parallel API as a team: ``n_envs`` copies of a game whose agents all act at once, stepped one by
one in this process (``hardware.sampler=serial``) or by worker processes (``parallel``): ``pettingzoo_copies``.

``env.id`` names the game's module (``mpe2.simple_spread_v3``, ``pettingzoo.sisl.multiwalker_v9``), whose
``parallel_env(**env.kwargs)`` makes each copy. The agents fall into groups by name (``adversary_0`` and
``agent_0`` are two groups: ``rlconf.core.team``); a group whose agents see or act differently is refused.
Observations are vectors (float32; games seen in pixels have families of their own), with the action mask of
games that give one (an ``{"observation", "action_mask"}`` dict, or ``action_mask`` in the infos).

The global state is the game's ``state()`` where it has one (MPE, SISL: ``has_state``), else every agent's
observation concatenated. An agent that finishes before its game does (PettingZoo drops it from ``env.agents``)
shows its final state once; then its slot is not ``alive`` (done, a zero observation and reward) until its
copy resets. A copy's episode ends when all its agents' have (or ``env.max_episode_steps`` steps cut it short),
and it resets on the next step (``rlconf.environments.teams``). Game ``k`` of copy ``i`` in a run seeded ``s``
is seeded from (``s``, ``i``, ``k``), so runs reproduce, whichever sampler steps them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.core.team import TeamState
from rlconf.environments.pettingzoo import import_env_module
from rlconf.environments.pettingzoo_copies import Copies, OutputSpecs, Placed, Plan, SampledCopies
from rlconf.environments.teams import TeamEnvironment, check_team_options, concatenated_space, float_box
from rlconf.errors import ConfigError

IMAGE_FAMILIES = "pettingzoo_butterfly (pixel games: pettingzoo/pistonball), pettingzoo_atari"


class ParallelTeamEnvironment(TeamEnvironment):
    """``n_envs`` copies of the PettingZoo parallel game ``env_id`` (see the module's docstring), stepped in this
    process (``sampler="serial"``) or by ``workers`` worker processes (``"parallel"``)."""

    serial_only = None  # hardware.sampler=parallel: SampledCopies

    def __init__(self, env_id: str, n_envs: int = 1, *, kwargs: dict | None = None, vectorization: str = "auto",
                 max_episode_steps: int | None = None, device: str | torch.device = "cpu", name: str | None = None,
                 render_mode: str | None = None, wrappers: Sequence[Callable] = (), seed: int | None = None,
                 sampler: str = "serial", workers: int = 1):
        check_team_options("pettingzoo_parallel", vectorization, wrappers)
        if sampler not in ("serial", "parallel"):
            raise ConfigError(f"hardware.sampler={sampler}: a team environment's copies step together; "
                              "allowed: serial, parallel")
        module = import_env_module(env_id)
        if not hasattr(module, "parallel_env"):
            raise ConfigError(f"env.id={env_id}: not a PettingZoo parallel game (its module has no parallel_env()); "
                              "e.g. mpe2.simple_spread_v3, pettingzoo.sisl.multiwalker_v9")
        self.name = name or env_id
        self.n_envs = n_envs
        self.device = torch.device(device)
        self.max_episode_steps = max_episode_steps
        self._seed = seed  # the copies' games' seeds until reset names one
        # Serial: every copy here, copy 0 rendering (rlconf watch, videos). Parallel: one game here to describe them.
        serial = sampler == "serial"
        self.envs = [module.parallel_env(**({"render_mode": render_mode} if i == 0 and render_mode else {}),
                                         **dict(kwargs or {})) for i in range(n_envs if serial else 1)]
        first = self.envs[0]
        self.simulator_fps = first.metadata.get("render_fps")  # videos in real time
        if hasattr(first.unwrapped, "continuous_actions"):  # MPE's games switch their action kind
            self.action_kind_option = "env.kwargs.continuous_actions"
        agents = list(first.possible_agents)
        # One game played to its start tells whether it has a global state and action masks in its infos.
        _, infos = first.reset(seed=seed)
        observation_spaces = {a: self._observation_space(first.observation_space(a), a, env_id) for a in agents}
        action_spaces = {a: first.action_space(a) for a in agents}
        self.has_state = _has_state(first)
        state_space = (float_box(first.state_space, env_id, "states") if self.has_state
                       else concatenated_space([observation_spaces[a] for a in agents]))
        self._set_groups(env_id, agents, observation_spaces, action_spaces, state_space, self.has_state)
        self._agents = self._placed(first, agents)
        in_infos = all("action_mask" in infos.get(a, {}) for a in agents)
        discrete = all(isinstance(space, gym.spaces.Discrete) for space in action_spaces.values())
        self.masks_actions = discrete and (all(a.masked_observation for a in self._agents) or in_infos)
        self._plan = Plan(tuple(self._agents), {g: group.action_space for g, group in self.agent_groups.items()},
                          self.masks_actions, self.has_state, max_episode_steps, self._output_specs())
        self._open_books()
        self._pending = np.zeros(n_envs, dtype=bool)  # ended on the last step: reset on the next
        self._copies: Copies | SampledCopies
        if serial:
            self._copies = Copies(self.envs, 0, self._plan, seed)
        else:
            first.close()
            self.envs = []
            self._copies = SampledCopies(env_id, dict(kwargs or {}), n_envs, workers, self._plan, seed)

    def _observation_space(self, space: gym.Space, agent: str, env_id: str) -> gym.spaces.Box:
        """What ``agent`` sees of ``space``: a float32 vector (the observation of a dict with an action mask)."""
        if isinstance(space, gym.spaces.Dict) and {"observation", "action_mask"} <= set(space.spaces):
            space = space["observation"]
        if isinstance(space, gym.spaces.Box) and (len(space.shape) == 3 or space.dtype == np.uint8):
            raise ConfigError(f"env.id={env_id}: {agent}'s observations {space} are images; the pettingzoo_parallel "
                              f"family takes vectors; games seen in pixels: {IMAGE_FAMILIES}")
        return float_box(space, env_id, f"{agent}'s observations")

    def _placed(self, env: Any, agents: list[str]) -> list[Placed]:
        placed = []
        for index, agent in enumerate(agents):
            group = next(g for g, members in self.agent_groups.items() if agent in members.agents)
            space = env.observation_space(agent)
            masked = isinstance(space, gym.spaces.Dict) and "action_mask" in space.spaces
            placed.append(Placed(agent, group, self.agent_groups[group].agents.index(agent), index, masked))
        return placed

    # -- the public interface ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> TeamState:
        """Every copy's first state; the copies' games are seeded from ``seed`` (else the constructor's)."""
        self._seed = seed if seed is not None else self._seed
        self._restart_books()
        out = self._copies.reset(self._seed)
        self._pending[:] = False
        return self._finish(out)

    def step(self, actions: dict[str, torch.Tensor]) -> TeamState:
        """Apply each group's actions, ``(n_envs, agents, *action_shape)``: those of agents still in their game;
        copies that ended on the last step start their next game instead."""
        chosen = {group: value.detach().cpu().numpy() for group, value in actions.items()}
        acted = ~self._pending
        out = self._copies.step(chosen, self._pending)
        ended = out["done"].all(axis=1)
        state = self._finish(out)
        self._keep_books(self._tensor(out["reward"]), self._tensor(acted), self._tensor(ended))
        self._pending = ended
        return state

    def render(self) -> Any:
        """Copy 0's rendering (built with ``render_mode``: rlconf watch's rgb_array)."""
        return self.envs[0].render()

    def close(self) -> None:
        self._copies.close()

    # -- copies and their outputs --------------------------------------------------------------------------
    def _output_specs(self) -> OutputSpecs:
        """The arrays of one step (``pettingzoo_copies.outputs``): each copy's shape, dtype and blank value."""
        count = len(self.agents)
        specs: OutputSpecs = {("observation", g): ((group.size, *group.observation_space.shape), np.float32, 0)
                              for g, group in self.agent_groups.items()}
        specs |= {("reward",): ((count,), np.float32, 0), ("done",): ((count,), np.bool_, 0),
                  ("terminated",): ((count,), np.bool_, 0), ("alive",): ((count,), np.bool_, 0)}
        if self.has_state:
            specs[("state",)] = (next(iter(self.agent_groups.values())).state_space.shape, np.float32, 0)
        if self.masks_actions:  # an agent out of its game may take any action (nothing reads it)
            specs |= {("action_mask", g): ((group.size, int(group.action_space.n)), np.bool_, 1)
                      for g, group in self.agent_groups.items()}
        return specs

    def _finish(self, out: dict[str, Any]) -> TeamState:
        """The TeamState of ``out``."""
        observations = {g: self._tensor(x) for g, x in out["observation"].items()}
        if self.has_state:
            global_state = self._tensor(out["state"])
        else:
            global_state = torch.cat([observations[a.group][:, a.slot].reshape(self.n_envs, -1)
                                      for a in self._agents], dim=1)
        masks = ({g: self._tensor(x) for g, x in out["action_mask"].items()} if self.masks_actions else None)
        return self._team_state(observations, self._tensor(out["reward"]), self._tensor(out["done"]),
                                self._tensor(out["terminated"]), self._tensor(out["alive"]), global_state, masks)

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(array).to(self.device)


def _has_state(env: Any) -> bool:
    """Whether the game (just reset) gives a global state: a ``state_space`` and a ``state()`` that works."""
    if getattr(env, "state_space", None) is None:
        return False
    try:
        env.state()
    except NotImplementedError:
        return False
    return True
