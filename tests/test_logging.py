"""The logger group with real backends: CSV, TensorBoard event files and wandb offline runs, read back with
their own readers (tensorboard's EventAccumulator, wandb's transaction-log inspector)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAST_RUN, assert_run_refused, cli_env, one_error_line, only_run_dir
from omegaconf import OmegaConf

from rlconf.errors import REDACTED
from rlconf.settings import redact

CARTPOLE = ["agent=dqn", "env=classic/cartpole"]
WANDB_OFFLINE = ["logger=[csv,wandb]", "logger.wandb.mode=offline"]
FAKE_KEY = "0123456789abcdef0123456789abcdef01234567"  # the shape of a wandb API key, valid nowhere


def episode_returns(run_dir: Path) -> list[float]:
    with open(run_dir / "episodes.csv", newline="") as file:
        return [float(row["return"]) for row in csv.DictReader(file)]


def scalar_names(run_dir: Path) -> set[str]:
    path = run_dir / "scalars.csv"
    if not path.exists():
        return set()
    with open(path, newline="") as file:
        return {row["name"] for row in csv.DictReader(file)}


def wandb_records(offline_run: Path) -> list[dict]:
    """Every record of an offline run's transaction log, decoded by wandb's own inspector."""
    wandb = Path(sys.executable).parent / "wandb"
    result = subprocess.run([str(wandb), "leet", "inspect", "--json", str(offline_run)], capture_output=True,
                            text=True, timeout=60, env=cli_env())
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def wandb_history(offline_run: Path) -> list[dict]:
    return [r["history"]["item"] for r in wandb_records(offline_run) if r["type"] == "history"]


def wandb_run_record(offline_run: Path) -> dict:
    return next(r["run"] for r in wandb_records(offline_run) if r["type"] == "run")


def offline_runs(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "wandb").glob("offline-run-*"))


@pytest.fixture(scope="module")
def wandb_run(tmp_path_factory) -> Path:
    """One verbose DQN CartPole run logging to CSV, TensorBoard and wandb (offline), with evaluations."""
    from conftest import run_cli_in

    tmp = tmp_path_factory.mktemp("wandb")
    result = run_cli_in("run", *CARTPOLE, "steps=2500", "test_episodes=3", "eval_every=1000", "eval_episodes=2",
                        "quiet=true", "verbose=true", "logger.scalars_every=500", f"logdir={tmp / 'runs'}",
                        "logger=[csv,tensorboard,wandb]", "logger.wandb.mode=offline", "logger.wandb.tags=[smoke]",
                        "logger.wandb.project=rlconf-tests", cwd=tmp)
    assert result.returncode == 0, result.stderr
    return only_run_dir(tmp / "runs")


def test_wandb_offline_run_holds_the_returns_and_the_config(wandb_run):
    (offline,) = offline_runs(wandb_run)
    run_id = json.loads((wandb_run / "wandb.json").read_text())["id"]
    assert offline.name.endswith(run_id)
    history = wandb_history(offline)
    logged = [row["train/return"] for row in history if "train/return" in row]
    assert logged == episode_returns(wandb_run)  # every episode, in order, as in episodes.csv
    assert all(row["env/frames"] == row["env/step"] for row in history)  # CartPole: a frame per step
    evaluations = [row for row in history if "eval/return_mean" in row]
    with open(wandb_run / "evaluations.csv", newline="") as file:
        expected = [(int(r["step"]), float(r["mean"])) for r in csv.DictReader(file)]
    assert [row["env/step"] for row in evaluations] == [step for step, _ in expected]
    assert [row["eval/return_mean"] for row in evaluations] == pytest.approx([m for _, m in expected], rel=1e-5)
    run = wandb_run_record(offline)
    config = run["config"]["update"]
    assert config["agent"]["name"] == "dqn" and config["env"]["name"] == "classic/cartpole"
    assert config["steps"] == 2500 and config["seed"] == 0
    assert run["project"] == "rlconf-tests" and run["tags"] == ["smoke"] and run["job_type"] == "train"
    assert run["display_name"] == wandb_run.name


def served_scalars(logdir: Path) -> dict[str, dict[str, list]]:
    """run -> tag -> the points TensorBoard's server sends its charts, read by its own classes (the plugin
    event multiplexer and its data provider, purges of resumed runs included), every point kept (size
    guidance 0, as ``tensorboard --samples_per_plugin scalars=0``)."""
    from tensorboard.backend.event_processing.data_provider import MultiplexerDataProvider
    from tensorboard.backend.event_processing.plugin_event_multiplexer import EventMultiplexer
    from tensorboard.context import RequestContext

    multiplexer = EventMultiplexer(tensor_size_guidance={"scalars": 0})
    multiplexer.AddRunsFromDirectory(str(logdir))
    multiplexer.Reload()
    provider = MultiplexerDataProvider(multiplexer, str(logdir))
    return provider.read_scalars(RequestContext(), experiment_id="", plugin_name="scalars", downsample=10**9)


def test_tensorboard_serves_every_episode_of_an_eight_env_run(run_cli, workdir, tmp_path):
    result = run_cli("run", *CARTPOLE, "steps=2000", "hardware.n_envs=8", "logger=tensorboard", *FAST_RUN,
                     f"logdir={tmp_path / 'runs'}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    with open(run_dir / "episodes.csv", newline="") as file:
        rows = [(int(row["step"]), float(row["return"])) for row in csv.DictReader(file)]
    (served,) = served_scalars(tmp_path / "runs").values()
    by_step = served["train/return"]
    assert len({point.step for point in by_step}) < len(rows), "episodes ended together: train/return hides some"
    each = served["train/return_each_episode"]
    assert len(each) == len(rows) > 50
    steps = [point.step for point in each]
    assert len(set(steps)) == len(rows) and steps == sorted(steps), "one step of the chart per episode"
    assert [point.value for point in each] == pytest.approx([value for _, value in rows])
    ends = sorted({step for step, _ in rows})
    for point, (step, _) in zip(each, rows, strict=True):  # within the vector step that ended the episode
        before = ends[ends.index(step) - 1] if ends.index(step) else 0
        assert before < point.step <= step


def test_a_resumed_tensorboard_log_hides_what_came_after_the_checkpoint(tmp_path):
    """TensorBoard's server drops the steps an interrupted attempt logged after the checkpoint a resume
    continues from, on the first resume too, in train/return_each_episode as in every other tag."""
    from rlconf.logging.tensorboard import TensorBoardLogger

    def attempt(state: dict | None, steps: range, sign: float) -> dict | None:
        logger, checkpoint = TensorBoardLogger(tmp_path / "run"), None
        if state is not None:
            logger.load_state_dict(state)
        for step in steps:
            logger.step = step
            logger.add_scalars({"x": sign * step})
            for _ in range(2):  # two environments end an episode at every 10th step
                if step % 10 == 0:
                    logger.add_episode(step, 0, sign * step, 10, 0.0)
            if step == 50:
                checkpoint = logger.state_dict()
        logger.close()
        return checkpoint

    checkpoint = attempt(None, range(1, 101), 1.0)  # killed at step 100, after a checkpoint at step 50
    attempt(checkpoint, range(51, 81), -1.0)
    served = served_scalars(tmp_path)["run"]
    assert [(p.step, p.value) for p in served["x"]] == [(s, s) for s in range(1, 51)] + [(s, -s) for s in range(51, 81)]
    episodes = [(p.step, p.value) for p in served["train/return_each_episode"]]
    assert episodes == [(s + i, s) for s in range(10, 51, 10) for i in (-1, 0)] + \
        [(s + i, -s) for s in range(60, 81, 10) for i in (-1, 0)]


def test_every_backend_shows_the_same_metric_names(wandb_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(wandb_run))
    events.Reload()
    tensorboard_names = set(events.Tags()["scalars"])
    wandb_names = {k for row in wandb_history(offline_runs(wandb_run)[0]) for k in row if not k.startswith("_")}
    csv_names = scalar_names(wandb_run)
    assert {"loss/q", "schedule/epsilon", "schedule/lr", "perf/steps_per_second"} <= csv_names
    expected = csv_names | {"train/return", "train/episode_length", "eval/return_mean", "eval/return_std",
                            "eval/return_min", "eval/return_max"}
    assert tensorboard_names == expected | {"train/return_each_episode"}  # TensorBoard's own: every episode shown
    assert wandb_names == expected | {"env/step", "env/frames"}


def test_tensorboard_events_hold_the_returns_of_episodes_csv(wandb_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(wandb_run), size_guidance={"scalars": 0})  # 0: keep every event
    events.Reload()
    returns = [event.value for event in events.Scalars("train/return")]
    assert returns == pytest.approx(episode_returns(wandb_run))
    with open(wandb_run / "episodes.csv", newline="") as file:
        steps = [int(row["step"]) for row in csv.DictReader(file)]
    assert [event.step for event in events.Scalars("train/return")] == steps


def test_without_verbose_no_loss_or_schedule_is_logged(run_cli, workdir, tmp_path):
    result = run_cli("run", *CARTPOLE, "steps=2000", *FAST_RUN, "logger.scalars_every=500",
                     f"logdir={tmp_path / 'runs'}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert scalar_names(only_run_dir(tmp_path / "runs")) == {"perf/steps_per_second"}


def test_a_resumed_run_continues_the_same_wandb_run(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    first = run_cli("run", *CARTPOLE, "steps=1500", *FAST_RUN, *WANDB_OFFLINE, f"logdir={logdir}", cwd=workdir)
    assert first.returncode == 0, first.stderr
    run_dir = only_run_dir(logdir)
    run_id = json.loads((run_dir / "wandb.json").read_text())["id"]
    second = run_cli("run", f"resume={run_dir}", "steps=3000", cwd=workdir)
    assert second.returncode == 0, second.stderr
    assert json.loads((run_dir / "wandb.json").read_text())["id"] == run_id
    attempts = offline_runs(run_dir)
    assert len(attempts) == 2 and all(a.name.endswith(run_id) for a in attempts)
    assert {wandb_run_record(a)["run_id"] for a in attempts} == {run_id}
    # Together the two attempts logged every episode of episodes.csv once (the first ended at a checkpoint).
    logged = [row["train/return"] for a in attempts for row in wandb_history(a) if "train/return" in row]
    assert logged == episode_returns(run_dir)


def test_online_without_an_api_key_falls_back_to_offline(run_cli, workdir, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc, no wandb settings of this machine's user
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    result = run_cli("run", *CARTPOLE, "steps=600", "test_episodes=2", "eval_every=0", "logger=wandb",
                     f"logdir={tmp_path / 'runs'}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    fallback = [line for line in result.stderr.splitlines() if "could not start online" in line]
    assert len(fallback) == 1 and "offline" in fallback[0]
    run_dir = only_run_dir(tmp_path / "runs")
    assert (run_dir / "summary.json").exists()  # training went on
    (offline,) = offline_runs(run_dir)
    assert [r["train/return"] for r in wandb_history(offline) if "train/return" in r] == episode_returns(run_dir)


def test_online_without_a_network_falls_back_to_offline(run_cli, workdir, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WANDB_API_KEY", FAKE_KEY)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # the discard port: nothing answers
    result = run_cli("run", *CARTPOLE, "steps=600", "test_episodes=2", "eval_every=0", "logger=wandb",
                     "logger.wandb.init_timeout=5", f"logdir={tmp_path / 'runs'}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert sum("could not start online" in line for line in result.stderr.splitlines()) == 1
    run_dir = only_run_dir(tmp_path / "runs")
    assert (run_dir / "summary.json").exists() and len(offline_runs(run_dir)) == 1


def test_no_secret_reaches_the_run_directory(run_cli, workdir, tmp_path, monkeypatch):
    """The API key in the environment, even interpolated into the config, is written nowhere."""
    monkeypatch.setenv("WANDB_API_KEY", FAKE_KEY)
    logdir = tmp_path / "runs"
    result = run_cli("run", *CARTPOLE, "steps=600", *FAST_RUN, *WANDB_OFFLINE,
                     "logger.wandb.notes=${oc.env:WANDB_API_KEY}", f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    assert OmegaConf.load(run_dir / "config.yaml").logger.wandb.notes == REDACTED
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert len(files) > 10
    for path in files:
        assert FAKE_KEY.encode() not in path.read_bytes(), path
    assert FAKE_KEY not in result.stdout + result.stderr


def test_redact_hides_values_of_keys_named_like_secrets(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-123456789")
    config = {"agent": {"lr": 0.1, "api_key": "abc", "nested": [{"password": "pw"}]}, "notes": "tok-123456789 x",
              "tokens_per_step": None}
    assert redact(config) == {"agent": {"lr": 0.1, "api_key": REDACTED, "nested": [{"password": REDACTED}]},
                              "notes": f"{REDACTED} x", "tokens_per_step": None}
    assert redact(["agent=dqn", "+agent.auth_token=xyz", "seed=1"]) == ["agent=dqn", f"+agent.auth_token={REDACTED}",
                                                                        "seed=1"]


def test_periodic_evaluations_are_printed_as_they_come(run_cli, workdir, tmp_path):
    result = run_cli("run", *CARTPOLE, "steps=1000", "eval_every=500", "eval_episodes=2", "test_episodes=2",
                     f"logdir={tmp_path / 'runs'}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("eval at")]
    assert [line.split(":")[0] for line in lines] == ["eval at 500 steps", "eval at 1,000 steps"]
    assert all("over 2 episodes" in line for line in lines)


@pytest.mark.parametrize(("args", "words"), [
    (["logger=[csv,nope]"], ["logger", "nope", "tensorboard", "wandb"]),
    (["logger=wandb", "logger.wandb.mode=sometimes"], ["logger.wandb.mode=sometimes", "online"]),
])
def test_bad_logger_choices_are_refused(run_cli, workdir, tmp_path, args, words):
    assert_run_refused(run_cli, [*CARTPOLE, "steps=100", *args], words, workdir, tmp_path / "runs")


def test_a_logger_whose_package_is_missing_names_the_extra(run_cli, workdir, tmp_path):
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "needy_logger.py").write_text(
        "import rlconf\nfrom rlconf.logging import Logger\n\n"
        "@rlconf.register('logger', 'needy')\nclass Needy(Logger):\n    requires = 'no_such_package_xyz'\n")
    line = one_error_line(run_cli("run", *CARTPOLE, "steps=100", "plugins=[needy_logger]", "+logger.needy={}",
                                  f"logdir={tmp_path / 'runs'}", cwd=workdir, pythonpath=[plugin]))
    for word in ["logger=needy", "no_such_package_xyz", "pip install"]:
        assert word in line, line
    assert not (tmp_path / "runs").exists() and list(workdir.iterdir()) == []


def test_the_runs_of_a_sweep_are_one_wandb_group(run_cli, workdir, tmp_path):
    result = run_cli("run", "-m", *CARTPOLE, "seed=0,1", "steps=300", *FAST_RUN, *WANDB_OFFLINE,
                     f"logdir={tmp_path / 'runs'}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    (sweep_dir,) = (tmp_path / "runs").glob("sweep_*")
    runs = [wandb_run_record(offline) for run_dir in sorted(sweep_dir.glob("dqn_*")) for offline in
            offline_runs(run_dir)]
    assert len(runs) == 2 and {run["run_group"] for run in runs} == {sweep_dir.name}
    assert len({run["run_id"] for run in runs}) == 2
