"""Schedules for any hyperparameter, driven by the number of environment steps an agent has seen."""

from __future__ import annotations

import math


class Clock:
    """Counts the environment steps an agent has seen; every schedule of that agent reads it.

    Agents advance it in ``act`` and save it in their checkpoints, so a resumed run continues every
    schedule where it stopped.
    """

    def __init__(self, steps: int = 0):
        self.steps = steps
        self.schedules: list[LinearScheduler] = []  # those reading this clock, in the order they were made

    def tick(self, n: int = 1) -> None:
        self.steps += n

    def named_schedules(self) -> dict[str, LinearScheduler]:
        """The schedules reading this clock by name (for verbose logs); a name two share gets its index."""
        names = [scheduler.name for scheduler in self.schedules]
        return {(name if names.count(name) == 1 else f"{name}_{names[:i].count(name)}"): self.schedules[i]
                for i, name in enumerate(names)}


class LinearScheduler:
    """A value that moves linearly from ``initial`` to ``final`` between two step counts, then stays.

    ``float(scheduler)`` or ``scheduler.value`` gives the current value, so a scheduled hyperparameter can
    be used wherever a constant was.
    """

    def __init__(self, initial: float, final: float, decay_start: int, decay_end: int, clock: Clock,
                 name: str = "schedule"):
        if decay_end < decay_start:
            raise ValueError(f"{name}: decay_end ({decay_end}) is before decay_start ({decay_start})")
        self.initial = float(initial)
        self.final = float(final)
        self.decay_start = int(decay_start)
        self.decay_end = int(decay_end)
        self.clock = clock
        self.name = name
        clock.schedules.append(self)

    @property
    def value(self) -> float:
        t = self.clock.steps
        if t <= self.decay_start:
            return self.initial
        if t >= self.decay_end:
            return self.final
        return self.between((t - self.decay_start) / (self.decay_end - self.decay_start))

    def between(self, fraction: float) -> float:
        """The value ``fraction`` of the way through the decay (strictly between its start and its end)."""
        return self.initial + fraction * (self.final - self.initial)

    def __float__(self) -> float:
        return self.value


class CosineScheduler(LinearScheduler):
    """A value that moves from ``initial`` to ``final`` between two step counts along half a cosine (slowly at
    both ends: Loshchilov & Hutter's annealing without restarts), then stays. Read like a LinearScheduler."""

    def between(self, fraction: float) -> float:
        return self.final + 0.5 * (self.initial - self.final) * (1 + math.cos(math.pi * fraction))


def schedule(initial: float, final: float | None, decay_steps: int, clock: Clock, name: str,
             decay_start: int = 0) -> float | LinearScheduler:
    """A constant when ``final`` is None, else a LinearScheduler from ``initial`` to ``final``.

    Agent configs spell a schedule as ``x``, ``x_final`` and ``x_decay_steps``; this turns the trio into the
    object the agent reads with ``float()``.
    """
    if final is None:
        return float(initial)
    return LinearScheduler(initial, final, decay_start, decay_start + decay_steps, clock, name)
