"""Playing back a trained run: ``rlconf eval`` (the test agent's returns) and ``rlconf watch`` (the test agent
in a window, or in a video).

A run directory holds what it takes: ``config.yaml`` (the fully resolved config) and ``checkpoint.pt`` (the
agent's state, written at the end of training and at every periodic checkpoint). Both commands rebuild the
environment, the agent and its body exactly as ``run`` built them (``rlconf.experiments.run``: ``prepare``,
``make_env``, ``build_agent``), load the agent's state from the checkpoint as tensors and plain data only
(``weights_only``: loading runs no pickled code), and play the test agent with ``evaluate``.

Without options ``eval`` plays the run's final test again: as many episodes, the same seed, as many copies of
the environment. On a finished run it reproduces summary.json's test returns exactly.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from rlconf.core import EnvKind
from rlconf.environments.gym import has_display
from rlconf.errors import ConfigError, PlaybackError, first_line
from rlconf.experiments.build.agent import build_agent
from rlconf.experiments.build.environment import env_kind, eval_env_count, make_env
from rlconf.experiments.build.setup import check_device, prepare
from rlconf.experiments.loop.evaluate import evaluate
from rlconf.experiments.loop.experiment import TEST_SEED_OFFSET
from rlconf.experiments.loop.multiagent import play_test
from rlconf.experiments.loop.video import video_fps, write_mp4
from rlconf.experiments.rundir.checkpoint import checkpoint_path, load_checkpoint
from rlconf.experiments.rundir.directory import CONFIG, check_trained_run
from rlconf.experiments.rundir.saved import check_plugins, read_config
from rlconf.files import write_json
from rlconf.logging import LoggerGroup
from rlconf.settings import Settings
from rlconf.text import counted

PLUGINS_HINT = "--plugins {}"  # how eval and watch are told which of a run's modules they may import
# How a refusal names the options of ``load_run``: as eval and watch take them, or as the Python API's
# ``rlconf.load`` does (``API_NAMES``), so that each caller reads its own spelling back.
CLI_NAMES = {"checkpoint": "--checkpoint {}", "device": "--device {}", "plugins": PLUGINS_HINT}
API_NAMES = {"checkpoint": "checkpoint={}", "device": "device={!r}", "plugins": "plugins=[{}]"}
MOVIEPY_MISSING = "rlconf watch --video needs moviepy: pip install 'rlconf[video]'"


@dataclass
class Playback:
    """A run's checked settings and its checkpoint, ready to build an environment and the test agent."""

    run_dir: Path
    settings: Settings
    checkpoint: dict[str, Any]
    source: Path  # the checkpoint's file: checkpoint.pt, best.pt or checkpoint-<step>.pt

    @property
    def step(self) -> int:
        """The environment step the checkpoint was written at."""
        return int(self.checkpoint["steps"])

    @property
    def test_seed(self) -> int:
        """The seed of the run's tests (its final test, its periodic evaluations)."""
        return self.settings.run.seed + TEST_SEED_OFFSET

    @property
    def title(self) -> str:
        return f"{self.settings.agent_name} {self.settings.env.name}"

    def make_env(self, n_envs: int, render_mode: str | None = None, wrappers: tuple = ()):
        """Copies that play as the run's tests did (test=True: Atari's tests bound their games)."""
        return make_env(self.settings, n_envs, render_mode, wrappers, test=True)

    def agent(self, env):
        """The run's agent and body, built for ``env`` as ``run`` built them, with the checkpoint's state."""
        agent = build_agent(self.settings, env, LoggerGroup([]))
        try:
            agent.load_state_dict(self.checkpoint["agent"])
        except (ValueError, KeyError, RuntimeError, TypeError) as error:  # another agent's, another config's
            raise PlaybackError(f"{self.source}: does not fit the run's {CONFIG}: "
                                f"{first_line(error)}") from None
        return agent

    def test_agent(self, env):
        return self.agent(env).test_agent()


def load_run(run_dir: str | Path, device: str | None = None, plugins: list[str] | None = None,
             which: str = "last", names: dict[str, str] = CLI_NAMES) -> Playback:
    """The run in ``run_dir``: its config checked (a ConfigError for a missing extra, an unknown device), this
    process set up for it (``prepare``: threads, seeds), and its checkpoint loaded as plain data.
    ``device``: compute there rather than on the run's ``hardware.device``. ``plugins``: the modules the user
    named (``--plugins``); the run's own list is never imported unless each is named there. ``which``: the
    checkpoint (``checkpoint_path``). ``names``: how refusals name these options (``CLI_NAMES``, ``API_NAMES``)."""
    try:
        folder = check_trained_run(run_dir)
    except ValueError as error:
        raise PlaybackError(str(error)) from None
    try:
        source = checkpoint_path(folder, which)
    except ValueError as error:
        raise PlaybackError(f"{names['checkpoint'].format(which)}: {error}") from None
    data = read_config(folder / CONFIG, importable=list(plugins or []), how=names["plugins"])
    check_plugins(data.get("plugins"), plugins, str(folder), names["plugins"])
    cfg = OmegaConf.create({**data, "plugins": list(plugins or [])})
    if device is not None:
        try:
            check_device(device)
        except ConfigError as error:  # named as eval and watch take it
            raise PlaybackError(str(error).replace(f"hardware.device={device}", names["device"].format(device),
                                                  1)) from None
        OmegaConf.update(cfg, "hardware.device", device, force_add=True)
        if device.startswith("cuda"):  # a run trained on the CPU asked for no GPU of its own
            OmegaConf.update(cfg, "hardware.gpus_per_run", max(1, cfg.hardware.get("gpus_per_run") or 0),
                             force_add=True)
    settings = prepare(cfg, training=False)
    try:
        checkpoint = load_checkpoint(source, map_location="cpu")  # the models move to the device
    except ValueError as error:
        raise PlaybackError(f"{source}: {error}") from None
    return Playback(folder, settings, checkpoint, source)


# -- rlconf eval --------------------------------------------------------------------------------------------
def evaluate_run(run_dir: str | Path, episodes: int | None = None, seed: int | None = None,
                 device: str | None = None, plugins: list[str] | None = None, which: str = "last") -> dict[str, Any]:
    """Play the run's test agent for ``episodes`` episodes (default: the run's ``test_episodes``) with ``seed``
    (default: the seed of the run's final test). ``write_eval`` keeps the result in ``RUN_DIR/eval.json``."""
    playback = load_run(run_dir, device, plugins, which)
    settings = playback.settings
    if episodes is None:  # a run without a final test: as many as its periodic evaluations
        episodes = settings.run.test_episodes or settings.run.eval_episodes or 10
    seed = playback.test_seed if seed is None else seed
    env = playback.make_env(eval_env_count(settings, episodes))  # the copies the final test played in
    details: dict[str, Any] = {}
    try:
        agent = playback.agent(env)
        start = time.perf_counter()
        if env.kind is EnvKind.MULTI_AGENT:  # the run's test protocol (self-play, or seats against opponents)
            played = play_test(agent, env, episodes, seed)
            returns, details = played.returns, played.details()
        else:
            returns = evaluate(agent.test_agent(), env, episodes, seed=seed)
        seconds = time.perf_counter() - start
    finally:
        env.close()
    r = np.asarray(returns, dtype=float)
    result = {
        "run_dir": str(playback.run_dir), "agent": settings.agent_name, "env": settings.env.name,
        "checkpoint": which, "checkpoint_step": playback.step, "episodes": len(returns), "seed": seed,
        "mean": float(r.mean()), "std": float(r.std()), "min": float(r.min()), "max": float(r.max()),
        "returns": [float(x) for x in returns], "device": settings.hardware.device,
        "seconds": round(seconds, 3), "time": time.time(), "bandit": env_kind(settings) is EnvKind.BANDIT, **details,
    }
    return result


def eval_path(result: dict[str, Any]) -> Path:
    """eval.json for the last checkpoint, eval-best.json or eval-STEP.json for another."""
    which = result.get("checkpoint", "last")
    return Path(result["run_dir"]) / ("eval.json" if which == "last" else f"eval-{which}.json")


def write_eval(result: dict[str, Any]) -> Path:
    """``RUN_DIR/eval.json``: the result of ``evaluate_run``. An OSError (a read-only directory) is the caller's
    to report, after the result has been shown."""
    path = eval_path(result)
    write_json(path, result)
    return path


def eval_line(result: dict[str, Any]) -> str:
    played = (f"greedy reward {result['mean']:.3f} ± {result['std']:.3f} over {counted(result['episodes'], 'pull')}"
              if result.get("bandit") else
              f"test return {result['mean']:.1f} ± {result['std']:.1f} over {counted(result['episodes'], 'episode')}")
    which = result.get("checkpoint", "last")
    named = "" if which == "last" else f" ({which})"
    return (f"{result['agent']} {result['env']} at step {result['checkpoint_step']:,}{named}: {played} "
            f"(seed {result['seed']}) -> {eval_path(result)}")


# -- rlconf watch -------------------------------------------------------------------------------------------
class _Recorder:
    """The wrapper factory that puts gymnasium's RecordVideo around the one copy of the environment.

    All episodes go into one video: recording starts with the first episode, and with a ``video_length``
    no evaluation reaches, RecordVideo neither stops at a reset nor starts a file per episode; it writes the
    file when the environment closes. The frames are the environment's own rendering (``rgb_array``), not
    the agent's preprocessed observations; they are held in memory until then (RecordVideo's way)."""

    def __init__(self, folder: Path, settings: Settings):
        self.folder = folder
        self.settings = settings
        self.video = None
        self.size = (0, 0)

    def __call__(self, env):
        from gymnasium.wrappers import RecordVideo

        frame = _check_render(env, self.settings)
        self.size = frame.shape[1], frame.shape[0]  # width, height
        self.video = RecordVideo(env, str(self.folder), episode_trigger=lambda episode: episode == 0,
                                 video_length=sys.maxsize, name_prefix="watch", disable_logger=True)
        return self.video


def _pace(fps: float | None, settings: Settings):
    """A window's pace: environments that pace themselves read ``render_fps`` (classic control does)."""
    def wrap(env):
        _check_render(env, settings)
        if fps:
            env.unwrapped.metadata = {**env.unwrapped.metadata, "render_fps": fps}
        return env
    return wrap


def _check_render(env, settings: Settings):
    """One frame, rendered before playing, so that a renderer that cannot work here (MuJoCo without an
    OpenGL context, a window without a display server) is one line, not a traceback in the middle of it."""
    try:
        env.reset(seed=0)
        return env.render()
    except Exception as error:
        hint = ""
        if settings.env.family == "mujoco":
            hint = "; MuJoCo renders without a display through MUJOCO_GL=egl (the default here) or MUJOCO_GL=osmesa"
        raise PlaybackError(f"env={settings.env.name} cannot render here: {first_line(error)}{hint}") from None


def watch_run(run_dir: str | Path, episodes: int = 1, video: str | Path | None = None, fps: float | None = None,
              seed: int | None = None, device: str | None = None, plugins: list[str] | None = None,
              which: str = "last") -> dict[str, Any]:
    """Play the run's test agent for ``episodes`` episodes in a window, or into the mp4 file ``video``."""
    out = Path(video) if video is not None else None
    if out is None and not has_display():
        raise PlaybackError("no display here (DISPLAY, WAYLAND_DISPLAY are unset): record a video instead, "
                            "e.g. rlconf watch RUN_DIR --video run.mp4")
    if out is not None:
        if out.suffix.lower() != ".mp4":
            raise PlaybackError(f"--video {video}: the file must end in .mp4")
        if not out.parent.is_dir():
            raise PlaybackError(f"--video {video}: no such directory {out.parent}")
        try:
            import moviepy  # noqa: F401  # RecordVideo writes through it
        except ImportError:
            raise PlaybackError(MOVIEPY_MISSING) from None
    playback = load_run(run_dir, device, plugins, which)
    if env_kind(playback.settings) is EnvKind.BANDIT:
        raise PlaybackError(f"env={playback.settings.env.name} is a bandit: it has no frames to watch; "
                            f"rlconf eval {run_dir} replays its greedy pulls")
    seed = playback.test_seed if seed is None else seed
    if out is None:
        env = playback.make_env(1, "human", (_pace(fps, playback.settings),))
        try:
            returns = evaluate(playback.test_agent(env), env, episodes, seed=seed)
        finally:
            env.close()
        return {"returns": returns, "step": playback.step, "title": playback.title}

    # Frames for a file need no window: pygame (classic control's renderer) must not look for a display server
    # (SDL complains in a line on stderr where there is none).
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    if env_kind(playback.settings) is EnvKind.TEAM:
        return _team_video(playback, out, episodes, seed, fps)
    folder = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))  # renamed into place: atomic
    try:
        recorder = _Recorder(folder / "video", playback.settings)  # made by RecordVideo, which warns otherwise
        env = playback.make_env(1, "rgb_array", (recorder,))
        try:
            recorder.video.frames_per_sec = fps or video_fps(recorder.video, env)
            returns = evaluate(playback.test_agent(env), env, episodes, seed=seed)
        finally:
            env.close()  # RecordVideo writes the file
        written = sorted(recorder.folder.glob("*.mp4"))
        if len(written) != 1:
            raise PlaybackError(f"--video {video}: RecordVideo wrote {len(written)} files, expected one")
        frames = _frames_in(written[0])
        written[0].replace(out)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"returns": returns, "step": playback.step, "title": playback.title, "video": str(out),
            "frames": frames, "size": recorder.size, "fps": recorder.video.frames_per_sec}


class _TeamFrames:
    """A team environment that keeps the frame of its copy (``render()``) after each reset and step: team
    environments take no gymnasium wrappers, so RecordVideo cannot sit around their copies."""

    def __init__(self, env, settings: Settings):
        self.env = env
        self.frames: list[np.ndarray] = [_check_render(env, settings)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def reset(self, seed: int | None = None):
        state = self.env.reset(seed=seed)
        self.frames[:] = [self.env.render()]  # the check's frame was of another reset
        return state

    def step(self, actions):
        state = self.env.step(actions)
        self.frames.append(self.env.render())
        return state


def _team_video(playback: Playback, out: Path, episodes: int, seed: int, fps: float | None) -> dict[str, Any]:
    """``episodes`` of a team's test agent in one copy, its frames written to ``out`` as they were rendered."""
    env = _TeamFrames(playback.make_env(1, "rgb_array"), playback.settings)
    try:
        returns = evaluate(playback.test_agent(env.env), env, episodes, seed=seed)
    finally:
        env.close()
    frames = np.stack(env.frames)
    rate = fps or max(1, round(env.simulator_fps or 30))
    write_mp4(frames, rate, out)
    return {"returns": returns, "step": playback.step, "title": playback.title, "video": str(out),
            "frames": _frames_in(out), "size": (frames.shape[2], frames.shape[1]), "fps": rate}


def _frames_in(video: Path) -> int:
    """The frames in a video file, as ffmpeg counts them (moviepy, writing it, may drop the last of those
    recorded to a rounding error of its clip's duration)."""
    import imageio_ffmpeg  # moviepy's own route to ffmpeg: there wherever moviepy is

    return imageio_ffmpeg.count_frames_and_secs(str(video))[0]


def watch_line(result: dict[str, Any], episodes: int) -> str:
    returns = np.asarray(result["returns"], dtype=float)
    played = (f"{counted(episodes, 'episode')} of {result['title']} at step {result['step']:,}, "
              f"return {returns.mean():.1f}" + (f" ± {returns.std():.1f}" if episodes > 1 else ""))
    if "video" not in result:
        return f"watched {played}"
    width, height = result["size"]
    return f"wrote {result['video']}: {result['frames']} frames ({width}x{height}, {result['fps']:g} fps); {played}"

