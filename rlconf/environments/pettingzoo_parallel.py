"""PettingZoo's parallel API as a team: ``n_envs`` copies of a game whose agents all act at once, in this process.

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
is seeded from (``s``, ``i``, ``k``), so runs reproduce.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.core.team import TeamState
from rlconf.environments.pettingzoo import game_seed, import_env_module
from rlconf.environments.teams import TeamEnvironment, check_team_options, concatenated_space, float_box
from rlconf.errors import ConfigError

IMAGE_FAMILIES = "pettingzoo_butterfly (pixel games: pettingzoo/pistonball), pettingzoo_atari"


@dataclass(frozen=True)
class _Agent:
    """Where one agent's outputs go: its group, its place in the group and among all agents."""

    name: str
    group: str
    slot: int  # in its group
    index: int  # among all agents
    masked_observation: bool  # raw observations are {"observation", "action_mask"} dicts


class ParallelTeamEnvironment(TeamEnvironment):
    """``n_envs`` copies of the PettingZoo parallel game ``env_id`` (see the module's docstring)."""

    def __init__(self, env_id: str, n_envs: int = 1, *, kwargs: dict | None = None, vectorization: str = "auto",
                 max_episode_steps: int | None = None, device: str | torch.device = "cpu", name: str | None = None,
                 render_mode: str | None = None, wrappers: Sequence[Callable] = (), seed: int | None = None):
        check_team_options("pettingzoo_parallel", vectorization, wrappers)
        module = import_env_module(env_id)
        if not hasattr(module, "parallel_env"):
            raise ConfigError(f"env.id={env_id}: not a PettingZoo parallel game (its module has no parallel_env()); "
                              "e.g. mpe2.simple_spread_v3, pettingzoo.sisl.multiwalker_v9")
        self.name = name or env_id
        self.n_envs = n_envs
        self.device = torch.device(device)
        self.max_episode_steps = max_episode_steps
        self._seed = seed  # the copies' games' seeds until reset names one
        # Only copy 0 renders (rlconf watch, videos).
        self.envs = [module.parallel_env(**({"render_mode": render_mode} if i == 0 and render_mode else {}),
                                         **dict(kwargs or {})) for i in range(n_envs)]
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
        self._last_state: list[np.ndarray | None] = [None] * n_envs  # each copy's last state() (_global_state)
        self._open_books()
        self._games = [0] * n_envs
        self._pending = np.zeros(n_envs, dtype=bool)  # ended on the last step: reset on the next
        # Whether each agent's episode ended in a termination (not a truncation): its mask once it is out.
        self._out_terminated = np.zeros((n_envs, len(agents)), dtype=bool)

    def _observation_space(self, space: gym.Space, agent: str, env_id: str) -> gym.spaces.Box:
        """What ``agent`` sees of ``space``: a float32 vector (the observation of a dict with an action mask)."""
        if isinstance(space, gym.spaces.Dict) and {"observation", "action_mask"} <= set(space.spaces):
            space = space["observation"]
        if isinstance(space, gym.spaces.Box) and (len(space.shape) == 3 or space.dtype == np.uint8):
            raise ConfigError(f"env.id={env_id}: {agent}'s observations {space} are images; the pettingzoo_parallel "
                              f"family takes vectors; games seen in pixels: {IMAGE_FAMILIES}")
        return float_box(space, env_id, f"{agent}'s observations")

    def _placed(self, env: Any, agents: list[str]) -> list[_Agent]:
        placed = []
        for index, agent in enumerate(agents):
            group = next(g for g, members in self.agent_groups.items() if agent in members.agents)
            space = env.observation_space(agent)
            masked = isinstance(space, gym.spaces.Dict) and "action_mask" in space.spaces
            placed.append(_Agent(agent, group, self.agent_groups[group].agents.index(agent), index, masked))
        return placed

    # -- the public interface ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> TeamState:
        """Every copy's first state; the copies' games are seeded from ``seed`` (else the constructor's)."""
        self._seed = seed if seed is not None else self._seed
        self._games = [0] * self.n_envs
        self._restart_books()
        out = self._outputs()
        for i in range(self.n_envs):
            self._start(i, out)
        self._pending[:] = False
        return self._finish(out)

    def step(self, actions: dict[str, torch.Tensor]) -> TeamState:
        """Apply each group's actions, ``(n_envs, agents, *action_shape)``: those of agents still in their game;
        copies that ended on the last step start their next game instead."""
        chosen = {group: value.detach().cpu().numpy() for group, value in actions.items()}
        out = self._outputs()
        acted = ~self._pending
        for i, env in enumerate(self.envs):
            if self._pending[i]:
                self._start(i, out)
                continue
            joint = {a.name: self._action(a, chosen[a.group][i, a.slot]) for a in self._agents if a.name in env.agents}
            observations, rewards, terminations, truncations, infos = env.step(joint)
            limit = bool(self.max_episode_steps) and int(self._lengths[i]) + 1 >= self.max_episode_steps
            over = not env.agents or limit  # PettingZoo drops agents as they finish; the time limit ends all
            for agent in self._agents:
                if agent.name in observations:
                    terminated = bool(terminations.get(agent.name, False))
                    done = terminated or over or bool(truncations.get(agent.name, False))
                    self._put(out, i, agent, observations[agent.name], infos.get(agent.name, {}))
                    out["reward"][i, agent.index] = rewards.get(agent.name, 0.0)
                    out["done"][i, agent.index] = done
                    out["terminated"][i, agent.index] = terminated
                    out["alive"][i, agent.index] = True
                else:  # out of the game since an earlier step: a zero slot
                    out["done"][i, agent.index] = True
                    out["terminated"][i, agent.index] = self._out_terminated[i, agent.index]
            self._out_terminated[i] = out["terminated"][i]
            if self.has_state:
                out["state"][i] = self._global_state(i, finishing=bool(out["done"][i].any()))
        ended = out["done"].all(axis=1)
        state = self._finish(out)
        self._keep_books(self._tensor(out["reward"]), self._tensor(acted), self._tensor(ended))
        self._pending = ended
        return state

    def render(self) -> Any:
        """Copy 0's rendering (built with ``render_mode``: rlconf watch's rgb_array)."""
        return self.envs[0].render()

    def close(self) -> None:
        for env in self.envs:
            env.close()

    # -- copies and their outputs --------------------------------------------------------------------------
    def _outputs(self) -> dict[str, Any]:
        """Empty arrays for one step of every copy."""
        n, count = self.n_envs, len(self.agents)
        out: dict[str, Any] = {
            "observation": {g: np.zeros((n, group.size, *group.observation_space.shape), np.float32)
                            for g, group in self.agent_groups.items()},
            "reward": np.zeros((n, count), np.float32), "done": np.zeros((n, count), bool),
            "terminated": np.zeros((n, count), bool), "alive": np.zeros((n, count), bool)}
        if self.has_state:
            out["state"] = np.zeros((n, *next(iter(self.agent_groups.values())).state_space.shape), np.float32)
        if self.masks_actions:  # an agent out of its game may take any action (nothing reads it)
            out["action_mask"] = {g: np.ones((n, group.size, int(group.action_space.n)), bool)
                                  for g, group in self.agent_groups.items()}
        return out

    def _start(self, i: int, out: dict[str, Any]) -> None:
        """Copy ``i``'s next game: its first state into ``out`` (reward 0, nobody done)."""
        seed = None if self._seed is None else game_seed(game_seed(self._seed, i), self._games[i])
        self._games[i] += 1
        env = self.envs[i]
        observations, infos = env.reset(seed=seed)
        for agent in self._agents:
            if agent.name in observations:
                self._put(out, i, agent, observations[agent.name], infos.get(agent.name, {}))
                out["alive"][i, agent.index] = True
        self._out_terminated[i] = False
        if self.has_state:
            out["state"][i] = self._global_state(i, finishing=False)

    def _global_state(self, i: int, finishing: bool) -> np.ndarray:
        """Copy ``i``'s ``state()``. Some games cannot give it once agents are gone (multiwalker's fallen walker
        has no hull): an agent's final step then shows the copy's last state the game gave."""
        try:
            self._last_state[i] = self.envs[i].state()
        except Exception:
            if not finishing:
                raise
        return self._last_state[i]

    def _put(self, out: dict[str, Any], i: int, agent: _Agent, raw: Any, info: dict) -> None:
        """``agent``'s observation (and action mask) in copy ``i``."""
        observation = raw["observation"] if agent.masked_observation else raw
        out["observation"][agent.group][i, agent.slot] = observation
        if self.masks_actions:
            mask = raw["action_mask"] if agent.masked_observation else info.get("action_mask")
            if mask is not None:
                out["action_mask"][agent.group][i, agent.slot] = np.asarray(mask, bool)

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

    def _action(self, agent: _Agent, action: np.ndarray) -> Any:
        """The action as PettingZoo takes it: an int for Discrete spaces, a clipped array for Box ones."""
        space = self.agent_groups[agent.group].action_space
        if isinstance(space, gym.spaces.Discrete):
            return int(action)
        if isinstance(space, gym.spaces.Box):
            return np.clip(np.asarray(action, dtype=space.dtype).reshape(space.shape), space.low, space.high)
        return action


def _has_state(env: Any) -> bool:
    """Whether the game (just reset) gives a global state: a ``state_space`` and a ``state()`` that works."""
    if getattr(env, "state_space", None) is None:
        return False
    try:
        env.state()
    except NotImplementedError:
        return False
    return True
