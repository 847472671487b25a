"""Starting the learners of a data-parallel run (``hardware.learners=N``) and joining their process group.

Three ways a run can have N learners, one code path for all of them once the group is joined:

- ``rlconf run ... hardware.learners=N`` on one machine: this process is the first learner; it starts the
  N - 1 others (spawned processes that run the same config) and they meet on a free port of this machine;
- ``torchrun --nproc-per-node N -m rlconf run ...``: torchrun started them (RANK, WORLD_SIZE, MASTER_ADDR,
  MASTER_PORT);
- ``launcher=slurm``: the N tasks of one Slurm job (SLURM_PROCID, SLURM_NTASKS; they meet on the job's first
  node), spread over ``hardware.nodes`` nodes.

The first learner writes the run directory; a learner that fails or is killed makes the others fail at their next
collective (``distributed.LearnerLost``), so none is left waiting; the learners started here are sent SIGTERM
by the kernel when the first one ends (``rlconf.process.die_with_parent``).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from rlconf import distributed
from rlconf.errors import ConfigError, first_line
from rlconf.settings import Settings

# How long the first learner waits for the others to leave once it is done (they leave right after the last
# checkpoint), before it ends them.
LEAVE_SECONDS = 60.0


def first() -> bool:
    """Whether this process is the first learner (or the only one), before any group is joined."""
    group = distributed.from_environment()
    return group is None or group[0] == 0


@contextlib.contextmanager
def together(settings: Settings, cfg: DictConfig, parent_dir: str | Path | None, overrides: list[str],
             entry: Callable[..., dict]) -> Iterator[None]:
    """In the process group of the run's learners (nothing to join for one learner): started here, or by
    torchrun, or by Slurm. Left, and the learners started here ended, when the block ends. ``entry``: what each
    learner started here runs (``experiments.run.run``: passed in, as this module is below it)."""
    wanted = settings.hardware.learners
    group = distributed.from_environment()
    if wanted == 1:
        yield
        return
    children: list[mp.process.BaseProcess] = []
    if group is None:  # started here: this process is learner 0, the others are spawned
        port = distributed.free_port()
        group = (0, wanted, f"tcp://127.0.0.1:{port}")
        config = OmegaConf.to_container(cfg, resolve=True)
        context = mp.get_context("spawn")
        for rank in range(1, wanted):
            child = context.Process(target=_learner, name=f"rlconf-learner-{rank}",
                                    args=(rank, wanted, port, config, parent_dir, overrides, os.getpid(), entry))
            child.start()
            children.append(child)
    rank, size, meeting = group
    if size != wanted:
        raise ConfigError(f"hardware.learners={wanted}, but this process is one of {size} (torchrun's "
                          f"WORLD_SIZE, or the Slurm job's tasks); allowed: hardware.learners={size}")
    try:
        distributed.join(rank, size, meeting, settings.hardware.device)
        yield
    finally:
        distributed.leave()
        for child in children:
            child.join(LEAVE_SECONDS)
            if child.is_alive():
                child.kill()
                child.join()


def _learner(rank: int, size: int, port: int, config: dict, parent_dir: str | Path | None,
             overrides: list[str], first: int, run: Callable[..., dict]) -> None:
    """A learner started by the first one (process ``first``): the same run, as learner ``rank`` of ``size``.
    It ends with the first learner, however that ends (``kill -9`` included): never an orphan."""
    from rlconf.process import die_with_parent

    die_with_parent(first)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    try:
        run(OmegaConf.create(config), parent_dir, overrides)
    except SystemExit as stop:
        sys.exit(stop.code)
    except KeyboardInterrupt:
        sys.exit(130)
    except distributed.LearnerLost:
        sys.exit(1)  # the first learner says what happened
    except Exception as error:  # its own fault, which the first learner sees only as a lost learner
        print(f"rlconf: learner {rank}: {first_line(error)}", file=sys.stderr, flush=True)
        sys.exit(1)
