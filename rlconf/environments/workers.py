"""The samplers' worker processes and the shared memory they step into: what the single-agent samplers
(``rlconf.environments.parallel``) and the team sampler (``rlconf.environments.pettingzoo_copies``) share.

A worker is a spawned process pinned to its share of the run's cores (when there are enough), talking with the
run's process through a pipe in messages of one byte (``STEP``, ``RESET``, ``CLOSE``; ``DONE`` or ``FAILED``
back) and reading and writing its copies' rows of arrays in shared memory: nothing is pickled per step.

A worker ignores SIGINT and SIGTERM (a Ctrl-C or a Slurm preemption reaches the whole process group: the run's
process answers it and closes the workers) and leaves when its pipe closes, so a run killed with -9 leaves no
worker behind. A worker that fails or dies is a ``SamplerError`` naming it and what it said.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing as mp
import os
import signal
import sys
import traceback
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np

from rlconf.process import die_with_parent

# One-byte messages: the run's process -> a worker
STEP, RESET, CLOSE = b"s", b"r", b"c"
# a worker -> the run's process (DONE may carry a payload after its byte)
DONE, FAILED = b"k", b"e"

# How long the run's process waits for a worker's answer before checking that it is still alive.
_POLL_SECONDS = 1.0

# Workers and shared arrays still open, closed at exit before multiprocessing's own exit handler, which would wait
# for ever for workers that ignore its SIGTERM.
_OPEN: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for opened in list(_OPEN):
        with contextlib.suppress(Exception):
            opened.close()


class SamplerError(RuntimeError):
    """A sampler worker failed (its exception's last line) or died (its exit code)."""


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


# -- shared memory -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArrayLayout:
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


class SharedArrays:
    """Named arrays in shared memory, made by the run's process from ``specs`` (name -> shape, dtype):
    ``arrays`` here, ``layout`` for the workers to ``attach``."""

    def __init__(self, specs: dict[str, tuple[Sequence[int], Any]]):
        self._memories: list[SharedMemory] = []
        self.layout: dict[str, ArrayLayout] = {}
        self.arrays: dict[str, np.ndarray] = {}
        _OPEN.add(self)
        for name, (shape, dtype) in specs.items():
            size = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
            memory = SharedMemory(create=True, size=size)
            self._memories.append(memory)
            self.layout[name] = ArrayLayout(memory.name, tuple(shape), np.dtype(dtype).str)
            self.arrays[name] = np.ndarray(tuple(shape), np.dtype(dtype), buffer=memory.buf)

    def close(self) -> None:
        self.arrays = {}
        for memory in self._memories:
            memory.close()
            memory.unlink()
        self._memories = []


def attach(layout: dict[str, ArrayLayout], part: range) -> tuple[list[SharedMemory], dict[str, np.ndarray]]:
    """In a worker: the rows ``part`` of every array of ``layout`` (views), and the memories to close."""
    memories, arrays = [], {}
    for name, array_layout in layout.items():
        memory, array = array_layout.attach()
        memories.append(memory)
        arrays[name] = array[part.start:part.stop]
    return memories, arrays


# -- the processes -------------------------------------------------------------------------------------------
class Workers:
    """Worker processes, worker ``index`` running ``serve(connection, *arguments[index])`` (picklable: a
    module-level function) until it returns or its pipe closes."""

    def __init__(self, serve: Callable[..., None], arguments: Sequence[tuple]):
        self.processes: list[mp.process.BaseProcess] = []
        self._connections: list[Connection] = []
        _OPEN.add(self)
        context = mp.get_context("spawn")  # no fork of a process that holds torch's threads
        cores = worker_cores(len(arguments))
        try:
            for index, args in enumerate(arguments):
                ours, theirs = context.Pipe()
                process = context.Process(target=_live, args=(serve, args, theirs, cores[index]),
                                          name=f"rlconf-sampler-{index}", daemon=True)
                process.start()
                theirs.close()
                self.processes.append(process)
                self._connections.append(ours)
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self.processes)

    def send(self, index: int, message: bytes) -> None:
        """Tell worker ``index`` ``message``; one that has gone is a SamplerError."""
        try:
            self._connections[index].send_bytes(message)
        except OSError:  # its end of the pipe closed: it died
            self.processes[index].join(_POLL_SECONDS)
            raise SamplerError(f"sampler worker {index} died (exit code {self.processes[index].exitcode})") from None

    def answer(self, index: int) -> bytes:
        """Worker ``index``'s next message (what follows DONE); its failure or death is a SamplerError."""
        connection, process = self._connections[index], self.processes[index]
        while not wait([connection], _POLL_SECONDS):
            if not process.is_alive():
                raise SamplerError(f"sampler worker {index} died (exit code {process.exitcode})")
        try:
            message = connection.recv_bytes()
        except (EOFError, OSError):
            process.join(_POLL_SECONDS)
            raise SamplerError(f"sampler worker {index} died (exit code {process.exitcode})") from None
        if message[:1] == FAILED:
            raise SamplerError(f"sampler worker {index}: {message[1:].decode(errors='replace')}")
        return message[1:] if message[:1] == DONE else message

    def close(self) -> None:
        """Tell every worker to close, and wait for it (killing one that does not leave)."""
        for connection in self._connections:
            with contextlib.suppress(OSError):  # a worker that has gone
                connection.send_bytes(CLOSE)
        for process in self.processes:
            process.join(5)
            if process.is_alive():  # it ignores SIGTERM (see the module's docstring)
                process.kill()
                process.join()
        for connection in self._connections:
            connection.close()
        self.processes, self._connections = [], []


def _live(serve: Callable[..., None], args: tuple, connection: Connection, cores: set[int] | None) -> None:
    """A worker's life: ``serve`` until told to close or its pipe closes; a failure reported as its last line."""
    # The run's process answers signals and closes its workers; killed outright, it takes them with it (a worker
    # waiting on shared memory rather than on its pipe would not see the pipe close).
    die_with_parent(mp.parent_process().pid, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if cores:
        os.sched_setaffinity(0, cores)
    try:
        serve(connection, *args)
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass  # the run's process has gone: nothing to answer
    except BaseException as error:  # reported to the run's process, which raises it as a SamplerError
        lines = traceback.format_exception_only(type(error), error)
        with contextlib.suppress(OSError):
            connection.send_bytes(FAILED + lines[-1].strip().encode())
