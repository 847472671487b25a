"""The copies of a PettingZoo parallel game that ``ParallelTeamEnvironment`` steps, one by one: in the run's
process (``Copies``: ``hardware.sampler=serial``) or in worker processes, each stepping a contiguous share of
them into shared memory (``SampledCopies``: ``hardware.sampler=parallel``; the workers:
``rlconf.environments.workers``).

A step writes each copy's outputs into the arrays of ``outputs``: every group's observations (and action
masks), and each agent's reward, done, terminated and alive flags, ``(n_envs, agents)``, and the game's state;
the environment makes them a ``TeamState`` and keeps the episodes' books. Game ``k`` of copy ``i`` in a run
seeded ``s`` is seeded ``game_seed(game_seed(s, i), k)`` whichever process plays it, so a seeded run plays the
same games under either sampler.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np

from rlconf.environments.pettingzoo import game_seed, import_env_module
from rlconf.environments.workers import CLOSE, DONE, RESET, STEP, SharedArrays, Workers, attach, shares

# An output array: its name ("reward", or ("observation", group)), each copy's shape, its dtype and the value
# a copy's slot holds until the step writes it.
OutputSpecs = dict[tuple[str, ...], tuple[tuple[int, ...], Any, int]]


@dataclass(frozen=True)
class Placed:
    """Where one agent's outputs go: its group, its place in the group and among all agents."""

    name: str
    group: str
    slot: int  # in its group
    index: int  # among all agents
    masked_observation: bool  # raw observations are {"observation", "action_mask"} dicts


@dataclass(frozen=True)
class Plan:
    """What stepping a copy takes besides its game (picklable: a worker gets it): the agents, each group's
    action space, whether the game masks actions and gives a global state, the time limit, the outputs."""

    agents: tuple[Placed, ...]
    action_spaces: dict[str, gym.Space]
    masks_actions: bool
    has_state: bool
    max_episode_steps: int | None
    outputs: OutputSpecs


def outputs(specs: OutputSpecs, n: int) -> dict[str, Any]:
    """Blank arrays for one step of ``n`` copies, by name (``out["observation"][group]``, ``out["reward"]``)."""
    return _nest({key: (np.zeros((n, *shape), dtype) if fill == 0 else np.ones((n, *shape), dtype))
                  for key, (shape, dtype, fill) in specs.items()})


def _nest(flat: dict[tuple[str, ...], np.ndarray]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for key, array in flat.items():
        if len(key) == 1:
            nested[key[0]] = array
        else:
            nested.setdefault(key[0], {})[key[1]] = array
    return nested


class Copies:
    """Games stepped one by one in this process: copies ``first``, ``first + 1``, ... of the run's."""

    def __init__(self, envs: Sequence[Any], first: int, plan: Plan, seed: int | None):
        self.envs = list(envs)
        self.first = first
        self.plan = plan
        self.seed = seed  # the games' seeds come from it (reset names a new one)
        n, count = len(self.envs), len(plan.agents)
        self._games = [0] * n
        self._lengths = np.zeros(n, np.int64)  # steps into each copy's episode (for the time limit)
        self._last_state: list[np.ndarray | None] = [None] * n  # each copy's last state() (_global_state)
        # Whether each agent's episode ended in a termination (not a truncation): its mask once it is out.
        self._out_terminated = np.zeros((n, count), dtype=bool)

    def reset(self, seed: int | None) -> dict[str, Any]:
        """Every copy's first state (its games seeded from ``seed``), in arrays of their own."""
        out = outputs(self.plan.outputs, len(self.envs))
        self.reset_into(seed, out)
        return out

    def step(self, chosen: dict[str, np.ndarray], pending: np.ndarray) -> dict[str, Any]:
        """One step of every copy (``step_into``), in arrays of their own."""
        out = outputs(self.plan.outputs, len(self.envs))
        self.step_into(chosen, out, pending)
        return out

    def reset_into(self, seed: int | None, out: dict[str, Any]) -> None:
        """Every copy's first game, seeded from ``seed``, into the blank ``out``."""
        self.seed = seed
        self._games = [0] * len(self.envs)
        for i in range(len(self.envs)):
            self.start(i, out)

    def step_into(self, chosen: dict[str, np.ndarray], out: dict[str, Any], pending: np.ndarray) -> None:
        """One step of every copy into the blank ``out``: ``chosen`` each group's actions ``(copies, agents,
        ...)`` for the agents still in their game; the ``pending`` copies (ended on the last step) start their
        next game instead."""
        plan = self.plan
        for i, env in enumerate(self.envs):
            if pending[i]:
                self.start(i, out)
                continue
            joint = {a.name: self._action(a, chosen[a.group][i, a.slot]) for a in plan.agents if a.name in env.agents}
            observations, rewards, terminations, truncations, infos = env.step(joint)
            self._lengths[i] += 1
            limit = bool(plan.max_episode_steps) and int(self._lengths[i]) >= plan.max_episode_steps
            over = not env.agents or limit  # PettingZoo drops agents as they finish; the time limit ends all
            for agent in plan.agents:
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
            if plan.has_state:
                out["state"][i] = self._global_state(i, finishing=bool(out["done"][i].any()))

    def start(self, i: int, out: dict[str, Any]) -> None:
        """Copy ``i``'s next game: its first state into ``out`` (reward 0, nobody done)."""
        seed = None if self.seed is None else game_seed(game_seed(self.seed, self.first + i), self._games[i])
        self._games[i] += 1
        self._lengths[i] = 0
        observations, infos = self.envs[i].reset(seed=seed)
        for agent in self.plan.agents:
            if agent.name in observations:
                self._put(out, i, agent, observations[agent.name], infos.get(agent.name, {}))
                out["alive"][i, agent.index] = True
        self._out_terminated[i] = False
        if self.plan.has_state:
            out["state"][i] = self._global_state(i, finishing=False)

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def _global_state(self, i: int, finishing: bool) -> np.ndarray:
        """Copy ``i``'s ``state()``. Some games cannot give it once agents are gone (multiwalker's fallen walker
        has no hull): an agent's final step then shows the copy's last state the game gave."""
        try:
            self._last_state[i] = self.envs[i].state()
        except Exception:
            if not finishing:
                raise
        return self._last_state[i]

    def _put(self, out: dict[str, Any], i: int, agent: Placed, raw: Any, info: dict) -> None:
        """``agent``'s observation (and action mask) in copy ``i``."""
        observation = raw["observation"] if agent.masked_observation else raw
        out["observation"][agent.group][i, agent.slot] = observation
        if self.plan.masks_actions:
            mask = raw["action_mask"] if agent.masked_observation else info.get("action_mask")
            if mask is not None:
                out["action_mask"][agent.group][i, agent.slot] = np.asarray(mask, bool)

    def _action(self, agent: Placed, action: np.ndarray) -> Any:
        """The action as PettingZoo takes it: an int for Discrete spaces, a clipped array for Box ones."""
        space = self.plan.action_spaces[agent.group]
        if isinstance(space, gym.spaces.Discrete):
            return int(action)
        if isinstance(space, gym.spaces.Box):
            return np.clip(np.asarray(action, dtype=space.dtype).reshape(space.shape), space.low, space.high)
        return action


class SampledCopies:
    """``n_envs`` copies of the game ``env_id`` (``parallel_env(**kwargs)``) stepped by ``workers`` worker
    processes, each a ``Copies`` of its share; this process writes the actions into shared memory and reads
    the outputs back (``reset`` and ``step`` answer as ``Copies``' do)."""

    def __init__(self, env_id: str, kwargs: dict, n_envs: int, workers: int, plan: Plan, seed: int | None):
        self.n_envs = n_envs
        self.plan = plan
        self.shares = shares(n_envs, workers)
        specs = {"/".join(key): ((n_envs, *shape), dtype) for key, (shape, dtype, _) in plan.outputs.items()}
        specs |= {f"action/{group}": ((n_envs, plan.outputs[("observation", group)][0][0], *space.shape), space.dtype)
                  for group, space in plan.action_spaces.items()}
        specs["pending"] = ((n_envs,), np.bool_)
        self._shared: SharedArrays | None = None
        self.workers: Workers | None = None
        try:
            self._shared = SharedArrays(specs)
            self.workers = Workers(_serve, [(env_id, kwargs, part, plan, seed, self._shared.layout)
                                            for part in self.shares])
            self._answer_all()
        except BaseException:
            self.close()
            raise
        arrays = self._shared.arrays
        self._outputs = {key: arrays["/".join(key)] for key in plan.outputs}
        self._actions = {group: arrays[f"action/{group}"] for group in plan.action_spaces}
        self._pending = arrays["pending"]

    def reset(self, seed: int | None) -> dict[str, Any]:
        """Every copy's first state (its games seeded from ``seed``)."""
        payload = pickle.dumps(seed)
        for index in range(len(self.shares)):
            self.workers.send(index, RESET + payload)
        return self._collected()

    def step(self, chosen: dict[str, np.ndarray], pending: np.ndarray) -> dict[str, Any]:
        """One step of every copy (see ``Copies.step_into``)."""
        for group, actions in chosen.items():
            self._actions[group][:] = actions.reshape(self._actions[group].shape)
        self._pending[:] = pending
        for index in range(len(self.shares)):
            self.workers.send(index, STEP)
        return self._collected()

    def _collected(self) -> dict[str, Any]:
        """The workers' outputs, once all have answered, as arrays the next step does not overwrite."""
        self._answer_all()
        return _nest({key: array.copy() for key, array in self._outputs.items()})

    def _answer_all(self) -> None:
        for index in range(len(self.shares)):
            self.workers.answer(index)

    def close(self) -> None:
        if self.workers is not None:
            self.workers.close()
            self.workers = None
        if self._shared is not None:
            self._shared.close()
            self._shared = None


def _serve(connection: Connection, env_id: str, kwargs: dict, part: range, plan: Plan, seed: int | None,
           layout: dict) -> None:
    """A worker's life (``workers.Workers``): build its share of the copies, then answer reset and step, each
    into its rows of the shared outputs, until told to close."""
    copies: Copies | None = None
    memories: list = []
    try:
        module = import_env_module(env_id)
        copies = Copies([module.parallel_env(**kwargs) for _ in part], part.start, plan, seed)
        memories, arrays = attach(layout, part)
        flat = {key: arrays["/".join(key)] for key in plan.outputs}
        fills = [(array, plan.outputs[key][2]) for key, array in flat.items()]
        out = _nest(flat)
        chosen = {group: arrays[f"action/{group}"] for group in plan.action_spaces}
        connection.send_bytes(DONE)
        while (message := connection.recv_bytes())[:1] != CLOSE:
            for array, fill in fills:  # blank, as a serial step's fresh arrays are
                array.fill(fill)
            if message[:1] == STEP:
                copies.step_into(chosen, out, arrays["pending"])
            elif message[:1] == RESET:
                copies.reset_into(pickle.loads(message[1:]), out)
            else:
                raise ValueError(f"unknown sampler command {message[:1]!r}")
            connection.send_bytes(DONE)
    finally:
        if copies is not None:
            with contextlib.suppress(Exception):
                copies.close()
        for memory in memories:
            memory.close()
