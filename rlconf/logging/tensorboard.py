"""TensorBoard event files in the run directory."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rlconf.logging.base import Logger


class TensorBoardLogger(Logger):
    def __init__(self, run_dir: str | Path):
        super().__init__()
        from torch.utils.tensorboard import SummaryWriter  # imported here: tensorboard is slow to import

        self.run_dir = str(run_dir)
        self.writer = SummaryWriter(log_dir=self.run_dir, flush_secs=30)

    def add_scalar(self, name, value, step=None) -> None:
        self.writer.add_scalar(name, value, self.step if step is None else step)

    def add_episode(self, step, episode, returns, length, wall_seconds) -> None:
        self.writer.add_scalar("train/return", returns, step)
        self.writer.add_scalar("train/episode_length", length, step)

    def add_evaluation(self, step, returns) -> None:
        r = np.asarray(returns)
        self.writer.add_scalar("eval/return_mean", r.mean(), step)
        self.writer.add_scalar("eval/return_std", r.std(), step)

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
        self.writer = SummaryWriter(log_dir=self.run_dir, flush_secs=30, purge_step=purge)
