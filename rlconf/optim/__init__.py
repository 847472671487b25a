"""Schedules for hyperparameters."""

from rlconf.optim.schedule import Clock, LinearScheduler, schedule

__all__ = ["Clock", "LinearScheduler", "schedule"]
