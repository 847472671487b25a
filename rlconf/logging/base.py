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
