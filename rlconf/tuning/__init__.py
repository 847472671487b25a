"""Tuning: rlconf's Optuna sweeper (``sweep=optuna_*``), which asks an Optuna study in the sweep directory for
trials, runs each through the launcher, prunes hopeless runs after their periodic evaluations, and continues
an interrupted study when the sweep is launched again.

- ``sweeper_config``: the sweeper's typed config and the names it offers (no optuna import: Hydra loads it always)
- ``sweeper``: the Hydra sweeper (the plugin class in ``hydra_plugins.rlconf_launch`` is built on it)
- ``space``: search spaces in Hydra's override syntax, as Optuna distributions
- ``study``: the study's storage (a journal file), sampler and pruners
- ``trial``: a run's side of its trial (``TrialReporter``), made only in runs of an Optuna sweep
"""

from rlconf.errors import TuningError
from rlconf.tuning.sweeper_config import PRUNERS, SAMPLERS, OptunaSweeperConf, is_optuna_sweeper

__all__ = ["PRUNERS", "SAMPLERS", "OptunaSweeperConf", "TuningError", "is_optuna_sweeper"]
