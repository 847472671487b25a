"""Sweeps on this machine: the local and local_gpus launchers, named sweeps, Optuna, sweep.csv, rlconf status,
resuming a sweep and skipping its finished runs. Real processes throughout; GPUs are checked on the CPU by
what each run records (the CUDA_VISIBLE_DEVICES it was given)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    FAST_RUN,
    assert_run_refused,
    cli_env,
    one_error_line,
    run_cli_in,
    run_dirs,
    wait_while_running,
)

CARTPOLE = ["agent=dqn", "env=classic/cartpole"]


def the_sweep(logdir: Path) -> Path:
    sweeps = list(logdir.glob("sweep_*"))
    assert len(sweeps) == 1, sweeps
    return sweeps[0]


def summaries(sweep: Path) -> list[dict]:
    return [json.loads((d / "summary.json").read_text()) for d in run_dirs(sweep) if (d / "summary.json").exists()]


def sweep_table(sweep: Path) -> list[dict[str, str]]:
    with open(sweep / "sweep.csv", newline="") as file:
        return list(csv.DictReader(file))


def test_local_launcher_runs_each_job_in_its_own_process_and_tabulates_them(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", *CARTPOLE, "seed=0,1", "steps=400", *FAST_RUN, f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    sweep = the_sweep(logdir)
    dirs = run_dirs(sweep)
    assert sorted(d.name.rsplit("_", 1)[0] for d in dirs) == ["dqn_classic-cartpole_s0", "dqn_classic-cartpole_s1"]
    pids = {json.loads((d / "status.json").read_text())["pid"] for d in dirs}
    assert len(pids) == 2 and os.getpid() not in pids, "a fresh process per run"
    for d in dirs:
        job = json.loads((d / "job.json").read_text())
        assert job["launcher"] == "local" and job["state"] == "started" and Path(job["log"]).exists()

    table = sweep_table(sweep)
    assert sorted(row["seed"] for row in table) == ["0", "1"]
    assert {"run", "agent", "env", "seed", "steps", "episodes", "test_return_mean"} <= set(table[0])
    assert "quiet" not in table[0] and "logdir" not in table[0], "placement overrides are not results"
    by_run = {row["run"]: row for row in table}
    for summary in summaries(sweep):
        assert float(by_run[Path(summary["run_dir"]).name]["test_return_mean"]) == summary["test_return_mean"]

    status = run_cli("status", str(sweep), cwd=workdir)
    assert status.returncode == 0, status.stderr
    assert "2 runs, 2 done" in status.stdout

    # Launched again into the same sweep directory: nothing runs again, and nothing is rewritten.
    stamps = {d: (d / "summary.json").stat().st_mtime_ns for d in dirs}
    again = run_cli("run", "-m", f"resume={sweep}", cwd=workdir)
    assert again.returncode == 0, again.stderr
    assert "2 of 2 runs" in again.stderr and "skipped" in again.stderr
    assert {d: (d / "summary.json").stat().st_mtime_ns for d in dirs} == stamps


def test_local_gpus_gives_concurrent_runs_distinct_gpu_sets(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", *CARTPOLE, "seed=0,1,2,3", "steps=300", *FAST_RUN, f"logdir={logdir}",
                     "launcher=local_gpus", "hydra.launcher.gpus=[0,1,2,3]", "hardware.gpus_per_run=2", cwd=workdir)
    assert result.returncode == 0, result.stderr
    runs = summaries(the_sweep(logdir))
    assert len(runs) == 4
    assert sorted(r["cuda_visible_devices"] for r in runs) == ["0,1", "0,1", "2,3", "2,3"]
    for a in runs:
        for b in runs:
            overlap = a["started_at"] < b["finished_at"] and b["started_at"] < a["finished_at"]
            if a is not b and overlap:
                assert a["cuda_visible_devices"] != b["cuda_visible_devices"], "two runs on one GPU set at once"
    assert any(a is not b and a["started_at"] < b["finished_at"] and b["started_at"] < a["finished_at"]
               for a in runs for b in runs), "two slots: runs overlap"
    if len(os.sched_getaffinity(0)) >= 2:  # pinned to a core each
        assert {tuple(r["cpus"]) for r in runs if r["cuda_visible_devices"] == "0,1"} != {
            tuple(r["cpus"]) for r in runs if r["cuda_visible_devices"] == "2,3"}


def test_slots_share_each_gpu_runs_per_gpu_times():
    from rlconf.launch import make_slots

    slots = make_slots(list(range(8)), gpus_per_run=1, runs_per_gpu=2, cpus_per_run=1, parallel=None, cpus=[0])
    assert len(slots) == 16, "an 8-GPU machine with runs_per_gpu=2 runs 16 at a time"
    assert sorted(s.gpus for s in slots) == sorted([(g,) for g in range(8)] * 2)
    assert [s.gpus for s in slots[:8]] == [(g,) for g in range(8)], "every GPU gets a run before any gets two"
    assert all(s.cpus is None for s in slots), "16 runs do not fit on one core each: not pinned"
    pairs = make_slots([0, 1, 2, 3], gpus_per_run=2, runs_per_gpu=1, cpus_per_run=2, parallel=None,
                       cpus=list(range(8)))
    assert [(s.gpus, s.cpus) for s in pairs] == [((0, 1), (0, 1)), ((2, 3), (2, 3))]
    assert pairs[1].environment() == {"CUDA_VISIBLE_DEVICES": "2,3"}
    assert [s.gpus for s in make_slots(None, 0, 1, 1, parallel=1)] == [None]


def test_a_sweep_whose_run_was_killed_resumes_it_when_launched_again(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    args = ["-m", *CARTPOLE, "seed=3", "steps=8000", "checkpoint_every=1000", *FAST_RUN, f"logdir={logdir}"]
    launcher = subprocess.Popen([sys.executable, "-m", "rlconf", "run", *args], cwd=workdir, env=cli_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    def past_2000() -> Path | None:
        status_files = list(logdir.glob("sweep_*/*/status.json"))
        if status_files and json.loads(status_files[0].read_text() or "{}").get("steps", 0) >= 2000:
            return status_files[0].parent
        return None

    # The event, however long a loaded machine takes to reach it (the timeout is only a safety net).
    run_dir = wait_while_running(launcher, past_2000, "a run past step 2,000", timeout=900)
    sweep = run_dir.parent
    assert "1 running" in run_cli("status", str(sweep), cwd=workdir).stdout
    os.kill(json.loads((run_dir / "status.json").read_text())["pid"], signal.SIGKILL)
    _, stderr = launcher.communicate(timeout=600)  # the launcher reports the killed run and ends: seconds
    assert launcher.returncode != 0 and str(run_dir) in stderr and "SIGKILL" in stderr

    status = run_cli("status", str(sweep), cwd=workdir)
    assert "1 failed" in status.stdout and "log:" in status.stdout

    again = run_cli("run", "-m", f"resume={sweep}", "quiet=false", cwd=workdir)
    assert again.returncode == 0, again.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 8000 and summary["resumes"] == 1
    with open(run_dir / "episodes.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [int(r["episode"]) for r in rows] == list(range(1, summary["episodes"] + 1))
    assert "resuming" in (run_dir / "log.txt").read_text()
    assert "1 run, 1 done" in run_cli("status", str(sweep), cwd=workdir).stdout


def test_a_named_sweep_sets_the_grid(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", *CARTPOLE, "sweep=seeds", "hydra.sweeper.params.seed='range(2)'", "steps=300",
                     *FAST_RUN, f"logdir={logdir}", "launcher=basic", cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert sorted(s["seed"] for s in summaries(the_sweep(logdir))) == [0, 1]
    listed = run_cli("list", "sweep", cwd=workdir)
    assert "seeds" in listed.stdout and "optuna_dqn" in listed.stdout


def load_study(sweep: Path):
    """The study an Optuna sweep keeps in its sweep directory."""
    import optuna

    from rlconf.tuning.study import storage

    return optuna.load_study(study_name="rlconf", storage=storage(sweep / "optuna.journal"))


def trials_in(study, state: str) -> list:
    import optuna

    return [t for t in study.trials if t.state == optuna.trial.TrialState[state]]


def test_optuna_sweep_keeps_its_study_in_the_sweep_directory_and_continues_it(run_cli, workdir, tmp_path):
    pytest.importorskip("optuna", reason="needs the optuna extra: pip install 'rlconf[optuna]'")
    logdir = tmp_path / "runs"
    common = [*CARTPOLE, "sweep=optuna_dqn", "steps=300", "eval_every=150", "eval_episodes=2", "test_episodes=2",
              "quiet=true", f"logdir={logdir}", "launcher=basic", "hydra.sweeper.n_jobs=1"]
    first = run_cli("run", "-m", *common, "hydra.sweeper.n_trials=2", cwd=workdir)
    assert first.returncode == 0, first.stderr
    sweep = the_sweep(logdir)
    assert (sweep / "optuna.journal").exists() and (sweep / "optimization_results.yaml").exists()
    table = sweep_table(sweep)
    assert len(table) == 2 and {"agent.lr", "agent.batch_size", "state", "test_return_mean"} <= set(table[0])
    assert not any(column.startswith("trial") for column in table[0]), "which trial a run is: not a result"
    assert len(trials_in(load_study(sweep), "COMPLETE")) == 2

    more = run_cli("run", "-m", f"resume={sweep}", "hydra.sweeper.n_trials=3", cwd=workdir)
    assert more.returncode == 0, more.stderr
    study = load_study(sweep)
    complete = trials_in(study, "COMPLETE")
    assert len(complete) == 3 == len(study.trials), "the study continued to n_trials, it did not start over"
    rows = {row["run"]: row for row in sweep_table(sweep)}
    assert len(rows) == 3 and {row["state"] for row in rows.values()} == {"done"}
    for trial in complete:  # the objective is the run's final test return; each evaluation was reported
        row = rows[trial.user_attrs["run"]]
        assert trial.value == float(row["test_return_mean"])
        assert float(row["agent.lr"]) == trial.params["agent.lr"]
        assert sorted(trial.intermediate_values) == [150, 300]
        with open(sweep / row["run"] / "evaluations.csv", newline="") as file:
            evaluations = list(csv.DictReader(file))
        assert trial.intermediate_values[150] == pytest.approx(float(evaluations[0]["mean"]))

    # A sweep directory of hydra-optuna-sweeper's time (its study in optuna.db) is not silently started over.
    (sweep / "optuna.journal").rename(sweep / "optuna.db")
    line = one_error_line(run_cli("run", "-m", f"resume={sweep}", "hydra.sweeper.n_trials=4", cwd=workdir))
    assert "its study is optuna.db" in line and "start a new sweep" in line
    assert not (sweep / "optuna.journal").exists() and len(sweep_table(sweep)) == 3


PRUNING_SWEEP = """# @package _global_
# a hopeless arm: CartPole with Sutton and Barto's reward (0 a step, -1 when the pole falls) returns at most 0
defaults:
  - override /hydra/sweeper: rlconf_optuna
hydra:
  sweeper:
    n_trials: 3
    n_jobs: 1
    pruner: median
    pruner_args: {n_startup_trials: 1, n_warmup_steps: 0}
    params:
      +env.kwargs.sutton_barto_reward: choice(false, true)
    enqueue:   # the good arm first, so that the median pruner has a finished trial to judge the hopeless one by
      - {env.kwargs.sutton_barto_reward: false}
      - {env.kwargs.sutton_barto_reward: true}
"""


def test_optuna_pruner_stops_a_hopeless_trial_after_its_first_evaluation(run_cli, workdir, tmp_path):
    pytest.importorskip("optuna", reason="needs the optuna extra: pip install 'rlconf[optuna]'")
    configs = tmp_path / "configs"
    (configs / "sweep").mkdir(parents=True)
    (configs / "sweep" / "prune_cartpole.yaml").write_text(PRUNING_SWEEP)
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", *CARTPOLE, "sweep=prune_cartpole", "steps=600", "eval_every=200",
                     "eval_episodes=2", "test_episodes=2", "quiet=true", f"logdir={logdir}", "launcher=local",
                     "--config-dir", str(configs), cwd=workdir)
    assert result.returncode == 0, result.stderr
    sweep = the_sweep(logdir)
    study = load_study(sweep)
    pruned = trials_in(study, "PRUNED")
    assert pruned and pruned[0].number == 1 and pruned[0].params == {"env.kwargs.sutton_barto_reward": True}
    assert sorted(pruned[0].intermediate_values) == [200] and pruned[0].value == pruned[0].intermediate_values[200]
    assert trials_in(study, "COMPLETE")[0].number == 0

    run_dir = sweep / pruned[0].user_attrs["run"]
    assert json.loads((run_dir / "status.json").read_text())["state"] == "pruned"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["state"] == "pruned" and summary["pruned_at_step"] == 200 and summary["test_episodes"] == 0
    with open(run_dir / "evaluations.csv", newline="") as file:
        evaluations = list(csv.DictReader(file))
    assert [int(row["step"]) for row in evaluations] == [200], "stopped at its first evaluation, of a 600 budget"
    rows = {row["run"]: row for row in sweep_table(sweep)}
    assert rows[run_dir.name]["state"] == "pruned" and rows[run_dir.name]["pruned_at_step"] == "200"
    status = run_cli("status", str(sweep), cwd=workdir)
    assert "1 pruned" in status.stdout and "pruned after the evaluation at step 200" in status.stdout

    # Launched again: the study has its 3 trials, so nothing runs, and the pruned run stays pruned.
    again = run_cli("run", "-m", f"resume={sweep}", "--config-dir", str(configs), cwd=workdir)
    assert again.returncode == 0, again.stderr
    assert len(load_study(sweep).trials) == 3 and json.loads((run_dir / "summary.json").read_text()) == summary


def test_an_optuna_trial_is_never_pruned_at_its_last_evaluation_and_the_sweep_closes_once(run_cli, workdir,
                                                                                        tmp_path):
    """The hopeless arm of PRUNING_SWEEP, evaluated once at the end of its 200-step budget: the median pruner
    would stop it there, but it has spent its budget, so it is tested and its trial completes. Two batches of
    one trial (launcher=basic): one opening line, one line of counts after the first batch, one closing table and
    one closing line."""
    pytest.importorskip("optuna", reason="needs the optuna extra: pip install 'rlconf[optuna]'")
    configs = tmp_path / "configs"
    (configs / "sweep").mkdir(parents=True)
    (configs / "sweep" / "prune_cartpole.yaml").write_text(PRUNING_SWEEP.replace("n_trials: 3", "n_trials: 2"))
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", *CARTPOLE, "sweep=prune_cartpole", "steps=200", "eval_every=200",
                     "eval_episodes=2", "test_episodes=2", f"logdir={logdir}", "launcher=basic",
                     "--config-dir", str(configs), cwd=workdir)
    assert result.returncode == 0, result.stderr
    sweep = the_sweep(logdir)
    study = load_study(sweep)
    hopeless = study.trials[1]
    assert hopeless.params == {"env.kwargs.sutton_barto_reward": True} and not trials_in(study, "PRUNED")
    assert hopeless.state.name == "COMPLETE" and sorted(hopeless.intermediate_values) == [200]
    summary = json.loads((sweep / hopeless.user_attrs["run"] / "summary.json").read_text())
    assert summary["state"] == "done" and hopeless.value == summary["test_return_mean"]

    lines = result.stderr.splitlines()
    openings = [line for line in lines if line.startswith(f"rlconf: sweep {sweep}: ") and "shows them too" in line]
    assert len(openings) == 1, lines  # the second batch does not open the sweep again
    tables = [line for line in lines if line.startswith(f"rlconf: sweep {sweep}: ") and " runs in " in line]
    assert len(tables) == 1 and tables[0].split(": ")[2].startswith("2 runs in "), lines
    assert sum(line.startswith("rlconf: study: ") for line in lines) == 1, lines  # after the first batch
    closing = [line for line in lines if line.startswith(f"rlconf: study {sweep / 'optuna.journal'}: ")]
    assert len(closing) == 1 and closing[0].endswith(f"results: {sweep / 'optimization_results.yaml'}"), lines
    assert lines.index(tables[0]) < lines.index(closing[0]) == len(lines) - 1


def test_an_interrupted_optuna_sweep_asks_its_running_trial_again_and_finishes_the_study(run_cli, workdir,
                                                                                       tmp_path):
    pytest.importorskip("optuna", reason="needs the optuna extra: pip install 'rlconf[optuna]'")
    logdir = tmp_path / "runs"
    # The batch size fixed (given beside the sweep, it leaves its search space): every trial as fast.
    args = ["-m", *CARTPOLE, "sweep=optuna_dqn", "agent.batch_size=32", "steps=2000",
            "checkpoint_every=500", "eval_every=1000", "eval_episodes=2", "test_episodes=2", "quiet=true",
            f"logdir={logdir}", "launcher=local", "hydra.sweeper.n_trials=3", "hydra.sweeper.n_jobs=1",
            "hydra.sweeper.pruner=null"]
    launcher = subprocess.Popen([sys.executable, "-m", "rlconf", "run", *args], cwd=workdir, env=cli_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def second_trial_past_1000() -> Path | None:
        """The run of the second trial once it has a checkpoint past step 1,000 (the first has finished)."""
        if len(list(logdir.glob("sweep_*/*/summary.json"))) != 1:
            return None
        for status_file in logdir.glob("sweep_*/*/status.json"):
            status = json.loads(status_file.read_text() or "{}")
            if status.get("state") == "running" and status.get("steps", 0) >= 1000:
                return status_file.parent
        return None

    run_dir = wait_while_running(launcher, second_trial_past_1000, "the second trial past step 1,000", timeout=900)
    launcher.send_signal(signal.SIGINT)  # Ctrl-C: the launcher stops its run at a checkpoint, and ends
    launcher.communicate(timeout=600)
    assert launcher.returncode != 0
    sweep = run_dir.parent
    study = load_study(sweep)
    assert len(trials_in(study, "COMPLETE")) == 1 and [t.number for t in trials_in(study, "RUNNING")] == [1]
    params = trials_in(study, "RUNNING")[0].params

    again = run_cli("run", "-m", f"resume={sweep}", cwd=workdir)
    assert again.returncode == 0, again.stderr
    study = load_study(sweep)
    assert [(t.number, t.state.name) for t in study.trials] == [(0, "COMPLETE"), (1, "COMPLETE"), (2, "COMPLETE")]
    assert study.trials[1].params == params and study.trials[1].user_attrs["run"] == run_dir.name, \
        "asked again with its values: the same run directory"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 2000 and summary["resumes"] == 1, "the interrupted run resumed from its checkpoint"
    assert len({t.user_attrs["run"] for t in study.trials}) == 3 == len(sweep_table(sweep)), "no trial ran twice"


def test_an_optuna_sweep_without_optuna_says_so_in_one_line(workdir, tmp_path):
    """Where optuna cannot be imported (here: a package of that name that fails to import, put first on the
    path), the sweep is refused before anything runs."""
    shadow = tmp_path / "shadow" / "optuna"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'optuna'\", name='optuna')\n")
    result = run_cli_in("run", "-m", *CARTPOLE, "sweep=optuna_dqn", f"logdir={tmp_path / 'logs'}", cwd=workdir,
                        pythonpath=[tmp_path / "shadow"])
    line = one_error_line(result)
    assert "sweep=optuna_dqn" in line and "pip install 'rlconf[optuna]'" in line
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize(("args", "words"), [
    (["-m", *CARTPOLE, "launcher=nosuch"], ["launcher", "'nosuch'", "local_gpus", "slurm"]),
    (["-m", *CARTPOLE, "hardware.nosuch=1"], ["hardware.nosuch", "hardware.device", "--cfg job"]),
    (["-m", *CARTPOLE, "hardware.runs_per_gpu=0"], ["hardware.runs_per_gpu=0"]),
    (["-m", *CARTPOLE, "hardware=cpu", "launcher=local_gpus", "hydra.launcher.gpus=[0,1]"],
     ["hardware.gpus_per_run=0", "local_gpus"]),
    (["-m", *CARTPOLE, "launcher=local_gpus", "hardware.gpus_per_run=1", "hydra.launcher.gpus=[a]"],
     ["hydra.launcher.gpus"]),
    (["-m", *CARTPOLE, "launcher=slurm", "hydra.launcher.time=abc"], ["hydra.launcher.time=abc", "Integer"]),
    (["-m", *CARTPOLE, "launcher=slurm", "hydra.launcher.time=0"], ["hydra.launcher.time=0"]),
    (["-m", *CARTPOLE, "launcher=slurm", "hydra.launcher.nosuch=1"], ["hydra.launcher.nosuch", "partition"]),
    (["-m", *CARTPOLE, "launcher=slurm", "hydra.launcher.sbatch=[exclusive]"], ["sbatch", "--exclusive"]),
    ([*CARTPOLE, "sweep=seeds"], ["sweep=seeds", "-m"]),
    (["-m", *CARTPOLE, "sweep=nosuch"], ["sweep", "'nosuch'", "seeds"]),
    (["-m", *CARTPOLE, "sweep=seeds", "hydra.sweeper.params.seed=range(2)"], ["cannot be swept", "'range(2)'"]),
])
def test_bad_launcher_input_is_one_line_and_writes_nothing(run_cli, workdir, tmp_path, args, words):
    assert_run_refused(run_cli, args, words, workdir, tmp_path / "logs")


def test_local_gpus_without_gpus_says_so(workdir, tmp_path):
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine may have GPUs (it has nvidia-smi)")
    env = {k: v for k, v in cli_env().items() if k != "CUDA_VISIBLE_DEVICES"}
    result = subprocess.run([sys.executable, "-m", "rlconf", "run", "-m", *CARTPOLE, "hardware=gpus",
                             "launcher=local_gpus", f"logdir={tmp_path / 'logs'}"], cwd=workdir, env=env,
                            capture_output=True, text=True, timeout=600)  # a safety net
    line = one_error_line(result)
    assert "no GPU is visible" in line and "hydra.launcher.gpus" in line
    assert not (tmp_path / "logs").exists()


def test_status_of_something_else_is_one_line(run_cli, workdir, tmp_path):
    assert "no such directory" in one_error_line(run_cli("status", str(tmp_path / "nope"), cwd=workdir))
    assert "not a sweep directory" in one_error_line(run_cli("status", str(workdir), cwd=workdir))
    assert "usage" in one_error_line(run_cli("status", cwd=workdir))


def test_status_of_a_folder_of_sweeps_and_single_runs_counts_and_shows_them_all(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    bandit = ["env=bandit/bernoulli", "steps=300", "env.kwargs.arms=3", "test_episodes=10", "quiet=true",
              f"logdir={logdir}"]
    for sweep in (["agent=thompson,ucb", "seed=0"], ["agent=epsilon_greedy", "seed=0,1,2"]):
        result = run_cli("run", "-m", *sweep, *bandit, cwd=workdir)
        assert result.returncode == 0, result.stderr
    result = run_cli("run", "agent=ucb", "seed=5", *bandit, cwd=workdir)
    assert result.returncode == 0, result.stderr
    sweeps = sorted(logdir.glob("sweep_*"))
    assert len(sweeps) == 2 and len(run_dirs(logdir)) == 1

    lines = run_cli("status", str(logdir), cwd=workdir).stdout.splitlines()
    assert lines[0] == f"{logdir}: 6 runs, 6 done"
    assert lines[1].split() == [sweeps[0].name, "2", "runs,", "2", "done"]
    assert lines[2].split() == [sweeps[1].name, "3", "runs,", "3", "done"]
    assert lines[3].split() == ["single", "runs", "1", "run,", "1", "done"]
    table = [line.split()[0] for line in lines[5:]]  # in the order of the counts above
    assert table == sorted(f"{sweep.name}/{d.name}" for sweep in sweeps for d in run_dirs(sweep)) + \
        [run_dirs(logdir)[0].name]
    # one sweep alone reads as before
    assert run_cli("status", str(sweeps[1]), cwd=workdir).stdout.splitlines()[0] == f"{sweeps[1]}: 3 runs, 3 done"

    # A bandit sweep's table holds each run's regret and best-arm rates (summary.json's)
    rows = sweep_table(sweeps[1])
    columns = list(rows[0])
    assert columns[columns.index("steps"):][:4] == ["steps", "episodes", "cumulative_regret", "cumulative_regret_std"]
    by_run = {row["run"]: row for row in rows}
    for summary in summaries(sweeps[1]):
        row = by_run[Path(summary["run_dir"]).name]
        for column in ("cumulative_regret", "regret_per_pull", "optimal_arm_rate", "final_optimal_arm_rate"):
            assert float(row[column]) == summary[column], column
