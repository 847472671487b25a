"""The settings of rlconf's Optuna sweeper (``hydra/sweeper: rlconf_optuna``), as a typed Hydra config, and
the names of what it offers. Nothing here imports optuna: Hydra imports the plugins whenever it starts, and a
sweep config must compose (to say in one line that optuna is missing) where optuna is not installed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SWEEPER_TARGET = "hydra_plugins.rlconf_launch.OptunaSweeper"
DIRECTIONS = ("maximize", "minimize")
SAMPLERS = ("tpe", "random")
PRUNERS = ("median", "hyperband", "successive_halving")
STUDY_FILE = "optuna.journal"  # the study, in the sweep directory (see rlconf.tuning.study for why a journal)
RESULTS_FILE = "optimization_results.yaml"  # the best trial, written when the sweep ends


@dataclass
class SamplerConf:
    name: str = "tpe"  # tpe (Optuna's default: random for its first 10 trials, then a model of the good ones) or random
    seed: int | None = None  # the study's first draws; a continued study draws from this seed and its trial count


@dataclass
class OptunaSweeperConf:
    """Trials asked of an Optuna study (in the sweep directory), each a run through rlconf's launcher."""

    _target_: str = SWEEPER_TARGET
    direction: str = "maximize"  # of the objective: the run's final test return (summary.json's test_return_mean)
    n_trials: int = 20  # trials that end (complete, pruned or failed), counting those of earlier launches
    n_jobs: int = 2  # trials launched together (the launcher decides how many of them run at once)
    study_name: str = "rlconf"
    sampler: SamplerConf = field(default_factory=SamplerConf)
    pruner: str | None = None  # median, hyperband, successive_halving: stops hopeless runs after an evaluation
    # The Optuna pruner's arguments besides rlconf's defaults (rlconf.tuning.study): {n_startup_trials: 5} in a
    # config, +hydra.sweeper.pruner_args.n_startup_trials=5 on the command line
    pruner_args: dict[str, Any] = field(default_factory=dict)
    # The search space: key -> choice(...), range(...), interval(...), tag(log, interval(...)) or a fixed value.
    params: dict[str, Any] = field(default_factory=dict)
    # Trials to run first, each a mapping of params to values (known good settings, a baseline): a new study only.
    enqueue: list[Any] = field(default_factory=list)


def is_optuna_sweeper(sweeper: Any) -> bool:
    """Whether a composed ``hydra.sweeper`` node is this sweeper."""
    return str(sweeper.get("_target_", "")) == SWEEPER_TARGET
