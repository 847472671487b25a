"""rlconf's launchers and its Optuna sweeper, as Hydra plugins.

Hydra instantiates launchers and sweepers only from the ``hydra_plugins`` namespace package, so the classes
named by ``launchers/launcher/*.yaml`` live here; their code is in ``rlconf.launch``. Hydra imports this
module whenever it starts: nothing here may import torch.
"""

from hydra.core.config_store import ConfigStore

from rlconf.launch import local, slurm
from rlconf.launch.settings import LocalLauncherConf, SlurmLauncherConf


class LocalLauncher(local.LocalRunLauncher):
    """launcher=local and launcher=local_gpus."""


class SlurmLauncher(slurm.SlurmRunLauncher):
    """launcher=slurm, and the cluster profiles built on it."""


ConfigStore.instance().store(group="hydra/launcher", name="rlconf_local", node=LocalLauncherConf,
                             provider="rlconf")
ConfigStore.instance().store(group="hydra/launcher", name="rlconf_slurm", node=SlurmLauncherConf,
                             provider="rlconf")
