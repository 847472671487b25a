"""benchmarks/peers.py: Tianshou's and TorchRL's arguments are the workloads' rlconf settings, read from the presets
at run time; settings a peer cannot express are refused; a peer that is not installed is skipped by the report in
one line. No training here (a peer's trial takes minutes: ``python benchmarks/bench.py --quick`` runs them). The
benchmark's journal: an interrupted run resumes where it stopped, and only under the code and options it began
with."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch):
    """benchmarks/ on the path, as its scripts run (they import one another by name)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import bench as module
    import peers
    import presets

    yield module, peers, presets
    for name in ("bench", "peers", "presets", "report", "limit"):
        sys.modules.pop(name, None)


def test_tianshou_dqn_cartpole_gets_the_presets_burst_schedule_and_network(bench):
    _, peers, presets = bench
    settings = presets.load_settings(presets.WORKLOADS["dqn-cartpole"])
    a, kw = settings.agent, peers.tianshou_kwargs(settings)
    trainer, algorithm = kw["trainer"], kw["algorithm"]
    assert trainer["collection_step_num_env_steps"] == a.update_frequency == 256
    assert trainer["update_step_num_gradient_steps_per_sample"] * a.update_frequency == a.gradient_steps == 128
    assert trainer["batch_size"] == a.batch_size
    assert kw["warmup"] + trainer["epoch_num_steps"] == settings.run.steps  # the warm-up counts towards the budget
    # the target refreshed once a burst (rlconf's period, 10 env steps, is shorter than a burst), in updates
    assert algorithm["target_update_freq"] == a.gradient_steps
    assert algorithm["huber_loss_delta"] == 1.0 and algorithm["is_double"] is False
    assert algorithm["gamma"] == a.discount_factor and algorithm["n_step_return_horizon"] == 1
    assert kw["schedule"]["epsilon"] == (a.epsilon, a.epsilon_final, a.epsilon_decay_steps)
    assert kw["schedule"]["lr"] == (a.lr, a.lr_final) and kw["adam_eps"] == a.adam_eps
    assert kw["network"]["hidden"] == list(settings.approximation["hidden"]) == [256, 256]
    assert kw["departures"] == [f"no gradient clipping (rlconf clips at {a.clip_grad:g})"]


def test_torchrl_ppo_cartpole_gets_the_presets_rollout_epochs_and_minibatches(bench):
    _, peers, presets = bench
    settings = presets.load_settings(presets.WORKLOADS["ppo-cartpole"])
    a, kw = settings.agent, peers.torchrl_kwargs(settings)
    assert kw["collector"] == {"frames_per_batch": a.n_steps * settings.hardware.n_envs,
                               "total_frames": settings.run.steps}
    assert kw["ppo_epochs"] == a.epochs and kw["mini_batch_size"] == a.batch_size
    assert kw["gae"] == {"gamma": a.discount_factor, "lmbda": a.lam, "average_gae": False}
    assert kw["loss"]["clip_epsilon"] == a.clip and kw["optim"]["clip_final"] == a.clip_final
    assert kw["loss"]["critic_coeff"] == a.value_loss_scaling and kw["loss"]["entropy_coeff"] == a.entropy_loss_scaling
    assert kw["optim"]["max_grad_norm"] == a.clip_grad and kw["optim"]["eps"] == a.adam_eps
    assert kw["network"] == {"kind": "mlp", "hidden": [64, 64], "activation": "tanh", "ortho_init": True,
                             "shared": False}
    assert kw["env"]["n_envs"] == settings.hardware.n_envs == 8


@pytest.mark.parametrize("peer", ["tianshou", "torchrl"])
def test_sac_halfcheetah_and_ppo_breakout_map_for_both_peers(bench, peer):
    _, peers, presets = bench
    sac = presets.load_settings(presets.WORKLOADS["sac-halfcheetah"])
    kw = peers.peer_kwargs(peer, sac)
    updates = kw["trainer"]["update_step_num_gradient_steps_per_sample"] if peer == "tianshou" else kw["num_updates"]
    assert updates == sac.agent.gradient_steps / sac.agent.update_frequency == 1
    assert kw["network"]["hidden"] == [256, 256] and kw["env"]["id"] == sac.env.id
    ppo = presets.load_settings(presets.WORKLOADS["ppo-breakout"])
    kw = peers.peer_kwargs(peer, ppo)
    assert kw["network"]["kind"] == "nature_cnn" and kw["network"]["hidden"] == 512
    assert kw["env"]["frame_stack"] == ppo.body.frame_stack and kw["env"]["ale"]["frameskip"] == 1
    assert kw["env"]["n_envs"] == ppo.hardware.n_envs == 8


def test_settings_a_peer_cannot_express_are_refused(bench):
    _, peers, presets = bench
    masked = presets.load_settings(presets.WORKLOADS["ppo-lstm-cartpole-masked"])
    for peer in peers.PEERS:
        with pytest.raises(peers.Unmatched, match="the comparison would not be matched"):
            peers.peer_kwargs(peer, masked)
    for peer in peers.PEERS:  # the peers' DQN is their CartPole examples' MLP
        with pytest.raises(peers.Unmatched, match="an MLP"):
            peers.peer_kwargs(peer, presets.load_settings(presets.WORKLOADS["dqn-breakout"]))


def test_a_peer_that_is_not_installed_is_one_line_of_the_report(bench):
    module, peers, _ = bench
    plans = [module.plan(module.WORKLOADS["dqn-cartpole"], quick=True, test_episodes=2)]
    assert set(plans[0].peers) == set(peers.PEERS) and all(plans[0].peers.values())
    ran, skipped = module.peers_to_run(plans)
    for name, peer in peers.PEERS.items():
        present = importlib.util.find_spec(peer.module) is not None
        assert (name in ran) is present and (name in skipped) is not present
    from report import render

    results = {"options": {"seeds": 1, "quick": True, "test_episodes": 2, "window_seconds": 0.3, "device": "cpu"},
               "machine": {"cpu": "x", "cores": 2, "usable_cores": 2, "python": "3", "date": "d", "commit": None,
                           "versions": {"torch": "t", "stable_baselines3": "s", "gymnasium": "g", "rlconf": "r"}},
               "training": [{"title": "DQN CartPole-v1", "rlconf": [{"steps_per_second": 10.0}], "sb3": [],
                             "limit": [], "tianshou": [], "torchrl": [{"steps_per_second": 5.0}]}],
               "rates": [], "memory": [], "errors": [],
               "peers": {"ran": ["torchrl"], "skipped": {"tianshou": "Tianshou is not installed in this interpreter"}}}
    report = render(results)
    assert report.count("Tianshou is not installed") == 1
    assert "| DQN CartPole-v1 | 10 | 5 | 2.00× |" in report


def test_full_reports_go_where_they_are_committed(bench):
    module, _, _ = bench
    from datetime import datetime

    stem = module.report_stem({"options": {"quick": False}}, datetime(2026, 11, 28, 2, 30, 5))
    assert stem == "bench-20261128-023005"
    assert module.parse_args([]).out == module.REPORTS == BENCHMARKS / "results" / "speed"
    assert module.parse_args(["--quick"]).out == module.RESULTS
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "-q", f"benchmarks/results/speed/{stem}.md"],
                             cwd=BENCHMARKS.parent).returncode
    assert ignored == 1  # 1: not ignored, so the report can be committed
    scratch = subprocess.run(["git", "check-ignore", "--no-index", "-q", "benchmarks/results/latest.md"],
                             cwd=BENCHMARKS.parent).returncode
    assert scratch == 0


def test_the_limit_runs_ders_shape(bench):
    """The DER workload is the Atari 100k experiment's settings, and the limit trains them: a few real updates."""
    _, _, presets = bench
    import limit

    workload = presets.WORKLOADS["der-breakout"]
    settings = presets.load_settings(workload)
    a, model = settings.agent, settings.approximation
    assert (settings.hardware.n_envs, a.update_frequency, a.gradient_steps, a.batch_size) == (1, 1, 1, 32)
    assert a.n_steps > 1 and a.replay == "prioritized"
    assert (model["convs"], model["hidden"]) == ([[32, 5, 5], [64, 5, 5]], 256)
    assert limit.implements(settings)
    tiny = presets.load_settings(presets.Workload(workload.name, workload.agent, workload.env,
                                                  (*workload.overrides, "agent.replay_start_size=40")), steps=56)
    result = limit.train(tiny, seed=0, test_episodes=0)
    assert result["steps"] == 56 and result["steps_per_second"] > 0


def test_the_recurrent_reference_trains_and_tests_sb3_contrib_on_masked_cartpole():
    """benchmarks/sb3_recurrent.py, the reference beside rlconf's masked-task PPO-LSTM: a short run end to end,
    its one line naming the run and a greedy test of 100 episodes within CartPole's returns."""
    pytest.importorskip("sb3_contrib")
    done = subprocess.run([sys.executable, str(BENCHMARKS / "sb3_recurrent.py"), "cartpole", "--steps", "256"],
                          capture_output=True, text=True, cwd=BENCHMARKS.parent, timeout=600)
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip().splitlines()[-1]
    assert line.startswith("sb3-contrib RecurrentPPO CartPole-v1 without velocities (cartpole), seed 0, 256 steps: "
                           "test ")
    mean = float(line.split("test ")[1].split(" ")[0])
    assert 8 <= mean <= 500 and line.endswith("over 100 episodes")


def test_the_recurrent_references_linear_schedules_decay_to_zero(bench):
    import sb3_recurrent  # benchmarks/ is on the path (the bench fixture), as the script runs

    decay = sb3_recurrent.schedule("lin_1e-3")
    assert decay(1.0) == pytest.approx(1e-3) and decay(0.5) == pytest.approx(5e-4) and decay(0.0) == 0.0
    assert sb3_recurrent.schedule(0.2) == 0.2
    assert set(sb3_recurrent.TASKS) == {"cartpole", "pendulum", "pendulum-agent"}
    sys.modules.pop("sb3_recurrent", None)


HEADER = {"commit": "abc1234", "quick": True, "device": "cpu", "scaling": False, "test_episodes": 10,
          "window_seconds": 0.3}


def test_an_interrupted_benchmark_resumes_from_its_journal(bench, tmp_path):
    """A finished trial is journalled as it lands; a run resumed from the journal takes it from there."""
    module, _, _ = bench
    journal = tmp_path / "bench-journal.json"
    first = module.Trials(tmp_path, HEADER, journal)
    measured = module.measure(first, ["env-rlconf", "dqn-cartpole", "1", "--seconds", "0.05"],
                              "env rlconf CartPole-v1 x1")
    assert measured["steps_per_second"] > 0 and measured["finished"] and not first.errors
    # The first process is gone (killed mid-benchmark); a new one resumes. The trial is not run again: its command
    # here could not run at all (no such workload), yet the journal's measurement comes back.
    again = module.Trials(tmp_path, HEADER, journal, resume=True)
    assert module.measure(again, ["env-rlconf", "no-such-workload"], "env rlconf CartPole-v1 x1") == measured
    assert again.resumed == 1 and not again.errors
    # A trial the journal does not hold runs (and this one fails, reported, not journalled).
    assert "error" in module.measure(again, ["env-rlconf", "no-such-workload"], "env rlconf Other x1")
    assert len(again.errors) == 1
    assert list(json.loads(journal.read_text())["trials"]) == ["env rlconf CartPole-v1 x1"]


def test_resuming_under_other_code_or_options_is_refused_in_one_line(bench, tmp_path, monkeypatch, capsys):
    module, _, _ = bench
    monkeypatch.setattr(module, "JOURNALS", tmp_path)
    kinds = {module.journal_path(module.parse_args(argv)).name for argv in ([], ["--quick"], ["--scaling"])}
    assert kinds == {"bench-journal.json", "quick-journal.json", "scaling-journal.json"}  # none clobbers another
    argv = ["--quick", "--resume", "--workloads", "dqn-cartpole", "--out", str(tmp_path / "reports")]
    assert module.main(argv) == 2
    assert capsys.readouterr().err.strip().startswith("bench: --resume: no journal at ")
    journal = tmp_path / "quick-journal.json"
    journal.write_text(json.dumps({"header": HEADER, "trials": {}}))
    assert module.main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "commit 'abc1234' there" in error, error
    assert json.loads(journal.read_text())["header"] == HEADER  # the journal is kept as it was
    assert not (tmp_path / "reports").exists()
