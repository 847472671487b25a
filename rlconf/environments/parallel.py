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

A worker ignores SIGINT and SIGTERM (a Ctrl-C or a Slurm preemption reaches the whole process group: the
run's process answers it and closes the workers) and leaves when its pipe closes, so a run killed with -9
leaves no worker behind. A worker that fails or dies is a ``SamplerError`` naming it and what it said.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing as mp
import os
import pickle
import signal
import sys
import traceback
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import gymnasium as gym
import numpy as np

# One-byte messages: this process -> a worker
_STEP, _RESET, _CLOSE = b"s", b"r", b"c"
# a worker -> this process
_DONE, _FAILED = b"k", b"e"

# How long this process waits for a worker's answer before checking that it is still alive.
_POLL_SECONDS = 1.0


def sampled_vector_env(make: Callable[[int], gym.vector.VectorEnv], n_envs: int, sampler: str, workers: int,
                       info_keys: dict[str, Any] | None = None) -> gym.vector.VectorEnv:
    """The vector env of ``n_envs`` copies that ``sampler`` steps: ``make(n_envs)`` in this process (serial),
    or ``make(share)`` in each of ``workers`` worker processes (parallel), in two groups (alternating)."""
    if sampler == "serial":
        return make(n_envs)
    return SharedMemoryVectorEnv(make, n_envs, workers, info_keys, groups=2 if sampler == "alternating" else 1)


# The vector envs with workers alive, closed at exit before multiprocessing's own exit handler, which would wait
# for ever for workers that ignore its SIGTERM.
_OPEN: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for env in list(_OPEN):
        with contextlib.suppress(Exception):
            env.close()


class SamplerError(RuntimeError):
    """A sampler worker failed (its exception's last line) or died (its exit code)."""


@dataclass(frozen=True)
class _ArrayLayout:
    """Where one batched array lives in shared memory: a name, a shape and a dtype (picklable)."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def attach(self) -> tuple[SharedMemory, np.ndarray]:
        """The array, in a worker. The run's process created it and unlinks it. (Before Python 3.13 attaching
        registers the name with the resource tracker, which the spawned worker shares with the run's process:
        a second registration of a name it holds, undone by that process's unlink.)"""
        memory = SharedMemory(name=self.name, track=False) if sys.version_info >= (3, 13) else SharedMemory(self.name)
        return memory, np.ndarray(self.shape, np.dtype(self.dtype), buffer=memory.buf)


def shares(n_envs: int, workers: int) -> list[range]:
    """The copies each worker steps: contiguous, as even as can be, every worker at least one."""
    workers = max(1, min(workers, n_envs))
    bounds = [round(i * n_envs / workers) for i in range(workers + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(workers)]


def worker_cores(workers: int) -> list[set[int] | None]:
    """The cores each worker is pinned to: this process's cores divided among them when each can have at
    least one, else None (not pinned: the scheduler decides)."""
    try:
        cores = sorted(os.sched_getaffinity(0))
    except AttributeError:  # macOS: no affinity
        return [None] * workers
    if len(cores) < workers:
        return [None] * workers
    return [set(cores[part.start:part.stop]) for part in shares(len(cores), workers)]


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
        self._memories: list[SharedMemory] = []
        self._processes: list[mp.process.BaseProcess] = []
        self._connections: list[Connection] = []
        self.shares = shares(n_envs, max(workers, groups))
        self.groups = _group_workers(len(self.shares), groups)
        self._pending: set[int] = set()  # workers stepping (or resetting) now
        _OPEN.add(self)
        context = mp.get_context("spawn")  # no fork of a process that holds torch's threads
        cores = worker_cores(len(self.shares))
        try:
            for index, part in enumerate(self.shares):
                ours, theirs = context.Pipe()
                process = context.Process(target=_work, args=(index, make, len(part), theirs, cores[index]),
                                          name=f"rlconf-sampler-{index}", daemon=True)
                process.start()
                theirs.close()
                self._processes.append(process)
                self._connections.append(ours)
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
        layout: dict[str, _ArrayLayout] = {}
        self._arrays: dict[str, np.ndarray] = {}
        for name, (shape, dtype) in specs.items():
            size = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
            memory = SharedMemory(create=True, size=size)
            self._memories.append(memory)
            layout[name] = _ArrayLayout(memory.name, tuple(shape), np.dtype(dtype).str)
            self._arrays[name] = np.ndarray(shape, np.dtype(dtype), buffer=memory.buf)
        for index, part in enumerate(self.shares):
            self._send(index, pickle.dumps((part.start, part.stop, layout)))
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
            self._send(index, _RESET + payload)
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
            self._send(index, _STEP)
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
        """Tell worker ``index`` ``message``; one that has gone is a SamplerError."""
        try:
            self._connections[index].send_bytes(message)
        except OSError:  # its end of the pipe closed: it died
            self._processes[index].join(_POLL_SECONDS)
            raise SamplerError(f"sampler worker {index} died (exit code {self._processes[index].exitcode})") from None

    def _answer(self, index: int) -> bytes:
        """Worker ``index``'s next message; its failure or death is a SamplerError."""
        connection, process = self._connections[index], self._processes[index]
        while not wait([connection], _POLL_SECONDS):
            if not process.is_alive():
                raise SamplerError(f"sampler worker {index} died (exit code {process.exitcode})")
        try:
            message = connection.recv_bytes()
        except (EOFError, OSError):
            process.join(_POLL_SECONDS)
            raise SamplerError(f"sampler worker {index} died (exit code {process.exitcode})") from None
        if message[:1] == _FAILED:
            raise SamplerError(f"sampler worker {index}: {message[1:].decode(errors='replace')}")
        return message[1:] if message[:1] == _DONE else message

    def close(self, **kwargs) -> None:
        if getattr(self, "closed", True) and not self._processes:
            return
        self.closed = True
        for connection in self._connections:
            with contextlib.suppress(OSError):  # a worker that has gone
                connection.send_bytes(_CLOSE)
        for process in self._processes:
            process.join(5)
            if process.is_alive():  # it ignores SIGTERM (see the module's docstring)
                process.kill()
                process.join()
        for connection in self._connections:
            connection.close()
        self._processes, self._connections = [], []
        self._arrays = {}
        for memory in self._memories:
            memory.close()
            memory.unlink()
        self._memories = []

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
def _work(index: int, make: Callable[[int], gym.vector.VectorEnv], n: int, connection: Connection,
          cores: set[int] | None) -> None:
    """A worker's life: build its copies, describe them, attach the shared arrays, then answer step and reset
    until told to close or its pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run's process answers signals and closes its workers
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if cores:
        os.sched_setaffinity(0, cores)
    env = None
    memories: list[SharedMemory] = []
    try:
        env = make(n)
        connection.send_bytes(_DONE + pickle.dumps((env.single_observation_space, env.single_action_space,
                                                    dict(env.metadata))))
        start, stop, layouts = pickle.loads(connection.recv_bytes())
        arrays = {}
        for name, layout in layouts.items():
            memory, array = layout.attach()
            memories.append(memory)
            arrays[name] = array[start:stop]
        info_keys = [name.removeprefix("info.") for name in arrays if name.startswith("info.")]
        connection.send_bytes(_DONE)
        _serve(env, connection, arrays, info_keys)
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass  # the run's process has gone: nothing to answer
    except BaseException as error:  # reported to the run's process, which raises it as a SamplerError
        lines = traceback.format_exception_only(type(error), error)
        with contextlib.suppress(OSError):
            connection.send_bytes(_FAILED + lines[-1].strip().encode())
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
        if command == _STEP:
            observation, reward, terminated, truncated, info = env.step(arrays["action"])
        elif command == _RESET:
            seeds, options = pickle.loads(message[1:])
            observation, info = env.reset(seed=_seed_argument(seeds), options=options)
            if options and "reset_mask" in options:  # only the masked copies' observations changed
                mask = options["reset_mask"]
                arrays["observation"][mask] = np.asarray(observation)[mask]
                connection.send_bytes(_DONE)
                continue
            arrays["observation"][:] = observation
            for key in info_keys:
                arrays[f"info.{key}"][:] = info[key]
            connection.send_bytes(_DONE)
            continue
        elif command == _CLOSE:
            return
        else:
            raise ValueError(f"unknown sampler command {command!r}")
        arrays["observation"][:] = observation
        arrays["reward"][:] = reward
        arrays["terminated"][:] = terminated
        arrays["truncated"][:] = truncated
        for key in info_keys:
            arrays[f"info.{key}"][:] = info[key]
        connection.send_bytes(_DONE)
