"""Experiments: the training loop, evaluation, run directories and checkpoints."""

from rlconf.experiments.evaluate import evaluate
from rlconf.experiments.experiment import Experiment
from rlconf.experiments.rundir import atomic_write, make_run_dir, write_json

__all__ = ["Experiment", "atomic_write", "evaluate", "make_run_dir", "write_json"]
