"""Dividing one machine among runs (rlpyt's affinity): which GPUs and cores each concurrent run gets.

A slot is a place for one run: its GPUs (CUDA_VISIBLE_DEVICES, so the run's ``cuda`` is its own first GPU)
and its cores. With GPUs [0..7], gpus_per_run=1 and runs_per_gpu=2 there are 16 slots, GPU k in slots 2k
and 2k+1; with gpus_per_run=2, slots get [0,1], [2,3], ... A run waits for a free slot, so no GPU ever holds
more than runs_per_gpu runs and no two runs share a GPU set otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Slot:
    index: int
    gpus: tuple[int, ...] | None  # None: CUDA_VISIBLE_DEVICES is left as it is
    cpus: tuple[int, ...] | None  # None: not pinned

    def environment(self) -> dict[str, str]:
        return {} if self.gpus is None else {"CUDA_VISIBLE_DEVICES": ",".join(map(str, self.gpus))}

    def describe(self) -> str:
        parts = []
        if self.gpus is not None:
            parts.append(f"GPU {','.join(map(str, self.gpus))}")
        if self.cpus is not None:
            parts.append(f"CPU {','.join(map(str, self.cpus))}")
        return ", ".join(parts) or "this machine"


def visible_gpus() -> list[int]:
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES when set, else those nvidia-smi lists."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [int(g) for g in visible.split(",") if g.strip().isdigit()]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [int(line) for line in out.split() if line.strip().isdigit()]


def make_slots(gpus: list[int] | None, gpus_per_run: int, runs_per_gpu: int, cpus_per_run: int,
               parallel: int | None, pin_cpus: bool = True, cpus: list[int] | None = None) -> list[Slot]:
    """The slots of this machine. ``gpus=None``: no GPU assignment, ``parallel`` slots (1 if None)."""
    if gpus is None:
        sets: list[tuple[int, ...] | None] = [None] * (parallel or 1)
    else:
        groups = [tuple(gpus[i:i + gpus_per_run]) for i in range(0, len(gpus) - gpus_per_run + 1, gpus_per_run)]
        per_gpu = runs_per_gpu if gpus_per_run == 1 else 1
        # Round-robin over the GPUs first, so that with fewer runs than slots each GPU gets one before any
        # gets a second.
        sets = [group for _ in range(per_gpu) for group in groups]
        if parallel is not None:
            sets = sets[:parallel]
    cpus = sorted(os.sched_getaffinity(0)) if cpus is None else cpus
    pin = pin_cpus and len(sets) * cpus_per_run <= len(cpus)
    return [Slot(i, s, tuple(cpus[i * cpus_per_run:(i + 1) * cpus_per_run]) if pin else None)
            for i, s in enumerate(sets)]
