"""One job of a local launcher, in its own process: ``python -m rlconf.launch.job TASK.pkl``.

TASK.pkl holds the launcher and the job's arguments (cloudpickle, as submitit does for Slurm jobs); the
job's JobReturn is written beside it as TASK.result.pkl. A run stopped by a signal exits with 128 + the
signal's number and writes no result: its checkpoint is what it leaves. ``python -m rlconf.launch.job TASK.pkl
PID``: the job is stopped (SIGTERM) when its launcher, process PID, ends (``die_with_parent``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int, signum: int = signal.SIGTERM) -> None:
    """Have the kernel send ``signum`` to this process when its parent ``parent`` ends, however it ends
    (``kill -9`` included): a run whose sweep is gone then checkpoints and stops (SIGTERM) rather than train on
    as an orphan that holds its run directory's lock. Asked for first thing; a parent that ended before the
    request is seen by the changed parent pid, and answered the same way. Elsewhere than Linux: nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
    except (OSError, AttributeError):  # no prctl here: the parent's own forwarding of signals still holds
        return
    if os.getppid() != parent:
        os.kill(os.getpid(), signum)


def main(task_path: str, parent: str | None = None) -> int:
    import cloudpickle

    if parent is not None:
        die_with_parent(int(parent))
    task = Path(task_path)
    launcher, args = cloudpickle.loads(task.read_bytes())
    result = launcher(*args)
    try:
        payload = cloudpickle.dumps(result)
    except Exception:  # an exception that cannot be pickled: keep its message
        result._return_value = RuntimeError(str(result._return_value))
        payload = cloudpickle.dumps(result)
    tmp = task.with_suffix(".result.tmp")
    tmp.write_bytes(payload)
    tmp.replace(task.with_suffix(".result.pkl"))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
