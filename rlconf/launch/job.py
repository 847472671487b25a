"""One job of a local launcher, in its own process: ``python -m rlconf.launch.job TASK.pkl``.

TASK.pkl holds the launcher and the job's arguments (cloudpickle, as submitit does for Slurm jobs); the
job's JobReturn is written beside it as TASK.result.pkl. A run stopped by a signal exits with 128 + the
signal's number and writes no result: its checkpoint is what it leaves. ``python -m rlconf.launch.job TASK.pkl
PID``: the job is stopped (SIGTERM) when its launcher, process PID, ends (``rlconf.process.die_with_parent``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from rlconf.process import die_with_parent


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
