"""Loggers: the run's record on disk (CSV, always) and in TensorBoard."""

from rlconf.logging.base import Logger, LoggerGroup
from rlconf.logging.csv import CSVLogger
from rlconf.logging.tensorboard import TensorBoardLogger

__all__ = ["CSVLogger", "Logger", "LoggerGroup", "TensorBoardLogger"]
