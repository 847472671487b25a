"""``rlconf eval`` and ``rlconf watch``: a trained run played back from its directory (real runs, the real CLI);
and checkpoints that hold tensors and plain data only, so they load with ``torch.load(weights_only=True)``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import build, cli_env, one_error_line, only_run_dir, run_cli_in

QUIET = ["eval_every=0", "quiet=true"]


def train(tmp_path_factory, name: str, *overrides: str) -> Path:
    logdir = tmp_path_factory.mktemp(name)
    result = run_cli_in("run", *QUIET, *overrides, f"logdir={logdir / 'runs'}", cwd=logdir)
    assert result.returncode == 0, result.stderr
    return only_run_dir(logdir / "runs")


@pytest.fixture(scope="module")
def dqn_run(tmp_path_factory) -> Path:
    """A test agent that draws random numbers (an evaluation epsilon), tested after periodic evaluations."""
    return train(tmp_path_factory, "dqn", "agent=dqn", "env=classic/cartpole", "steps=3000", "test_episodes=5",
                 "agent.eval_epsilon=0.2", "eval_every=1000", "eval_episodes=2")


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory) -> Path:
    """A policy-gradient agent, tested greedily in several copies of the environment."""
    return train(tmp_path_factory, "ppo", "agent=ppo", "env=classic/cartpole", "steps=3000", "test_episodes=5",
                 "hardware.eval_envs=3")


@pytest.fixture(scope="module")
def atari_run(tmp_path_factory) -> Path:
    return train(tmp_path_factory, "atari", "agent=dqn", "env=atari/breakout", "steps=500", "test_episodes=1",
                 "env.max_episode_steps=100")


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def video_frames(path: Path) -> tuple[tuple[int, int], list[np.ndarray]]:
    """(width, height) and the frames of a video file, decoded by ffmpeg."""
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    width, height = meta["size"]
    return (width, height), [np.frombuffer(f, np.uint8).reshape(height, width, 3) for f in reader]


def cartpole_screen() -> tuple[int, int]:
    """(width, height) of the frames gymnasium's CartPole renders."""
    import gymnasium as gym

    env = gym.make("CartPole-v1", render_mode="rgb_array").unwrapped
    return env.screen_width, env.screen_height


# -- rlconf eval --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["dqn_run", "ppo_run"])
def test_eval_reproduces_the_final_test_exactly(name, request, tmp_path):
    run_dir = request.getfixturevalue(name)
    summary = read_json(run_dir / "summary.json")
    result = run_cli_in("eval", str(run_dir), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert len(line.splitlines()) == 1 and result.stderr == "", (result.stdout, result.stderr)
    evaluation = read_json(run_dir / "eval.json")
    assert evaluation["episodes"] == len(evaluation["returns"]) == summary["test_episodes"] == 5
    assert evaluation["mean"] == summary["test_return_mean"] and evaluation["std"] == summary["test_return_std"]
    assert evaluation["seed"] == summary["seed"] + 1_000_003
    assert evaluation["checkpoint_step"] == summary["steps"]
    assert evaluation["min"] == min(evaluation["returns"]) and evaluation["max"] == max(evaluation["returns"])
    assert f"{evaluation['mean']:.1f} ± {evaluation['std']:.1f} over 5 episodes" in line
    assert f"step {summary['steps']:,}" in line and str(run_dir / "eval.json") in line
    assert list(tmp_path.iterdir()) == []
    # What the CLI's run wrote, loggers' states included, is tensors and plain data.
    assert torch.serialization.get_unsafe_globals_in_checkpoint(run_dir / "checkpoint.pt") == []


def test_eval_takes_episodes_and_a_seed(dqn_run, tmp_path):
    result = run_cli_in("eval", str(dqn_run), "--episodes", "3", "--seed=7", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    evaluation = read_json(dqn_run / "eval.json")
    assert evaluation["episodes"] == len(evaluation["returns"]) == 3 and evaluation["seed"] == 7
    assert "over 3 episodes (seed 7)" in result.stdout
    assert evaluation["mean"] == pytest.approx(np.mean(evaluation["returns"]))
    assert evaluation["std"] == pytest.approx(np.std(evaluation["returns"]))


# -- rlconf watch -------------------------------------------------------------------------------------------
def test_watch_writes_one_video_of_every_episode(dqn_run, tmp_path):
    out = tmp_path / "cartpole.mp4"
    result = run_cli_in("watch", str(dqn_run), "--video", str(out), "--episodes", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert list(tmp_path.iterdir()) == [out], "one file, no temporary folder left behind"
    size, frames = video_frames(out)
    assert len(frames) > 10 and size == cartpole_screen()
    assert result.stdout.strip() == result.stdout.strip().splitlines()[0]  # one line
    assert f"wrote {out}: {len(frames)} frames" in result.stdout
    assert "2 episodes of dqn classic/cartpole" in result.stdout
    # Both episodes in one file: a frame at each reset and after each step.
    steps = float(result.stdout.split("return ")[1].split(" ±")[0]) * 2  # CartPole pays 1 a step
    assert steps + 1 <= len(frames) <= steps + 2  # moviepy may drop the last frame to a rounding error
    assert any((f[..., 0] != f[..., 2]).any() for f in frames[:3]), "the env's colour rendering"


def test_watch_an_atari_game_shows_the_emulator_screen(atari_run, tmp_path):
    out = tmp_path / "breakout.mp4"
    result = run_cli_in("watch", str(atari_run), "--video", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    size, frames = video_frames(out)
    assert size == (160, 210), "the full screen, not the agent's 84x84 frames"
    assert len(frames) > 10 and "15 fps" in result.stdout  # real time: 60 emulator frames/s, 4 per step
    assert any((f[..., 0] != f[..., 2]).any() for f in frames[:3]), "colour, not the agent's grayscale"
    assert list(tmp_path.iterdir()) == [out]


def test_watch_a_mujoco_robot_renders_offscreen_or_says_why_in_one_line(tmp_path_factory, tmp_path):
    run_dir = train(tmp_path_factory, "mujoco", "agent=sac", "env=mujoco/half_cheetah", "steps=200",
                    "test_episodes=1", "env.max_episode_steps=20")
    out = tmp_path / "cheetah.mp4"
    result = run_cli_in("watch", str(run_dir), "--video", str(out), cwd=tmp_path)
    if result.returncode != 0:  # a machine without EGL (nor OSMesa): said in one line
        assert "cannot render here" in one_error_line(result) or "MUJOCO_GL" in one_error_line(result)
        assert list(tmp_path.iterdir()) == []
        return
    size, frames = video_frames(out)
    assert 20 <= len(frames) <= 21 and size == (480, 480)  # a reset and 20 steps, at MuJoCo's default size


# -- bad input ------------------------------------------------------------------------------------------------
def copy_run(run_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run_dir, tmp_path / "copy"))


def unsafe_checkpoint(path: Path) -> None:
    """A checkpoint as older rlconfs wrote it: numpy objects pickled beside the tensors."""
    torch.save({"format": 2, "agent": {}, "steps": 1, "rng": {"numpy": np.random.get_state()}}, path)


BAD_EVAL = [  # (id, the arguments of rlconf eval given the run and a folder, the words its one line has)
    ("missing", lambda run, tmp: [str(tmp / "missing")], ["missing", "no such run directory"]),
    ("no-config", lambda run, tmp: [str(tmp)], ["no config.yaml"]),
    ("no-checkpoint", lambda run, tmp: [str(_without(run, tmp, "checkpoint.pt"))], ["no checkpoint.pt"]),
    ("garbled", lambda run, tmp: [str(_garbled(run, tmp))], ["checkpoint.pt", "unreadable checkpoint"]),
    ("unsafe", lambda run, tmp: [str(_unsafe(run, tmp))], ["checkpoint.pt", "other than tensors and plain data"]),
    ("episodes-0", lambda run, tmp: [str(run), "--episodes", "0"], ["--episodes 0", "integer >= 1"]),
    ("episodes-text", lambda run, tmp: [str(run), "--episodes=many"], ["--episodes many"]),
    ("negative-seed", lambda run, tmp: [str(run), "--seed", "-3"], ["--seed -3"]),
    ("no-such-gpu", lambda run, tmp: [str(run), "--device", "cuda:7"], ["cuda:7"]),
    ("unknown-option", lambda run, tmp: [str(run), "--greedy"], ["unknown option '--greedy'", "usage: rlconf eval"]),
    ("no-run-dir", lambda run, tmp: [], ["usage: rlconf eval RUN_DIR"]),
]


def _without(run_dir: Path, tmp_path: Path, name: str) -> Path:
    copy = copy_run(run_dir, tmp_path)
    (copy / name).unlink()
    return copy


def _garbled(run_dir: Path, tmp_path: Path) -> Path:
    copy = copy_run(run_dir, tmp_path)
    (copy / "checkpoint.pt").write_bytes((run_dir / "checkpoint.pt").read_bytes()[:5000])
    return copy


def _unsafe(run_dir: Path, tmp_path: Path) -> Path:
    copy = copy_run(run_dir, tmp_path)
    unsafe_checkpoint(copy / "checkpoint.pt")
    return copy


@pytest.mark.parametrize(("make", "words"), [case[1:] for case in BAD_EVAL], ids=[case[0] for case in BAD_EVAL])
def test_bad_eval_input_is_one_line_and_writes_nothing(make, words, dqn_run, tmp_path):
    args = make(dqn_run, tmp_path)
    before = {p: sorted(p.iterdir()) for p in (dqn_run, tmp_path)}
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    line = one_error_line(run_cli_in("eval", *args, cwd=workdir))
    assert all(word in line for word in words), line
    assert list(workdir.iterdir()) == []
    workdir.rmdir()
    assert {p: sorted(p.iterdir()) for p in (dqn_run, tmp_path)} == before


def test_bad_watch_input_is_one_line_and_writes_nothing(dqn_run, tmp_path):
    env = {k: v for k, v in cli_env().items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}

    def watch(*args: str, pythonpath: Path | None = None) -> str:
        if pythonpath:
            env["PYTHONPATH"] = str(pythonpath)
        result = subprocess.run([sys.executable, "-m", "rlconf", "watch", *args], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=600)  # a safety net for a busy machine
        return one_error_line(result)

    line = watch(str(dqn_run))
    assert "no display" in line and "--video" in line
    assert "--video out.avi: the file must end in .mp4" in watch(str(dqn_run), "--video", "out.avi")
    assert "no such directory" in watch(str(dqn_run), "--video", str(tmp_path / "nowhere" / "out.mp4"))
    assert "--fps 0" in watch(str(dqn_run), "--video", "out.mp4", "--fps", "0")
    assert "no such run directory" in watch(str(tmp_path / "missing"), "--video", "out.mp4")
    fake = tmp_path / "no_moviepy" / "moviepy"  # as if the video extra were not installed
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("No module named \'moviepy\'", name="moviepy")\n')
    line = watch(str(dqn_run), "--video", "out.mp4", pythonpath=fake.parent)
    assert line == "rlconf: error: rlconf watch --video needs moviepy: pip install 'rlconf[video]'"
    shutil.rmtree(fake.parent)
    assert list(tmp_path.iterdir()) == [] and not list(dqn_run.glob("*.mp4"))


def test_an_atari_run_without_ale_py_names_the_extra(atari_run, tmp_path):
    fake = tmp_path / "no_ale" / "ale_py"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'ale_py\'", name="ale_py")\n')
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    line = one_error_line(run_cli_in("eval", str(atari_run), cwd=workdir, pythonpath=[fake.parent]))
    assert "pip install 'rlconf[atari]'" in line and "atari/breakout" in line
    assert list(workdir.iterdir()) == []


# -- checkpoints: tensors and plain data only -------------------------------------------------------------------
CHECKPOINTED = [
    ("agent=dqn", "env=classic/cartpole", "agent.replay_start_size=100"),
    ("agent=ddqn", "env=classic/cartpole", "agent.replay_start_size=100"),  # prioritized replay
    ("agent=c51", "env=classic/cartpole", "agent.replay_start_size=100"),
    ("agent=rainbow", "env=classic/cartpole", "agent.replay_start_size=100"),  # prioritized, n-step, noisy
    ("agent=vqn", "env=classic/cartpole"),
    ("agent=vsarsa", "env=classic/cartpole"),
    ("agent=vpg", "env=classic/cartpole"),
    ("agent=vac", "env=classic/cartpole"),
    ("agent=a2c", "env=classic/cartpole", "hardware.n_envs=2"),
    ("agent=ppo", "env=classic/cartpole", "body.normalize_observations=true", "agent.n_steps=64"),
    ("agent=ddpg", "env=classic/pendulum", "agent.replay_start_size=100"),
    ("agent=td3", "env=classic/pendulum", "agent.replay_start_size=100", "body=time_feature"),
    ("agent=sac", "env=classic/pendulum", "agent.replay_start_size=100", "body.normalize_observations=true"),
    ("agent=dqn", "env=atari/breakout", "agent.replay_start_size=100", "agent.replay_buffer_size=1000"),
    ("agent=rainbow", "env=atari/breakout", "agent.replay_start_size=100", "agent.replay_buffer_size=1000"),
]


def experiment(settings, env, agent, run_dir: Path, steps: int):
    from rlconf.experiments.console.progress import ConsoleProgress
    from rlconf.experiments.loop.experiment import Experiment, LoopSettings
    from rlconf.logging import LoggerGroup

    return Experiment(agent, env, lambda: None, LoggerGroup([]), run_dir,
                      LoopSettings(steps=steps, checkpoint_extra={"config": {"agent": "x"}}),
                      ConsoleProgress("", steps, quiet=True))


@pytest.mark.parametrize("overrides", CHECKPOINTED, ids=lambda o: " ".join(o))
def test_every_checkpoint_loads_with_weights_only(overrides, tmp_path):
    from rlconf.experiments.rundir.checkpoint import load_checkpoint

    settings, env, agent = build(*overrides, "steps=2000")
    trained = experiment(settings, env, agent, tmp_path, steps=300)
    trained.train()  # a checkpoint at the end, as configured (no replay)
    path = tmp_path / "checkpoint.pt"
    assert torch.serialization.get_unsafe_globals_in_checkpoint(path) == []
    trained.save_checkpoint(replay=True)  # checkpoint.replay=true, or a signal
    assert torch.serialization.get_unsafe_globals_in_checkpoint(path) == []
    state = torch.load(path, weights_only=True)
    assert state["replay"] == {} or any(isinstance(v, torch.Tensor) for v in state["replay"].values())

    # ... and a fresh agent continues from it: everything restores, the generators included.
    _, env2, agent2 = build(*overrides, "steps=2000")
    resumed = experiment(settings, env2, agent2, tmp_path, steps=300)
    resumed.restore(load_checkpoint(path))
    assert resumed.start_steps == trained.env.steps
    assert torch.equal(torch.get_rng_state(), state["rng"]["torch"])
    env.close()
    env2.close()


def test_an_older_checkpoint_refuses_to_resume_in_one_line(dqn_run, tmp_path):
    copy = copy_run(dqn_run, tmp_path)
    unsafe_checkpoint(copy / "checkpoint.pt")
    (copy / "summary.json").unlink()  # an unfinished run
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    before = sorted(copy.iterdir())
    line = one_error_line(run_cli_in("run", f"resume={copy}", cwd=workdir))
    assert f"cannot resume {copy / 'checkpoint.pt'}" in line and "older rlconf" in line
    assert list(workdir.iterdir()) == [] and sorted(copy.iterdir()) == before
