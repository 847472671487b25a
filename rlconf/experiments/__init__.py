"""Experiments: everything above the agents that turns a resolved config into a finished run.

    build/     the environment and agent a config names
    loop/      the training loop (single, async runner, bandit, multi-agent), evaluation, videos
    rundir/    a run directory's life: create, lock, files read back, checkpoint format, resume, rerun, sweeps
    playback/  a finished run evaluated, watched, recorded or exported
    console/   the progress line
    run.py     one run from start to summary, tying the above together

The loop and evaluation are imported on first use: ``rlconf status`` reads run directories
(``rlconf.experiments.rundir``) and must not wait for torch.
"""

from typing import Any

from rlconf.experiments.rundir.directory import make_run_dir
from rlconf.files import atomic_write, write_json

__all__ = ["Experiment", "MultiagentExperiment", "atomic_write", "evaluate", "make_run_dir", "write_json"]


def __getattr__(name: str) -> Any:
    if name == "Experiment":
        from rlconf.experiments.loop.experiment import Experiment

        return Experiment
    if name == "MultiagentExperiment":
        from rlconf.experiments.loop.multiagent import MultiagentExperiment

        return MultiagentExperiment
    if name == "evaluate":
        from rlconf.experiments.loop.evaluate import evaluate

        return evaluate
    raise AttributeError(f"module 'rlconf.experiments' has no attribute {name!r}")
