"""Sweeps on a real Slurm cluster: a job array through submitit, a site's cluster profile, a job signalled
as Slurm does before a time limit (and at one), which checkpoints, requeues itself and finishes in the same
run directory, and a job a person cancels, which stays cancelled until the sweep is launched again.

They need a cluster this machine can submit to: CI starts a single-node one (.ci/slurm-up, as root); without
one every test here is skipped, saying so.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import FAST_RUN, run_dirs

pytestmark = pytest.mark.slurm

CARTPOLE = ["agent=dqn", "env=classic/cartpole"]


def cluster_problem() -> str | None:
    """Why no job can be submitted here, or None when a cluster answers with a usable node."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "sinfo/sbatch not installed"
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return f"sinfo failed: {error}"
    if out.returncode != 0:
        return f"sinfo failed: {out.stderr.strip()}"
    if not {s.rstrip("*~#$@") for s in out.stdout.split()} & {"idle", "mixed", "allocated", "completing"}:
        return f"no usable node (sinfo: {' '.join(out.stdout.split()) or 'none'})"
    pytest.importorskip("submitit", reason="needs the slurm extra: pip install 'rlconf[slurm]'")
    return None


@pytest.fixture(scope="module")
def cluster() -> None:
    problem = cluster_problem()
    if problem:
        pytest.skip(f"no Slurm cluster reachable ({problem}); start one with: sudo bash .ci/slurm-up")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site's own cluster profile, in a config folder of its own, built on launcher=slurm."""
    folder = tmp_path / "site"
    (folder / "launcher").mkdir(parents=True)
    (folder / "launcher" / "ci.yaml").write_text(
        "# @package _global_\n# the CI machine's single-node cluster\ndefaults:\n  - slurm\n"
        "hydra:\n  launcher:\n    partition: debug\n    time: 10\n    poll_seconds: 1\n"
        "    sbatch: [\"--comment=rlconf-ci\"]\n")
    return folder


def job_dirs(sweep: Path) -> list[Path]:
    """The run directories a launcher has queued jobs for (a run's own files come when it starts)."""
    return sorted(p.parent for p in sweep.glob("*/job.json"))


def sweep_of(logdir: Path) -> Path:
    (sweep,) = logdir.glob("sweep_*")
    return sweep


def wait_for(predicate, timeout: float, what: str, poll: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(poll)


def status_of(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def check_complete(run_dir: Path, steps: int) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == steps
    with open(run_dir / "episodes.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [int(r["episode"]) for r in rows] == list(range(1, summary["episodes"] + 1)), "no gap, no repeat"
    assert [int(r["step"]) for r in rows] == sorted(int(r["step"]) for r in rows)
    return summary


def test_a_2x2_sweep_is_one_job_array_through_a_site_profile(cluster, site, run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", "agent=dqn,ddqn", "env=classic/cartpole", "seed=0,1", "steps=400", *FAST_RUN,
                     f"logdir={logdir}", "launcher=ci", "--config-dir", str(site), cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "Slurm job array" in result.stderr
    sweep = sweep_of(logdir)
    dirs = run_dirs(sweep)
    assert len(dirs) == 4 and all((d / "summary.json").exists() for d in dirs)
    jobs = [json.loads((d / "job.json").read_text())["slurm_job_id"] for d in dirs]
    assert len({j.split("_")[0] for j in jobs}) == 1 and len(set(jobs)) == 4, "one array, a task per run"
    summaries = [json.loads((d / "summary.json").read_text()) for d in dirs]
    assert sorted((s["agent"], s["seed"]) for s in summaries) == [("ddqn", 0), ("ddqn", 1), ("dqn", 0), ("dqn", 1)]
    assert all(s["slurm_job_id"] in jobs for s in summaries), "each ran in its own array task"
    script = next((sweep / ".slurm").glob("*submission.sh")).read_text()
    assert "--partition=debug" in script and "--comment=rlconf-ci" in script and "--signal=USR2@" in script
    with open(sweep / "sweep.csv", newline="") as file:
        assert len(list(csv.DictReader(file))) == 4
    status = run_cli("status", str(sweep), cwd=workdir)
    assert "4 runs, 4 done" in status.stdout and "slurm" in status.stdout


def test_an_optuna_sweep_shares_its_study_among_parallel_slurm_jobs(cluster, site, run_cli, workdir, tmp_path):
    """Two trials at once, each a task of one job array: both runs report their evaluations to the one study
    in the sweep directory (its journal file, locked across processes), and the sweeper tells it their results."""
    optuna = pytest.importorskip("optuna", reason="needs the optuna extra: pip install 'rlconf[optuna]'")
    from rlconf.tuning.study import storage

    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", *CARTPOLE, "sweep=optuna_dqn", "agent.update_frequency=16", "steps=400",
                     "eval_every=200", "eval_episodes=2", "test_episodes=2", "quiet=true", f"logdir={logdir}",
                     "hydra.sweeper.n_trials=2", "hydra.sweeper.n_jobs=2", "launcher=ci", "--config-dir", str(site),
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    sweep = sweep_of(logdir)
    study = optuna.load_study(study_name="rlconf", storage=storage(sweep / "optuna.journal"))
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]
    jobs = set()
    for trial in study.trials:
        run_dir = sweep / trial.user_attrs["run"]
        summary = json.loads((run_dir / "summary.json").read_text())
        assert trial.value == summary["test_return_mean"]
        assert sorted(trial.intermediate_values) == [200, 400], "reported from the Slurm job"
        jobs.add(summary["slurm_job_id"])
    assert len(jobs) == 2 and len({j.split("_")[0] for j in jobs}) == 1, "one array, a task per trial"
    assert "2 runs, 2 done" in run_cli("status", str(sweep), cwd=workdir).stdout


def signalled_after_checkpoint(run_cli, site: Path, workdir: Path, logdir: Path, args: list[str], steps: int,
                               checkpoint_every: int) -> tuple[Path, Path, str]:
    """A one-run sweep submitted to Slurm without waiting, sent SIGUSR1 once it has trained past its first
    checkpoint, and seen requeuing itself: (sweep directory, run directory, job id)."""
    result = run_cli("run", "-m", *args, f"steps={steps}", f"checkpoint_every={checkpoint_every}", *FAST_RUN,
                     f"logdir={logdir}", "launcher=ci", "--config-dir", str(site), "hydra.launcher.wait=false",
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    sweep = sweep_of(logdir)
    (run_dir,) = job_dirs(sweep)
    job = json.loads((run_dir / "job.json").read_text())["slurm_job_id"]
    wait_for(lambda: status_of(run_dir).get("steps", 0) >= checkpoint_every, 180, "the run to train")
    # What Slurm sends ahead of a time limit (sbatch --signal) or on preemption notice.
    subprocess.run(["scancel", "--signal=USR1", job], check=True)
    requeued = wait_for(lambda: status_of(run_dir) if status_of(run_dir).get("state") == "requeued" else None,
                        120, "the run to requeue itself")
    assert requeued["signal"] == "SIGUSR1" and requeued["steps"] < steps
    return sweep, run_dir, job


def test_a_signalled_job_checkpoints_requeues_and_finishes_in_place(cluster, site, run_cli, workdir, tmp_path):
    steps = 8000  # several seconds past the first checkpoint (2,000) on a fast machine: the signal comes first
    sweep, run_dir, job = signalled_after_checkpoint(run_cli, site, workdir, tmp_path / "runs",
                                                     [*CARTPOLE, "seed=5"], steps, 2000)
    shown = run_cli("status", str(sweep), cwd=workdir).stdout
    assert ("queued" in shown and "requeued" in shown) or "running" in shown, shown
    wait_for(lambda: (run_dir / "summary.json").exists(), 240, "the requeued job to finish")
    summary = check_complete(run_dir, steps)
    assert summary["resumes"] == 1 and summary["slurm_job_id"] == job, "the same job, in the same directory"
    log = Path(json.loads((run_dir / "job.json").read_text())["log"]).read_text()
    assert "requeued Slurm job" in log
    assert "1 run, 1 done" in run_cli("status", str(sweep), cwd=workdir).stdout


def test_a_cancelled_job_stays_cancelled_and_resumes_when_the_sweep_is_launched_again(
        cluster, site, run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    steps = 8000
    common = ["-m", *CARTPOLE, "seed=6", f"steps={steps}", "checkpoint_every=2000", *FAST_RUN, f"logdir={logdir}",
              "launcher=ci", "--config-dir", str(site)]
    assert run_cli("run", *common, "hydra.launcher.wait=false", cwd=workdir).returncode == 0
    sweep = sweep_of(logdir)
    (run_dir,) = job_dirs(sweep)
    job = json.loads((run_dir / "job.json").read_text())["slurm_job_id"]
    wait_for(lambda: status_of(run_dir).get("steps", 0) >= 2000, 120, "the run to train")
    subprocess.run(["scancel", job], check=True)  # a person's cancel: SIGTERM, with no reason from Slurm
    stopped = wait_for(lambda: status_of(run_dir) if status_of(run_dir).get("state") == "stopped" else None,
                       60, "the run to stop")
    assert stopped["signal"] == "SIGTERM"
    time.sleep(3)
    queue = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True).stdout
    assert "PENDING" not in queue and "RUNNING" not in queue, "not requeued"
    assert "stopped" in run_cli("status", str(sweep), cwd=workdir).stdout

    again = run_cli("run", f"resume={sweep}", *common[:1], "hydra.launcher.wait=true", "--config-dir", str(site),
                    cwd=workdir)
    assert again.returncode == 0, again.stderr
    summary = check_complete(run_dir, steps)
    assert summary["resumes"] == 1


# A callback that holds a run's first attempt to at most 20 steps a second (one copy of the environment): the sleep,
# not DQN's few milliseconds a step, sets how long the attempt trains, on a fast machine or a busy one, and leaves
# the cores to the other tests. A resumed attempt runs at full speed.
THROTTLE = """import time

import rlconf


class Throttle(rlconf.Callback):
    def on_batch(self, run):
        if run.resumes == 0:
            time.sleep(0.05)
"""


@pytest.mark.slow
def test_a_job_at_its_time_limit_requeues_and_finishes(cluster, site, run_cli, workdir, tmp_path):
    """A one-minute time limit and a budget the first attempt cannot train in a minute (held to 20 steps/s,
    1,500 steps take 75 s): Slurm's warning (at its first check 20 s before the limit: slurmctld looks every 30 s)
    or the limit itself stops it, it checkpoints and requeues, and the next attempt finishes the budget."""
    (workdir / "throttle.py").write_text(THROTTLE)
    logdir = tmp_path / "runs"
    steps = 1500
    result = run_cli("run", "-m", *CARTPOLE, f"steps={steps}", "checkpoint_every=500", "hardware.n_envs=1",
                     "plugins=[throttle]", "callbacks=[throttle.Throttle]", *FAST_RUN, f"logdir={logdir}",
                     "launcher=ci", "--config-dir", str(site), "hydra.launcher.time=1",
                     "hydra.launcher.signal_delay_s=20", "hydra.launcher.poll_seconds=2", cwd=workdir, timeout=1200)
    assert result.returncode == 0, result.stderr
    (run_dir,) = job_dirs(sweep_of(logdir))
    summary = check_complete(run_dir, steps)
    assert summary["resumes"] == 1, "the first attempt stopped by the limit, the second finished"
    log = Path(json.loads((run_dir / "job.json").read_text())["log"]).read_text()
    assert log.count("requeued Slurm job") == summary["resumes"], "every attempt but the last requeued itself"


def test_a_run_of_two_learners_is_one_job_whose_two_tasks_form_one_process_group(cluster, site, run_cli, workdir,
                                                                                  tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "-m", "agent=ppo", "env=classic/cartpole", "hardware.learners=2", "steps=4096",
                     "checkpoint_every=1024", *FAST_RUN, f"logdir={logdir}", "launcher=ci", "--config-dir", str(site),
                     cwd=workdir)
    assert result.returncode == 0, result.stderr
    sweep = sweep_of(logdir)
    (run_dir,) = run_dirs(sweep)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] >= 4096 and summary["hardware"]["learners"] == 2
    script = next((sweep / ".slurm").glob("*submission.sh")).read_text()
    assert "--ntasks-per-node=2" in script and "--nodes=1" in script
    job = json.loads((run_dir / "job.json").read_text())["slurm_job_id"]
    logs = sorted(p.name for p in (sweep / ".slurm").glob(f"{job}_*_log.err"))
    assert logs == [f"{job}_0_log.err", f"{job}_1_log.err"], "a task (and a log) per learner"
    # The checkpoint holds the second task's agent: gathered by the first through their process group.
    import torch

    saved = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert len(saved["learners"]) == 1
    with open(run_dir / "episodes.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [int(r["episode"]) for r in rows] == list(range(1, summary["episodes"] + 1))


def test_a_signalled_job_of_two_learners_checkpoints_both_requeues_and_finishes_in_place(cluster, site, run_cli,
                                                                                       workdir, tmp_path):
    """Preemption of a data-parallel run: both tasks get the signal, the learners stop together at a step they
    agree on, one checkpoint holds both, the job requeues itself and its two tasks resume where they stopped."""
    steps = 8192
    _, run_dir, job = signalled_after_checkpoint(run_cli, site, workdir, tmp_path / "runs",
                                                 ["agent=ppo", "env=classic/cartpole", "hardware.learners=2"], steps,
                                                 2048)
    wait_for(lambda: (run_dir / "summary.json").exists(), 300, "the requeued job to finish")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] >= steps and summary["resumes"] == 1 and summary["slurm_job_id"] == job
    assert summary["hardware"]["learners"] == 2
    with open(run_dir / "episodes.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [int(r["episode"]) for r in rows] == list(range(1, summary["episodes"] + 1)), "no gap, no repeat"
    import torch

    assert len(torch.load(run_dir / "checkpoint.pt", weights_only=True)["learners"]) == 1
