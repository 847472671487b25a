"""rlconf's launchers and its Optuna sweeper, as Hydra plugins.

Hydra instantiates launchers and sweepers only from the ``hydra_plugins`` namespace package, so the classes
named by ``launchers/launcher/*.yaml`` and ``hydra/sweeper: rlconf_optuna`` live here; their code is in
``rlconf.launch`` and ``rlconf.tuning``. Hydra imports this module whenever it starts: nothing here may import
torch, nor optuna (an optional extra, imported when an Optuna sweep starts).
"""

from hydra.core.config_store import ConfigStore

from rlconf.launch import base, basic, local, slurm
from rlconf.launch.launcher_config import BasicLauncherConf, LocalLauncherConf, SlurmLauncherConf
from rlconf.tuning import sweeper
from rlconf.tuning.sweeper_config import OptunaSweeperConf


class LocalLauncher(local.LocalRunLauncher):
    """launcher=local and launcher=local_gpus."""


class SlurmLauncher(slurm.SlurmRunLauncher):
    """launcher=slurm, and the cluster profiles built on it."""


class BasicLauncher(basic.BasicRunLauncher):
    """launcher=basic."""


class OptunaSweeper(sweeper.StudySweeper):
    """hydra/sweeper=rlconf_optuna: the sweep configs sweep=optuna_*. It launches trials in batches and closes
    the sweep with one table of all its runs (rlconf's launchers hold theirs back for it)."""

    def setup(self, **kwargs) -> None:
        super().setup(**kwargs)
        if isinstance(self.launcher, base.RunLauncher):
            self.launcher.hold_summary()

    def summary(self) -> None:
        if isinstance(self.launcher, base.RunLauncher):
            self.launcher.summary()


ConfigStore.instance().store(group="hydra/launcher", name="rlconf_local", node=LocalLauncherConf,
                             provider="rlconf")
ConfigStore.instance().store(group="hydra/launcher", name="rlconf_basic", node=BasicLauncherConf,
                             provider="rlconf")
ConfigStore.instance().store(group="hydra/launcher", name="rlconf_slurm", node=SlurmLauncherConf,
                             provider="rlconf")
ConfigStore.instance().store(group="hydra/sweeper", name="rlconf_optuna", node=OptunaSweeperConf, provider="rlconf")
