"""MADDPG and IDDPG, MASAC and ISAC (rlconf.agents.maddpg, rlconf.agents.masac) on real team environments: VMAS's
balance in its continuous forces, and the steering game of tests/team_games.py, whose best return (8) is known,
so learning is asserted in seconds; what the critics read, each agent's own target, resumes, playback, export
and the refusal of discrete actions."""

from __future__ import annotations

import pytest
import torch
import yaml
from conftest import FAST_RUN, assert_run_refused, build, only_run_dir
from test_resume import read_rows
from test_team_agents import (
    COORDINATION,
    learned_return,
    plays_back_and_exports,
    resumes_with_its_replay,
    summary_of,
)
from test_team_value import QUICK  # small bursts from the start: updates within a run's few hundred frames

BALANCE = ["env=vmas/balance", *QUICK]
STEERING = [*COORDINATION, "+env.kwargs.game=steering"]


@pytest.mark.parametrize("agent", ["masac", "isac", "maddpg", "iddpg"])
def test_each_trains_on_vmas_at_its_preset_and_logs_each_groups_losses(agent, run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", f"agent={agent}", *BALANCE, "steps=600", "verbose=true", "logger.debug_every=1",
                     *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["agent"]["lr_q"] == 5e-5 and config["agent"]["clip_grad"] == 5.0, "the VMAS preset"
    assert config["approximation"]["hidden"] == [256, 256]
    summary = summary_of(run_dir)
    assert summary["steps"] >= 600 and summary["test_episodes"] == 2
    assert -1e3 < summary["test_return_mean"] < 1e3
    names = {row["name"] for row in read_rows(run_dir / "scalars.csv")}
    critics = ("q_1", "q_2") if agent.endswith("sac") else ("q",)
    assert {f"loss/{part}/agent" for part in (*critics, "policy")} <= names, "each network's loss, by group"


def test_a_centralised_critic_reads_every_agents_action_and_an_independent_one_its_own():
    def values(agent: str, *overrides: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Every agent's Q of one frame, then again with agent 1's action alone changed."""
        _, env, team = build(f"agent={agent}", *BALANCE, *overrides)
        env.close()
        group = team.groups["agent"]
        torch.manual_seed(0)
        own, state = torch.randn(1, 4, group.view.actor_inputs), torch.randn(1, 64)
        actions = torch.rand(1, 4, 2) * 2 - 1
        moved = actions.clone()
        moved[0, 1] = -moved[0, 1]
        q = group.q if agent.endswith("ddpg") else group.q_1
        return (q.no_grad(*group.critic_inputs(own, state, actions)),
                q.no_grad(*group.critic_inputs(own, state, moved)))

    before, after = values("maddpg", "agent.agent_id=true")
    assert before.shape == (1, 4) and (before != after).all(), "every agent's Q reads agent 1's action"
    before, after = values("iddpg")
    assert (before[0, 1] != after[0, 1]) and torch.equal(before[0, [0, 2, 3]], after[0, [0, 2, 3]])
    # Shared, centralised and without an agent index (the preset), every agent's Q is one number: one per frame.
    before, _ = values("masac")
    assert before.shape == (1, 1)


def test_each_agent_learns_from_its_own_reward_and_its_own_end():
    """The target of agent i is r_i + gamma * mask'_i * ...: replay keeps each agent's reward, not the team's."""
    _, env, team = build("agent=masac", "env=vmas/navigation", "hardware.n_envs=2", "agent.replay_start_size=100000")
    states = env.reset(seed=0)
    for _ in range(20):
        states = env.step(team.act(states))
    env.close()
    replay = team.groups["agent"].replay
    batch = replay.sample(32)
    rewards = batch.reward.view(32, 3)
    assert not torch.equal(rewards[:, 0], rewards[:, 1]), "navigation's agents are rewarded apart (BenchMARL's task)"
    targets = team.groups["agent"].bootstrap(batch, torch.zeros(32, 1))
    assert torch.equal(targets, rewards)


def test_without_sharing_each_agent_has_networks_of_its_own():
    _, env, team = build("agent=maddpg", *BALANCE, "agent.share_parameters=false")
    env.close()
    group = team.groups["agent"]
    assert len(group.actor.networks) == 4 and len(group.q.model.model.networks) == 4
    shared = build("agent=masac", *BALANCE)[2].groups["agent"]
    assert len(shared.actor.networks) == 1 and len(shared.q_1.model.model.networks) == 1


@pytest.mark.parametrize("agent", ["masac", "maddpg"])
def test_masac_and_maddpg_learn_to_steer_together(agent, run_cli, workdir, tmp_path):
    """The mean of both agents' actions must meet the target they see: 8 a game at best, about 3.3 at random.
    SAC's temperature starts at 0.05 (a 4,000-frame run is too short for it to fall from 1 to where it matters)."""
    temperature = ["agent.temperature_initial=0.05"] if agent == "masac" else []
    overrides = [f"agent={agent}", *STEERING, "steps=4000", "hardware.n_envs=8", "agent.replay_start_size=400",
                 "agent.batch_size=64", "agent.update_frequency=8", *temperature]
    assert learned_return(run_cli, workdir, tmp_path / "runs", overrides) >= 7.5


def test_a_killed_masac_run_resumes_with_its_replay_without_losing_an_episode(run_cli, workdir, tmp_path):
    resumes_with_its_replay(run_cli, workdir, tmp_path / "runs", ["agent=masac", *BALANCE])


@pytest.mark.parametrize("agent", ["masac", "maddpg"])
def test_a_run_plays_back_with_eval_and_into_a_video_and_exports_its_group(agent, run_cli, workdir, tmp_path):
    description, policy = plays_back_and_exports(run_cli, workdir, tmp_path, [f"agent={agent}", *BALANCE])
    assert description["input"]["shape"] == ["batch", 16]  # balance's 16 observations (the preset: no agent id)
    forces = policy(torch.randn(5, 16))
    assert forces.shape == (5, 2) and (forces.abs() <= 1).all(), "each agent's force within VMAS's bounds"


@pytest.mark.parametrize("env", [["env=vmas/navigation", "env.kwargs.continuous_actions=false"],
                                 ["env=mpe/simple_spread"]])  # MPE's games are discrete unless asked
def test_discrete_actions_are_refused_in_one_line_naming_the_switch(env, run_cli, workdir, tmp_path):
    words = ["agent=masac", "continuous", "env.kwargs.continuous_actions=true"]
    assert_run_refused(run_cli, ["agent=masac", *env], words, workdir, tmp_path / "runs")


def test_a_group_takes_settings_of_its_own_but_not_the_teams_cadence(run_cli, workdir, tmp_path):
    _, env, team = build("agent=maddpg", "env=mpe/simple_adversary", "env.kwargs.continuous_actions=true",
                         "+agent.groups.adversary.lr_pi=1e-5", "+agent.groups.adversary.noise_final=0.05")
    env.close()
    adversary, agent = team.groups["adversary"], team.groups["agent"]
    assert adversary.policy.optimizer.param_groups[0]["lr"] == 1e-5 != agent.policy.optimizer.param_groups[0]["lr"]
    assert adversary.noise is not agent.noise and "noise/adversary" in team.schedules()
    assert_run_refused(run_cli, ["agent=masac", "env=vmas/balance", "+agent.groups.agent.update_frequency=10"],
                       ["agent.groups.agent.update_frequency", "allowed: agent.update_frequency"], workdir,
                       tmp_path / "runs")
