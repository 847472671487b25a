"""Videos while training (logger.video_every): real runs, their mp4 files counted by ffmpeg, the TensorBoard
event file read by its own reader, the wandb offline run by wandb's inspector."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import imageio_ffmpeg
import pytest
from conftest import assert_run_refused, only_run_dir, run_cli_in
from test_logging import offline_runs, wandb_history

CARTPOLE = ["agent=dqn", "env=classic/cartpole"]
QUIET = ["quiet=true", "test_episodes=2", "eval_every=0"]


def frames_in(video: Path) -> int:
    return imageio_ffmpeg.count_frames_and_secs(str(video))[0]


def episodes(run_dir: Path) -> list[dict]:
    with open(run_dir / "episodes.csv", newline="") as file:
        return [{k: v for k, v in row.items() if k != "wall_seconds"} for row in csv.DictReader(file)]


@pytest.fixture(scope="module")
def filmed(tmp_path_factory) -> Path:
    """DQN on CartPole, a video every 500 steps, logged to CSV, TensorBoard and wandb (offline)."""
    tmp = tmp_path_factory.mktemp("video")
    result = run_cli_in("run", *CARTPOLE, "steps=1500", *QUIET, "logger.video_every=500",
                        "logger=[csv,tensorboard,wandb]", "logger.wandb.mode=offline", f"logdir={tmp / 'runs'}",
                        cwd=tmp)
    assert result.returncode == 0, result.stderr
    return only_run_dir(tmp / "runs")


def test_a_video_every_n_steps_in_the_run_directory(filmed):
    videos = sorted((filmed / "videos").iterdir())
    assert [v.name for v in videos] == ["video-1000.mp4", "video-1500.mp4", "video-500.mp4"]
    for video in videos:  # a greedy CartPole episode: at least 8 steps, a frame for the reset and each step
        assert 9 <= frames_in(video) <= 1000


def test_tensorboard_and_wandb_show_each_video_at_its_step(filmed):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(filmed), size_guidance={"images": 0})
    events.Reload()
    images = events.Images("eval/video")
    assert [image.step for image in images] == [500, 1000, 1500]
    assert all(image.encoded_image_string.startswith(b"GIF89a") and (image.width, image.height) == (600, 400)
               for image in images)
    (offline,) = offline_runs(filmed)
    logged = [row for row in wandb_history(offline) if row.get("eval/video._type") == "video-file"]
    assert [row["env/step"] for row in logged] == [500, 1000, 1500]
    assert len(list(offline.glob("files/media/videos/eval/*.mp4"))) == 3


def test_videos_change_nothing_else_and_stop_at_video_length(filmed, tmp_path):
    """The same seed without videos trains the same episodes and tests the same return: the video episodes
    draw nothing from the run's generators. A video keeps at most logger.video_length frames."""
    result = run_cli_in("run", *CARTPOLE, "steps=1500", *QUIET, f"logdir={tmp_path / 'plain'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    plain = only_run_dir(tmp_path / "plain")
    assert episodes(plain) == episodes(filmed)
    same = ("test_return_mean", "test_return_std", "episodes")
    assert {k: json.loads((plain / "summary.json").read_text())[k] for k in same} == \
        {k: json.loads((filmed / "summary.json").read_text())[k] for k in same}

    result = run_cli_in("run", *CARTPOLE, "steps=600", *QUIET, "logger.video_every=600", "logger.video_length=5",
                        f"logdir={tmp_path / 'short'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (video,) = (only_run_dir(tmp_path / "short") / "videos").iterdir()
    assert frames_in(video) == 5


def test_atari_videos_are_the_games_screen(tmp_path):
    result = run_cli_in("run", "agent=dqn", "env=atari/pong", "steps=200", *QUIET, "logger.video_every=200",
                        "logger.video_length=30", f"logdir={tmp_path / 'runs'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (video,) = (only_run_dir(tmp_path / "runs") / "videos").iterdir()
    assert video.name == "video-200.mp4" and frames_in(video) == 30
    reader = imageio_ffmpeg.read_frames(str(video))
    meta = next(reader)
    reader.close()
    assert tuple(meta["size"]) == (160, 210)  # the emulator's screen, not the agent's 84x84 frames


@pytest.mark.parametrize(("overrides", "words"), [
    ([*CARTPOLE, "logger.video_every=-1"], ["logger.video_every=-1", "from 0 to"]),
    ([*CARTPOLE, "logger.video_every=100", "logger.video_length=0"], ["logger.video_length=0", "at least 1"]),
    (["agent=independent", "env=pettingzoo/tictactoe", "logger.video_every=100"],
     ["logger.video_every=100", "multi-agent", "logger.video_every=0"]),
    (["agent=ucb", "env=bandit/bernoulli", "logger.video_every=100"], ["logger.video_every=100", "bandit"]),
])
def test_bad_video_settings_are_one_line_and_write_nothing(run_cli, workdir, tmp_path, overrides, words):
    assert_run_refused(run_cli, overrides, words, workdir, tmp_path / "runs")
