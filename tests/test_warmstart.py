"""Warm starts: init=RUN_DIR[:best|last|STEP] begins a new run from another run's networks."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import assert_run_refused, only_run_dir

CARTPOLE = ["agent=dqn", "env=classic/cartpole"]
# A warm-started run that makes no update (its replay never reaches replay_start_size): its networks are
# exactly those it started from.
NO_UPDATES = ["steps=300", "agent.replay_start_size=1000", "eval_every=0", "test_episodes=2", "quiet=true"]


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A trained DQN CartPole run with periodic evaluations (so a best.pt) and a numbered checkpoint."""
    from conftest import run_cli_in

    root = tmp_path_factory.mktemp("source")
    result = run_cli_in("run", *CARTPOLE, "steps=3000", "eval_every=1000", "eval_episodes=3", "checkpoint_every=1000",
                        "checkpoint.keep=2", "test_episodes=2", "quiet=true", f"logdir={root / 'runs'}", cwd=root)
    assert result.returncode == 0, result.stderr
    return only_run_dir(root / "runs")


def q_state(path: Path) -> dict:
    return torch.load(path, weights_only=True)["agent"]["q"]


@pytest.mark.parametrize(("which", "file"), [("", "checkpoint.pt"), (":best", "best.pt"),
                                             (":2000", "checkpoint-2000.pt")])
def test_a_warm_start_begins_from_the_named_checkpoints_networks(run_cli, workdir, tmp_path, source, which, file):
    logdir = tmp_path / "runs"
    result = run_cli("run", *CARTPOLE, f"init={source}{which}", *NO_UPDATES, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    started, theirs = q_state(run_dir / "checkpoint.pt"), q_state(source / file)
    for part in ("model", "target"):
        for layer, weight in theirs["model"].items() if part == "model" else theirs["target"]["model"].items():
            mine = started["model"][layer] if part == "model" else started["target"]["model"][layer]
            assert torch.equal(mine, weight), f"{part} {layer}"
    assert started["updates"] == 0 and started["target"]["updates"] == 0, "a fresh run's counters"
    assert not started["optimizer"]["state"], "the optimiser starts fresh unless init.optimizer=true"
    assert torch.load(run_dir / "checkpoint.pt", weights_only=True)["steps"] == 300


def test_init_optimizer_takes_the_optimisers_state_too(run_cli, workdir, tmp_path, source):
    logdir = tmp_path / "runs"
    result = run_cli("run", *CARTPOLE, f"init={source}", "init.optimizer=true", *NO_UPDATES, f"logdir={logdir}",
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    mine = q_state(only_run_dir(logdir) / "checkpoint.pt")["optimizer"]["state"]
    theirs = q_state(source / "checkpoint.pt")["optimizer"]["state"]
    assert mine.keys() == theirs.keys() and len(theirs) > 0
    for index, moments in theirs.items():
        assert all(torch.equal(mine[index][key], value) for key, value in moments.items())


@pytest.mark.parametrize(("args", "words"), [
    (["agent=dqn", "env=classic/acrobot"], ["init=", "q.model.0.weight", "[256, 4] there", "[256, 6] here"]),
    (["agent=ppo", "env=classic/cartpole"], ["init=", "no network", "it has: q"]),
])
def test_networks_that_do_not_fit_are_refused_in_one_line(run_cli, workdir, tmp_path, source, args, words):
    assert_run_refused(run_cli, [*args, f"init={source}", "steps=300"], words, workdir, tmp_path / "runs")


@pytest.mark.parametrize(("suffix", "words"), [
    (":1000", ["keeps no checkpoint of step 1,000", "allowed: best, last, 2000, 3000"]),
    ("/nowhere", ["no such run directory"]),
])
def test_a_warm_start_from_nothing_is_one_line(run_cli, workdir, tmp_path, source, suffix, words):
    assert_run_refused(run_cli, [*CARTPOLE, f"init={source}{suffix}", "steps=300"], ["init=", *words], workdir,
                       tmp_path / "runs")


def test_a_warm_start_carries_the_bodys_running_statistics(run_cli, workdir, tmp_path):
    """The networks learned from normalised observations: their normaliser comes with them, and goes on
    counting. A run warm-started from a source counts exactly the source's observations plus what the same run
    started afresh counts."""
    pendulum = ["agent=ppo", "env=classic/pendulum", "body.normalize_observations=true", "hardware.n_envs=2",
                "agent.n_steps=64", "eval_every=0", "test_episodes=1", "quiet=true"]

    def trained(name: str, *extra: str) -> dict:
        result = run_cli("run", *pendulum, *extra, f"logdir={tmp_path / name}", cwd=workdir)
        assert result.returncode == 0, result.stderr
        return torch.load(only_run_dir(tmp_path / name) / "checkpoint.pt", weights_only=True)["agent"]

    source = trained("source", "steps=512")
    fresh = trained("fresh", "steps=128")
    warm = trained("warm", "steps=128", f"init={only_run_dir(tmp_path / 'source')}")
    key = "observation_statistics"
    assert warm[key]["count"] == source[key]["count"] + fresh[key]["count"] and fresh[key]["count"] > 0
    assert not torch.allclose(warm[key]["mean"], fresh[key]["mean"])

    raw = [a for a in pendulum if "normalize" not in a]
    assert_run_refused(run_cli, [*raw, "steps=128", f"init={only_run_dir(tmp_path / 'source')}"],
                       ["body.normalize_observations=true, this one body.normalize_observations=false"], workdir,
                       tmp_path / "raw")
