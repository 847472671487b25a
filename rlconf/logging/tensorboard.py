"""TensorBoard event files in the run directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rlconf.config import require
from rlconf.logging.base import Logger, LoggerContext


class TensorBoardLogger(Logger):
    """Event files in the run directory (``tensorboard --logdir runs``), the x axis in environment steps."""

    @dataclass
    class Config:
        flush_secs: int = 30  # how often events reach the disk

        def __post_init__(self):
            require(self.flush_secs >= 1, "logger.tensorboard.flush_secs", self.flush_secs, "must be at least 1")

    @classmethod
    def from_config(cls, config: Config, context: LoggerContext) -> TensorBoardLogger:
        return cls(context.run_dir, flush_secs=config.flush_secs)

    def __init__(self, run_dir: str | Path, flush_secs: int = 30):
        super().__init__()
        from torch.utils.tensorboard import SummaryWriter  # imported here: tensorboard is slow to import

        self.run_dir = str(run_dir)
        self.flush_secs = flush_secs
        self.writer = SummaryWriter(log_dir=self.run_dir, flush_secs=flush_secs)

    def add_scalars(self, values, step=None) -> None:
        step = self.step if step is None else step
        for name, value in values.items():
            self.writer.add_scalar(name, value, step)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()

    # -- resume --------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"step": self.step}

    def load_state_dict(self, state: dict | None) -> None:
        """Event files cannot be cut back like CSV files; TensorBoard's purge_step hides, in every event file of
        the directory, the events an earlier attempt logged after the checkpoint's step (the CSV files are the
        exact record; an event logged at the checkpoint's own step by both attempts may show twice here)."""
        from torch.utils.tensorboard import SummaryWriter

        self.writer.close()
        purge = 0 if state is None else int(state["step"]) + 1
        self.writer = SummaryWriter(log_dir=self.run_dir, flush_secs=self.flush_secs, purge_step=purge)
