"""benchmarks/teams.py: the settings it gives BenchMARL are rlconf's preset's, as BenchMARL's built experiment
holds them; rows rlconf cannot run yet are refused in one line. No training here (the quick run of the
benchmark takes minutes); BenchMARL is a benchmark peer, not a dependency: its tests skip without it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"teams_benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("row", "centralised"), [("mappo-balance", True), ("ippo-sampling", False)])
def test_benchmarls_experiment_holds_the_settings_of_rlconfs_preset(row, centralised, tmp_path):
    pytest.importorskip("benchmarl")
    pytest.importorskip("vmas")
    teams, runner = _module("teams"), _module("teams_benchmarl")
    trial = teams.spec(teams.ROWS[row], frames=300_000, seed=0, evaluations=10, quick=False)
    experiment = runner.build(trial, tmp_path)
    seen = runner.observed(experiment, row.split("-")[0])
    assert runner.differences(trial, seen) == []
    preset = teams.settings_of([f"agent={row.split('-')[0]}", f"env=vmas/{row.split('-')[1]}"])
    agent = preset.agent
    assert seen["experiment"]["lr"] == agent.lr and seen["experiment"]["adam_eps"] == agent.adam_eps
    assert seen["experiment"]["on_policy_collected_frames_per_batch"] == agent.n_steps * preset.hardware.n_envs
    assert seen["experiment"]["on_policy_n_minibatch_iters"] == agent.epochs
    assert seen["experiment"]["on_policy_minibatch_size"] == agent.batch_size
    assert seen["model"] == {"num_cells": list(preset.approximation["hidden"]), "activation": "tanh"}
    assert seen["critic_centralised"] is centralised
    assert seen["task_config"]["max_steps"] == preset.env.max_episode_steps
    assert trial["eval_every"] == 30_000 and trial["eval_every"] % 6_000 == 0  # BenchMARL evaluates at rollouts' ends


@pytest.mark.parametrize("quick", [False, True])
def test_benchmarls_qmix_holds_the_settings_of_rlconfs_preset(quick, tmp_path):
    pytest.importorskip("benchmarl")
    pytest.importorskip("vmas")
    teams, runner = _module("teams"), _module("teams_benchmarl")
    trial = teams.spec(teams.ROWS["qmix-navigation"], frames=120_000, seed=0, evaluations=2, quick=quick)
    seen = runner.observed(runner.build(trial, tmp_path), "qmix")
    assert runner.differences(trial, seen) == []
    agent = teams.settings_of(trial["rlconf_overrides"]).agent
    assert seen["experiment"]["off_policy_n_optimizer_steps"] == agent.gradient_steps == (100 if quick else 1000)
    assert seen["experiment"]["off_policy_collected_frames_per_batch"] == agent.update_frequency
    assert seen["experiment"]["prefer_continuous_actions"] is False  # VMAS's discrete moves on both sides
    assert seen["algorithm"]["mixing_embed_dim"] == agent.mixing_embed_dim == 32


@pytest.mark.parametrize("row", ["masac-balance", "maddpg-balance"])
def test_benchmarls_actor_critics_hold_the_settings_of_rlconfs_preset(row, tmp_path):
    pytest.importorskip("benchmarl")
    pytest.importorskip("vmas")
    teams, runner = _module("teams"), _module("teams_benchmarl")
    algorithm = row.split("-")[0]
    trial = teams.spec(teams.ROWS[row], frames=120_000, seed=0, evaluations=2, quick=False)
    seen = runner.observed(runner.build(trial, tmp_path), algorithm)
    assert runner.differences(trial, seen) == []
    agent = teams.settings_of(trial["rlconf_overrides"]).agent
    assert seen["experiment"]["lr"] == agent.lr_q == agent.lr_pi
    assert seen["experiment"]["off_policy_n_optimizer_steps"] == agent.gradient_steps == 1000
    assert seen["experiment"]["off_policy_init_random_frames"] == agent.replay_start_size == 0
    assert seen["experiment"]["polyak_tau"] == pytest.approx(agent.polyak_rate)
    # one centralised critic shared by the group's agents: one Q per frame on both sides
    assert seen["critic_centralised"] is agent.centralised_critic is True
    assert seen["algorithm"]["share_param_critic"] is agent.share_parameters is True
    if algorithm == "masac":  # the temperature tuned from 1.0 towards -dim(A) = -2 per agent
        assert seen["target_entropy_value"] == -2.0 and seen["alpha"] == agent.temperature_initial == 1.0
        assert seen["algorithm"]["num_qvalue_nets"] == 2 and seen["algorithm"]["fixed_alpha"] is False
    else:  # the noise from 0.8 to 0.01 over 1M frames, the TD target acting with the policy itself
        assert seen["experiment"]["exploration_eps_init"] == pytest.approx(agent.noise)
        assert seen["experiment"]["exploration_anneal_frames"] == agent.noise_decay_steps
        assert seen["target_policy"] is agent.target_policy is False


@pytest.mark.parametrize(("override", "refused"), [
    ("agent.agent_id=true", "agent.agent_id=True"),
    ("agent.lr_pi=1e-4", "agent.lr_pi=0.0001"),
    ("agent.replay_start_size=1000", "agent.replay_start_size=1000"),  # BenchMARL's random frames: whole batches
])
def test_an_actor_critic_setting_benchmarl_cannot_take_is_refused(override, refused):
    teams = _module("teams")
    settings = teams.settings_of(["agent=masac", "env=vmas/balance", override])
    with pytest.raises(teams.Refused, match=refused):
        teams.actor_critic(settings)


def test_quick_keeps_an_actor_critics_policy_acting_from_the_first_frame():
    teams = _module("teams")
    quick = teams.quick_overrides(teams.ROWS["masac-balance"])
    assert quick == ["agent.update_frequency=600", "agent.replay_start_size=0", "agent.gradient_steps=100"]


def test_maddpgs_target_policy_is_refused():
    teams = _module("teams")
    settings = teams.settings_of(["agent=maddpg", "env=vmas/balance", "agent.target_policy=true"])
    with pytest.raises(teams.Refused, match="agent.target_policy=True"):
        teams.actor_critic(settings)


def test_quick_scales_both_sides_alike(tmp_path):
    pytest.importorskip("benchmarl")
    teams, runner = _module("teams"), _module("teams_benchmarl")
    trial = teams.spec(teams.ROWS["mappo-balance"], frames=12_000, seed=0, evaluations=4, quick=True)
    seen = runner.observed(runner.build(trial, tmp_path), "mappo")
    assert runner.differences(trial, seen) == []
    assert seen["experiment"]["on_policy_collected_frames_per_batch"] == 600
    assert seen["experiment"]["on_policy_n_minibatch_iters"] == 5
    assert "agent.n_steps=60" in trial["rlconf_overrides"] and "agent.epochs=5" in trial["rlconf_overrides"]


def test_a_preset_setting_benchmarl_cannot_take_is_refused():
    teams = _module("teams")
    settings = teams.settings_of(["agent=mappo", "env=vmas/balance", "agent.normalize_advantages=true"])
    with pytest.raises(teams.Refused, match="agent.normalize_advantages=True"):
        teams.on_policy(settings)


def test_rows_rlconf_cannot_run_yet_are_refused_in_one_line(capsys, monkeypatch):
    teams = _module("teams")
    monkeypatch.setitem(teams.ROWS, "iql-balance", teams.Row("iql", "vmas/balance"))  # no agent=iql in rlconf
    assert teams.main(["iql-balance", "--results", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("teams: error: iql-balance: ") and "masac-balance" in err


def test_the_interval_over_seeds_is_students():
    interval = _module("teams").interval
    assert interval([1.0, 2.0, 3.0]) == "2.00 ± 2.48 (3 seeds)"  # t(2) = 4.303, sd 1, n 3
    assert interval([4.0]) == "4.00 (1 seed)"


def _trial(library: str, seed: int, final: float, speed: float, load: float) -> dict:
    spec = {"task": "balance", "algorithm_name": "mappo", "frames": 300_000, "quick": False, "departures": []}
    return {"library": library, "seed": seed, "final_return": final, "frames_per_second": speed,
            "other_cpu_cores": load, "spec": spec}


@pytest.mark.parametrize(("loads", "said"), [
    ((0.05, 0.12), "Each trial ran alone: other processes used at most 0.12 cores"),
    ((0.98, 1.04), "Other processes used 0.98 to 1.04 cores on average during the trials"),
])
def test_the_table_says_what_else_ran_beside_the_trials_and_cites_no_figure_it_has_not(loads, said):
    table = _module("teams").table([_trial("rlconf", 0, 50.0, 200.0, loads[0]),
                                    _trial("benchmarl", 0, 40.0, 100.0, loads[1])])
    assert "| vmas/balance | mappo | 300,000 | 50.00 (1 seed) | 40.00 (1 seed) | 200 | 100 | 2.00x |" in table
    assert said in table
    assert "Published figures: none in text to cite for these rows." in table
