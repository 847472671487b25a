"""A replay memory shared by two processes: the async runner's acting process writes, its learning process
samples (``hardware.runner=async``).

The rows live in shared memory (CPU: allocated there without touching a page, so a million Atari frames cost
nothing until written; CUDA: shared through torch.multiprocessing's CUDA IPC). Where the ring stands (its next
row and how many rows are filled) lives in a shared counter that the writer updates after a row is complete,
under a lock the reader takes while it draws and gathers a batch: a batch never holds a half-written row, nor a
row being overwritten. What is gathered is a copy, so the update after it runs without the lock.
"""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import torch

from rlconf.memory.replay import NStepReplayBuffer, ReplayBuffer


def shared_empty_like(tensor: torch.Tensor) -> torch.Tensor:
    """An uninitialised CPU tensor shaped like ``tensor`` in shared memory, its pages untouched (torch's
    ``share_memory_`` would copy the whole of it, touching every page of a 7 GB buffer)."""
    storage = torch.UntypedStorage._new_shared(tensor.numel() * tensor.element_size())
    return torch.empty(0, dtype=tensor.dtype).set_(storage, 0, tensor.shape, tensor.stride())


def _base(replay) -> ReplayBuffer:
    return replay.buffer if isinstance(replay, NStepReplayBuffer) else replay


class SharedReplay:
    """``replay`` (a uniform ReplayBuffer, possibly n-step) with its rows shared; build it in the learning
    process (``share``), hand ``handles()`` to the acting process, which ``attach``es its own replay to them."""

    def __init__(self, replay, counters: torch.Tensor, lock):
        self.replay = replay
        self.base = _base(replay)
        self.counters = counters  # [next_row, filled], shared
        self.lock = lock

    @classmethod
    def share(cls, replay, context=None, mask_width: int | None = None) -> SharedReplay:
        """Move ``replay``'s rows into shared memory (the rows written so far are copied). ``mask_width``: where
        the environment masks actions, the rows of their masks (``[rows, n_envs, mask_width]``), allocated now
        so that the acting process writes them too."""
        base = _base(replay)
        if mask_width is not None and base.action_mask is None:
            base.action_mask = torch.zeros((base.rows, base.n_envs, mask_width), dtype=torch.bool,
                                           device=base.device)
        for name in base._STATE:
            tensor = getattr(base, name)
            if tensor is None or tensor.is_cuda or tensor.is_shared():
                continue
            shared = shared_empty_like(tensor)  # its pages read as zeros until written, as the rows not written yet
            shared[: base._filled].copy_(tensor[: base._filled])
            setattr(base, name, shared)
        counters = torch.tensor([base._next_row, base._filled], dtype=torch.int64).share_memory_()
        return cls(replay, counters, (context or mp.get_context("spawn")).Lock())

    def handles(self) -> dict[str, Any]:
        """What the acting process needs to write into these rows (picklable through torch.multiprocessing)."""
        tensors = {name: getattr(self.base, name) for name in self.base._STATE if getattr(self.base, name) is not None}
        return {"tensors": tensors, "counters": self.counters, "lock": self.lock}

    @classmethod
    def attach(cls, replay, handles: dict[str, Any]) -> SharedReplay:
        """``replay`` (built like the learner's) writing into the learner's shared rows."""
        base = _base(replay)
        for name, tensor in handles["tensors"].items():
            if getattr(base, name) is None and name != "action_mask":  # masks: allocated as the first is stored
                raise ValueError(f"the shared replay has {name}, this one does not")
            setattr(base, name, tensor)
        shared = cls(replay, handles["counters"], handles["lock"])
        shared._read_counters()
        return shared

    # -- the replay's interface -----------------------------------------------------------------------
    def store(self, states, actions) -> None:
        with self.lock:
            self._read_counters()
            had_masks = self.base.action_mask is not None
            self.replay.store(states, actions)
            if self.base.action_mask is not None and not had_masks:
                raise ValueError("hardware.runner=async: the environment's states carry action masks, which the "
                                 "shared replay does not hold; allowed: hardware.runner=sync")
            if self.base.observation.is_cuda:  # the rows are complete on the GPU before the counters say so
                torch.cuda.synchronize(self.base.observation.device)
            self.counters[0], self.counters[1] = self.base._next_row, self.base._filled

    def sample(self, batch_size: int):
        with self.lock:
            self._read_counters()
            return self.replay.sample(batch_size)

    def holds(self, transitions: int) -> bool:
        self._read_counters()
        return self.replay.holds(transitions)

    def __len__(self) -> int:
        self._read_counters()
        return len(self.replay)

    def update_priorities(self, indices, priorities: torch.Tensor) -> None:
        self.replay.update_priorities(indices, priorities)

    def state_dict(self) -> dict:
        with self.lock:
            self._read_counters()
            return self.replay.state_dict()

    def load_state_dict(self, state: dict) -> None:
        with self.lock:
            self.replay.load_state_dict(state)
            self.counters[0], self.counters[1] = self.base._next_row, self.base._filled

    def generator_state(self) -> dict[str, Any]:
        return self.replay.generator_state()

    def load_generator_state(self, state: dict[str, Any]) -> None:
        self.replay.load_generator_state(state)

    def _read_counters(self) -> None:
        self.base._next_row, self.base._filled = int(self.counters[0]), int(self.counters[1])
