"""``launcher=basic``: the runs of a sweep one after another inside the ``rlconf`` process, as Hydra's own basic
launcher runs them (the fastest for tiny runs: no process to start, nothing isolated), with what every rlconf
launcher gives a sweep: finished runs skipped, a ``job.json`` per run, the sweep directory first, a line as each
run starts and ends, and the closing table with the path of sweep.csv (``RunLauncher.launch``).

Each run prints its own progress as a single run does, so the sweep's progress is plain lines here, never the
terminal's live block (the two would draw over each other).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from hydra.core.utils import JobReturn, JobStatus, configure_log, run_job
from omegaconf import open_dict

from rlconf.launch.base import Job, RunLauncher


class BasicRunLauncher(RunLauncher):
    kind = "basic"

    def start(self, jobs: list[Job], sweep_dir: Path) -> list[JobReturn]:
        assert self.config is not None
        progress = self.progress(sweep_dir, jobs, 1, ", one after another in this process", live=False)
        results = []
        try:
            for job in jobs:
                self.record(job, state="started", pid=os.getpid(), started_at=time.time())
                progress.started(job.name)
                result = self._run_here(job)
                failed = result.status == JobStatus.FAILED
                progress.ended(job.name, failed, str(result._return_value) if failed else "")
                results.append(result)
        finally:
            progress.close()
        return results

    def _run_here(self, job: Job) -> JobReturn:
        """The job's config, composed as Hydra's basic launcher composes it, run by the task in this process."""
        assert self.hydra_context is not None and self.config is not None and self.task_function is not None
        config = self.hydra_context.config_loader.load_sweep_config(self.config, list(job.overrides))
        with open_dict(config):
            config.hydra.job.id = job.num
            config.hydra.job.num = job.num
        try:
            return run_job(hydra_context=self.hydra_context, task_function=self.task_function, config=config,
                           job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")
        finally:  # as Hydra's basic launcher: a run may have changed the logging configuration
            configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
