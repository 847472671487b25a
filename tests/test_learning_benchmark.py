"""benchmarks/learning.py: trains a row's seeds through the real CLI, skips finished ones, continues
interrupted ones, and writes the curves, the tests table and a figure per env."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import wait_while_running
from test_resume import checkpoint_steps, wait_for_checkpoint

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "learning.py"

ROWS = """\
rows:
  tiny-cartpole:
    overrides: [agent=dqn, env=classic/cartpole, steps=1500, eval_every=500, eval_episodes=2, test_episodes=3,
                agent.replay_start_size=200]
    budget: 1,500 steps
    target: 5
    reference: {figure: any return above 5, source: this test}
"""


def _script(path: Path = SCRIPT, name: str = "learning_benchmark"):
    """A module of benchmarks/ (learning.py unless told), loaded from its file: benchmarks/ is no package."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_scores_are_shown_with_the_precision_a_target_needs():
    score = _script()._score
    assert score(17.67) == "17.7", "a rounding to 18 would read as meeting a target of 18"
    assert score("-3.04") == "-3.0"
    assert score(7557.45) == "7,557"
    assert score(0.9543, 0.9) == "0.954", "a return of at most 1 against a target of 0.9 needs its third place"


def test_the_table_marks_seeds_trained_off_the_cpu_and_averages_seeds():
    script = _script()
    row = next(iter(script.load_rows().values()))
    common = {"row": row.name, "test_return_std": 0.0, "met": "True"}
    tests = [{**common, "seed": 0, "test_return_mean": 17.0, "device": ""},  # a row written before devices were
             {**common, "seed": 1, "test_return_mean": 20.0, "device": "cuda"}]
    line = script.table({row.name: row}, tests, {}).splitlines()[2]
    assert "s0: 17.0 ± 0.0; s1: 20.0 ± 0.0 (on cuda); mean of seeds 18.5" in line


def learning(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture
def rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.yaml"
    path.write_text(ROWS)
    return path


def test_a_row_is_trained_reported_and_skipped_once_finished(rows_file, tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "out"
    where = ["--rows", str(rows_file), "--runs", str(runs), "--out", str(out)]
    first = learning("tiny-cartpole", *where, "--threads", "1", cwd=tmp_path)  # not the cores: xdist shares them
    assert first.returncode == 0, first.stderr
    assert "tiny-cartpole seed 0: done" in first.stdout
    run_dirs = list((runs / "classic-cartpole" / "tiny-cartpole").glob("dqn_*_s0"))
    assert len(run_dirs) == 1 and (run_dirs[0] / "summary.json").is_file()

    with (out / "tiny-cartpole.csv").open() as f:
        curve = list(csv.DictReader(f))
    assert {row["seed"] for row in curve} == {"0"}
    evaluations = [row for row in curve if row["eval_return"]]
    assert [int(row["step"]) for row in evaluations] == [500, 1000, 1500]
    assert any(row["train_return"] for row in curve)
    with (out / "tests.csv").open() as f:
        (test,) = list(csv.DictReader(f))
    assert test["row"] == "tiny-cartpole" and test["test_episodes"] == "3" and test["device"] == "cpu"
    assert test["met"] == str(float(test["test_return_mean"]) >= 5)
    assert (out / "classic-cartpole.png").stat().st_size > 1000
    table = (out / "table.md").read_text().splitlines()
    assert table[2].startswith("| `agent=dqn env=classic/cartpole")
    assert f"s0: {_script()._score(test['test_return_mean'])}" in table[2]

    again = learning("tiny-cartpole", *where, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "seed 0: done" not in again.stdout, "a finished seed is not trained again"
    assert list((runs / "classic-cartpole" / "tiny-cartpole").glob("dqn_*_s0")) == run_dirs

    # Reported from a runs folder without this row (another machine's), the seed trained here keeps its result.
    elsewhere = learning("--report", "--rows", str(rows_file), "--runs", str(tmp_path / "other"), "--out", str(out),
                         cwd=tmp_path)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert "tiny-cartpole seed 0: test" in elsewhere.stdout
    with (out / "tests.csv").open() as f:
        assert list(csv.DictReader(f)) == [test]
    assert f"s0: {_script()._score(test['test_return_mean'])}" in (out / "table.md").read_text()

    # An interrupted seed is continued from its directory; a new seed starts a fresh run.
    (run_dirs[0] / "summary.json").unlink()
    # The machine's cores are divided among the runs trained at once.
    planned = learning("tiny-cartpole", *where, "--seeds", "0", "1", "--jobs", "2", "--dry-run",
                       cwd=tmp_path).stdout.splitlines()
    threads = f"hardware.torch_threads={max(1, (os.cpu_count() or 1) // 2)}"
    assert planned[0].endswith(f"run resume={run_dirs[0]} {threads} quiet=true")
    assert "seed=1" in planned[1] and f"logdir={runs / 'classic-cartpole' / 'tiny-cartpole'}" in planned[1]
    assert threads in planned[1]


def test_help_says_how_to_rerun_a_row_and_bad_rows_are_one_line(rows_file, tmp_path):
    shown = learning("--help", cwd=tmp_path)
    assert shown.returncode == 0 and "re-run one row" in shown.stdout
    assert "sac-half-cheetah" in shown.stdout
    unknown = learning("nope", "--rows", str(rows_file), cwd=tmp_path)
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == "learning: unknown row 'nope'; rows: tiny-cartpole"


LONG = ROWS + """\
  long-cartpole:
    overrides: [agent=dqn, env=classic/cartpole, steps=1000000, eval_every=0, checkpoint_every=500,
                agent.replay_start_size=200]
    budget: 1M steps
    target: 5
    reference: {figure: any return above 5, source: this test}
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_runs_land_as_they_finish_and_a_stop_signal_reaches_the_runs_in_progress(signum, tmp_path):
    """A short row's results are written as soon as it finishes, while the next row trains. Then SIGTERM (a
    preemption, kill PID) or Ctrl-C to the runner, twice: the run in progress gets it, writes its checkpoint and
    stops; the runner says so, starts nothing more, and the same command would continue it."""
    rows_file, runs, out = tmp_path / "rows.yaml", tmp_path / "runs", tmp_path / "out"
    rows_file.write_text(LONG)
    where = ["tiny-cartpole", "long-cartpole", "--seeds", "0", "1", "--threads", "1", "--rows", str(rows_file),
             "--runs", str(runs), "--out", str(out)]
    runner = subprocess.Popen([sys.executable, str(SCRIPT), *where], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    long_runs = runs / "classic-cartpole" / "long-cartpole"
    run_dir = wait_for_checkpoint(long_runs, runner, 500, timeout=300)
    short_row = {("tiny-cartpole", "0"), ("tiny-cartpole", "1")}
    wait_while_running(runner, lambda: {(t["row"], t["seed"]) for t in _script().read_csv(out / "tests.csv")}
                       == short_row, "the short row's tests in tests.csv, written before the runner's end")
    training = json.loads((run_dir / "status.json").read_text())["pid"]
    runner.send_signal(signum)
    runner.send_signal(signum)  # as a scheduler repeats it: the run still stops at a checkpoint
    stdout, stderr = runner.communicate(timeout=300)
    assert runner.returncode == 128 + signum, stderr
    name = signal.Signals(signum).name
    assert f"stopped by {name}: the same command continues" in stderr
    assert "long-cartpole seed 0: stopped (the same command continues it)" in stdout
    assert "long-cartpole seed 1: not started (stopped)" in stdout
    assert not Path(f"/proc/{training}").exists(), "the run ended with the runner"
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "stopped" and status["signal"] == name
    assert checkpoint_steps(run_dir) == status["steps"] > 500, "its checkpoint is the step it stopped at"
    assert not list(long_runs.glob("*_s1")), "seed 1 never started"
    assert not (long_runs / "s1.log").exists(), "nor did its log say it had"
    again = learning(*where, "--dry-run", cwd=tmp_path).stdout.splitlines()
    assert len(again) == 2 and f"run resume={run_dir} " in again[0] and "seed=1" in again[1]


SUITE = """\
rows: {}
suites:
  tiny-der:
    experiment: atari100k_der
    budget: 300 steps
    seeds: [0]
    reference: der_atari100k_reference
    envs: [atari/pong, atari/breakout]
    overrides: [steps=300, agent.replay_start_size=100, test_episodes=2, env.kwargs.max_num_frames_per_episode=400]
"""


def test_a_suite_trains_its_games_and_reports_them_beside_the_published_agent(tmp_path):
    """A suite of two games: Pong is trained here, Breakout's test comes from the committed tests.csv (a run
    trained elsewhere). The report is drawn from the tests alone, so a runs folder without any run rebuilds it."""
    from rlconf.analysis.references import der_atari100k_reference, human_references

    rows_file, runs, out = tmp_path / "suite.yaml", tmp_path / "runs", tmp_path / "out"
    rows_file.write_text(SUITE)
    committed = out / "tiny-der" / "tests.csv"
    committed.parent.mkdir(parents=True)
    committed.write_text("env,seed,steps,frames,test_return_mean,test_return_std,test_episodes,wall_minutes,"
                         "steps_per_second,device\natari/breakout,0,100000,400000,12.0,3.0,100,20.0,83.0,cpu\n")
    where = ["--rows", str(rows_file), "--runs", str(runs), "--out", str(out)]
    planned = learning("--suite", "tiny-der", "--dry-run", *where, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert [line for line in planned.stdout.splitlines() if "rlconf" in line] == \
        [line for line in planned.stdout.splitlines() if "env=atari/pong" in line], \
        "the whole suite's commands leave out Breakout, whose test tests.csv records"
    assert "env=atari/pong" in planned.stdout
    trained = learning("--suite", "tiny-der", "--games", "pong", "--threads", "1", *where, cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    assert "tiny-der-pong seed 0: done" in trained.stdout
    with committed.open() as f:
        tests = {row["env"]: row for row in csv.DictReader(f)}
    assert set(tests) == {"atari/pong", "atari/breakout"} and tests["atari/breakout"]["test_return_mean"] == "12.0"
    assert tests["atari/pong"]["steps"] == "300" and tests["atari/pong"]["test_episodes"] == "2"
    with (out / "tiny-der" / "curves.csv").open() as f:
        assert {row["env"] for row in csv.DictReader(f)} == {"atari/pong"}
    assert (out / "tiny-der" / "aggregate.png").stat().st_size > 1000

    table = (out / "tiny-der" / "table.md").read_text()
    humans, published = human_references(), der_atari100k_reference().per_game
    pong = float(tests["atari/pong"]["test_return_mean"])
    assert f"| Pong | {_script()._score(pong)} |" in table
    assert f"| Breakout | 12.0 | 12.0 | {published['atari/breakout']:.1f} |" in table
    # The IQM of two runs is their mean (a quarter trimmed off each end of two scores trims nothing).
    scores = [float(humans["atari/pong"].normalize(pong)), float(humans["atari/breakout"].normalize(12.0))]
    rlconf_line = next(line for line in table.splitlines() if line.startswith("| rlconf (2 runs, 2 games)"))
    assert rlconf_line.split(" | ")[1].startswith(f"{sum(scores) / 2:.3f} [")
    assert any(line.startswith("| DER (published means) (2 runs, 2 games)") for line in table.splitlines())
    assert "| published: van Hasselt" in table

    listed = learning("--suite", "tiny-der", "--list", *where, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    games = {line.split()[0]: line.split()[1:] for line in listed.stdout.splitlines()[3:-1]}
    assert games == {"pong": [f"{published['atari/pong']:,.1f}", f"{pong:,.1f}"],
                     "breakout": [f"{published['atari/breakout']:,.1f}", "12.0"]}
    assert listed.stdout.splitlines()[-1].startswith("2 of 2 runs tested")
    again = learning("--suite", "tiny-der", "--dry-run", *where, cwd=tmp_path)
    assert again.returncode == 0 and "rlconf" not in again.stdout, "nothing is left to train"

    # On a fresh clone there is no run directory: the committed tests give the same report.
    again = learning("--suite", "tiny-der", "--report", "--rows", str(rows_file), "--runs", str(tmp_path / "none"),
                     "--out", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (out / "tiny-der" / "table.md").read_text() == table
    assert again.stdout == table


OVERSHOT = """\
rows:
  two-seeds:
    overrides: [agent=dqn, env=classic/cartpole, steps=500000, eval_every=250000]
    budget: 500k steps
    target: 5
    reference: {figure: any return above 5, source: this test}
"""


def test_a_report_without_the_runs_redraws_each_figure_from_the_committed_curves(tmp_path):
    """On a fresh clone (no run on disk) --report draws an env's figure and its _curves.csv from the committed
    <row>.csv and tests.csv by rlconf plot --metric eval's code: two seeds whose evaluations overshoot the steps
    they were due at (250003 and 250009) make one point of 2 seeds, and a seed's final test is its last point.
    A third seed's curve, committed while its run was unfinished, goes: its run is gone and it has no test."""
    rows_file, out = tmp_path / "rows.yaml", tmp_path / "out"
    rows_file.write_text(OVERSHOT)
    out.mkdir()
    (out / "two-seeds.csv").write_text("seed,step,frames,train_return,eval_return,eval_std\n"
                                       "0,120000,120000,15.0,,\n0,250003,250003,,20.0,1.0\n0,500008,500008,,40.0,2.0\n"
                                       "1,250009,250009,,30.0,1.0\n1,500001,500001,,60.0,2.0\n"
                                       "2,250002,250002,,90.0,1.0\n")
    (out / "tests.csv").write_text("row,seed,steps,frames,test_return_mean,test_return_std,test_episodes,target,met,"
                                   "wall_minutes,steps_per_second,device,reference,source\n"
                                   "two-seeds,0,500008,500008,44.0,3.0,100,5.0,True,1.0,100.0,cpu,any,this test\n"
                                   "two-seeds,1,500001,500001,64.0,3.0,100,5.0,True,1.0,100.0,cpu,any,this test\n")
    where = ["--rows", str(rows_file), "--runs", str(tmp_path / "none"), "--out", str(out)]
    assert _script().main(["--report", *where]) == 0
    with (out / "classic-cartpole_curves.csv").open() as f:
        curve = list(csv.DictReader(f))
    assert [(int(p["step"]), float(p["mean"]), int(p["seeds"])) for p in curve] == [(250000, 25.0, 2),
                                                                                   (500000, 54.0, 2)]
    with (out / "two-seeds.csv").open() as f:
        assert {row["seed"] for row in csv.DictReader(f)} == {"0", "1"}
    assert {(p["agent"], p["config"], p["metric"]) for p in curve} == {("dqn", "dqn", "eval")}
    assert (out / "classic-cartpole.png").stat().st_size > 1000


def test_the_readme_shows_the_suite_report_of_the_committed_runs(tmp_path):
    """The README's copy of the Atari 100k report is the one the committed final tests give (learning.py writes
    both when runs land): drawn again here from tests.csv alone, as on a fresh clone."""
    script, report = _script(), _script(SCRIPT.parent / "suite.py", "suite_report")
    suite = script.load_suites()["atari100k-der"]
    folder = script.RESULTS / suite.name
    tests = script.read_csv(folder / "tests.csv")
    text = report.write(suite.name, suite.budget, tests, suite.published(), list(suite.seeds), tmp_path)
    assert text == (folder / "table.md").read_text(), "table.md is not the report of the committed tests.csv"
    readme = script.README.read_text()
    block = report.readme_block(suite.name, text, (folder / "aggregate.png").relative_to(SCRIPT.parents[1]).as_posix())
    assert block in readme, "the README's copy of the report is not the committed one: run learning.py --report"
    assert f"**{suite.name}: {len(tests)} finished runs" in block


def test_the_readme_block_is_replaced_between_its_markers_and_a_readme_without_them_is_left_alone(tmp_path, capsys,
                                                                                                monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # learning.py imports suite.py from beside it, as a script
    script, report = _script(), _script(SCRIPT.parent / "suite.py", "suite_report")
    begin, end = report.readme_markers("tiny")
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{begin}\nold report\n{end}\nafter\n")
    script.show_in_readme("tiny", "# tiny: 2 finished runs\n\n| a | b |\n", tmp_path / "r" / "tiny" / "a.png",
                          readme)
    assert readme.read_text() == (f"before\n{begin}\n**tiny: 2 finished runs**\n\n| a | b |\n\n"
                                  f"![tiny: aggregates of human-normalised scores, rlconf and the published agent]"
                                  f"(r/tiny/a.png)\n{end}\nafter\n")
    readme.write_text("no markers\n")
    script.show_in_readme("tiny", "# tiny\n\nx\n", tmp_path / "a.png", readme)
    assert readme.read_text() == "no markers\n" and not list(tmp_path.glob("*.partial"))
    assert "README.md has no place for the tiny report" in capsys.readouterr().err


def test_the_report_names_the_games_far_below_the_published_agent_where_it_plays_above_random():
    """Half of a published score that random play nearly reaches says nothing; half of a real score does."""
    from rlconf.analysis.references import der_atari100k_reference, human_references

    game_lines = _script(SCRIPT.parent / "suite.py", "suite_report").game_lines
    reference, humans = der_atari100k_reference(), human_references()

    def named(env: str, fraction: float) -> list[str]:
        """The far games when rlconf scores ``fraction`` of the published normalised score on ``env``."""
        human = humans[env]
        score = human.random + fraction * (reference.per_game[env] - human.random)
        return game_lines([{"env": env, "seed": 0, "test_return_mean": score}], reference, [0])[1]

    assert [line.split(" (")[0] for line in named("atari/amidar", 0.4)] == ["Amidar"]  # published 0.107
    assert named("atari/amidar", 0.6) == []
    assert named("atari/boxing", -8.0) == []  # published 0.008: random-level play, -0.7 points here
