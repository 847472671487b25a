"""Provenance: what made a run is recorded in its directory, and ``rerun=DIR`` repeats a run from that record."""

from __future__ import annotations

import json
import subprocess
from importlib import metadata
from pathlib import Path

import pytest
from conftest import FAST_RUN, assert_run_refused, only_run_dir

import rlconf

SEEDED = ["agent=dqn", "env=classic/cartpole", "steps=3000", "seed=3", "test_episodes=5", "eval_every=1000",
          "quiet=true"]
# What differs between two runs of the same config: when and where they ran, and how fast.
NOT_LEARNED = ("wall_seconds", "steps_per_second", "eval_seconds", "test_seconds", "run_dir", "started_at",
               "finished_at")


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def project(workdir: Path) -> Path:
    """The working directory as a user's git repository, with a committed file changed since."""
    git(workdir, "init", "-q")
    git(workdir, "config", "user.email", "researcher@example.org")
    git(workdir, "config", "user.name", "Researcher")
    (workdir / "notes.md").write_text("plan\n")
    git(workdir, "add", "notes.md")
    git(workdir, "commit", "-q", "-m", "start")
    (workdir / "notes.md").write_text("plan\nchanged before the run\n")
    (workdir / "scratch.py").write_text("# not tracked\n")
    (workdir / ".gitignore").write_text("runs/\n")
    return workdir


def test_a_run_records_its_code_packages_and_command(run_cli, project, tmp_path):
    result = run_cli("run", *SEEDED, "logdir=runs", cwd=project)
    assert result.returncode == 0, result.stderr
    run_dir = only_run_dir(project / "runs")
    record = json.loads((run_dir / "provenance.json").read_text())
    assert record["rlconf"] == rlconf.__version__
    assert record["command"] == "rlconf run " + " ".join([*SEEDED, "logdir=runs"])
    assert record["overrides"] == [*SEEDED, "logdir=runs"]
    for package in ("torch", "gymnasium", "hydra-core", "omegaconf", "numpy"):
        assert record["packages"][package] == metadata.version(package)
    assert record["device"] == "cpu" and record["host"] and record["python"]
    from rlconf.nn.gemm import cpu_capability, onednn_pays_on

    # hardware.cpu_linear=auto, and what it came to on this CPU
    kernels = "oneDNN's" if onednn_pays_on(cpu_capability()) else "torch's"
    assert record["cpu_linear"].startswith(kernels) and "hardware.cpu_linear=auto" in record["cpu_linear"]
    work = record["code"]["workdir"]
    assert work["commit"] == git(project, "rev-parse", "HEAD").strip()
    assert work["dirty"] and work["untracked_files"] == 2  # scratch.py and .gitignore
    patch = (run_dir / work["patch"]).read_text()
    assert "+changed before the run" in patch
    # The patch is the uncommitted change itself: applied to the commit, it gives the tree that ran.
    git(project, "stash", "-q")
    git(project, "apply", str(run_dir / work["patch"]))
    assert (project / "notes.md").read_text() == "plan\nchanged before the run\n"


def test_a_resumed_run_adds_its_attempt_to_the_record(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    assert run_cli("run", *SEEDED, f"logdir={logdir}", cwd=workdir).returncode == 0
    run_dir = only_run_dir(logdir)
    first = json.loads((run_dir / "provenance.json").read_text())
    result = run_cli("run", f"resume={run_dir}", "steps=4000", cwd=workdir)
    assert result.returncode == 0, result.stderr
    record = json.loads((run_dir / "provenance.json").read_text())
    assert {k: v for k, v in record.items() if k != "resumes"} == first, "the first attempt's record is kept"
    (again,) = record["resumes"]
    assert again["command"] == f"rlconf run resume={run_dir} steps=4000"


def learned(run_dir: Path) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    return {key: value for key, value in summary.items() if key not in NOT_LEARNED}


def test_rerun_repeats_a_seeded_run_exactly_in_a_new_directory(run_cli, workdir, tmp_path):
    first_logdir, second_logdir = tmp_path / "first", tmp_path / "second"
    assert run_cli("run", *SEEDED, f"logdir={first_logdir}", cwd=workdir).returncode == 0
    original = only_run_dir(first_logdir)
    result = run_cli("run", f"rerun={original}", f"logdir={second_logdir}", "quiet=true", cwd=workdir)
    assert result.returncode == 0, result.stderr
    repeated = only_run_dir(second_logdir)
    assert learned(repeated) == learned(original)
    for csv in ("episodes.csv", "evaluations.csv"):  # the same episodes and evaluations, row for row
        strip = [",".join(line.split(",")[:-1]) for line in (original / csv).read_text().splitlines()]
        assert [",".join(line.split(",")[:-1]) for line in (repeated / csv).read_text().splitlines()] == strip
    record = json.loads((repeated / "provenance.json").read_text())
    assert record["rerun_of"] == str(original.resolve())
    assert "warning" not in result.stderr, "the same code and packages: nothing to warn of"


def test_rerun_takes_the_recorded_values_where_todays_presets_differ(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    assert run_cli("run", *SEEDED, f"logdir={logdir}", cwd=workdir).returncode == 0
    original = only_run_dir(logdir)
    # As if the preset had changed since the run: its record says lr 0.00042, today's preset composes another.
    config = (original / "config.yaml").read_text()
    (original / "config.yaml").write_text(config.replace("  lr: 0.001\n", "  lr: 0.00042\n", 1))
    assert "lr: 0.00042" in (original / "config.yaml").read_text()
    result = run_cli("run", f"rerun={original}", f"logdir={tmp_path / 'again'}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if "differ from the record" in line]
    assert warning.startswith(f"rlconf: warning: rerun={original}: ") and "agent.lr (0.001 today, 0.00042" in warning
    assert "  lr: 0.00042\n" in (only_run_dir(tmp_path / "again") / "config.yaml").read_text()


@pytest.mark.parametrize(("args", "words"), [
    (["agent.lr=0.1"], ["rerun=", "agent.lr may not be given", "logdir", "overrides.yaml"]),
    (["-m", "seed=1,2"], ["rerun=", "leave out -m"]),
    (["resume=elsewhere"], ["rerun=", "resume=", "one of them"]),
])
def test_rerun_refuses_what_would_change_the_run(run_cli, workdir, tmp_path, args, words):
    logdir = tmp_path / "runs"
    assert run_cli("run", *SEEDED, f"logdir={logdir}", cwd=workdir).returncode == 0
    before = sorted(p.name for p in logdir.iterdir())
    assert_run_refused(run_cli, [f"rerun={only_run_dir(logdir)}", *args], words, workdir, tmp_path / "new")
    assert sorted(p.name for p in logdir.iterdir()) == before


def test_rerun_of_a_missing_directory_is_one_line(run_cli, workdir, tmp_path):
    assert_run_refused(run_cli, ["rerun=nowhere", *FAST_RUN], ["rerun=nowhere", "no such directory"], workdir,
                       tmp_path / "runs")
