"""What Slurm's queue says of a sweep's jobs: ``squeue_states``, and which of its states mean queued, running or
ended. Asked by the Slurm launcher while it waits and by ``rlconf status`` (``launch.status``) alike; it imports
neither, nor Hydra or submitit, so ``rlconf status`` stays quick.
"""

from __future__ import annotations

import shutil
import subprocess

QUEUED = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "RESV_DEL_HOLD", "SUSPENDED"}
RUNNING = {"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING"}
# squeue states after which a job will not run again (a requeued job is PENDING or REQUEUED instead).
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
         "PREEMPTED", "SPECIAL_EXIT", "REVOKED"}


def squeue_states(job_ids: list[str]) -> dict[str, str] | None:
    """Slurm's state of each job still known to it (array tasks one by one; a finished job is forgotten
    MinJobAge seconds after it ended), or None when squeue cannot answer (it is not there, or slurmctld is
    unreachable for a moment)."""
    arrays = sorted({j.split("_")[0] for j in job_ids})
    if not arrays or shutil.which("squeue") is None:
        return None
    try:
        out = subprocess.run(["squeue", "-h", "-r", "-t", "all", "-o", "%i|%T", "-j", ",".join(arrays)],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return {} if "Invalid job id" in out.stderr else None
    states = {}
    for line in out.stdout.splitlines():
        job_id, _, state = line.strip().partition("|")
        states[job_id] = state
    return states
