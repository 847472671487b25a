"""Loggers: the run's record on disk (CSV, always), in TensorBoard and in wandb (rlconf.logging.wandb)."""

from rlconf.logging.base import Logger, LoggerContext, LoggerGroup, ScopedLogger
from rlconf.logging.csv import CSVLogger
from rlconf.logging.tensorboard import TensorBoardLogger

__all__ = ["CSVLogger", "Logger", "LoggerContext", "LoggerGroup", "ScopedLogger", "TensorBoardLogger"]
