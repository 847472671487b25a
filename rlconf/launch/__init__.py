"""Launchers: where the runs of a sweep execute (this machine, its GPUs, a Slurm cluster), and what a
sweep directory says about them (``rlconf status``).

The Hydra plugin classes that ``launchers/launcher/*.yaml`` name live in ``hydra_plugins.rlconf_launch``
(Hydra instantiates launchers only from there); their code is here. Nothing here imports torch at import
time: Hydra imports the plugins whenever it starts.
"""

from rlconf.launch.launcher_config import LauncherError, LocalLauncherConf, SlurmLauncherConf, check
from rlconf.launch.slots import Slot, make_slots, visible_gpus

__all__ = ["LauncherError", "LocalLauncherConf", "Slot", "SlurmLauncherConf", "check", "make_slots",
           "visible_gpus"]
