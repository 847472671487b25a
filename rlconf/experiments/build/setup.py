"""The process set up for a run: settings checked, device checked, threads, CPU linear kernels, compilation,
global seeds."""

from __future__ import annotations

import sys

import torch
from omegaconf import DictConfig

from rlconf.approximation import compiled
from rlconf.config import Settings, validate
from rlconf.core import rng
from rlconf.errors import ConfigError
from rlconf.nn import gemm


def check_device(device: str) -> None:
    """Checked when building, not in validate(): a Slurm login node may have no GPU for the job it submits."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"hardware.device={device}: no CUDA device is visible here; allowed: cpu")
    index = device.partition(":")[2]
    if device.startswith("cuda") and index.isdigit() and int(index) >= torch.cuda.device_count():
        raise ConfigError(f"hardware.device={device}: {torch.cuda.device_count()} CUDA device(s) are visible here; "
                          f"allowed: cpu, cuda:0 .. cuda:{torch.cuda.device_count() - 1}")
    if device.startswith("mps") and not torch.backends.mps.is_available():
        raise ConfigError(f"hardware.device={device}: MPS is not available here; allowed: cpu")


def prepare(cfg: DictConfig, training: bool = True) -> Settings:
    """The checked settings of a composed config (or a run's saved config.yaml), and this process set up
    for them: device checked, torch's threads, compilation of the networks, global seeds. ``run`` and
    ``rlconf eval``/``watch`` (``training=False``: eager networks, as a few episodes do not pay for compiling
    them) start here."""
    settings = validate(cfg)
    hardware = settings.hardware
    check_device(hardware.device)
    torch.set_num_threads(hardware.torch_threads)
    gemm.configure(hardware.cpu_linear)
    compilation = compiled.configure(hardware.compile if training else "false", hardware.device, settings.run.steps)
    if compilation.mode is not None or hardware.compile == "true":
        print(f"rlconf: {compilation.reason}", file=sys.stderr, flush=True)
    rng.seed_everything(settings.run.seed)
    return settings
