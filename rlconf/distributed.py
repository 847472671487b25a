"""Data-parallel learners (``hardware.learners``): the few collective operations rlconf makes on
torch.distributed's process group, in one place.

Each learner is a process with its own environments, sampler, replay and random generators, and the same
networks: they start from the same weights (built from the same seed, checked once, ``check_same``) and stay
the same because every optimiser step averages the gradients of all learners first (``average``: one all-reduce
of every gradient of the step, flattened into one buffer, with the loss riding along so that a loss that is nan
or inf on one learner stops them all at the same step). That is data parallelism as DistributedDataParallel
does it, done where rlconf's approximations take their steps: an update on N learners' minibatches of B
samples is the update of one learner on their concatenation of N x B (for losses that are means over the batch).

Running statistics that normalise observations or rewards are merged the same way (``merge_moments``), so the
learners keep one normaliser. Loop decisions (evaluate, checkpoint, stop, the budget) are taken on all learners
at once from numbers they share (``experiments.loop.learner_group``).

Outside a process group (every single-learner run) each function does the single-process thing at no cost.
"""

from __future__ import annotations

import datetime
import functools
import importlib
import os
import re
import socket
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist

# A learner waits this long for the others at a collective (an evaluation or checkpoint on the first learner
# makes them wait; a learner that died makes the others fail at once, its connection closed).
TIMEOUT = datetime.timedelta(hours=6)


class LearnerLost(RuntimeError):
    """A collective failed: another learner has gone (it failed, or was killed)."""


def _collective(function):
    """A collective operation whose failure (a learner that left: gloo's or NCCL's errors) is a LearnerLost."""

    @functools.wraps(function)
    def guarded(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (RuntimeError, ConnectionError) as error:
            if isinstance(error, LearnerLost):
                raise
            raise LearnerLost(f"learner {rank()} of {size()} lost the others ({why(error)})") from None

    return guarded


def why(error: BaseException) -> str:
    """A backend's error in a few words: its first sentence, without the source location gloo puts first
    ("[.../pair.cc:553] Connection closed by peer [127.0.0.1]:29359. This is typically ...")."""
    text = str(error).strip()
    if not text:
        return type(error).__name__
    first = re.sub(r"^\[[^\]]*\]\s*", "", text.splitlines()[0])
    return first.split(". ", 1)[0].rstrip(".") or type(error).__name__


def active() -> bool:
    """Whether this process is one of several data-parallel learners."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    """This learner's index (0: the one that writes the run directory)."""
    return dist.get_rank() if active() else 0


def size() -> int:
    """How many learners train together (1 outside a process group)."""
    return dist.get_world_size() if active() else 1


def _device() -> torch.device:
    """Where the tensors of a collective live: the current GPU for NCCL, the CPU for gloo."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def local_rank(rank: int) -> int:
    """This learner's index among those on its machine (torchrun's LOCAL_RANK, Slurm's SLURM_LOCALID; the
    rank itself for learners started by the run)."""
    return int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", rank)))


def backend(device: str) -> str:
    """NCCL between GPUs, gloo between CPUs."""
    return "nccl" if str(device).startswith("cuda") else "gloo"


def free_port() -> int:
    """A TCP port nobody listens on now, for a process group on this machine."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def join(rank: int, world_size: int, meeting: str, device: str) -> None:
    """Join the process group of ``world_size`` learners that meet at ``meeting`` (``tcp://host:port``, or
    ``env://``: torchrun's variables and store). On GPUs (``device`` cuda without an index) each learner of a
    machine takes a GPU of its own: the one its local rank names."""
    if str(device) == "cuda" and torch.cuda.is_available():
        torch.cuda.set_device(local_rank(rank) % torch.cuda.device_count())
    # torch.distributed.nn's functions take ``group=group.WORLD`` as a default argument, evaluated when the module
    # is first imported (torch.optim imports it through torch._dynamo on its first use). Imported after the group
    # is made, they would keep the group alive past ``leave``: its gloo threads would outlive the interpreter, and
    # one still releasing the last collective's tensors aborts the process as it exits ("terminate called without
    # an active exception"). Imported before, they hold None.
    importlib.import_module("torch.distributed.nn")
    dist.init_process_group(backend(device), init_method=meeting, rank=rank, world_size=world_size, timeout=TIMEOUT)


def leave() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


@_collective
def average(parameters: Sequence[torch.Tensor], losses: Sequence[torch.Tensor | None] = ()) -> list:
    """Replace the gradients of ``parameters`` (those that have one: the same on every learner) by their mean
    over the learners, and return the mean of each of ``losses`` (None stays None), in one all-reduce."""
    if not active():
        return list(losses)
    grads = [p.grad for p in parameters if p.grad is not None]
    values = [loss.detach().reshape(1).to(torch.float32) for loss in losses if loss is not None]
    if not grads and not values:
        return list(losses)
    device = (grads or values)[0].device
    flat = torch.cat([g.reshape(-1).to(torch.float32) for g in grads] + [v.to(device) for v in values])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    offset = 0
    for grad in grads:
        n = grad.numel()
        grad.copy_(flat[offset:offset + n].view_as(grad))
        offset += n
    means = iter(flat[offset:])
    return [None if loss is None else next(means).to(loss.dtype) for loss in losses]


@_collective
def merge_moments(n: int, mean: torch.Tensor, var: torch.Tensor) -> tuple[int, torch.Tensor, torch.Tensor]:
    """The count, mean and (population) variance of the learners' batches taken together, from each one's
    ``n``, ``mean`` and ``var`` (Chan et al.'s parallel formula)."""
    if not active():
        return n, mean, var
    mine = torch.cat([torch.tensor([float(n)], dtype=torch.float64, device=mean.device),
                      mean.reshape(-1).to(torch.float64), var.reshape(-1).to(torch.float64)])
    everyone = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, mine)
    k = mean.numel()
    total, merged_mean, merged_m2 = 0.0, torch.zeros_like(mine[1:1 + k]), torch.zeros_like(mine[1:1 + k])
    for part in everyone:
        count, part_mean, part_var = part[0].item(), part[1:1 + k], part[1 + k:]
        if count == 0:
            continue
        delta = part_mean - merged_mean
        merged = total + count
        merged_mean = merged_mean + delta * (count / merged)
        merged_m2 = merged_m2 + part_var * count + delta.square() * (total * count / merged)
        total = merged
    shape = mean.shape
    return int(total), merged_mean.view(shape).to(mean.dtype), (merged_m2 / max(total, 1)).view(shape).to(var.dtype)


@_collective
def agree_max(value: int) -> int:
    """The largest of the learners' ``value``s (how many minibatches an update makes, so all make as many)."""
    if not active():
        return value
    tensor = torch.tensor([value], dtype=torch.int64, device=_device())
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return int(tensor.item())


@_collective
def all_gather(obj: Any) -> list[Any]:
    """Every learner's ``obj`` on every learner, in rank order."""
    if not active():
        return [obj]
    objects = [None] * dist.get_world_size()
    dist.all_gather_object(objects, obj)
    return objects


@_collective
def gather(obj: Any) -> list[Any] | None:
    """Every learner's ``obj`` on the first learner (in rank order), None on the others."""
    if not active():
        return [obj]
    objects = [None] * dist.get_world_size() if rank() == 0 else None
    dist.gather_object(obj, objects, dst=0)
    return objects


@_collective
def scatter(objects: list[Any] | None) -> Any:
    """The first learner's ``objects[r]`` on learner r."""
    if not active():
        return objects[0]
    received = [None]
    dist.scatter_object_list(received, objects if rank() == 0 else None, src=0)
    return received[0]


@_collective
def check_same(named: dict[str, torch.Tensor], what: str) -> None:
    """Raise a RuntimeError naming the first of ``named``'s tensors that is not the same on every learner."""
    if not active():
        return
    for name, tensor in named.items():
        local = tensor.detach().to(torch.float64).sum().reshape(1).to(_device())
        high, low = local.clone(), local.clone()
        dist.all_reduce(high, op=dist.ReduceOp.MAX)
        dist.all_reduce(low, op=dist.ReduceOp.MIN)
        if high.item() != low.item():
            raise RuntimeError(f"{what}: {name} differs between the learners")


def from_environment() -> tuple[int, int, str] | None:
    """(rank, world size, where to meet) of a process group that torchrun (or a run's first learner) set up
    (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT: ``env://``), or that a Slurm job step of several tasks implies
    (SLURM_PROCID, SLURM_NTASKS; the job's first node, on a port drawn from the job's id); None for a process on
    its own."""
    env = os.environ
    if "RANK" in env and "WORLD_SIZE" in env and "MASTER_ADDR" in env:
        return int(env["RANK"]), int(env["WORLD_SIZE"]), "env://"
    tasks = int(env.get("SLURM_NTASKS", env.get("SLURM_STEP_NUM_TASKS", "1")) or 1)
    if tasks > 1 and "SLURM_PROCID" in env:
        job = int(env.get("SLURM_JOB_ID", "0") or 0)
        return int(env["SLURM_PROCID"]), tasks, f"tcp://{_first_node(env)}:{20000 + job % 20000}"
    return None


def _first_node(env: dict[str, str]) -> str:
    """The first host of the job's node list (``node[01-04],other`` -> ``node01``)."""
    nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or env.get("SLURMD_NODENAME", "")
    head = nodes.split(",")[0]
    if "[" in head:
        prefix, ranges = head.split("[", 1)
        first = ranges.rstrip("]").split(",")[0].split("-")[0]
        head = prefix + first
    return head or "127.0.0.1"
