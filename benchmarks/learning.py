"""The learning benchmark: rlconf's presets trained at published budgets, against the published results.

    python benchmarks/learning.py --list                      # the rows, their targets and what is on disk
    python benchmarks/learning.py sac-half-cheetah            # train (or finish) one row, seed 0
    python benchmarks/learning.py ppo-hopper td3-hopper --seeds 0 1 --jobs 2
    python benchmarks/learning.py --report                    # rewrite the results from the runs on disk
    nox -s learning -- dqn-pong
    python benchmarks/learning.py --suite atari100k-der --jobs 2           # every game x 3 seeds, resumable
    python benchmarks/learning.py --suite atari100k-der --list             # each game's tests, runs under way
    python benchmarks/learning.py --suite atari100k-der --games pong --seeds 0
    python benchmarks/learning.py --suite atari100k-der --report           # the suite's table and figure

Each row of benchmarks/learning.yaml is one ``rlconf run`` of a preset at a budget, with the greedy test it
must reach and the published figure it reproduces. A row's runs live in RUNS/<env>/<row>/ (RUNS defaults to
benchmarks/results/learning/runs, not committed). Running a row again skips the seeds that finished, and
continues an interrupted one from its checkpoint (``rlconf run resume=DIR``), so a row that takes hours can
be stopped with Ctrl-C, or SIGTERM (a scheduler's preemption), and picked up later: the runs in progress get the
signal, write their checkpoints with their replay, and no run starts after it.

After every row it writes, into benchmarks/results/learning/ (committed with the code that made them):

- ``<row>.csv``: each seed's curve: env step, frames, the mean training return of the last 20 episodes, and
  the periodic greedy evaluations (mean and std) where one was taken;
- ``tests.csv``: each seed's final greedy test beside the row's target and reference;
- ``<env>.png`` (and its ``_curves.csv``): the greedy-evaluation curves of every row on that env, drawn by
  ``rlconf plot --metric eval``: from the runs when they are all on disk, else (a fresh clone) by the same code
  from the committed ``<row>.csv`` and ``tests.csv``;
- ``table.md``: the README's table of every row, its final tests, target and reference.

A suite (``suites:`` in benchmarks/learning.yaml) is one experiment on every game of a benchmark, 3 seeds each:
a row per game, trained, skipped and continued as rows are, its runs in RUNS/<env>/<suite>-<game>/; a run whose
test its tests.csv records is finished wherever it ran (a suite outlives machines: it is not trained again on a
fresh clone; another --out starts the suite afresh). Its results
go to benchmarks/results/learning/<suite>/: ``tests.csv`` (every run's final test), ``curves.csv`` (every run's
curve) and, drawn from tests.csv alone by suite.py (so ``--report`` works on a fresh clone), ``table.md`` (each
game's tests beside the published means, and the aggregates of human-normalised scores beside the published
ones) and ``aggregate.png``; the README shows both, rewritten with them.

These runs take from tens of minutes to hours each on 2 CPU cores: they are never a CI step.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import yaml

from rlconf.experiments.rundir.saved import STATUS_SCHEMA, read_record
from rlconf.files import write_text

HERE = Path(__file__).resolve().parent
ROWS_FILE = HERE / "learning.yaml"
RESULTS = HERE / "results" / "learning"
README = HERE.parent / "README.md"
TRAIN_WINDOW = 20  # training episodes in the curve's running mean
CURVE_POINTS = 100  # training-return points per seed in <row>.csv


@dataclass(frozen=True)
class Row:
    name: str
    overrides: tuple[str, ...]
    budget: str
    target: float
    figure: str
    source: str

    @property
    def env(self) -> str:
        """The env's name as a folder (atari-pong), from the row's env= override."""
        return next(o.split("=", 1)[1] for o in self.overrides if o.startswith("env=")).replace("/", "-")

    def folder(self, runs: Path) -> Path:
        return runs / self.env / self.name


def load_rows(path: Path = ROWS_FILE) -> dict[str, Row]:
    entries = yaml.safe_load(path.read_text())["rows"]
    return {name: Row(name, tuple(entry["overrides"]), entry["budget"], float(entry["target"]),
                      entry["reference"]["figure"], entry["reference"]["source"])
            for name, entry in entries.items()}


@dataclass(frozen=True)
class Suite:
    """One experiment on every env of a benchmark suite, against a published agent's per-game results."""

    name: str
    experiment: str
    envs: tuple[str, ...]
    budget: str
    seeds: tuple[int, ...]
    reference: str  # a function of rlconf.analysis.references giving the published results
    overrides: tuple[str, ...] = ()  # given to every run after the experiment and the env

    def published(self):
        from rlconf.analysis import references

        return getattr(references, self.reference)()

    def rows(self, envs: list[str] | None = None) -> dict[str, Row]:
        """A row per env (of ``envs``, or all): the experiment on it, its target the published mean."""
        published = self.published()
        chosen = envs or self.envs
        return {env: Row(f"{self.name}-{env.split('/', 1)[1]}",
                         (f"experiment={self.experiment}", f"env={env}", *self.overrides), self.budget,
                         published.per_game[env], f"{published.per_game[env]:g}",
                         published.per_game_source) for env in chosen}


def load_suites(path: Path = ROWS_FILE) -> dict[str, Suite]:
    entries = yaml.safe_load(path.read_text()).get("suites") or {}
    return {name: Suite(name, entry["experiment"], tuple(entry["envs"]), entry["budget"], tuple(entry["seeds"]),
                        entry["reference"], tuple(entry.get("overrides", ()))) for name, entry in entries.items()}


# -- runs on disk -----------------------------------------------------------------------------------------
def run_dir(row: Row, seed: int, runs: Path) -> Path | None:
    """The seed's run directory below the row's folder (the newest, if an earlier attempt left two)."""
    found = sorted(row.folder(runs).glob(f"*_s{seed}"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def finished(path: Path | None) -> bool:
    return path is not None and (path / "summary.json").is_file()


def steps_done(path: Path) -> int:
    """The agent steps an unfinished run had taken when it last wrote its status (read as ``rlconf status``
    reads it: a status.json that is not what rlconf writes is one line, not a traceback)."""
    status = read_record(path / "status.json", STATUS_SCHEMA)
    return int(status.get("steps") or 0) if status else 0


def command(row: Row, seed: int, runs: Path, threads: int = 1) -> list[str]:
    """``rlconf run`` for a seed: a fresh run, or the continuation of the one an earlier attempt left.

    ``threads`` is the run's share of the machine's cores for torch (all of them for a row trained alone).
    """
    rlconf = [sys.executable, "-m", "rlconf"]
    common = [f"hardware.torch_threads={threads}", "quiet=true"]
    existing = run_dir(row, seed, runs)
    if existing is not None:
        return [*rlconf, "run", f"resume={existing}", *common]
    return [*rlconf, "run", *row.overrides, f"seed={seed}", f"logdir={row.folder(runs)}", *common]


class Stopping:
    """A stop signal to the runner (SIGTERM: a scheduler's preemption, ``kill PID``; SIGINT: Ctrl-C) goes to the
    runs in progress, once each, and no run starts after it: each writes its checkpoint, replay included, and
    the same command continues them. The runs are sessions of their own, so that a Ctrl-C at the terminal
    reaches them through the runner only, not twice."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.signum: int | None = None
        self.running: set[subprocess.Popen] = set()
        self.lock = threading.Lock()

    def __enter__(self) -> Stopping:
        self.previous = {signum: signal.signal(signum, self.stop) for signum in self.SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def stop(self, signum: int, frame=None) -> None:
        with self.lock:
            if self.signum is not None:  # a scheduler repeats its signal while the runs write their checkpoints
                return
            self.signum = signum
            for process in self.running:
                process.send_signal(signum)

    def run(self, argv: list[str], log_path: Path) -> int | None:
        """``argv``'s exit status, its console appended to ``log_path`` under the command's line; None where a
        stop came before it started (its log then untouched: a run that never started leaves no line)."""
        with self.lock:
            if self.signum is not None:
                return None
            with log_path.open("a") as log:
                log.write(f"$ {' '.join(argv)}\n")
                log.flush()
                process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True)
            self.running.add(process)
        code = process.wait()
        with self.lock:
            self.running.discard(process)
        return code


def train(row: Row, seed: int, runs: Path, threads: int, stopping: Stopping) -> tuple[str, int, int | None]:
    """Train one seed to the end of its budget (or until ``stopping``), the console going to
    RUNS/<env>/<row>/s<seed>.log; the row, the seed and the exit status (None if it never started)."""
    folder = row.folder(runs)
    folder.mkdir(parents=True, exist_ok=True)
    return row.name, seed, stopping.run(command(row, seed, runs, threads), folder / f"s{seed}.log")


# -- results ----------------------------------------------------------------------------------------------
def read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def frames_per_step(path: Path) -> int:
    """Emulator frames per agent step: Atari's frame skip, 1 elsewhere (read from the run's config, as data)."""
    config = yaml.safe_load((path / "config.yaml").read_text())
    if config.get("env", {}).get("family") != "atari":
        return 1
    return int(config["env"].get("kwargs", {}).get("frame_skip", 4))


def curve(path: Path, seed: int) -> list[dict[str, object]]:
    """One seed's rows of <row>.csv: training-return points (a running mean) and the periodic evaluations."""
    episodes = read_csv(path / "episodes.csv")
    skip = frames_per_step(path)
    rows: list[dict[str, object]] = []
    if episodes:
        every = max(1, len(episodes) // CURVE_POINTS)
        returns = [float(e["return"]) for e in episodes]
        for i in range(every - 1, len(episodes), every):
            recent = returns[max(0, i + 1 - TRAIN_WINDOW) : i + 1]
            step = int(episodes[i]["step"])
            rows.append({"seed": seed, "step": step, "frames": step * skip,
                         "train_return": round(sum(recent) / len(recent), 2)})
    evaluations = read_csv(path / "evaluations.csv")
    if finished(path):  # its last row is the final test (tests.csv), not a periodic evaluation
        evaluations = evaluations[:-1]
    for evaluation in evaluations:
        step = int(evaluation["step"])
        rows.append({"seed": seed, "step": step, "frames": step * skip,
                     "eval_return": round(float(evaluation["mean"]), 2),
                     "eval_std": round(float(evaluation["std"]), 2)})
    return sorted(rows, key=lambda r: (r["step"], "eval_return" in r))


def test_row(row: Row, seed: int, path: Path) -> dict[str, object]:
    summary = json.loads((path / "summary.json").read_text())
    skip = frames_per_step(path)
    mean = summary["test_return_mean"]
    digits = 4 if abs(row.target) < 1 else 2  # returns of at most 1 (MiniGrid's) keep what the table shows
    return {"row": row.name, "seed": seed, "steps": summary["steps"], "frames": summary["steps"] * skip,
            "test_return_mean": round(mean, digits), "test_return_std": round(summary["test_return_std"], digits),
            "test_episodes": summary["test_episodes"], "target": row.target,
            "met": bool(math.isfinite(mean) and mean >= row.target),
            "wall_minutes": round(summary["wall_seconds"] / 60, 1),
            "steps_per_second": round(summary["steps_per_second"], 1),
            "device": summary["hardware"]["device"],  # speeds are comparable only between runs on one device
            "reference": row.figure, "source": row.source}


def write_table(path: Path, rows: list[dict[str, object]], fields: list[str]) -> None:
    """A CSV of ``rows``, written whole or not at all: a runner stopped mid-write leaves the last one."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text.getvalue())


def report(rows: dict[str, Row], runs: Path, out: Path) -> list[dict[str, object]]:
    """Rewrite every row's curve, the tests table and one figure per env from the runs on disk; the curves
    and tests of finished seeds whose runs are not on disk stay as they were, and an env with such a seed has
    its figure drawn from those files (``committed_figure``)."""
    done = finished_runs(out / "tests.csv", ("row", "seed"))
    tests = []
    unfinished: dict[str, list[str]] = {}  # row -> "s0: unfinished at 841,858 steps" for the table
    for row in rows.values():
        seeds = seeds_on_disk(row, runs)
        points = []
        for seed in seeds:
            path = run_dir(row, seed, runs)
            points += curve(path, seed)
            if finished(path):
                tests.append(test_row(row, seed, path))
            else:
                unfinished.setdefault(row.name, []).append(f"s{seed}: unfinished at {steps_done(path):,} steps")
        # Seeds whose runs are elsewhere (another --runs folder, or gone) keep their committed curve if they
        # finished; an unfinished run's curve lasts as long as its run, so an abandoned one leaves no trace.
        curves_csv = out / f"{row.name}.csv"
        curves = with_committed(points, curves_csv, ("seed",), only={(s,) for r, s in done if r == row.name})
        if curves or curves_csv.is_file():
            write_table(curves_csv, curves, ["seed", "step", "frames", "train_return", "eval_return", "eval_std"])
    tests = with_committed(tests, out / "tests.csv", ("row", "seed"))
    if tests:
        write_table(out / "tests.csv", tests, list(tests[0]))
    for env in sorted({row.env for row in rows.values()}):
        mine = [row for row in rows.values() if row.env == env]
        committed = {row.name: {int(r["seed"]) for r in read_csv(out / f"{row.name}.csv")} for row in mine}
        on_disk = {row.name: set(seeds_on_disk(row, runs)) for row in mine}
        if all(committed[name] <= on_disk[name] for name in committed) and any(on_disk.values()):
            figure(runs / env, out / f"{env}.png")
        elif any(committed.values()):  # some of its curves come from runs not on disk: drawn from the files
            committed_figure(mine, out, out / f"{env}.png")
    write_text(out / "table.md", table(rows, tests, unfinished))
    return tests


def finished_runs(tests_csv: Path, key: tuple[str, ...]) -> set[tuple[str, ...]]:
    """The ``key`` of every run whose final test is committed in ``tests_csv``: the runs that finished."""
    return {tuple(test[k] for k in key) for test in read_csv(tests_csv)}


def with_committed(found: list[dict[str, object]], committed: Path, key: tuple[str, ...],
                   only: set[tuple[str, ...]] | None = None) -> list[dict[str, object]]:
    """The rows ``found`` from the runs on disk, and those of the ``committed`` CSV whose ``key`` (the seed, the
    row's or env's and the seed) none of them has and, given ``only``, is among those keys: runs trained
    elsewhere, or since deleted, keep their results."""
    def of(row: dict[str, object]) -> tuple[str, ...]:
        return tuple(str(row[k]) for k in key)

    fresh = {of(row) for row in found}
    kept = [row for row in read_csv(committed) if of(row) not in fresh and (only is None or of(row) in only)]
    return sorted([*found, *kept], key=lambda row: tuple(int(v) if v.isdigit() else v for v in of(row)))


def suite_report(suite: Suite, runs: Path, out: Path) -> str:
    """Rewrite the suite's tests.csv and curves.csv from the runs on disk (keeping committed runs that are not
    on disk), then its table and figure (suite.py); returns the table."""
    import suite as report_of_suite

    folder = out / suite.name
    tests: list[dict[str, object]] = []
    curves: list[dict[str, object]] = []
    for env, row in suite.rows().items():
        for seed in seeds_on_disk(row, runs):
            path = run_dir(row, seed, runs)
            curves += [{"env": env, **point} for point in curve(path, seed)]
            if finished(path):
                tests.append({"env": env, **test_row(row, seed, path)})
    done = finished_runs(folder / "tests.csv", ("env", "seed"))  # read before tests.csv is rewritten
    tests = with_committed(tests, folder / "tests.csv", ("env", "seed"))
    curves = with_committed(curves, folder / "curves.csv", ("env", "seed"), only=done)  # unfinished: while on disk
    if tests:
        write_table(folder / "tests.csv", tests, ["env", "seed", "steps", "frames", "test_return_mean",
                                                  "test_return_std", "test_episodes", "wall_minutes",
                                                  "steps_per_second", "device"])
    if curves:
        write_table(folder / "curves.csv", curves, ["env", "seed", "step", "frames", "train_return", "eval_return",
                                                    "eval_std"])
    text = report_of_suite.write(suite.name, suite.budget, tests, suite.published(), list(suite.seeds), folder)
    if out.resolve() == RESULTS:  # the committed results: the README shows them
        show_in_readme(suite.name, text, folder / "aggregate.png")
    return text


def show_in_readme(name: str, text: str, png: Path, readme: Path = README) -> None:
    """Put the suite's report ``text`` and figure ``png`` in the README, between its markers (suite.py); say so
    in a line where the README has none. Written whole or not at all (rlconf.files.write_text)."""
    import suite as report_of_suite

    current = readme.read_text()
    block = report_of_suite.readme_block(name, text, png.relative_to(readme.parent).as_posix())
    updated = report_of_suite.with_readme_block(current, name, block)
    if updated is None:
        print(f"learning: {readme.name} has no place for the {name} report (its markers: "
              f"{' ... '.join(report_of_suite.readme_markers(name))}); not shown there", file=sys.stderr)
    elif updated != current:
        write_text(readme, updated)


def seeds_on_disk(row: Row, runs: Path) -> list[int]:
    return sorted({int(p.name.rsplit("_s", 1)[1]) for p in row.folder(runs).glob("*_s*") if p.is_dir()})


def table(rows: dict[str, Row], tests: list[dict[str, object]], unfinished: dict[str, list[str]]) -> str:
    """The README's table: every row with its budget, each seed's final test, target, reference and figure."""
    lines = ["| row | budget | rlconf final test (seed: mean ± std) | target | reference | source | figure |",
             "|---|---|---|--:|---|---|---|"]
    for row in rows.values():
        mine = [t for t in tests if t["row"] == row.name]
        at = row.target  # the scale a score is shown at
        result = "; ".join(f"s{t['seed']}: {_score(t['test_return_mean'], at)} ± {_score(t['test_return_std'], at)}"
                           + ("" if str(t["met"]) == "True" else " (missed)")
                           + ("" if (t.get("device") or "cpu") == "cpu" else f" (on {t['device']})")  # older rows: none
                           for t in mine)
        if len(mine) > 1:
            result += f"; mean of seeds {_score(sum(float(t['test_return_mean']) for t in mine) / len(mine), at)}"
        result = "; ".join(filter(None, [result, *unfinished.get(row.name, [])])) or "not run yet"
        shown = mine or row.name in unfinished
        figure = f"[{row.env}.png](benchmarks/results/learning/{row.env}.png)" if shown else "–"
        lines.append(f"| `{' '.join(row.overrides)}` | {row.budget} | {result} | {row.target:,g} | {row.figure} | "
                     f"{row.source} | {figure} |")
    return "\n".join(lines) + "\n"


def _score(value: object, target: float | None = None) -> str:
    """A return as the table shows it: whole numbers where they are large, one decimal where a rounding
    could carry it across a target (17.67 is not 18), three where the row's target is below 1 (MiniGrid's
    returns are at most 1: 0.954 is not 0.9)."""
    number = float(value)
    if target is not None and abs(target) < 1:
        return f"{number:.3f}"
    return f"{number:,.0f}" if abs(number) >= 100 else f"{number:.1f}"


def figure(folder: Path, png: Path) -> None:
    """``rlconf plot`` of every run on one env: greedy evaluations, a band across seeds."""
    argv = [sys.executable, "-m", "rlconf", "plot", str(folder), "--out", str(png), "--metric", "eval"]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode:
        print(f"learning: no figure for {folder.name}: {result.stderr.strip()}", file=sys.stderr)


def committed_runs(rows: list[Row], out: Path, folder: Path) -> list:
    """The runs of ``rows`` (one env's) as ``rlconf plot`` reads them, rebuilt from the committed files: each
    seed of ``<row>.csv`` a ``Run`` whose evaluations.csv (written into ``folder``) holds its periodic greedy
    evaluations and, from tests.csv, its final test; its agent, env, settings and evaluation schedule (budget,
    eval_every) are those of the config the row's overrides compose, as config.yaml would have them."""
    import numpy as np
    from omegaconf import OmegaConf

    from rlconf.analysis.runs import Run, Schedule, flatten, ignored
    from rlconf.config import compose

    tests = {(t["row"], int(t["seed"])): t for t in read_csv(out / "tests.csv")}
    found = []
    for row in rows:
        points = [p for p in read_csv(out / f"{row.name}.csv") if p.get("eval_return")]
        if not points:
            continue
        config = OmegaConf.to_container(compose(list(row.overrides), []), resolve=True)
        settings = {key: value for key, value in flatten(config).items() if not ignored(key)}
        schedule = Schedule(*(max(0, int(config.get(key) or 0)) for key in ("steps", "eval_every")))
        for seed in sorted({int(p["seed"]) for p in points}):
            evaluations = [[int(p["step"]), float(p["eval_return"]), float(p["eval_std"] or 0),
                            int(config.get("eval_episodes") or 1)] for p in points if int(p["seed"]) == seed]
            test = tests.get((row.name, seed))
            if test:  # the run's last row of evaluations.csv: the final test, at the step its training ended
                evaluations.append([int(test["steps"]), float(test["test_return_mean"]),
                                    float(test["test_return_std"]), int(test["test_episodes"])])
            path = folder / row.name / f"s{seed}"
            write_table(path / "evaluations.csv", [dict(zip(("step", "mean", "std", "episodes"), e, strict=True))
                                                   for e in sorted(evaluations, key=lambda e: e[0])],
                        ["step", "mean", "std", "episodes"])
            summary = {"steps": int(test["steps"]), "test_return_mean": float(test["test_return_mean"])} \
                if test else None
            found.append(Run(path, str(config["agent"]["name"]), str(config["env"]["name"]), seed, np.zeros(0),
                             np.zeros(0), summary, settings=settings, schedule=schedule))
    return found


def committed_figure(rows: list[Row], out: Path, png: Path) -> None:
    """The figure of one env's ``rows`` and its ``_curves.csv`` from the committed files alone (where some of
    their seeds' runs are not on disk; those that are were written into them first), by the code of ``rlconf
    plot --metric eval`` and its defaults: evaluations aligned where they were
    due, a band across seeds, one legend (each configuration, its agent, with its seed count), no title."""
    import tempfile

    from rlconf.analysis.command import compute, render
    from rlconf.analysis.command import parse as plot_args
    from rlconf.analysis.figure import require_matplotlib
    from rlconf.analysis.runs import AnalysisError

    args = plot_args([str(out), "--out", str(png), "--metric", "eval"])
    try:
        require_matplotlib()
        with tempfile.TemporaryDirectory() as folder:  # the rebuilt runs' evaluations.csv are read in compute
            result = compute(args, committed_runs(rows, out, Path(folder)))
        render(args, result)
    except AnalysisError as error:
        print(f"learning: no figure for {png.stem}: {error}", file=sys.stderr)


# -- command line -----------------------------------------------------------------------------------------
def show(rows: dict[str, Row], runs: Path) -> None:
    for row in rows.values():
        state = ", ".join(f"s{s} {'done' if finished(run_dir(row, s, runs)) else 'partial'}"
                          for s in seeds_on_disk(row, runs))
        print(f"{row.name:18} {' '.join(row.overrides)}")
        print(f"{'':18} budget {row.budget}; target >= {row.target:g}; reference {row.figure} ({row.source})")
        print(f"{'':18} on disk: {state or 'nothing yet'}")


def show_suite(suite: Suite, runs: Path, out: Path) -> None:
    """A suite's progress, a line a game: the published mean, then each seed's committed test, or how far its run
    in RUNS has come."""
    published = suite.published()
    tests = {(t["env"], int(t["seed"])): float(t["test_return_mean"])
             for t in read_csv(out / suite.name / "tests.csv")}
    print(f"{suite.name}: experiment={suite.experiment} on {len(suite.envs)} games x seeds "
          f"{' '.join(map(str, suite.seeds))}, {suite.budget} a run")
    print(f"published means: {published.per_game_source}")
    print(f"{'game':18} {'published':>10}" + "".join(f"  {f's{seed}':16}" for seed in suite.seeds).rstrip())
    counts = {"tested": 0, "under way": 0, "to train": 0}
    for env, row in suite.rows().items():
        cells = []
        for seed in suite.seeds:
            path = run_dir(row, seed, runs)
            if (env, seed) in tests:
                cell, kind = f"{tests[env, seed]:,.1f}", "tested"
            elif finished(path):
                cell, kind = "done (--report)", "tested"
            elif path is not None:
                cell, kind = f"at {steps_done(path):,} steps", "under way"
            else:
                cell, kind = "-", "to train"
            cells.append(cell)
            counts[kind] += 1
        line = f"{env.split('/', 1)[1]:18} {published.per_game[env]:>10,.1f}" + "".join(f"  {c:16}" for c in cells)
        print(line.rstrip())
    print(f"{counts['tested']} of {len(suite.envs) * len(suite.seeds)} runs tested (their tests: "
          f"{out / suite.name / 'tests.csv'}), {counts['under way']} under way in {runs}, "
          f"{counts['to train']} to train")


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, Row]]:
    """The arguments, checked against the rows of the ``--rows`` file (read first)."""
    first = argparse.ArgumentParser(add_help=False)
    first.add_argument("--rows", type=Path, default=ROWS_FILE)
    rows_file = first.parse_known_args(argv)[0].rows
    if not rows_file.is_file():
        first.exit(2, f"learning: --rows {rows_file}: no such file\n")
    rows, suites = load_rows(rows_file), load_suites(rows_file)
    parser = argparse.ArgumentParser(
        prog="python benchmarks/learning.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\n", 1)[0],
        epilog="rows: " + ", ".join(rows) + "\n\nTo re-run one row: python benchmarks/learning.py ROW [--seeds S ...]. "
               "A seed that finished is skipped\n(delete RUNS/<env>/<row>/ or pass another --runs folder to train "
               "it again); one that was interrupted\ncontinues from its checkpoint. Then the results are written.\n\n"
               "A suite's run whose test its tests.csv (in --out) records is not trained again, wherever it\n"
               "ran: another --out starts the suite afresh.")
    parser.add_argument("rows", nargs="*", metavar="ROW", help="rows of benchmarks/learning.yaml to train")
    parser.add_argument("--seeds", type=int, nargs="+", metavar="S",
                        help="seeds (default: 0; a suite's: its own, 0 1 2)")
    parser.add_argument("--suite", choices=list(suites) or None, metavar="NAME",
                        help=f"train (or --report, --list) a suite: {', '.join(suites) or 'none in the rows file'}")
    parser.add_argument("--games", nargs="+", metavar="GAME", help="with --suite: only these of its games (pong)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="seeds and rows trained at once "
                        "(default 1); the machine's cores are divided among them")
    parser.add_argument("--threads", type=int, metavar="N", help="torch threads a run (default: the machine's "
                        "cores divided among the runs trained at once; 1 on a busy machine, where threads that "
                        "share a core stall each other)")
    parser.add_argument("--runs", type=Path, default=RESULTS / "runs", metavar="DIR",
                        help="where the run directories go (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=RESULTS, metavar="DIR",
                        help="where the CSV files and figures go (default: %(default)s)")
    parser.add_argument("--list", action="store_true", help="list the rows and what is on disk, then stop")
    parser.add_argument("--report", action="store_true", help="only rewrite the results from the runs on disk "
                        "(an env's figure from the committed curves where its runs are not all there)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands instead of running them")
    parser.add_argument("--rows", dest="rows_file", type=Path, default=ROWS_FILE, metavar="FILE",
                        help=f"the rows' YAML file (default: {ROWS_FILE.name} beside this script)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.rows if name not in rows]
    if unknown:
        parser.exit(2, f"learning: unknown row {unknown[0]!r}; rows: {', '.join(rows)}\n")
    for option in ("jobs", "threads"):
        if getattr(args, option) is not None and getattr(args, option) < 1:
            parser.exit(2, f"learning: --{option} {getattr(args, option)}: must be at least 1\n")
    if args.suite is None:
        if args.games:
            parser.exit(2, "learning: --games chooses among a suite's games: name the suite with --suite\n")
        if not (args.rows or args.list or args.report):
            parser.exit(2, "learning: name the rows to train, or a --suite, or --list, or --report; see --help\n")
        args.seeds = args.seeds or [0]
        return args, rows
    suite = args.suite = suites[args.suite]
    if args.rows:
        parser.exit(2, f"learning: --suite {suite.name} trains its own rows: name rows, or a suite, not both\n")
    games = {env.split("/", 1)[1]: env for env in suite.envs}
    strange = [game for game in args.games or [] if game not in games]
    if strange:
        parser.exit(2, f"learning: suite {suite.name} has no game {strange[0]!r}; its games: {', '.join(games)}\n")
    args.seeds = args.seeds or list(suite.seeds)
    args.rows = [games[game] for game in args.games or games]  # env names: the keys of suite.rows()
    rows = suite.rows(args.rows)
    return args, rows


def main(argv: list[str] | None = None) -> int:
    args, rows = parse(argv)
    if args.list:
        show_suite(args.suite, args.runs, args.out) if args.suite else show(rows, args.runs)
        return 0
    # A suite's every game before its next seed: the first pass already spans the suite.
    order = ((name, seed) for seed in args.seeds for name in args.rows) if args.suite else \
        ((name, seed) for name in args.rows for seed in args.seeds)
    # A suite's tests.csv records the runs it has finished wherever they ran (a suite outlives machines), so a
    # run tested there is not trained again; another --out starts the suite afresh.
    tested = finished_runs(args.out / args.suite.name / "tests.csv", ("env", "seed")) if args.suite else set()
    jobs = [(rows[name], seed) for name, seed in order
            if not finished(run_dir(rows[name], seed, args.runs)) and (name, str(seed)) not in tested]
    # The cores divided among the runs trained at once: a row trained alone gets the whole machine.
    threads = args.threads or max(1, (os.cpu_count() or 1) // min(args.jobs, max(1, len(jobs))))
    if args.dry_run:
        for row, seed in jobs:
            print(" ".join(command(row, seed, args.runs, threads)))
        return 0
    failed = 0
    with Stopping() as stopping:  # to the end of the report: a stop signal does not cut its files short
        if jobs and not args.report:
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                running = [pool.submit(train, row, seed, args.runs, threads, stopping) for row, seed in jobs]
                for landed in as_completed(running):
                    name, seed, code = landed.result()
                    print(f"learning: {name} seed {seed}: {ended(code, stopping.signum)}", flush=True)
                    failed += code != 0 and stopping.signum is None
                    if code == 0 and not all(job.done() for job in running):
                        write_results(args, rows)  # each run's results as it lands, not after the last run
        print(write_results(args, rows), end="")
    if stopping.signum is not None:
        print(f"learning: stopped by {signal.Signals(stopping.signum).name}: the same command continues the runs "
              "from their checkpoints", file=sys.stderr)
        return 128 + stopping.signum
    return 1 if failed else 0


def write_results(args: argparse.Namespace, rows: dict[str, Row]) -> str:
    """Rewrite the results (a suite's, or the rows') from the runs on disk; returns what to print of them."""
    if args.suite:
        return suite_report(args.suite, args.runs, args.out)
    return "".join(f"learning: {t['row']} seed {t['seed']}: test {t['test_return_mean']} ± {t['test_return_std']} "
                   f"(target {float(t['target']):g}: {'met' if str(t['met']) == 'True' else 'MISSED'})\n"
                   for t in report(rows, args.runs, args.out))


def ended(code: int | None, signum: int | None) -> str:
    """How a run ended, for its line: done, stopped (by the runner's stop signal), not started, or its status."""
    if code == 0:
        return "done"
    if code is None:
        return "not started (stopped)"
    if signum is not None and code == 128 + signum:
        return "stopped (the same command continues it)"
    return f"exit status {code}" + (" while stopping" if signum is not None else "")


if __name__ == "__main__":
    sys.exit(main())
