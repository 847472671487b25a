"""TensorBoard event files in the run directory.

TensorBoard's charts draw one point per step of a tag. ``train/return`` is logged at the step each episode
ended, as in episodes.csv, so when several environments of a vector env end episodes in the same step all
but one hide behind each other. ``train/return_each_episode`` (``/<player>`` for multi-agent runs) has them
all: the same returns, in episodes.csv's order, each at its own step. The k episodes that ended at step s are
placed at s - k + 1, ..., s: steps of that vector step (it took at least k steps, one per environment that
stepped), so they stay on the env-step axis of every other tag, and a resume's purge of the steps after its
checkpoint removes exactly the episodes that ended after it.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from rlconf.errors import require
from rlconf.logging.base import EVAL_VIDEO, TRAIN_RETURN, Logger, LoggerContext

TRAIN_RETURN_EACH_EPISODE = f"{TRAIN_RETURN}_each_episode"


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
        self.run_dir = str(run_dir)
        self.flush_secs = flush_secs
        self._writer = None  # opened by the first event, once a resume has said where it starts
        # Each writer begins with a session start (SummaryWriter's purge_step) at the step it starts from: 0
        # for a fresh run, the step after its checkpoint for a resumed one. TensorBoard takes the first start
        # of a directory as its beginning and every later one as a restart that hides the events from its
        # step on, which a fresh run's writer must therefore have written, or a first resume would hide nothing.
        self.purge_step = 0
        self.ended: list[tuple[int, float, dict[str, float]]] = []  # episodes that ended at the latest step
        self.last_episode_step = 0  # where the last of train/return_each_episode went

    @property
    def writer(self):
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter  # imported here: tensorboard is slow to import

            self._writer = SummaryWriter(log_dir=self.run_dir, flush_secs=self.flush_secs, purge_step=self.purge_step)
        return self._writer

    def add_scalars(self, values, step=None) -> None:
        step = self.step if step is None else step
        for name, value in values.items():
            self.writer.add_scalar(name, value, step)

    def video_payload(self, frames, fps, path):
        """TensorBoard shows videos as animated GIFs in an image summary (torch's own ``summary.video`` needs
        moviepy 1's ``moviepy.editor``, gone from moviepy 2): encoded here with Pillow, which moviepy brings."""
        from PIL import Image
        from tensorboard.compat.proto.summary_pb2 import Summary

        gif = io.BytesIO()
        images = [Image.fromarray(frame) for frame in frames]
        images[0].save(gif, format="GIF", save_all=True, append_images=images[1:], duration=round(1000 / fps),
                       loop=0)
        height, width, channels = frames.shape[1:]
        image = Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=gif.getvalue())
        return Summary(value=[Summary.Value(tag=EVAL_VIDEO, image=image)])

    def add_video(self, payload, step) -> None:
        self.writer._get_file_writer().add_summary(payload, step)

    def add_episode(self, step, episode, returns, length, wall_seconds, agent_returns=None) -> None:
        super().add_episode(step, episode, returns, length, wall_seconds, agent_returns)
        if self.ended and self.ended[0][0] != step:
            self._write_ended()
        self.ended.append((step, returns, agent_returns or {}))

    def _write_ended(self) -> None:
        """train/return_each_episode for the episodes that ended at one step (see the module's docstring)."""
        for i, (step, returns, by_agent) in enumerate(self.ended):
            x = max(step - (len(self.ended) - 1) + i, self.last_episode_step + 1)
            self.writer.add_scalar(TRAIN_RETURN_EACH_EPISODE, returns, x)
            for agent, value in by_agent.items():
                self.writer.add_scalar(f"{TRAIN_RETURN_EACH_EPISODE}/{agent}", value, x)
            self.last_episode_step = x
        self.ended = []

    def flush(self) -> None:
        self._write_ended()  # the step is over: no episode joins these any more
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        self._write_ended()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    # -- resume --------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        self._write_ended()
        return {"step": self.step}

    def load_state_dict(self, state: dict | None) -> None:
        """Event files cannot be cut back like CSV files; TensorBoard's purge_step hides, in every event file of
        the directory, the events an earlier attempt logged after the checkpoint's step (the CSV files are the
        exact record; an event logged at the checkpoint's own step by both attempts may show twice here)."""
        self.ended = []
        self.close()
        self.purge_step = 0 if state is None else int(state["step"]) + 1
        self.last_episode_step = self.purge_step - 1
