"""The team agents (MAPPO, IPPO) on real team environments: VMAS's balance, and a small coordination game
(tests/team_games.py) whose best return is known, so that learning can be asserted in seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import FAST_RUN, assert_run_refused, build, only_run_dir
from test_resume import killed_after_checkpoint, read_rows

from rlconf.agents._team import Lanes
from rlconf.core import AgentGroup, StateArray

TESTS = Path(__file__).parent
BALANCE = ["env=vmas/balance", "hardware.n_envs=4", "agent.n_steps=20", "agent.epochs=1"]
COORDINATION = ["env=pettingzoo_parallel", "env.id=team_games"]


def summary_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


@pytest.mark.parametrize("agent", ["mappo", "ippo"])
def test_a_team_agent_trains_on_vmas_and_logs_the_team_and_its_group(agent, run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", f"agent={agent}", *BALANCE, "steps=800", *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    summary = summary_of(run_dir)
    assert summary["steps"] >= 800 and summary["test_episodes"] == 2
    assert -1e3 < summary["test_return_mean"] < 1e3
    rows = read_rows(run_dir / "episodes.csv")
    assert rows, "balance's episodes end within 100 steps"
    # One group (agent_0..agent_3 are the group "agent"): the team's return is the group's.
    assert all(row["return/agent"] == row["return"] for row in rows)


def test_a_team_of_two_groups_learns_each_with_its_own_networks(run_cli, workdir, tmp_path):
    """simple_adversary: an adversary (8 observations) against two agents (10), each group a learner."""
    logdir = tmp_path / "runs"
    result = run_cli("run", "agent=mappo", "env=mpe/simple_adversary", "hardware.n_envs=2", "agent.n_steps=20",
                     "agent.epochs=1", "steps=200", *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    rows = read_rows(run_dir / "episodes.csv")
    assert rows and {"return/adversary", "return/agent"} <= set(rows[0])
    summary = summary_of(run_dir)
    by_group = summary["test_return_by_group"]
    assert set(by_group) == {"adversary", "agent"}
    assert summary["test_return_mean"] == pytest.approx((by_group["adversary"] + 2 * by_group["agent"]) / 3)
    for row in rows:  # the team's return: the mean over its 3 agents, the adversary's one and the agents' two
        team = (float(row["return/adversary"]) + 2 * float(row["return/agent"])) / 3
        assert float(row["return"]) == pytest.approx(team, abs=1e-3)
    _, env, agent = build("agent=mappo", "env=mpe/simple_adversary")
    env.close()
    assert set(agent.learners) == {"adversary", "agent"}
    assert agent.learners["adversary"][0].policy.model is not agent.learners["agent"][0].policy.model


def test_a_group_takes_settings_of_its_own_and_the_others_keep_the_agents():
    """agent.groups.<group>: simple_adversary's adversary learns at its own rate, its agents each on their own."""
    _, env, team = build("agent=mappo", "env=mpe/simple_adversary", "+agent.groups.adversary.lr=1e-3",
                         "+agent.groups.agent.share_parameters=false")
    env.close()
    (adversary,) = team.learners["adversary"]
    agents = team.learners["agent"]
    rates = [learner.policy.optimizer.param_groups[0]["lr"] for learner in (adversary, *agents)]
    assert len(agents) == 2 and rates[0] == 1e-3 and rates[1] == rates[2] != 1e-3


@pytest.mark.parametrize(("override", "words"), [
    ("+agent.groups.adversry.lr=1e-3", ["agent.groups.adversry", "allowed: adversary, agent"]),
    ("agent.groups.adversary.lr=1e-3", ["+agent.groups.adversary.lr=VALUE"]),
    ("+agent.groups.adversary.lr=-1", ["agent.groups.adversary.lr=-1.0", "must be positive"]),
    ("+agent.groups.adversary.clip_rang=0.1", ["agent.groups.adversary.clip_rang"]),
])
def test_a_groups_bad_setting_is_refused_in_one_line(override, words, run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=mappo", "env=mpe/simple_adversary", override], words, workdir,
                       tmp_path / "runs")


def test_without_sharing_each_agent_has_a_learner_of_its_own():
    _, env, agent = build("agent=ippo", *BALANCE, "agent.share_parameters=false")
    env.close()
    learners = agent.learners["agent"]
    assert len(learners) == 4
    assert len({id(learner.policy.model) for learner in learners}) == 4
    shared = build("agent=ippo", *BALANCE)[2]
    assert len(shared.learners["agent"]) == 1


def test_lanes_give_the_actor_its_own_view_and_the_critic_the_global_state():
    import gymnasium as gym

    group = AgentGroup("agent", ("agent_0", "agent_1"), gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2),
                       gym.spaces.Box(-1, 1, (6,)))
    observation = torch.arange(12.0).view(2, 2, 3)  # 2 copies x 2 agents x 3
    states = StateArray({"observation": observation, "reward": torch.ones(2, 2),
                         "done": torch.zeros(2, 2, dtype=torch.bool), "mask": torch.ones(2, 2),
                         "alive": torch.tensor([[True, False], [True, True]]),
                         "global_state": observation.flatten(1).unsqueeze(1).expand(2, 2, 6)}, (2, 2))
    view = Lanes(group, shared=True, agent_id=True, critic="global_state")
    assert (view.actor_inputs, view.critic_inputs) == (3 + 2, 6 + 2)
    (lanes,) = view.of(states)
    assert lanes.shape == (4,)
    row = lanes["observation"][1]  # copy 0, agent 1: its view, its index, then the copy's state and the index
    assert torch.equal(row, torch.cat([observation[0, 1], torch.tensor([0.0, 1.0]), observation[0].flatten(),
                                       torch.tensor([0.0, 1.0])]))
    # An agent that finished before its game is a lane whose episode is over: no transitions from it.
    assert lanes["done"].tolist() == [False, True, False, False]
    each = Lanes(group, shared=False, agent_id=True, critic="observation").of(states)
    assert len(each) == 2 and each[0].shape == (2,) and each[0]["observation"].shape == (2, 6)


def resumes_after_kill_9(run_cli, workdir, logdir: Path, args: list[str], at_least: int) -> tuple[Path, dict]:
    """A team run killed with SIGKILL after a checkpoint of ``at_least`` steps, then resumed: every episode once,
    those before the checkpoint as they were. Its directory and its checkpoint."""
    run_dir, saved, before = killed_after_checkpoint(args, workdir, logdir, at_least)
    resumed = run_cli("run", f"resume={run_dir}", cwd=workdir)
    assert resumed.returncode == 0, resumed.stderr
    summary = summary_of(run_dir)
    assert summary["resumes"] == 1
    rows = read_rows(run_dir / "episodes.csv")
    assert [int(row["episode"]) for row in rows] == list(range(1, len(rows) + 1)), "an episode lost or repeated"
    assert rows[: saved["episodes"]] == before[: saved["episodes"]]
    assert len(rows) == summary["episodes"]
    return run_dir, saved


def resumes_with_its_replay(run_cli, workdir, logdir: Path, overrides: list[str]) -> None:
    """An off-policy team run killed after a checkpoint of 800 frames and resumed (``resumes_after_kill_9``): its
    checkpoints carry the replay, and it ends its 2,400 frames."""
    args = [*overrides, "steps=2400", "checkpoint_every=400", "checkpoint.replay=true", *FAST_RUN, f"logdir={logdir}"]
    run_dir, saved = resumes_after_kill_9(run_cli, workdir, logdir, args, 800)
    assert saved["replay"], "the checkpoint carries the replay's frames"
    assert summary_of(run_dir)["steps"] >= 2400


def learned_return(run_cli, workdir, logdir: Path, overrides: list[str]) -> float:
    """The test return of a run of one of tests/team_games.py's games (16 test episodes, no evaluations)."""
    result = run_cli("run", *overrides, "test_episodes=16", "eval_every=0", "quiet=true", f"logdir={logdir}",
                     cwd=workdir, pythonpath=[TESTS])
    assert result.returncode == 0, result.stderr
    return summary_of(only_run_dir(logdir))["test_return_mean"]


def plays_back(run_cli, workdir, run_dir: Path, video: Path) -> None:
    """``rlconf eval`` repeats the run's final test; ``rlconf watch --video`` films one episode of copy 0."""
    import imageio_ffmpeg

    evaluated = run_cli("eval", str(run_dir), "--episodes", "2", cwd=workdir)
    assert evaluated.returncode == 0, evaluated.stderr
    returns = json.loads((run_dir / "eval.json").read_text())["returns"]
    assert sum(returns) / len(returns) == pytest.approx(summary_of(run_dir)["test_return_mean"]), "as the test"
    watched = run_cli("watch", str(run_dir), "--video", str(video), cwd=workdir)
    assert watched.returncode == 0, watched.stderr
    frames = imageio_ffmpeg.count_frames_and_secs(str(video))[0]
    assert f"wrote {video}: {frames} frames" in watched.stdout
    assert 2 <= frames <= 101, "the first state, then one frame a step of VMAS's 100 at most"


def exports_its_group(run_cli, workdir, run_dir: Path) -> dict:
    """``rlconf export`` of a one-group team (the group ``agent``) as TorchScript: the description written."""
    exported = run_cli("export", str(run_dir), "--format", "torchscript", cwd=workdir)
    assert exported.returncode == 0, exported.stderr
    return json.loads((run_dir / "policy-agent.pt.json").read_text())


def plays_back_and_exports(run_cli, workdir, tmp_path: Path, overrides: list[str]) -> tuple[dict, torch.nn.Module]:
    """A short run of a one-group team played back (``plays_back``) and its group exported: the description
    written, and the TorchScript policy."""
    logdir = tmp_path / "runs"
    trained = run_cli("run", *overrides, "steps=400", *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert trained.returncode == 0, trained.stderr
    run_dir = only_run_dir(logdir)
    plays_back(run_cli, workdir, run_dir, tmp_path / "team.mp4")
    return exports_its_group(run_cli, workdir, run_dir), torch.jit.load(str(run_dir / "policy-agent.pt"))


def test_a_killed_team_run_resumes_without_losing_or_repeating_an_episode(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    args = ["agent=mappo", *BALANCE, "steps=3000", "checkpoint_every=400", *FAST_RUN, f"logdir={logdir}"]
    run_dir, _ = resumes_after_kill_9(run_cli, workdir, logdir, args, 800)
    assert summary_of(run_dir)["steps"] >= 3000


def test_a_team_run_plays_back_with_eval_and_into_a_video(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    trained = run_cli("run", "agent=mappo", *BALANCE, "agent.agent_id=true", "steps=400", *FAST_RUN,
                      f"logdir={logdir}", cwd=workdir)
    assert trained.returncode == 0, trained.stderr
    run_dir = only_run_dir(logdir)
    plays_back(run_cli, workdir, run_dir, tmp_path / "team.mp4")

    description = exports_its_group(run_cli, workdir, run_dir)
    assert description["input"]["shape"] == ["batch", 16 + 4]  # balance's 16 observations, then 4 agents' one-hot
    assert any("one-hot" in how for how in description["feeding"])
    refused = run_cli("export", str(run_dir), "--format", "torchscript", "--group", "adversary", cwd=workdir)
    assert refused.returncode == 2 and "allowed: --group agent" in refused.stderr


def test_a_sweep_of_team_agents_over_tasks_plots_each_task_and_the_aggregate(run_cli, workdir, tmp_path):
    """The issue's sweep, at a tiny budget: two team agents on two VMAS tasks, then ``rlconf plot --aggregate``
    (its curves per task, and the statistics over tasks as marl-eval reports them, min-max normalised)."""
    logdir = tmp_path / "runs"
    swept = run_cli("run", "-m", "agent=mappo,ippo", "env=vmas/balance,vmas/navigation", "seed=0", "hardware.n_envs=2",
                    "env.max_episode_steps=25", "agent.n_steps=20", "agent.epochs=1", "steps=100", "eval_every=50",
                    "eval_episodes=2", "test_episodes=2", "quiet=true", f"logdir={logdir}", cwd=workdir)
    assert swept.returncode == 0, swept.stderr
    (sweep,) = logdir.glob("sweep_*")
    plotted = run_cli("plot", str(sweep), "--aggregate", cwd=workdir)
    assert plotted.returncode == 0, plotted.stderr
    assert "4 runs (2 agents, 2 envs" in plotted.stdout
    curves = {(row["env"], row["agent"]) for row in read_rows(sweep / "plot_curves.csv")}
    assert curves == {(env, agent) for env in ("vmas/balance", "vmas/navigation") for agent in ("mappo", "ippo")}
    aggregate = read_rows(sweep / "plot_aggregate.csv")
    assert {(row["agent"], row["statistic"]) for row in aggregate} >= {("mappo", "IQM"), ("ippo", "IQM")}
    assert all(row["tasks"] == "2" and 0 <= float(row["value"]) <= 1 for row in aggregate)
    assert (sweep / "plot.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(("agent", "env", "words"), [
    ("dqn", "vmas/balance", ["agent=dqn", "team", "agent=mappo"]),
    ("mappo", "classic/cartpole", ["agent=mappo", "env=classic/cartpole", "env=vmas"]),
])
def test_a_team_agent_and_a_single_agent_env_are_refused_in_one_line(agent, env, words, run_cli, workdir,
                                                                      tmp_path):
    assert_run_refused(run_cli, [f"agent={agent}", f"env={env}"], words, workdir, tmp_path / "runs")


@pytest.mark.slow
def test_mappo_learns_to_coordinate(run_cli, workdir, tmp_path):
    """Both agents must pick the target they are shown, together: 8 a game at best, about 0.9 at chance."""
    overrides = ["agent=mappo", *COORDINATION, "steps=20000", "hardware.n_envs=8", "agent.n_steps=16",
                 "agent.batch_size=32", "agent.lr=1e-3"]
    assert learned_return(run_cli, workdir, tmp_path / "runs", overrides) >= 7.5


@pytest.mark.parametrize("body", ["body=time_feature", "body.normalize_observations=true"])
def test_a_body_for_a_team_is_refused_in_one_line(body, run_cli, workdir, tmp_path):
    """No body wraps a team agent: one chosen would do nothing, so it is refused, not ignored."""
    assert_run_refused(run_cli, ["agent=mappo", "env=vmas/balance", body], [body, "allowed: body=none"], workdir,
                       tmp_path / "runs")
