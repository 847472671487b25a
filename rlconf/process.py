"""A process that ends with the one that started it: ``die_with_parent``.

A ground-floor module (it imports nothing from rlconf, and no torch): both a local launcher's job
(``rlconf.launch.job``) and a data-parallel run's further learners (``rlconf.experiments.loop.learners``) ask for
it first thing, before anything slow is imported.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

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
