"""Signals that ask a loop to stop where it stands, instead of interrupting it wherever it happens to be."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

# SIGINT: Ctrl-C. SIGTERM: kill, and Slurm at a time limit, on preemption or scancel. SIGUSR1 / SIGUSR2: the
# warning Slurm sends ahead of a time limit (sbatch --signal; submitit asks for USR2) or scancel --signal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)


class _StopRequest:
    def __init__(self):
        self.signum: int | None = None


@contextlib.contextmanager
def stop_requests(signals=STOP_SIGNALS) -> Iterator[_StopRequest]:
    """While a loop runs, these signals only ask it to stop: it answers where it checks ``signum`` (training
    finishes the current step, writes a checkpoint and raises Interrupted, so nothing is left half-updated; a
    sweep's launcher passes Ctrl-C on to its runs). A second Ctrl-C acts at once; other
    signals are not repeated by people but by schedulers (Slurm's SIGTERM reaches a job step twice within a
    millisecond): those must not cut the checkpoint short, so they change nothing."""
    request = _StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def ask(signum, frame):
        if request.signum is None:
            request.signum = signum
        if signum == signal.SIGINT and signal.SIGINT in previous:  # the next Ctrl-C is not polite any more
            signal.signal(signal.SIGINT, previous[signal.SIGINT])

    previous = {s: signal.signal(s, ask) for s in signals}
    try:
        yield request
    finally:
        for s in signals:
            signal.signal(s, previous[s])
