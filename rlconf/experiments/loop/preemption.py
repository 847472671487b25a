"""What a run does after a signal stopped it with a checkpoint: go back into the queue when a scheduler
stopped it, or simply end when a person did.

Under Slurm (a batch job: SLURM_JOB_ID is set), the run asks for its own job to be requeued with
``scontrol requeue`` (submitit's way, which its job environment does for the job IDs of arrays too); the
requeued job runs the same pickled submission again, finds its run directory and resumes. It does so for

- SIGUSR1 / SIGUSR2: the warning ahead of the time limit (``sbatch --signal``; submitit asks for USR2) or
  ``scancel --signal``;
- SIGTERM when Slurm says why the job ends (``Reason=TimeLimit``, preemption, ...). ``scancel`` also sends
  SIGTERM, with ``Reason=None``: a job a person cancelled stays cancelled.

It never requeues a run that made no progress in this attempt, so a run that cannot reach a step before its
time limit does not come back forever. SIGINT (Ctrl-C) never requeues.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

from rlconf.experiments.rundir.directory import slurm_job_id


def should_requeue(signum: int, progressed: bool) -> bool:
    """Whether a run stopped by ``signum`` should go back into its scheduler's queue."""
    if not progressed or signum == signal.SIGINT or slurm_job_id() is None or shutil.which("scontrol") is None:
        return False
    if signum in (signal.SIGUSR1, signal.SIGUSR2):
        return True
    reason = _job_field("Reason")
    return reason not in (None, "None")


def requeue() -> bool:
    """Put this Slurm job back into the queue; True when Slurm accepted it. Slurm then ends this attempt
    (SIGTERM, then SIGKILL after KillWait): the caller has already written its checkpoint."""
    job = slurm_job_id()
    try:
        submitit_job = _submitit_job_id()
        result = subprocess.run(["scontrol", "requeue", submitit_job or job], capture_output=True, text=True,
                                timeout=60)
    except (OSError, subprocess.SubprocessError) as error:
        print(f"rlconf: could not requeue Slurm job {job}: {error}", file=sys.stderr)
        return False
    if result.returncode != 0:
        print(f"rlconf: could not requeue Slurm job {job}: {result.stderr.strip()}", file=sys.stderr)
        return False
    return True


def _submitit_job_id() -> str | None:
    """The job ID as submitit's job environment gives it, when the run is a submitit job."""
    if not os.environ.get("SUBMITIT_EXECUTOR"):
        return None
    try:
        import submitit

        return str(submitit.JobEnvironment().job_id)
    except Exception:  # not a submitit job after all, or another submitit version: use Slurm's variables
        return None


def _job_field(name: str) -> str | None:
    """One field of ``scontrol show job`` for this job (None when scontrol cannot tell)."""
    try:
        out = subprocess.run(["scontrol", "show", "job", "-o", str(slurm_job_id())], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for item in out.split():
        key, _, value = item.partition("=")
        if key == name:
            return value
    return None
