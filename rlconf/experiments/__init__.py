"""Experiments: the training loop, evaluation, run directories, checkpoints and resuming.

The loop and evaluation are imported on first use: ``rlconf status`` reads run directories
(``rlconf.experiments.rundir``) and must not wait for torch.
"""

from typing import Any

from rlconf.experiments.rundir import atomic_write, make_run_dir, write_json

__all__ = ["Experiment", "MultiagentExperiment", "atomic_write", "evaluate", "make_run_dir", "write_json"]


def __getattr__(name: str) -> Any:
    if name == "Experiment":
        from rlconf.experiments.experiment import Experiment

        return Experiment
    if name == "MultiagentExperiment":
        from rlconf.experiments.multiagent import MultiagentExperiment

        return MultiagentExperiment
    if name == "evaluate":
        from rlconf.experiments.evaluate import evaluate

        return evaluate
    raise AttributeError(f"module 'rlconf.experiments' has no attribute {name!r}")
