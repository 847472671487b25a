"""Callbacks: the experiment loop's extension point.

A callback is told of a run's events, the same for every kind of loop (single, async runner, bandit,
multi-agent); each event method receives ``run``, a read-only view of the run (``Run``), and what the event is
about. Every method does nothing unless overridden:

============================  =======================================================================
``on_run_start(run)``         training is about to begin (a resumed run: at its checkpoint's step)
``on_batch(run)``             after each iteration of the loop: every copy of the environment stepped once
                              (the async runner: each time the learner has caught up with what it was sent)
``on_episode_end(run, ep)``   a training episode ended (``Episode``: its step, number, return, length);
                              a bandit run: each row of pulls.csv, its return the recent pulls' mean reward
``on_evaluation(run, ev)``    a periodic evaluation ended (``Evaluation``: its step and returns)
``on_checkpoint(run, path)``  checkpoint.pt was written (``path``), periodically, on a signal and at the end
``on_run_end(run)``           the run has ended: trained and tested (summary.json written), or stopped by a
                              signal with a checkpoint (``run.state`` says which)
============================  =======================================================================

A callback ends the run early with ``run.stop(reason)``: training stops at the end of the loop's iteration,
writes its last checkpoint and is tested as a finished run is; status.json and summary.json say ``done``
with ``stop_reason``, and a resume of it says it has stopped. A callback that raises stops the run in one
line naming it (exit status 1), the last checkpoint kept. A callback may keep state across a resume by
returning it from ``state_dict`` (tensors and plain data) and taking it back in ``load_state_dict``.

Users add callbacks from the config (``callbacks=[my_module.MyCallback]``, the class from a module named in
``plugins=``: the same trust rule as plugin agents) and from Python (``rlconf.train(cfg, callbacks=[...])``);
rlconf ships three (``stop.reward``, ``stop.patience``, ``stop.time``: loop.stopping). The loop's own
bookkeeping (evaluations, checkpoints, videos, the console, status.json) is built from callbacks on the same
events (loop.bookkeeping); a callback that a user adds is told of each event after it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlconf.errors import ConfigError, first_line

EVENTS = ("on_run_start", "on_batch", "on_episode_end", "on_evaluation", "on_checkpoint", "on_run_end")


@dataclass(frozen=True)
class Episode:
    """A training episode that ended: at environment step ``steps``, the run's ``number``-th."""

    steps: int
    number: int
    returns: float
    length: int
    agent_returns: dict[str, float] | None = None  # every player's (multi-agent runs)


@dataclass(frozen=True)
class Evaluation:
    """A periodic evaluation: the greedy agent's ``returns`` at environment step ``steps``."""

    steps: int
    returns: tuple[float, ...]

    @property
    def mean(self) -> float:
        import numpy as np  # here: ``rlconf.Callback`` is imported with rlconf, which must stay quick to import

        return float(np.mean(self.returns))

    @property
    def std(self) -> float:
        import numpy as np

        return float(np.std(self.returns))


class Run:
    """A read-only view of a run for its callbacks; ``stop(reason)`` is the one thing it asks of the loop."""

    __slots__ = ("_experiment",)

    def __init__(self, experiment: Any):  # the loop's Experiment (loop.experiment, which imports this module)
        self._experiment = experiment

    @property
    def steps(self) -> int:
        """Environment steps taken so far (all copies, all attempts)."""
        return self._experiment.env.steps

    @property
    def budget(self) -> int:
        return self._experiment.budget

    @property
    def episodes(self) -> int:
        return self._experiment.episodes

    @property
    def last_return(self) -> float | None:
        return self._experiment.last_return

    @property
    def best_return(self) -> float | None:
        """The best training episode's return so far."""
        return self._experiment.best_return

    @property
    def best_eval(self) -> float | None:
        """The best periodic evaluation's mean return so far (best.pt holds its weights)."""
        return self._experiment.best_eval

    @property
    def evaluation(self) -> Evaluation | None:
        """The last periodic evaluation of this attempt (None before the first)."""
        return self._experiment.last_evaluation

    @property
    def seconds(self) -> float:
        """Seconds trained so far, across attempts (as if never stopped), tests excluded."""
        return self._experiment.trained_seconds()

    @property
    def resumes(self) -> int:
        return self._experiment.resumes

    @property
    def start_steps(self) -> int:
        """Where this attempt began: 0, or the checkpoint's step when resumed."""
        return self._experiment.start_steps

    @property
    def seed(self) -> int:
        return self._experiment.seed

    @property
    def run_dir(self) -> Path:
        return self._experiment.run_dir

    @property
    def checkpoint_steps(self) -> int | None:
        """The step of the checkpoint on disk (None: none yet)."""
        return self._experiment.checkpoint_steps

    @property
    def checkpoint_path(self) -> Path:
        return self._experiment.run_dir / "checkpoint.pt"

    @property
    def state(self) -> str:
        """``running``; at ``on_run_end``: ``done``, ``pruned``, ``stopped`` or ``requeued``."""
        return self._experiment.state

    @property
    def stop_reason(self) -> str | None:
        """Why the run was asked to stop early (None: it was not)."""
        return self._experiment.stop_reason

    def stop(self, reason: str) -> None:
        """End the run "done" at the end of this iteration of the loop, with ``reason`` in status.json and
        summary.json (the first reason given is kept)."""
        self._experiment.request_stop(str(reason))


class Callback:
    """Told of a run's events (see the module's docstring); every method does nothing unless overridden."""

    @property
    def name(self) -> str:
        """How messages name it: its class's import path."""
        kind = type(self)
        return f"{kind.__module__}.{kind.__qualname__}"

    def on_run_start(self, run: Run) -> None: ...

    def on_batch(self, run: Run) -> None: ...

    def on_episode_end(self, run: Run, episode: Episode) -> None: ...

    def on_evaluation(self, run: Run, evaluation: Evaluation) -> None: ...

    def on_checkpoint(self, run: Run, path: Path) -> None: ...

    def on_run_end(self, run: Run) -> None: ...

    def state_dict(self) -> dict[str, Any] | None:
        """What a checkpoint keeps of it, to continue after a resume (None: nothing)."""
        return None

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class Callbacks:
    """A run's callbacks, told of each event in order: the loop's own (``own``: their errors are the loop's),
    then the user's (``user``: one that raises is ``failed``, a one-line fault naming it)."""

    def __init__(self, own: Sequence[Callback], user: Sequence[Callback], failed: Callable[[str], Exception]):
        self.own = list(own)
        self.user = list(user)
        self.failed = failed
        # Each event's handlers, found once: on_batch comes every step, and most callbacks do nothing on it.
        self._own = {event: [handler for _, handler in _handlers(self.own, event)] for event in EVENTS}
        self._user = {event: _handlers(self.user, event) for event in EVENTS}

    def fire(self, event: str, run: Run, *args: Any) -> None:
        for handler in self._own[event]:
            handler(run, *args)
        for callback, handler in self._user[event]:
            try:
                handler(run, *args)
            except Exception as error:
                raise self.failed(f"callback {callback.name} failed in {event}: {first_line(error)}") from None

    def state_dict(self) -> dict[str, Any]:
        """The states of the callbacks that keep one, by position and name."""
        states = {}
        for i, callback in enumerate(self.user):
            state = callback.state_dict()
            if state is not None:
                states[f"{i}:{callback.name}"] = state
        return states

    def load_state_dict(self, states: dict[str, Any]) -> None:
        for i, callback in enumerate(self.user):
            if f"{i}:{callback.name}" in states:
                callback.load_state_dict(states[f"{i}:{callback.name}"])


def from_config(paths: Sequence[str]) -> list[Callback]:
    """The callbacks ``callbacks=[module.Class, ...]`` names, each made with no arguments; their modules are
    plugins (``plugins=``, imported by validation). A ConfigError in one line for one that is not a Callback."""
    made = []
    for path in paths:
        module, _, name = path.rpartition(".")
        kind = getattr(importlib.import_module(module), name, None)
        if not (isinstance(kind, type) and issubclass(kind, Callback)):
            raise ConfigError(f"callbacks={list(paths)}: {module} has no Callback class {name!r}; allowed: a "
                              "subclass of rlconf.Callback defined in a module named in plugins=")
        try:
            made.append(kind())
        except Exception as error:
            raise ConfigError(f"callbacks={list(paths)}: {path}() failed: {first_line(error)}") from None
    return made


def _handlers(callbacks: Sequence[Callback], event: str) -> list[tuple[Callback, Callable[..., None]]]:
    """The callbacks that override ``event`` (the others' method does nothing), each with its bound method."""
    handlers = ((callback, getattr(callback, event)) for callback in callbacks)
    return [(callback, method) for callback, method in handlers
            if getattr(method, "__func__", None) is not getattr(Callback, event)]
