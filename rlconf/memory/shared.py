"""A replay memory shared by two processes: the async runner's acting process writes, its learning process
samples (``hardware.runner=async``).

The rows live in shared memory (CPU: allocated there without touching a page, so a million Atari frames cost
nothing until written; CUDA: shared through torch.multiprocessing's CUDA IPC), and so does every other tensor
of the replay (a sequence replay's recurrent states at its sequence starts). Where the ring stands (its next
row and how many rows are filled) lives in a shared counter that the writer updates after a row is complete,
under a lock the reader takes while it draws and gathers a batch: a batch never holds a half-written row, nor a
row being overwritten. What is gathered is a copy, so the update after it runs without the lock.

A prioritized replay's sum tree lives in shared memory too, and both processes write it: the writer as it
stores (a new transition enters at the largest priority so far, a shared number, or a new sequence at its input
priority; the transitions its rows invalidate drop to zero), the reader as it updates the priorities of the
batch it drew. Each holds the same lock for its whole change, so no sum is computed from a leaf the other is
changing. The update comes after the learner's optimiser step, outside the lock that covered the draw: the
writer may have overwritten some of the drawn rows meanwhile, and their slots hold new transitions, which keep
their own priorities (a count of the rows stored says which). Only the learner draws, so the importance
weights' ``beta`` follows the learner's clock.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from typing import Any

import torch

from rlconf.memory.replay import NStepReplayBuffer, ReplayBuffer


def shared_empty_like(tensor: torch.Tensor) -> torch.Tensor:
    """An uninitialised CPU tensor shaped like ``tensor`` in shared memory, its pages untouched (torch's
    ``share_memory_`` would copy the whole of it, touching every page of a 7 GB buffer)."""
    storage = torch.UntypedStorage._new_shared(tensor.numel() * tensor.element_size())
    return torch.empty(0, dtype=tensor.dtype).set_(storage, 0, tensor.shape, tensor.stride())


LOOK_SECONDS = 1.0  # a wait for the lock looks this often whether the process sharing it still lives


class WatchedLock:
    """A multiprocessing lock shared with another process, whose waits look every LOOK_SECONDS whether that
    process still lives (``check``, which raises if it does not): a process killed while it holds the lock
    (``kill -9``, the kernel's OOM killer) never releases it, and a wait that never looked would last forever.
    Pickled, it is the lock alone: each process watches its own partner."""

    def __init__(self, lock, check: Callable[[], None] | None = None):
        self.lock = lock
        self.check = check

    def __enter__(self) -> WatchedLock:
        while not self.lock.acquire(timeout=LOOK_SECONDS):
            if self.check is not None:
                self.check()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.lock.release()

    def __getstate__(self) -> dict:
        return {"lock": self.lock, "check": None}


def _base(replay) -> ReplayBuffer:
    return replay.buffer if isinstance(replay, NStepReplayBuffer) else replay


class SharedReplay:
    """``replay`` (a ReplayBuffer, uniform or prioritized, possibly n-step, or a SequenceReplay) with its tensors
    and priorities shared; build it in the learning process (``share``), hand ``handles()`` to the acting
    process, which ``attach``es its own replay to them."""

    def __init__(self, replay, counters: torch.Tensor, lock, priorities: dict[str, torch.Tensor] | None = None):
        self.replay = replay
        self.base = _base(replay)
        self.counters = counters  # [next_row, filled, rows stored since shared], shared
        self.lock = lock  # the learner's a WatchedLock (``share``), the acting process's the bare lock (``attach``)
        self.priorities = priorities  # {"tree", "max_priority"}, shared; None for uniform sampling
        self._drawn = (self.base.newest_row, int(counters[2]))  # the newest row and the rows stored at the last draw

    @classmethod
    def share(cls, replay, context=None, mask_width: int | None = None) -> SharedReplay:
        """Move ``replay``'s tensors into shared memory (of its rows, those written so far are copied).
        ``mask_width``: where the environment masks actions, the rows of their masks (``[rows, n_envs,
        mask_width]``), allocated now so that the acting process writes them too."""
        base = _base(replay)
        if mask_width is not None and base.action_mask is None:
            base.action_mask = torch.zeros((base.rows, base.n_envs, mask_width), dtype=torch.bool,
                                           device=base.device)
        for name, tensor in _tensors(base).items():
            if tensor.is_cuda or tensor.is_shared():
                continue
            shared = shared_empty_like(tensor)  # its pages read as zeros until written, as the rows not written yet
            written = base._filled if name in base._STATE else len(tensor)
            shared[:written].copy_(tensor[:written])
            setattr(base, name, shared)
        counters = torch.tensor([base._next_row, base._filled, 0], dtype=torch.int64).share_memory_()
        # The learner's waits look whether the acting process lives (``lock.check``); the acting process, which
        # ends with the learner, takes the bare lock (``attach``): no wrapper on its path of every step.
        lock = WatchedLock((context or mp.get_context("spawn")).Lock())
        return cls(replay, counters, lock, _share_priorities(base))

    def handles(self) -> dict[str, Any]:
        """What the acting process needs to write into these rows (picklable through torch.multiprocessing); of
        the learner's replay (``share``'s)."""
        return {"tensors": _tensors(self.base), "counters": self.counters, "lock": self.lock.lock,
                "priorities": self.priorities}

    @classmethod
    def attach(cls, replay, handles: dict[str, Any]) -> SharedReplay:
        """``replay`` (built like the learner's) writing into the learner's shared rows."""
        base = _base(replay)
        for name, tensor in handles["tensors"].items():
            if getattr(base, name, None) is None and name != "action_mask":  # masks: allocated as the first is stored
                raise ValueError(f"the shared replay has {name}, this one does not")
            setattr(base, name, tensor)
        priorities = handles["priorities"]
        if (priorities is None) != (getattr(base, "tree", None) is None):
            raise ValueError("the shared replay and this one differ in whether they sample by priority")
        if priorities is not None:
            base.tree.tree = priorities["tree"].numpy()  # a view: its writes are the learner's tree's
        shared = cls(replay, handles["counters"], handles["lock"], priorities)
        shared._read_counters()
        return shared

    # -- the replay's interface -----------------------------------------------------------------------
    def store(self, states, actions, *extra: Any, **options: Any) -> None:
        """``replay.store`` (``extra``, ``options``: a sequence replay's recurrent state and the rest)."""
        with self.lock:
            self._read_counters()
            self._pull_max_priority()  # new transitions enter at the largest priority so far
            had_masks = self.base.action_mask is not None
            self.replay.store(states, actions, *extra, **options)
            if self.base.action_mask is not None and not had_masks:
                raise ValueError("hardware.runner=async: the environment's states carry action masks, which the "
                                 "shared replay does not hold; allowed: hardware.runner=sync")
            if self.base.observation.is_cuda:  # the rows are complete on the GPU before the counters say so
                torch.cuda.synchronize(self.base.observation.device)
            self.counters[0], self.counters[1] = self.base._next_row, self.base._filled
            self.counters[2] += 1
            self._push_max_priority()  # a sequence's input priority may have raised it

    def sample(self, batch_size: int):
        with self.lock:
            self._read_counters()
            self._drawn = (self.base.newest_row, int(self.counters[2]))
            return self.replay.sample(batch_size)

    def holds(self, transitions: int) -> bool:
        self._read_counters()
        return self.replay.holds(transitions)

    def __len__(self) -> int:
        self._read_counters()
        return len(self.replay)

    def update_priorities(self, indices, priorities: torch.Tensor) -> None:
        """The new priorities of the last draw's transitions (or sequences), except those the writer has
        overwritten since: their slots hold new ones."""
        if self.priorities is None:
            return  # uniform sampling keeps none
        with self.lock:
            self._pull_max_priority()
            kept = self._still_held(indices[0])
            if kept.any():
                self.replay.update_priorities(tuple(index[kept] for index in indices), priorities[kept])
            self._push_max_priority()

    def _still_held(self, rows: torch.Tensor) -> torch.Tensor:
        """Which of the last draw's ``rows`` (its transitions' rows, its sequences' first rows) are not
        overwritten yet: a row ``age`` rows older than the newest at the draw is once ``rows - age`` more rows
        have been stored."""
        newest, stored = self._drawn
        age = (newest - rows) % self.base.rows
        return age + (int(self.counters[2]) - stored) < self.base.rows

    def state_dict(self) -> dict:
        with self.lock:
            self._read_counters()
            return self.replay.state_dict()

    def load_state_dict(self, state: dict) -> None:
        with self.lock:
            self.replay.load_state_dict(state)  # a prioritized replay's tree: loaded into the shared one
            self.counters[0], self.counters[1] = self.base._next_row, self.base._filled
            self._push_max_priority()

    def generator_state(self) -> dict[str, Any]:
        return self.replay.generator_state()

    def load_generator_state(self, state: dict[str, Any]) -> None:
        self.replay.load_generator_state(state)

    def _read_counters(self) -> None:
        self.base._next_row, self.base._filled = int(self.counters[0]), int(self.counters[1])

    # The largest priority so far (where new slots enter) is one number both sides may raise, each under the lock:
    # the learner by its updates, the acting process by a sequence's input priority.
    def _pull_max_priority(self) -> None:
        if self.priorities is not None:
            self.base.max_priority = float(self.priorities["max_priority"])

    def _push_max_priority(self) -> None:
        if self.priorities is not None:
            self.priorities["max_priority"].fill_(self.base.max_priority)


def _tensors(base) -> dict[str, torch.Tensor]:
    """Every tensor ``base`` holds, by name: its rows, and a sequence replay's entries at its sequence starts."""
    return {name: value for name, value in vars(base).items() if isinstance(value, torch.Tensor)}


def _share_priorities(base) -> dict[str, torch.Tensor] | None:
    """A prioritized replay's sum tree moved into shared memory (its array becomes a view of the shared one),
    and its largest priority so far beside it; None where sampling is uniform."""
    tree = getattr(base, "tree", None)
    if tree is None:
        return None
    shared = torch.from_numpy(tree.tree).clone().share_memory_()
    tree.tree = shared.numpy()
    return {"tree": shared, "max_priority": torch.tensor([base.max_priority], dtype=torch.float64).share_memory_()}
