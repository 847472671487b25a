"""Why a loop stops before its budget: signals that ask it to stop where it stands, instead of interrupting it
wherever it happens to be; and the callbacks of ``stop.*`` that end a run "done" early, saying why (a return
reached, evaluations that stopped improving, a wall-clock limit), and of ``episodes=N``, an episode budget
beside the step budget."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from rlconf.experiments.loop.callbacks import Callback, Episode, Evaluation, Run
from rlconf.text import counted

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


class StopAtReturn(Callback):
    """``stop.reward=R``: the run ends once a periodic evaluation's mean return reaches R."""

    def __init__(self, reward: float):
        self.reward = reward

    def on_evaluation(self, run: Run, evaluation: Evaluation) -> None:
        if evaluation.mean >= self.reward:
            run.stop(f"stop.reward={self.reward:g}: the evaluation at step {evaluation.steps:,} returned "
                     f"{evaluation.mean:.1f}")


class StopOnPlateau(Callback):
    """``stop.patience=N``: the run ends after N periodic evaluations in a row that did not beat the best one
    before them. The best and the count are kept in checkpoints: a resumed run counts on."""

    def __init__(self, patience: int):
        self.patience = patience
        self.best: float | None = None
        self.stale = 0  # evaluations since the best

    def on_evaluation(self, run: Run, evaluation: Evaluation) -> None:
        if self.best is None or evaluation.mean > self.best:
            self.best, self.stale = evaluation.mean, 0
            return
        self.stale += 1
        if self.stale >= self.patience:
            run.stop(f"stop.patience={self.patience}: {counted(self.stale, 'evaluation')} without beating the best "
                     f"return {self.best:.1f}")

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "stale": self.stale}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.stale = state["best"], state["stale"]


class StopAtTime(Callback):
    """``stop.time=LIMIT``: the run ends once it has trained that many seconds, across its attempts (a resumed
    run goes on from the time it had trained; tests are not counted)."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def on_batch(self, run: Run) -> None:
        if run.seconds >= self.seconds:
            run.stop(f"stop.time={_duration(self.seconds)}: trained {_duration(run.seconds)}")


def _duration(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m")) if n) + f"{secs}s"


class StopAtEpisodes(Callback):
    """``episodes=N``: the run ends once N training episodes have finished, every copy's counted as episodes.csv
    counts them (a bandit's: its pulls, at each row of pulls.csv). It ends at the end of the step in which the
    N-th finishes: copies that finish one in the same step add theirs, so a run of n copies records from N to
    N + n - 1. A resumed run counts on from its checkpoint's count. Stateless: the count is the run's."""

    def __init__(self, episodes: int):
        self.episodes = episodes

    def on_episode_end(self, run: Run, episode: Episode) -> None:
        if run.episodes >= self.episodes:
            run.stop(f"episodes={self.episodes}: {run.episodes:,} training episodes finished at step {run.steps:,}")


def stop_callbacks(stop: Any, episodes: int | None = None) -> list[Callback]:
    """The callbacks of the ``stop`` settings (rlconf.settings.StopSettings) that are set, and of the episode
    budget (``episodes``) where there is one."""
    found: list[Callback] = [StopAtEpisodes(episodes)] if episodes is not None else []
    if stop.reward is not None:
        found.append(StopAtReturn(stop.reward))
    if stop.patience is not None:
        found.append(StopOnPlateau(stop.patience))
    if stop.time is not None:
        found.append(StopAtTime(stop.seconds))
    return found
