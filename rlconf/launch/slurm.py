"""The runs of a sweep as one Slurm job array, submitted through submitit.

Each array task runs one job (``RunLauncher.__call__``) from submitit's pickle. The job script asks Slurm
for a warning signal ``signal_delay_s`` before the time limit: the run then stops at a step boundary,
writes a complete checkpoint and requeues its own job (rlconf.experiments.loop.preemption); the requeued task
runs the same pickle again and resumes in the same run directory. Preemption and the time limit itself
(SIGTERM, with Slurm's reason) do the same.

With ``wait: true`` (Hydra's habit, and what sweepers such as Optuna need) the launcher waits for the
results, watching the jobs with squeue (sacct needs accounting, which many clusters and test clusters do not
run); a requeued job is waited for until it finishes. With ``wait: false`` it returns once the array is
submitted: ``rlconf status SWEEP_DIR`` follows it.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus

from rlconf.files import log_tail
from rlconf.launch.base import Job, RunLauncher, failed
from rlconf.launch.launcher_config import sbatch_parameters
from rlconf.launch.squeue import ENDED, QUEUED, RUNNING, squeue_states
from rlconf.text import counted

RESULT_GRACE_SECONDS = 30.0  # a shared filesystem may show the result file a little after the job ended


class SlurmRunLauncher(RunLauncher):
    kind = "slurm"

    def executor(self, sweep_dir: Path):
        import submitit

        p = self.params
        executor = submitit.SlurmExecutor(folder=p["folder"], max_num_timeout=1000,
                                          python=p["python"] or None)
        # A run of several learners is one job of tasks (one per learner) that form its process group.
        per_node = max(1, p["tasks"] // p["nodes"])
        parameters = {"job_name": p["job_name"], "time": p["time"], "cpus_per_task": p["cpus"],
                      "ntasks_per_node": per_node, "nodes": p["nodes"],
                      "array_parallelism": p["array_parallelism"], "signal_delay_s": p["signal_delay_s"],
                      "setup": list(p["setup"]), "additional_parameters": sbatch_parameters(p["sbatch"]),
                      "partition": p["partition"], "account": p["account"], "qos": p["qos"], "mem": p["mem"],
                      "constraint": p["constraint"], "gpus_per_node": p["gpus"] * per_node or None}
        executor.update_parameters(**{k: v for k, v in parameters.items() if v is not None})
        return executor

    def start(self, jobs: list[Job], sweep_dir: Path) -> list[JobReturn]:
        if shutil.which("sbatch") is None:
            raise RuntimeError("launcher=slurm: sbatch is not on PATH (is this a Slurm login node?)")
        shapes = sorted({job.learners for job in jobs})
        if shapes != [(self.params["tasks"], self.params["nodes"])]:  # one array, one sbatch shape
            found = " and ".join(f"hardware.learners={n} hardware.nodes={m}" for n, m in shapes)
            raise RuntimeError(f"launcher=slurm: the runs of one job array share its tasks and nodes, but this "
                               f"sweep has {found}; allowed: one value of each per sweep")
        executor = self.executor(sweep_dir)
        state = Singleton.get_state()
        submitted = executor.map_array(self, [j.overrides for j in jobs], [j.num for j in jobs],
                                       [state] * len(jobs))
        for job, slurm_job in zip(jobs, submitted, strict=True):
            self.record(job, state="submitted", slurm_job_id=str(slurm_job.job_id), log=str(slurm_job.paths.stderr),
                        stdout=str(slurm_job.paths.stdout), result=str(slurm_job.paths.result_pickle))
        array = str(submitted[0].job_id).split("_")[0]
        print(f"rlconf: submitted {counted(len(jobs), 'run')} as Slurm job array {array}; follow them with: "
              f"rlconf status {sweep_dir}", file=sys.stderr)
        if not self.params["wait"]:
            return [JobReturn(overrides=j.overrides, working_dir=str(j.run_dir), task_name=j.name,
                              status=JobStatus.COMPLETED, _return_value=None) for j in jobs]
        progress = self.progress(sweep_dir, jobs, min(self.params["array_parallelism"], len(jobs)),
                                 f" in Slurm job array {array}")
        try:
            return self.wait(jobs, submitted, progress)
        except KeyboardInterrupt:
            progress.close()
            print(f"rlconf: no longer waiting; the jobs go on (scancel {array} stops them)", file=sys.stderr)
            raise
        finally:
            progress.close()

    def waits(self) -> bool:
        return bool(self.params["wait"])

    def wait(self, jobs: list[Job], submitted: list, progress=None) -> list[JobReturn]:
        """The jobs' results, as each finishes; a job that ended without one (killed, cancelled, failed
        outside the run) is a failure that names its log. ``progress``: a SweepProgress told what squeue says."""
        from submitit.core import utils as submitit_utils

        results: dict[int, JobReturn] = {}
        ended_at: dict[int, float] = {}
        while len(results) < len(jobs):
            states = squeue_states([str(s.job_id) for s in submitted])
            for job, slurm_job in zip(jobs, submitted, strict=True):
                if job.num in results:
                    continue
                result = Path(slurm_job.paths.result_pickle)
                if result.exists():
                    outcome, value = submitit_utils.pickle_load(result)
                    results[job.num] = value if outcome == "success" else failed(
                        job, f"run {job.run_dir} failed in Slurm job {slurm_job.job_id}:\n{value}")
                    if progress is not None:
                        progress.ended(job.name, results[job.num].status == JobStatus.FAILED,
                                       f"see {slurm_job.paths.stderr}")
                    continue
                state = "UNKNOWN" if states is None else states.get(str(slurm_job.job_id), "GONE")
                if progress is not None and state in RUNNING:
                    progress.started(job.name)
                elif progress is not None and state in QUEUED:  # requeued after a time limit or preemption
                    progress.started(job.name, "queued")
                if state in ENDED or state == "GONE":
                    first = ended_at.setdefault(job.num, time.monotonic())
                    if time.monotonic() - first > RESULT_GRACE_SECONDS:
                        log = Path(slurm_job.paths.stderr)
                        last = log_tail(log)
                        results[job.num] = failed(job, f"run {job.run_dir}: Slurm job {slurm_job.job_id} ended "
                                                       f"({state}) without a result{': ' + last if last else ''} "
                                                       f"(log: {log})")
                        if progress is not None:
                            progress.ended(job.name, True, f"Slurm job {slurm_job.job_id} ended ({state})")
                else:
                    ended_at.pop(job.num, None)
            if len(results) < len(jobs):
                if progress is not None:
                    progress.tick()
                time.sleep(self.params["poll_seconds"])
        return [results[job.num] for job in jobs]
