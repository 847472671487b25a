"""QMIX and VDN (rlconf.agents.qmix) on real team environments: VMAS's navigation in its discrete actions, and
the coordination game of tests/team_games.py, whose best return (8) is known, so learning is asserted in seconds;
the mixer's monotonicity, whole frames from replay, resumes, playback and the refusal of continuous actions."""

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

from rlconf.agents._team import AgentNetworks
from rlconf.agents.qmix import QMixer, TeamQ, VDNMixer

# Small bursts from the start: the runs below update within their few hundred frames.
QUICK = ["hardware.n_envs=4", "agent.replay_start_size=200", "agent.update_frequency=40", "agent.gradient_steps=2",
         "agent.batch_size=16"]
NAVIGATION = ["env=vmas/navigation", *QUICK]


@pytest.mark.parametrize("agent", ["qmix", "vdn"])
def test_qmix_and_vdn_train_on_vmas_in_its_discrete_actions_and_log(agent, run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", f"agent={agent}", *NAVIGATION, "steps=800", *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(logdir)
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["env"]["kwargs"]["continuous_actions"] is False, "the VMAS preset picks the discrete moves"
    assert config["agent"]["gradient_steps"] == 2 and config["approximation"]["hidden"] == [256, 256]
    summary = summary_of(run_dir)
    assert summary["steps"] >= 800 and summary["test_episodes"] == 2
    assert -1e3 < summary["test_return_mean"] < 1e3
    rows = read_rows(run_dir / "episodes.csv")
    assert rows and all(row["return/agent"] == row["return"] for row in rows)  # one group: the team's return


def test_without_sharing_each_agent_has_a_utility_network_of_its_own():
    _, env, agent = build("agent=vdn", *NAVIGATION, "agent.share_parameters=false")
    env.close()
    assert len(agent.groups["agent"].q.model.utilities.networks) == 3
    shared = build("agent=qmix", *NAVIGATION)[2].groups["agent"].q.model
    assert len(shared.utilities.networks) == 1 and isinstance(shared.mixer, QMixer)


def test_the_qmix_mixer_is_monotonic_in_every_agents_utility():
    """dQ_tot/dQ_i >= 0 whatever the state and the utilities: the hypernetworks' weights pass through abs()."""
    torch.manual_seed(0)
    mixer = QMixer(agents=3, state_size=5, embed=8)
    values = (torch.randn(256, 3) * 5).requires_grad_(True)
    mixer(values, torch.randn(256, 5) * 5).sum().backward()
    assert (values.grad >= 0).all() and (values.grad > 0).any()
    summed = torch.randn(4, 3, requires_grad=True)
    VDNMixer()(summed, torch.empty(4, 0)).sum().backward()
    assert torch.equal(summed.grad, torch.ones(4, 3))


def test_an_agent_out_of_the_game_does_not_count_in_the_mix():
    torch.manual_seed(0)
    team = TeamQ(AgentNetworks([torch.nn.Linear(2, 3)]), QMixer(agents=2, state_size=4, embed=8))
    inputs, state = torch.randn(5, 2, 2), torch.randn(5, 4)
    weights = torch.tensor([[1.0, 0.0]] * 5)
    moved = inputs.clone()
    moved[:, 1] += 10.0  # the second agent's view, and so its utilities, change
    assert torch.equal(team(inputs, state, weights), team(moved, state, weights))
    assert not torch.equal(team(inputs, state, torch.ones(5, 2)), team(moved, state, torch.ones(5, 2)))


def test_a_minibatch_holds_whole_frames_of_one_copy():
    """Replay has a column per lane; a drawn frame is one copy's agents at one step, side by side, in order."""
    _, env, agent = build("agent=qmix", *NAVIGATION, "agent.replay_start_size=100000")
    group = agent.groups["agent"]
    states = env.reset(seed=0)
    for _ in range(30):
        states = env.step(agent.act(states))
    env.close()
    batch = group.replay.sample(64)
    observation = batch.observation.view(64, 3, -1)
    own, state = observation[..., :18], observation[..., 18:18 + 54]
    # Each lane's own view is its slice of the copy's global state (VMAS's: every observation concatenated).
    assert torch.equal(state[:, 0].view(64, 3, 18), own)
    assert (state == state[:, :1]).all(), "every lane of a frame holds the same global state"
    rows, cols = batch.indices
    assert (rows.view(64, 3) == rows.view(64, 3)[:, :1]).all()
    assert torch.equal(cols.view(64, 3) % 3, torch.arange(3).expand(64, 3))


@pytest.mark.parametrize(("bootstrap", "kept"), [("true", 1.0), ("false", 0.0)])
def test_a_time_limit_bootstraps_unless_it_is_to_count_as_terminal(bootstrap, kept):
    """The final frame of a truncated episode keeps its agents' values in the next state's mix, or, with
    agent.bootstrap_time_limits=false (the VMAS presets', as BenchMARL), stops them as a terminal frame does."""
    _, env, agent = build("agent=qmix", *NAVIGATION, "hardware.n_envs=2", f"agent.bootstrap_time_limits={bootstrap}",
                          "agent.replay_start_size=100000")
    states, steps = env.reset(seed=0), 0
    while not bool(states.done.any()):
        states, steps = env.step(agent.act(states)), steps + 1
    agent.act(states)  # the final frame goes into replay
    env.close()
    assert steps == 100, "navigation's time limit, not its goal, ended the episode"
    replay = agent.groups["agent"].replay.buffer
    ended = replay.done[replay.newest_row]
    assert ended.all() and (replay.mask[replay.newest_row] == kept).all()


@pytest.mark.parametrize("agent", ["qmix", "vdn"])
def test_qmix_and_vdn_learn_to_coordinate(agent, run_cli, workdir, tmp_path):
    """Both agents must pick the target they are shown, together: 8 a game at best, about 0.9 at chance."""
    overrides = [f"agent={agent}", *COORDINATION, "steps=5000", "hardware.n_envs=8", "agent.lr=1e-3",
                 "agent.epsilon_decay_steps=2500", "agent.replay_start_size=400", "agent.update_frequency=8",
                 "agent.batch_size=32"]
    assert learned_return(run_cli, workdir, tmp_path / "runs", overrides) >= 7.5


def test_a_killed_qmix_run_resumes_with_its_replay_without_losing_an_episode(run_cli, workdir, tmp_path):
    resumes_with_its_replay(run_cli, workdir, tmp_path / "runs", ["agent=qmix", *NAVIGATION])


def test_a_qmix_run_plays_back_with_eval_and_into_a_video_and_exports_its_group(run_cli, workdir, tmp_path):
    description, policy = plays_back_and_exports(run_cli, workdir, tmp_path, ["agent=qmix", *NAVIGATION])
    assert description["input"]["shape"] == ["batch", 18]  # navigation's 18 observations (the preset: no agent id)
    assert policy(torch.zeros(5, 18)).shape == (5,)


def test_continuous_actions_are_refused_in_one_line_naming_the_switch(run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["agent=qmix", "env=vmas/balance", "env.kwargs.continuous_actions=true"],
                       ["agent=qmix", "discrete", "env.kwargs.continuous_actions=false"], workdir, tmp_path / "runs")
