"""Schedules for hyperparameters; the choice of optimiser and learning-rate schedule (rlconf.optim.choice,
imported by name: it is checked without torch)."""

from rlconf.optim.schedule import Clock, CosineScheduler, LinearScheduler, schedule

__all__ = ["Clock", "CosineScheduler", "LinearScheduler", "schedule"]
