"""The parallel sampler for teams (hardware.sampler=parallel with PettingZoo's parallel games: env=mpe/*,
sisl/multiwalker, pettingzoo_parallel): worker processes play exactly the serial copies' games, a run on them
finishes with the serial run's episodes, resumes after kill -9 leaving no worker behind, and a game failing in a
worker stops the run in one line naming it; VMAS, which steps its copies together in torch, is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import FAST_RUN, assert_run_refused, only_run_dir, spawned_children, wait_for_exit, wait_while_running
from test_resume import read_rows, start_run, wait_for_checkpoint

from rlconf.core import TeamState
from rlconf.environments.parallel import SamplerError

pytest.importorskip("mpe2")
from rlconf.environments.pettingzoo_parallel import ParallelTeamEnvironment  # noqa: E402

TESTS = Path(__file__).parent
SPREAD = {"N": 3, "max_cycles": 25}
# Fallen walkers leave their game while the others walk on: agents finishing at different times.
WALKERS = {"n_walkers": 3, "terminate_on_fall": False, "remove_on_fall": True, "max_cycles": 100}


def random_actions(env: ParallelTeamEnvironment, generator: torch.Generator) -> dict[str, torch.Tensor]:
    actions = {}
    for name, group in env.agent_groups.items():
        space = group.action_space
        if hasattr(space, "n"):
            actions[name] = torch.randint(0, int(space.n), (env.n_envs, group.size), generator=generator)
        else:
            actions[name] = torch.rand((env.n_envs, group.size, *space.shape), generator=generator) * 2 - 1
    return actions


def rollout(env_id: str, kwargs: dict, sampler: str, max_episode_steps: int | None, steps: int = 60,
            n_envs: int = 3) -> list[TeamState]:
    """Every TeamState of ``steps`` steps of random actions (a fixed generator) from a seeded reset."""
    env = ParallelTeamEnvironment(env_id, n_envs, kwargs=kwargs, seed=5, sampler=sampler, workers=2,
                                  max_episode_steps=max_episode_steps)
    generator = torch.Generator().manual_seed(0)
    try:
        seen = [env.reset(seed=7)]
        seen += [env.step(random_actions(env, generator)) for _ in range(steps)]
    finally:
        env.close()
    return seen


@pytest.mark.parametrize("env_id,kwargs,max_episode_steps,steps", [
    ("mpe2.simple_spread_v3", SPREAD, None, 60), ("team_games", {}, 5, 60),
    ("team_games", {"game": "steering"}, None, 60), ("pettingzoo.sisl.multiwalker_v9", WALKERS, None, 120)])
def test_parallel_workers_play_the_serial_copies_games(env_id, kwargs, max_episode_steps, steps):
    if env_id.startswith("pettingzoo.sisl"):
        pytest.importorskip("Box2D")
    serial = rollout(env_id, kwargs, "serial", max_episode_steps, steps)
    parallel = rollout(env_id, kwargs, "parallel", max_episode_steps, steps)
    for step, (ours, theirs) in enumerate(zip(serial, parallel, strict=True)):
        assert ours.keys() == theirs.keys()
        for group in ours:
            for key in ours[group]:
                assert torch.equal(ours[group][key], theirs[group][key]), (step, group, key)
    done = torch.stack([state.done for state in serial])
    assert done.any(), "episodes ended (and their copies were reset) along the way"
    if env_id.startswith("pettingzoo.sisl"):
        alive = torch.stack([state["walker"]["alive"] for state in serial])  # (steps, copies, walkers)
        assert (alive.any(-1) & ~alive.all(-1)).any(), "a walker left its game while others walked on"


def test_a_game_failing_in_a_worker_is_one_error_naming_the_worker():
    env = ParallelTeamEnvironment("team_games", 3, kwargs={"game": "failing"}, seed=0, sampler="parallel", workers=2)
    generator = torch.Generator().manual_seed(0)
    env.reset(seed=0)
    with pytest.raises(SamplerError, match=r"^sampler worker 0: RuntimeError: the game broke in round 3$"):
        for _ in range(3):
            env.step(random_actions(env, generator))
    env.close()


SPREAD_RUN = ["agent=mappo", "env=mpe/simple_spread", "hardware.n_envs=4", "hardware.cpus_per_run=2"]


def test_a_parallel_team_run_plays_the_serial_runs_episodes(run_cli, workdir, tmp_path):
    """Same seed: the run whose copies step in two workers logs the serial run's episodes, row for row, and its
    test (played in serial copies) returns the same."""
    runs = {}
    for sampler in ("serial", "parallel"):
        logdir = tmp_path / sampler
        result = run_cli("run", *SPREAD_RUN, "steps=1000", f"hardware.sampler={sampler}", *FAST_RUN,
                         f"logdir={logdir}", cwd=workdir)
        assert result.returncode == 0, result.stderr
        run_dir = only_run_dir(logdir)
        rows = read_rows(run_dir / "episodes.csv")
        runs[sampler] = (json.loads((run_dir / "summary.json").read_text()), rows)
    (serial, serial_rows), (parallel, parallel_rows) = runs["serial"], runs["parallel"]
    assert len(serial_rows) == 1000 // 25, "every episode of the budget"
    def played(rows: list[dict]) -> list[dict]:  # all but the clock
        return [{key: value for key, value in row.items() if key != "wall_seconds"} for row in rows]

    assert played(parallel_rows) == played(serial_rows)
    assert parallel["test_return_mean"] == serial["test_return_mean"]


def test_a_parallel_team_run_killed_with_9_leaves_no_worker_and_resumes(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    args = [*SPREAD_RUN, "hardware.sampler=parallel", "steps=1600", "checkpoint_every=400", *FAST_RUN,
            f"logdir={logdir}"]
    process = start_run(args, workdir)
    run_dir = wait_for_checkpoint(logdir, process, 400)
    workers = wait_while_running(process, lambda: spawned_children(process.pid), "sampler workers")
    saved = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    before = read_rows(run_dir / "episodes.csv")
    process.kill()
    process.communicate(timeout=60)
    wait_for_exit(workers)
    resumed = run_cli("run", f"resume={run_dir}", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] >= 1600 and summary["resumes"] == 1
    rows = read_rows(run_dir / "episodes.csv")
    assert [int(row["episode"]) for row in rows] == list(range(1, len(rows) + 1)), "an episode lost or repeated"
    assert rows[: saved["episodes"]] == before[: saved["episodes"]] and len(rows) == summary["episodes"]
    assert "sampler: parallel" in (run_dir / "config.yaml").read_text()


def test_a_game_failing_mid_run_stops_it_in_one_line(run_cli, workdir, tmp_path):
    result = run_cli("run", "agent=mappo", "env=pettingzoo_parallel", "env.id=team_games", "+env.kwargs.game=failing",
                     "hardware.sampler=parallel", "hardware.cpus_per_run=2", "hardware.n_envs=2", *FAST_RUN,
                     f"logdir={tmp_path / 'runs'}", cwd=workdir, pythonpath=[TESTS])
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "sampler worker 0: RuntimeError: the game broke in round 3" in lines[0], lines[0]


def test_vmas_and_the_alternating_sampler_are_refused_for_teams(run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=mappo", "env=vmas/balance", "hardware.sampler=parallel"],
                       ["hardware.sampler=parallel", "VMAS steps every copy at once", "allowed: serial"],
                       workdir, tmp_path / "a")
    assert_run_refused(run_cli, [*SPREAD_RUN, "hardware.sampler=alternating"],
                       ["hardware.sampler=alternating"], workdir, tmp_path / "b")
