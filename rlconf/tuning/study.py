"""A sweep's Optuna study: where it is kept, how the sweeper and each run open it, and its sampler and pruner.

The study is a JournalStorage: a file of operations in the sweep directory (``optuna.journal``), appended
under a lock that is taken by creating a lock file with ``open(O_CREAT | O_EXCL)`` (JournalFileOpenLock).
Why not SQLite (Optuna's RDB storage): on Slurm the trials of a sweep run in parallel on several nodes and
reach the sweep directory over a shared filesystem, where SQLite's locking is unreliable (the SQLite FAQ
warns against NFS: writers see "database is locked" or corrupt the file). An exclusive create is atomic on
NFS v3 and later and on Lustre (a symlink lock, Optuna's default, is not offered by every mount), and a lock
left by a killed process is broken after a grace period. The journal also needs no database server and no
schema migration: a sweep launched again reads its study back from the file.

Pruners decide in the run's process, after each periodic evaluation (``rlconf.tuning.trial``); intermediate
values are reported at the run's environment step, so their resources are steps: rlconf's defaults scale with
``steps`` and ``eval_every`` as RL Zoo's (rl_zoo3 exp_manager: median with n_startup_trials=10 and a third of
the evaluations as warm-up; successive halving with reduction_factor=4 from the first evaluation).
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

from rlconf.errors import TuningError
from rlconf.files import open_inside
from rlconf.tuning.sweeper_config import PRUNERS, SAMPLERS, STUDY_FILE

PRUNER_CLASSES = {"median": optuna.pruners.MedianPruner, "hyperband": optuna.pruners.HyperbandPruner,
                  "successive_halving": optuna.pruners.SuccessiveHalvingPruner}


def storage(path: str | Path) -> JournalStorage:
    """The study file at ``path`` (``<sweep dir>/optuna.journal``), made when first written."""
    return JournalStorage(JournalFile(Path(path)))


class JournalFile(JournalFileBackend):
    """Optuna's journal file, made and appended to as a file of the sweep directory itself, never through a
    symbolic link (``rlconf.files.open_inside``): a crafted sweep directory whose ``optuna.journal`` links elsewhere
    cannot make a sweep append there. Reading, locking and the file's format are Optuna's."""

    def __init__(self, path: Path):
        self._folder, self._name = path.parent, path.name
        self._append_lock = JournalFileOpenLock(str(path))
        os.close(open_inside(self._folder, self._name, os.O_WRONLY | os.O_APPEND | os.O_CREAT))  # made here
        super().__init__(str(path), lock_obj=self._append_lock)

    def read_logs(self, log_number_from: int) -> Iterator[dict[str, Any]]:
        """Optuna's reading, with a line that is not one of its operations (a JSONDecodeError, a list) as a
        TuningError naming the file and the line: the journal is a file of the sweep directory."""
        read = log_number_from  # lines read so far: the next one is line read + 1
        logs = super().read_logs(log_number_from)
        while True:
            try:
                log = next(logs)
            except StopIteration:
                return
            except ValueError as error:  # json.JSONDecodeError is one
                raise self._bad_line(read + 1, " ".join(str(error).split())) from None
            if not isinstance(log, dict) or not isinstance(log.get("op_code"), int):
                raise self._bad_line(read + 1, "not an operation of Optuna's journal")
            read += 1
            yield log

    def _bad_line(self, number: int, why: str) -> TuningError:
        return TuningError(f"{self._folder / self._name}: line {number} is not a line of an Optuna journal ({why}); "
                           "a study's journal is written by its sweep only: restore it, or start a new sweep")

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs)
        self._append_lock.acquire()
        try:
            with os.fdopen(open_inside(self._folder, self._name, os.O_WRONLY | os.O_APPEND), "ab") as file:
                file.write(text.encode())
                file.flush()
                os.fsync(file.fileno())  # as Optuna's own backend: the operation is on disk before the lock goes
        finally:
            self._append_lock.release()


def study_path(sweep_dir: str | Path) -> Path:
    return Path(sweep_dir).absolute() / STUDY_FILE


def quiet() -> None:
    """Optuna's INFO lines (a line per trial told) off: rlconf's sweeper and runs say what happened."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def pruner_defaults(name: str, steps: int, eval_every: int) -> dict[str, Any]:
    """rlconf's arguments of pruner ``name`` for runs of ``steps`` steps evaluated every ``eval_every``."""
    first = max(1, eval_every)
    if name == "median":
        return {"n_startup_trials": 10, "n_warmup_steps": steps // 3, "interval_steps": 1}
    if name == "successive_halving":
        return {"min_resource": first, "reduction_factor": 4, "min_early_stopping_rate": 0}
    return {"min_resource": first, "max_resource": max(first, steps), "reduction_factor": 3}  # hyperband


def make_pruner(name: str | None, args: dict[str, Any], steps: int, eval_every: int) -> optuna.pruners.BasePruner:
    """Pruner ``name`` (None: none) with rlconf's defaults, updated by ``args``; a TuningError naming a bad one."""
    if name is None:
        return optuna.pruners.NopPruner()
    if name not in PRUNER_CLASSES:
        raise TuningError(f"hydra.sweeper.pruner={name}: unknown pruner; allowed: {', '.join(PRUNERS)}, or null")
    pruner_class = PRUNER_CLASSES[name]
    known = [p for p in inspect.signature(pruner_class).parameters if p != "self"]
    for key in args:
        if key not in known:
            raise TuningError(f"hydra.sweeper.pruner_args.{key}: {name} takes no such argument; allowed: "
                              f"{', '.join(known)}")
    try:
        return pruner_class(**{**pruner_defaults(name, steps, eval_every), **args})
    except (TypeError, ValueError) as error:
        raise TuningError(f"hydra.sweeper.pruner_args={args}: {name}: {error}") from None


def make_sampler(name: str, seed: int | None, trials_before: int) -> optuna.samplers.BaseSampler:
    """The sweeper's sampler. A study continued after ``trials_before`` trials draws from a seed of its own
    (the seed and that count), or its random draws would repeat those of the first launch."""
    if name not in SAMPLERS:
        raise TuningError(f"hydra.sweeper.sampler.name={name}: allowed: {', '.join(SAMPLERS)}")
    if seed is not None and trials_before:
        seed = int(np.random.SeedSequence([seed, trials_before]).generate_state(1)[0])
    return optuna.samplers.TPESampler(seed=seed) if name == "tpe" else optuna.samplers.RandomSampler(seed=seed)


def exists(store: JournalStorage, name: str) -> bool:
    try:
        store.get_study_id_from_name(name)
    except KeyError:
        return False
    return True


def trial(path: str | Path, study_name: str, number: int,
          pruner: optuna.pruners.BasePruner) -> tuple[optuna.Trial, optuna.trial.FrozenTrial]:
    """Trial ``number`` of the study in ``path``, as a run reports to it (in its own process, on any node), and
    what the study holds of it now (its state, the values reported so far)."""
    store = storage(path)
    study = optuna.load_study(study_name=study_name, storage=store, pruner=pruner)
    trial_id = store.get_trial_id_from_study_id_trial_number(store.get_study_id_from_name(study_name), number)
    return optuna.Trial(study, trial_id), store.get_trial(trial_id)
