"""The Logger interface: what happened during a run, keyed by environment step.

The experiment sets ``logger.step`` as it goes; components (approximations, agents) call ``add_scalar``
without knowing the clock or the backends. Debug scalars (losses, schedules) are written only when the
run is ``verbose``, and then every ``debug_every``-th update, so they cost nothing otherwise.
"""

from __future__ import annotations


class Logger:
    def __init__(self, verbose: bool = False, debug_every: int = 100):
        self.step = 0
        self.verbose = verbose
        self.debug_every = debug_every

    def wants_debug(self, count: int) -> bool:
        return self.verbose and count % self.debug_every == 0

    def add_scalar(self, name: str, value: float, step: int | None = None) -> None:
        pass

    def add_episode(self, step: int, episode: int, returns: float, length: int, wall_seconds: float) -> None:
        pass

    def add_evaluation(self, step: int, returns: list[float]) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    # -- resume --------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Where this logger stands, saved in every checkpoint (after ``flush``): what it has written so far."""
        return {}

    def load_state_dict(self, state: dict | None) -> None:
        """Continue from a checkpoint's ``state_dict``: whatever was written after it (by a run that went on
        and was then killed) is discarded, so a resumed run neither loses nor repeats a record. ``None``: the
        run starts over in a directory an earlier attempt wrote to before its first checkpoint."""


class LoggerGroup(Logger):
    """Several backends behind one Logger (CSV always, plus whatever the logger group adds)."""

    def __init__(self, loggers: list[Logger], verbose: bool = False, debug_every: int = 100):
        super().__init__(verbose, debug_every)
        self.loggers = loggers

    def add_scalar(self, name: str, value: float, step: int | None = None) -> None:
        step = self.step if step is None else step
        for logger in self.loggers:
            logger.add_scalar(name, value, step)

    def add_episode(self, step, episode, returns, length, wall_seconds) -> None:
        for logger in self.loggers:
            logger.add_episode(step, episode, returns, length, wall_seconds)

    def add_evaluation(self, step, returns) -> None:
        for logger in self.loggers:
            logger.add_evaluation(step, returns)

    def flush(self) -> None:
        for logger in self.loggers:
            logger.flush()

    def close(self) -> None:
        for logger in self.loggers:
            logger.close()

    def state_dict(self) -> dict:
        for logger in self.loggers:  # the backends' own clocks are not kept up to date while logging
            logger.step = self.step
        return {type(logger).__name__: logger.state_dict() for logger in self.loggers}

    def load_state_dict(self, state: dict | None) -> None:
        for logger in self.loggers:  # a backend added since the checkpoint starts over
            logger.load_state_dict(None if state is None else state.get(type(logger).__name__))
