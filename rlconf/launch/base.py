"""What rlconf's launchers share: skipping finished runs, a job record per run, and the job itself.

Hydra hands a launcher the overrides of every job of a sweep. Before anything is started, each job's run
directory is worked out exactly as the run will (``resume.sweep_job_name``): a job whose run has a
summary.json is not launched again, and every other gets a ``job.json`` in its directory (launcher, job
number, overrides, later the Slurm job and its log), which ``rlconf status`` reads to show runs still queued.

The job itself (``__call__``) runs in a fresh process, on this machine or on a Slurm node: it loads the job's
config as Hydra's own launchers do and runs the task (which calls ``rlconf.experiments.run``).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

from rlconf.errors import RunFailed
from rlconf.files import read_json, write_json
from rlconf.launch.slots import Slot
from rlconf.settings import redact


@dataclass
class Job:
    """One job of a sweep, as the launcher sees it."""

    num: int
    overrides: list[str]
    run_dir: Path
    summary: dict | None  # the run has finished: not launched again
    learners: tuple[int, int] = (1, 1)  # its hardware.learners and hardware.nodes

    @property
    def name(self) -> str:
        return self.run_dir.name


class RunLauncher(Launcher):
    """The base of rlconf's Hydra launchers; subclasses implement ``start`` (launch the jobs not finished)."""

    kind = "abstract"

    def __init__(self, **params: Any) -> None:
        self.params = {k: OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v
                       for k, v in params.items()}
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None
        self.held: list[str] | None = None  # the runs of every launch, when a sweeper closes the sweep (hold_summary)
        self.announced = False  # the sweep's opening lines printed (a sweeper's later batches do not repeat them)
        self.began = time.monotonic()

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    # -- in the launching process ---------------------------------------------------------------------
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        jobs = [self._job(initial_job_idx + i, list(o)) for i, o in enumerate(job_overrides)]
        done = [job for job in jobs if job.summary is not None]
        todo = [job for job in jobs if job.summary is None]
        if done:
            print(f"rlconf: {len(done)} of {len(jobs)} runs in {sweep_dir} have finished already: skipped",
                  file=sys.stderr)
        for job in todo:
            self.record(job, state="queued", queued_at=time.time())
        began = time.monotonic()
        returns = dict(zip([job.num for job in todo], self.start(todo, sweep_dir), strict=True)) if todo else {}
        results = [_finished(job) if job.summary is not None else returns[job.num] for job in jobs]
        if self.held is not None:
            self.held += [job.name for job in jobs]
        elif todo:
            self._print_table(sweep_dir, [job.name for job in jobs], time.monotonic() - began)
        failures = [r for r in results if r.status == JobStatus.FAILED]
        for failure in failures:
            print(f"rlconf: {failure._return_value}", file=sys.stderr)
        if failures and "BasicSweeper" in str(self.config.hydra.sweeper.get("_target_", "")):
            # Hydra's basic sweeper would raise the first failure with a traceback of its own code; the
            # lines above say which runs failed and where their logs are. Other sweepers (Optuna) get the
            # failures, and may go on.
            print(f"rlconf: {len(failures)} of {len(jobs)} runs failed; see: rlconf status {sweep_dir}",
                  file=sys.stderr)
            raise SystemExit(1)
        return results

    def hold_summary(self) -> None:
        """A sweeper that launches its runs in batches (Optuna's) ends the sweep with one table of them all
        (``summary``), not one per batch."""
        self.held = []
        self.began = time.monotonic()

    def summary(self) -> None:
        """The closing table of every run launched since ``hold_summary``."""
        assert self.config is not None
        if self.held:
            self._print_table(Path(str(self.config.hydra.sweep.dir)), self.held, time.monotonic() - self.began)

    def _print_table(self, sweep_dir: Path, names: list[str], seconds: float) -> None:
        if self.waits() and not self.quiet:
            from rlconf.launch.monitor import print_table

            print_table(sweep_dir, names, seconds)

    def start(self, jobs: list[Job], sweep_dir: Path) -> list[JobReturn]:
        """Launch ``jobs`` (none has finished); one JobReturn each, in order."""
        raise NotImplementedError

    def waits(self) -> bool:
        """Whether ``start`` returns once the runs have ended (then the sweep ends with a table of them)."""
        return True

    @property
    def quiet(self) -> bool:
        """``quiet=true`` on the command line: no progress and no table, as a run prints nothing."""
        return bool(self.config is not None and self.config.get("quiet"))

    def progress(self, sweep_dir: Path, jobs: list[Job], at_once: int, where: str = "", live: bool = True):
        """The sweep's progress while ``start`` waits (``rlconf.launch.monitor.SweepProgress``); ``live``: a
        terminal's redrawn block, where no run prints to the same terminal."""
        from rlconf.launch.monitor import SweepProgress  # rich: loaded when a sweep runs, not at Hydra's start

        header = not self.announced
        self.announced = True
        return SweepProgress(sweep_dir, [job.name for job in jobs], at_once, quiet=self.quiet, where=where,
                             live=live, header=header)

    def _job(self, num: int, overrides: list[str]) -> Job:
        """The job's run directory, named as ``rlconf.experiments.run`` will name it."""
        from rlconf.config import validate
        from rlconf.experiments.rundir.directory import finished_summary
        from rlconf.experiments.rundir.resume import sweep_job_name

        assert self.hydra_context is not None and self.config is not None
        config = self.hydra_context.config_loader.load_sweep_config(self.config, overrides)
        task_overrides = list(config.hydra.overrides.task)
        with open_dict(config):
            del config["hydra"]  # the job's own config, as the task gets it
        settings = validate(config)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        name = sweep_job_name(sweep_dir, settings.agent_name, settings.env.name, settings.run.seed, task_overrides)
        run_dir = sweep_dir / name
        return Job(num, overrides, run_dir, finished_summary(run_dir, settings.run.steps),
                   (settings.hardware.learners, settings.hardware.nodes))

    def record(self, job: Job, **fields: Any) -> None:
        """Add ``fields`` to the job's ``job.json`` (creating the run directory)."""
        job.run_dir.mkdir(parents=True, exist_ok=True)
        path = job.run_dir / "job.json"
        record = read_json(path) or {}
        record.update({"launcher": self.kind, "job": job.num, "overrides": redact(job.overrides),  # a file: no secret
                       "launcher_host": socket.gethostname(), "launcher_pid": os.getpid(), **fields})
        write_json(path, record)

    # -- in the job's process -------------------------------------------------------------------------
    def __call__(self, overrides: list[str], job_num: int, singleton_state: dict, slot: Slot | None = None,
                 job_id: str | None = None) -> JobReturn:
        """Run one job: its config, as Hydra's launchers compose it, given to the task."""
        assert self.hydra_context is not None and self.config is not None and self.task_function is not None
        Singleton.set_state(singleton_state)
        setup_globals()
        if slot is not None:
            os.environ.update(slot.environment())
            if slot.cpus is not None:
                os.sched_setaffinity(0, slot.cpus)
        sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(sweep_config.hydra.job):
            sweep_config.hydra.job.id = job_id or str(os.getpid())
            sweep_config.hydra.job.num = job_num
        return run_job(hydra_context=self.hydra_context, task_function=self.task_function, config=sweep_config,
                       job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        """submitit's hook when its own signal handler requeues a job (a signal outside the training loop,
        which has its own): the same job again, which resumes from the run's last checkpoint."""
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)


def _finished(job: Job) -> JobReturn:
    """The JobReturn of a run that finished earlier: its summary, as the run itself returns it (an Optuna
    sweep's objective is its final test return, or its state pruned)."""
    return JobReturn(overrides=job.overrides, working_dir=str(job.run_dir), task_name=job.name,
                     status=JobStatus.COMPLETED, _return_value=job.summary)


def failed(job: Job, message: str) -> JobReturn:
    return JobReturn(overrides=job.overrides, working_dir=str(job.run_dir), task_name=job.name,
                     status=JobStatus.FAILED, _return_value=RunFailed(message))
