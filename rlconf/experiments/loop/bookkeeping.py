"""The loop's own bookkeeping, as callbacks on the run's events (loop.callbacks): periodic evaluations and
what follows one (best.pt, the console's line, a sweep's pruner), periodic checkpoints and what follows one
(numbered copies, status.json), videos, scalars, the progress bar and status.json.

They are the loop's, not a user's: they read and change the experiment itself (its counters, which a
checkpoint keeps), and their errors are the loop's own (a full disk, a video that cannot be written). They are
told of each event in the order ``own`` lists them, before any callback a user adds; that order is the order
the loop has always kept its books in, which seeded runs depend on.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rlconf.experiments.loop.callbacks import Callback, Evaluation, Run
from rlconf.experiments.loop.video import TrainingVideos
from rlconf.experiments.rundir.checkpoint import numbered_checkpoints
from rlconf.experiments.rundir.directory import CHECKPOINT
from rlconf.files import atomic_write, write_failure
from rlconf.logging.base import STEPS_PER_SECOND
from rlconf.text import counted

# Each callback here holds the run's Experiment (typed Any: loop.experiment imports this module, not the reverse).
Experiment = Any
STATUS_SECONDS = 10.0  # how often a training run refreshes status.json (rlconf status reads it) and flushes its logs


class Evaluations(Callback):
    """Every ``eval_every`` steps, a periodic evaluation (``Experiment.evaluate``, which tells the callbacks of
    it); a sweep's pruner that judged it hopeless ends training there (``Pruned``)."""

    def __init__(self, experiment: Experiment):
        self.experiment = experiment

    def on_batch(self, run: Run) -> None:
        experiment = self.experiment
        if run.steps >= experiment.next_eval:
            experiment.next_eval += experiment.eval_every
            experiment.evaluate()
            if experiment.pruned is not None:
                experiment.end_training()
                raise experiment.pruned


class BestCheckpoint(Callback):
    """best.pt: the agent of the best periodic evaluation so far."""

    def __init__(self, experiment: Experiment):
        self.experiment = experiment

    def on_evaluation(self, run: Run, evaluation: Evaluation) -> None:
        if run.best_eval is None or evaluation.mean > run.best_eval:
            self.experiment.save_best(evaluation.mean)


class EvaluationLine(Callback):
    """The console's line of each periodic evaluation."""

    def __init__(self, experiment: Experiment):
        self.experiment = experiment

    def on_evaluation(self, run: Run, evaluation: Evaluation) -> None:
        r = np.asarray(evaluation.returns, dtype=float)
        self.experiment.progress.print(f"eval at {evaluation.steps:,} steps: return {r.mean():.1f} ± {r.std():.1f} "
                                       f"over {counted(len(r), 'episode')} (min {r.min():.1f}, max {r.max():.1f})")


class Pruning(Callback):
    """A run of an Optuna sweep reports each periodic evaluation to its trial (rlconf.tuning.trial.TrialReporter);
    True from it prunes the run at that evaluation."""

    def __init__(self, experiment: Experiment, report: Callable[[int, float], bool]):
        self.experiment = experiment
        self.report = report

    def on_evaluation(self, run: Run, evaluation: Evaluation) -> None:
        if self.report(evaluation.steps, evaluation.mean):
            self.experiment.prune(evaluation)


class Videos(Callback):
    """``logger.video_every``: a greedy episode's video now and then, and the videos written since, to the
    loggers; the last one is waited for when training ends (``last``)."""

    def __init__(self, experiment: Experiment, videos: TrainingVideos):
        self.experiment = experiment
        self.videos = videos

    def on_run_start(self, run: Run) -> None:
        self.videos.begin(run.steps)

    def on_batch(self, run: Run) -> None:
        self.video(run.steps)

    def video(self, steps: int, last: bool = False) -> None:
        """A greedy episode's video when one is due; the videos written since, to the loggers. ``last``: wait for
        the one being written."""
        try:
            if self.videos.due(steps):
                self.videos.record(self.experiment.agent.test_agent(), steps)
            if last:
                self.videos.wait()
            self.videos.deliver()
        except OSError as error:  # a full disk: the run stops as it does when a checkpoint cannot be written
            raise self.experiment.failed(f"a video could not be written: {write_failure(error)}") from None


class Checkpoints(Callback):
    """Every ``checkpoint_every`` steps, a checkpoint."""

    def __init__(self, experiment: Experiment):
        self.experiment = experiment

    def on_batch(self, run: Run) -> None:
        experiment = self.experiment
        if run.steps >= experiment.next_checkpoint:
            experiment.next_checkpoint += experiment.checkpoint_every
            experiment.checkpoint_in_loop()


class NumberedCheckpoints(Callback):
    """checkpoint-<step>.pt: each checkpoint written, under a second name (a hard link: no copy; the next
    checkpoint.pt is a new file renamed over the name), the oldest beyond ``keep`` gone (checkpoint.keep)."""

    def __init__(self, keep: int):
        self.keep = keep

    def on_checkpoint(self, run: Run, path: Path) -> None:
        run_dir = run.run_dir
        latest, numbered = run_dir / CHECKPOINT, run_dir / f"checkpoint-{run.steps}.pt"
        numbered.unlink(missing_ok=True)
        try:
            os.link(latest, numbered)
        except OSError:  # a file system without hard links
            atomic_write(numbered, lambda tmp: shutil.copyfile(latest, tmp))
        for old in list(numbered_checkpoints(run_dir).values())[:-self.keep]:
            old.unlink(missing_ok=True)


class Scalars(Callback):
    """Every ``scalars_every`` steps: the training rate since the last time, and (verbose) the schedules' values:
    epsilon, learning rates, PPO's clip..."""

    def __init__(self, experiment: Experiment, every: int):
        self.experiment = experiment
        self.every = every
        self.next = every
        self.schedules = experiment.agent.schedules() if experiment.logger.verbose else {}
        self.mark = (0.0, 0)

    def on_run_start(self, run: Run) -> None:
        self.mark = (time.perf_counter(), run.steps)

    def on_batch(self, run: Run) -> None:
        steps = run.steps
        if steps < self.next:
            return
        while self.next <= steps:
            self.next += self.every
        now = time.perf_counter()
        then, steps_then = self.mark
        self.mark = (now, steps)
        values = {STEPS_PER_SECOND: (steps - steps_then) / max(now - then, 1e-9)}
        values.update({f"schedule/{name}": float(scheduler) for name, scheduler in self.schedules.items()})
        self.experiment.logger.add_scalars(values, steps)


class Console(Callback):
    """The progress bar, after every iteration (rate-limited by ``ConsoleProgress``)."""

    def __init__(self, experiment: Experiment):
        self.experiment = experiment

    def on_batch(self, run: Run) -> None:
        experiment = self.experiment
        experiment.progress.update(run.steps, run.episodes, run.last_return, run.best_return, experiment.started,
                                   run.start_steps, time.perf_counter())


class Status(Callback):
    """status.json (``rlconf status``), refreshed every STATUS_SECONDS with the logs flushed (episodes.csv
    readable as the run goes; a resume cuts it back), and after each checkpoint."""

    def __init__(self, experiment: Experiment):
        self.experiment = experiment
        self.next = 0.0

    def on_run_start(self, run: Run) -> None:
        self.next = time.perf_counter() + STATUS_SECONDS

    def on_batch(self, run: Run) -> None:
        now = time.perf_counter()
        if now >= self.next:
            self.next = now + STATUS_SECONDS
            self.experiment.logger.flush()
            self.experiment.status("running")

    def on_checkpoint(self, run: Run, path: Path) -> None:
        self.experiment.status("running")


def own(experiment: Experiment, videos: TrainingVideos | None, keep: int, scalars_every: int,
        trial: Callable[[int, float], bool] | None) -> list[Callback]:
    """The loop's own callbacks, in the order it keeps its books: after an iteration, the evaluation, the video,
    the checkpoint, the scalars, the console, status.json; after an evaluation, best.pt, its line, the pruner;
    after a checkpoint, its numbered copy, status.json."""
    found: list[Callback] = [Evaluations(experiment), BestCheckpoint(experiment), EvaluationLine(experiment)]
    if trial is not None:
        found.append(Pruning(experiment, trial))
    if videos is not None:
        found.append(Videos(experiment, videos))
    found.append(Checkpoints(experiment))
    if keep:
        found.append(NumberedCheckpoints(keep))
    found += [Scalars(experiment, scalars_every), Console(experiment), Status(experiment)]
    return found
