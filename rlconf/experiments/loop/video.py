"""Videos while training (``logger.video_every=N``): every N environment steps, one greedy episode of the test
agent, rendered by the environment itself (``rgb_array``: the game's screen, not the agent's 84x84 frames), kept
as ``RUN/videos/video-<step>.mp4`` and shown by the loggers that show videos (TensorBoard, wandb).

The loop pays for the episode and nothing more: the frames are played in the run's process (the agent is
there), then a thread encodes the mp4, and each backend's own encoding (TensorBoard's GIF), while training goes
on; the finished video is handed to the loggers at the next step of the loop, on the loop's own thread. One
video is encoded at a time: when the next one is due before the last is written, the loop waits for it, so a
slow disk costs time rather than memory. An episode is cut at ``logger.video_length`` frames (its first ones).

The episode is seeded (the test seed plus the step), and the global generators are restored afterwards, as
periodic evaluations do: recording a video changes nothing else about a run.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.errors import ConfigError, first_line
from rlconf.experiments.loop.evaluate import seeded
from rlconf.files import TEMPORARY

VIDEOS = "videos"  # the run directory's folder of videos


class _Frames(gym.Wrapper):
    """Keeps the environment's rendering after every reset and step, while ``recording``."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.frames: list[np.ndarray] = []
        self.recording = False

    def reset(self, **kwargs):
        result = self.env.reset(**kwargs)
        self._keep()
        return result

    def step(self, action):
        result = self.env.step(action)
        self._keep()
        return result

    def _keep(self) -> None:
        if self.recording:
            self.frames.append(np.asarray(self.env.render()))


class TrainingVideos:
    """Built and ``check``-ed with the run (before its directory exists), then ``attach``-ed to its directory and
    loggers. ``begin(steps)`` as training starts; ``due(steps)`` says when the next video is;
    ``record(test_agent, steps)`` plays one and starts writing it; ``deliver()`` gives finished videos to the
    loggers; ``close()`` waits for the last one."""

    def __init__(self, make_env, every: int, length: int, seed: int):
        self.make_env = make_env  # (render_mode, wrappers) -> the run's environment with one copy
        self.every = every
        self.length = length
        self.seed = seed
        self.folder: Path | None = None
        self.logger = None
        self.next = every
        self._grabber: _Frames | None = None
        self._env = None
        self._thread: threading.Thread | None = None
        self._finished: list[tuple[int, Any]] = []  # (step, the loggers' payloads) ready for the loggers
        self._failure: BaseException | None = None

    def check(self) -> None:
        """Build the environment that plays the videos and render one frame, before training: a renderer that
        cannot work here (MuJoCo without OpenGL) is one line at the start, not an error hours in."""
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame (classic control) needs no display server
        self._env = self.make_env("rgb_array", (self._wrap,))
        try:
            self._grabber.recording = True
            self._env.reset(seed=self.seed)
        except Exception as error:
            self.close()
            raise ConfigError(f"logger.video_every: the environment cannot render here: {first_line(error)}") \
                from None
        finally:
            if self._grabber is not None:
                self._grabber.recording = False
                self._grabber.frames = []

    def _wrap(self, env: gym.Env) -> gym.Env:
        self._grabber = _Frames(env)
        return self._grabber

    def attach(self, run_dir: Path, logger) -> None:
        self.folder = Path(run_dir) / VIDEOS
        self.logger = logger

    def begin(self, steps: int) -> None:
        """The next video is due at the first multiple of ``every`` after ``steps`` (where training starts, or
        resumes; where the last video was filmed)."""
        self.next = (steps // self.every + 1) * self.every

    def due(self, steps: int) -> bool:
        return steps >= self.next

    def record(self, test_agent, steps: int) -> None:
        """Play one greedy episode (to its end, or ``length`` frames) in the environment ``check`` built, and
        start writing it."""
        self.begin(steps)  # the next one is due at the next multiple of ``every``
        frames = self._play(test_agent, self.seed + steps)
        self.wait()  # one video in flight at a time
        self.deliver()
        self._thread = threading.Thread(target=self._write, args=(frames, steps), daemon=True,
                                        name="rlconf-video")
        self._thread.start()

    def _play(self, test_agent, seed: int) -> np.ndarray:
        grabber = self._grabber
        grabber.frames, grabber.recording = [], True
        try:
            with seeded(seed), torch.inference_mode():
                state = self._env.reset(seed=seed)
                while len(grabber.frames) < self.length:
                    state = self._env.step(test_agent.act(state))
                    if bool(state.done[0]):
                        break
        finally:
            grabber.recording = False
        frames, grabber.frames = grabber.frames[: self.length], []
        return np.stack(frames)

    def _write(self, frames: np.ndarray, steps: int) -> None:
        try:
            fps = video_fps(self._grabber, self._env)
            path = self.folder / f"video-{steps}.mp4"
            self.folder.mkdir(exist_ok=True)
            write_mp4(frames, fps, path)
            self._finished.append((steps, self.logger.video_payload(frames, fps, path)))
        except BaseException as error:  # the loop reports it, on its own thread
            self._failure = error

    def deliver(self) -> None:
        """Videos written since the last call go to the loggers (on the caller's thread); a failed write is
        raised here (an OSError: the run's disk is full)."""
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        while self._finished:
            steps, payload = self._finished.pop(0)
            self.logger.add_video(payload, steps)

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def close(self) -> None:
        """The environment closed, once a video being written is done (a run that ends delivers its last one
        before; one stopped by a fault leaves it on disk, without its loggers)."""
        self.wait()
        if self._env is not None:
            self._env.close()
            self._env = None


def video_fps(wrapper: gym.Wrapper, env) -> float:
    """Real time: the renderer's frames per second, over the simulator frames an agent step takes (Atari's
    frame skip: 4 emulator frames are one recorded frame)."""
    fps = env.simulator_fps or wrapper.metadata.get("render_fps") or 30
    return max(1, round(fps / env.frames_per_step))


def write_mp4(frames: np.ndarray, fps: float, path: Path) -> None:
    """``frames`` as an H.264 mp4 at ``path``, every one of them (moviepy's clips may drop the last to a rounding
    of their duration: ffmpeg is fed directly), written beside it first (a reader never sees half a file)."""
    import imageio_ffmpeg  # moviepy's ffmpeg: there wherever the video extra is

    tmp = path.with_name(f".{path.stem}{TEMPORARY}{os.getpid()}.mp4")  # ffmpeg picks the format by extension
    height, width = frames.shape[1:3]
    try:
        # macro_block_size 2: H.264's 4:2:0 needs even sides only; 16 would rescale most screens
        writer = imageio_ffmpeg.write_frames(str(tmp), (width, height), fps=fps, codec="libx264",
                                             macro_block_size=2, ffmpeg_log_level="error")
        writer.send(None)
        for frame in frames:
            writer.send(np.ascontiguousarray(frame))
        writer.close()
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
