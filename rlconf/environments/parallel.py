"""Samplers: where a run's training environments step (``hardware.sampler``).

- ``serial``: in this process, through gymnasium's own vectorisation (``hardware.vectorization``).
- ``parallel``: in worker processes (``hardware.cpus_per_run`` of them, at most one per copy), each stepping a
  contiguous share of the copies, the agent's batched inference staying in this process. Observations, rewards,
  flags and the info keys the adapter reads are written by the workers into shared memory, and the actions by
  this process; a step costs one byte each way through a pipe per worker ("step", "stepped"): nothing is
  pickled per step. Each worker is pinned to its share of this process's cores when there are enough of them
  (rlpyt's affinity), so the simulators' own threads (ale-py's) stay on their worker's cores.
- ``alternating``: the workers in two groups (at least one worker each), so that one group steps while the
  agent chooses the other group's actions (rlpyt's alternating sampler; the loop: ``experiments.experiment``).

``SharedMemoryVectorEnv`` is a gymnasium vector env, so the family adapters (GymVectorEnvironment and its
kin) adopt it exactly as they adopt gymnasium's. Within a worker the copies are the family's own vector env
of that share, so semantics are unchanged: next-step autoreset, truncations, ``reset_mask``. Copy ``i`` is
seeded ``seed + i`` as in gymnasium's sync and async vector envs: a run whose copies are seeded one by one
(``vectorization=sync``; ale-py's native games) plays the same trajectories whichever sampler steps them.

The worker processes and shared memory: ``rlconf.environments.workers`` (a worker that fails or dies is a
``SamplerError`` naming it; a run killed with -9 leaves no worker behind).
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np

from rlconf.environments.workers import (  # the samplers' public names
    CLOSE,
    DONE,
    RESET,
    STEP,
    SamplerError,
    SharedArrays,
    Workers,
    attach,
    shares,
    worker_cores,
)

__all__ = ["SamplerError", "SharedMemoryVectorEnv", "sampled_vector_env", "shares", "worker_cores"]


def sampled_vector_env(make: Callable[[int], gym.vector.VectorEnv], n_envs: int, sampler: str, workers: int,
                       info_keys: dict[str, Any] | None = None) -> gym.vector.VectorEnv:
    """The vector env of ``n_envs`` copies that ``sampler`` steps: ``make(n_envs)`` in this process (serial),
    or ``make(share)`` in each of ``workers`` worker processes (parallel), in two groups (alternating)."""
    if sampler == "serial":
        return make(n_envs)
    return SharedMemoryVectorEnv(make, n_envs, workers, info_keys, groups=2 if sampler == "alternating" else 1)


class SharedMemoryVectorEnv(gym.vector.VectorEnv):
    """``n_envs`` copies stepped by worker processes, ``make(k)`` building each worker's vector env of ``k``
    copies (picklable: a module-level function or a partial of one). ``info_keys``: the keys of ``info`` the
    adapter reads, with their dtypes (Atari's lives); they are passed back as arrays of one value per copy.

    ``step`` is ``step_async`` then ``step_wait``: this process may work while the copies step. ``groups`` > 1
    splits the workers into that many groups, each of which can be stepped on its own
    (``step_async(actions, group)``)."""

    def __init__(self, make: Callable[[int], gym.vector.VectorEnv], n_envs: int, workers: int,
                 info_keys: dict[str, Any] | None = None, groups: int = 1):
        self.num_envs = n_envs
        self.info_keys = dict(info_keys or {})
        self.closed = False
        self._shared: SharedArrays | None = None
        self.shares = shares(n_envs, max(workers, groups))
        self.groups = _group_workers(len(self.shares), groups)
        self._pending: set[int] = set()  # workers stepping (or resetting) now
        self.workers = Workers(_work, [(make, len(part)) for part in self.shares])
        try:
            described = [pickle.loads(self._answer(i)) for i in range(len(self.shares))]
            self.single_observation_space, self.single_action_space, self.metadata = described[0]
            self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, n_envs)
            self.action_space = gym.vector.utils.batch_space(self.single_action_space, n_envs)
            self._allocate()
        except BaseException:
            self.close()
            raise

    # -- shared memory ---------------------------------------------------------------------------------
    def _allocate(self) -> None:
        """The batched arrays in shared memory, and their layout sent to every worker."""
        n = self.num_envs
        specs = {"observation": ((n, *self.single_observation_space.shape), self.single_observation_space.dtype),
                 "action": ((n, *self.single_action_space.shape), self.single_action_space.dtype),
                 "reward": ((n,), np.float64), "terminated": ((n,), np.bool_), "truncated": ((n,), np.bool_)}
        specs |= {f"info.{key}": ((n,), dtype) for key, dtype in self.info_keys.items()}
        self._shared = SharedArrays(specs)
        self._arrays = self._shared.arrays
        for index, part in enumerate(self.shares):
            self._send(index, pickle.dumps((part, self._shared.layout)))
        for index in range(len(self.shares)):
            self._answer(index)

    # -- the vector env --------------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None):
        """Every copy reset (seeded ``seed + i``, or each from ``seed[i]``), or those of
        ``options["reset_mask"]``; the observations of all copies and the info keys."""
        self._wait_pending()
        seeds = _seeds(seed, self.num_envs)
        mask = None if not options or "reset_mask" not in options else np.asarray(options["reset_mask"], bool)
        asked = []
        for index, part in enumerate(self.shares):
            share_mask = None if mask is None else mask[part.start:part.stop]
            if share_mask is not None and not share_mask.any():
                continue
            share_options = {**(options or {}), **({} if share_mask is None else {"reset_mask": share_mask})}
            payload = pickle.dumps((seeds[part.start:part.stop], share_options or None))
            self._send(index, RESET + payload)
            asked.append(index)
        for index in asked:
            self._answer(index)
        return self._arrays["observation"].copy(), self._info()

    def step(self, actions):
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions, group: int | None = None) -> None:
        """Send ``actions`` (of every copy, or of the copies of ``group``: ``group_copies(group)``) to the
        workers; they step while this process goes on."""
        workers = range(len(self.shares)) if group is None else self.groups[group]
        copies = self.group_copies(group)
        self._arrays["action"][copies.start:copies.stop] = np.asarray(actions).reshape(
            len(copies), *self.single_action_space.shape)
        for index in workers:
            self._send(index, STEP)
            self._pending.add(index)

    def step_wait(self, group: int | None = None):
        """The next observations, rewards, terminated and truncated flags and info of every copy (or of
        ``group``'s), as copies that the next step does not overwrite."""
        workers = range(len(self.shares)) if group is None else self.groups[group]
        for index in workers:
            self._answer(index)
            self._pending.discard(index)
        part = self.group_copies(group)
        arrays = self._arrays
        return (arrays["observation"][part.start:part.stop].copy(), arrays["reward"][part.start:part.stop].copy(),
                arrays["terminated"][part.start:part.stop].copy(), arrays["truncated"][part.start:part.stop].copy(),
                self._info(part))

    def group_copies(self, group: int | None) -> range:
        """The copies the workers of ``group`` step (all of them for None)."""
        if group is None:
            return range(self.num_envs)
        workers = self.groups[group]
        return range(self.shares[workers[0]].start, self.shares[workers[-1]].stop)

    def _info(self, part: range | None = None) -> dict[str, np.ndarray]:
        part = part or range(self.num_envs)
        return {key: self._arrays[f"info.{key}"][part.start:part.stop].copy() for key in self.info_keys}

    def _wait_pending(self) -> None:
        for index in sorted(self._pending):
            self._answer(index)
        self._pending.clear()

    def _send(self, index: int, message: bytes) -> None:
        self.workers.send(index, message)

    def _answer(self, index: int) -> bytes:
        return self.workers.answer(index)

    def close(self, **kwargs) -> None:
        if getattr(self, "closed", True) and not getattr(self, "workers", None):
            return
        self.closed = True
        if getattr(self, "workers", None) is not None:
            self.workers.close()
            self.workers = None
        self._arrays = {}
        if self._shared is not None:
            self._shared.close()
            self._shared = None

    def __del__(self):
        with contextlib.suppress(Exception):
            self.close()


def _group_workers(workers: int, groups: int) -> list[list[int]]:
    """The workers of each group: contiguous, as even as can be."""
    return [list(part) for part in shares(workers, groups)]


def _seeds(seed, n: int) -> list[int | None]:
    if seed is None:
        return [None] * n
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + i for i in range(n)]
    seeds = list(seed)
    if len(seeds) != n:
        raise ValueError(f"{len(seeds)} seeds for {n} copies")
    return seeds


# -- the worker --------------------------------------------------------------------------------------------
def _work(connection: Connection, make: Callable[[int], gym.vector.VectorEnv], n: int) -> None:
    """A worker's life (``workers.Workers``): build its copies, describe them, attach the shared arrays, then
    answer step and reset until told to close."""
    env = None
    memories: list = []
    try:
        env = make(n)
        connection.send_bytes(DONE + pickle.dumps((env.single_observation_space, env.single_action_space,
                                                   dict(env.metadata))))
        part, layout = pickle.loads(connection.recv_bytes())
        memories, arrays = attach(layout, part)
        info_keys = [name.removeprefix("info.") for name in arrays if name.startswith("info.")]
        connection.send_bytes(DONE)
        _serve(env, connection, arrays, info_keys)
    finally:
        if env is not None:
            env.close()
        for memory in memories:
            memory.close()


def _seed_argument(seeds: list[int | None]) -> int | list[int | None] | None:
    """What a vector env's ``reset(seed=...)`` takes for these per-copy seeds: None, the first of consecutive
    seeds (every vector env, ale-py's native one included, seeds copy i with seed + i), or the list."""
    if all(seed is None for seed in seeds):
        return None
    if all(seed is not None for seed in seeds) and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return seeds[0]
    return seeds


def _serve(env: gym.vector.VectorEnv, connection: Connection, arrays: dict[str, np.ndarray],
           info_keys: list[str]) -> None:
    while True:
        message = connection.recv_bytes()
        command = message[:1]
        if command == STEP:
            observation, reward, terminated, truncated, info = env.step(arrays["action"])
        elif command == RESET:
            seeds, options = pickle.loads(message[1:])
            observation, info = env.reset(seed=_seed_argument(seeds), options=options)
            if options and "reset_mask" in options:  # only the masked copies' observations changed
                mask = options["reset_mask"]
                arrays["observation"][mask] = np.asarray(observation)[mask]
                connection.send_bytes(DONE)
                continue
            arrays["observation"][:] = observation
            for key in info_keys:
                arrays[f"info.{key}"][:] = info[key]
            connection.send_bytes(DONE)
            continue
        elif command == CLOSE:
            return
        else:
            raise ValueError(f"unknown sampler command {command!r}")
        arrays["observation"][:] = observation
        arrays["reward"][:] = reward
        arrays["terminated"][:] = terminated
        arrays["truncated"][:] = truncated
        for key in info_keys:
            arrays[f"info.{key}"][:] = info[key]
        connection.send_bytes(DONE)
