"""rlconf, Stable-Baselines3, Tianshou and TorchRL side by side, in one run, at matched workloads.

    python benchmarks/bench.py              # every workload, 3 seeds per library (not timed since the peers joined)
    python benchmarks/bench.py --workloads dqn-breakout rainbow-breakout --seeds 2
    python benchmarks/bench.py --quick      # 1 seed, a tenth of the budgets: a smoke test, not a measurement
    nox -s bench -- --seeds 5               # a venv of its own, with every peer installed
    python benchmarks/bench.py --device cuda --workloads dqn-breakout rainbow-breakout --seeds 1   # on a GPU

Workloads (presets.WORKLOADS) are rlconf's presets plus a few overrides, read at run time; presets.py maps
them to SB3's arguments, env and wrappers, peers.py to Tianshou's and TorchRL's (peer_tianshou.py and
peer_torchrl.py train them as those libraries' own examples do). rlconf trains through ``rlconf run``, every
other library in trial.py, each trial in a fresh process, one at a time: on a 2-core machine, parallel trials
would time each other. A peer this interpreter cannot import is skipped, and the report says so in one line
(Tianshou 2.x pins pandas<3 and virtualenv<21, so it may not fit beside a project venv: ``nox -s bench``
installs it in the bench session's own venv).

Where the results go: a full run's report and raw results to benchmarks/results/speed/bench-YYYYMMDD-HHMMSS.md
(and .json; scaling-... for ``--scaling``), which are committed. The README's speed tables (its Benchmarks
section) are copied from one such report and link it by name (bench-20261204-021121.md, an idle run).
``--quick`` runs (smoke tests) and the latest.md/latest.json copies go to benchmarks/results/, which git ignores.
The report is printed too.

Every finished trial is journalled as it lands (benchmarks/results/bench-journal.json; scaling- and quick- for
those runs): a run of hours that is interrupted goes on where it stopped with the same command plus ``--resume``
(same commit and options; its report says how many trials came from the journal and when they ran), and
``--resume --seeds 3`` after a finished 2-seed run adds the third seed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import limit
from peers import PEERS, Unmatched, installed, peer_kwargs
from presets import SCALING, WORKLOADS, Scaling, Workload, describe, load_settings, recurrent, sb3_kwargs
from report import OtherLoad, git_commit, machine_info, render

from rlconf.settings import Settings

HERE = Path(__file__).resolve().parent
TRIAL = HERE / "trial.py"
RESULTS = HERE / "results"  # scratch: quick runs and the latest.* copies (ignored by git)
REPORTS = RESULTS / "speed"  # full runs' reports and raw results, committed
QUICK_DIVISOR = 10  # --quick trains for this fraction of the preset's budget
JOURNALS = RESULTS  # each kind's latest run, trial by trial, for --resume: bench-, scaling-, quick-journal.json
SCALING_TEST_EPISODES = 10  # the scaling trials' greedy test: the return at the same budget, each way


class TrialError(RuntimeError):
    """A trial's process failed; the message carries the end of its stderr."""


@dataclass
class Plan:
    """A workload as this benchmark runs it: its budget, env size, test episodes and SB3's arguments."""

    name: str
    agent: str
    env_id: str
    family: str
    overrides: list[str]
    steps: int
    n_envs: int
    test_episodes: int
    sb3_kwargs: dict[str, Any] | None  # None: SB3 has no such algorithm
    peers: dict[str, dict[str, Any] | None]  # each peer's arguments (peers.py); None: it has no such workload

    device: str = "cpu"  # where both libraries put their networks: cpu, or cuda (rlconf's hardware=gpu)
    variant: str = ""  # what sets the workload apart from the agent's plain one: " + LSTM of 128, velocities hidden"
    limit: bool = False  # limit.py has the workload's arithmetic in plain PyTorch

    @property
    def title(self) -> str:
        return f"{self.agent.upper()}{self.variant} {self.env_id}, {self.steps:,} steps, {plural(self.n_envs, 'env')}"


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def plan(workload: Workload, quick: bool, test_episodes: int, device: str = "cpu") -> Plan:
    steps = load_settings(workload).run.steps
    if quick:
        steps //= QUICK_DIVISOR
    # Composed again with the budget: SB3's exploration fraction and rlconf's schedules depend on it.
    settings = load_settings(workload, steps)
    if workload.test_episodes is not None:
        test_episodes = workload.test_episodes
    sb3 = describe(sb3_kwargs(settings)) if workload.sb3 else None
    return Plan(workload.name, workload.agent, settings.env.id, settings.env.family,
                workload.command_overrides(steps), steps, settings.hardware.n_envs, test_episodes, sb3,
                peer_plans(workload, settings, device), device,
                workload.label + variant(settings),
                # limit.py is the eager arithmetic on a CPU core: it has no GPU twin to compare with
                limit.implements(settings) and device == "cpu")


def peer_plans(workload: Workload, settings: Settings, device: str) -> dict[str, dict[str, Any] | None]:
    """Each peer's arguments where it runs the workload: the peers run where SB3 does (the shared workloads), on
    the CPU, and where their mapping can express every setting (peers.Unmatched otherwise)."""
    plans: dict[str, dict[str, Any] | None] = {}
    for name in PEERS:
        try:
            plans[name] = peer_kwargs(name, settings) if workload.sb3 and device == "cpu" else None
        except Unmatched:
            plans[name] = None
    return plans


def variant(settings: Settings) -> str:
    """A recurrent core and a masking body, as the title says them: `` + LSTM of 64 (velocities hidden)``."""
    model = settings.approximation
    core = f" + {model['recurrent'].upper()} of {model['recurrent_hidden']}" if recurrent(settings) else ""
    return core + (" (velocities hidden)" if settings.body.name == "mask_velocity" else "")


# -- running trials ----------------------------------------------------------------------------------------
def run_process(command: list[str], label: str, environment: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one trial's process; returns how long it took and how busy the rest of the machine was meanwhile.

    A trial shares the machine with whatever else runs; the CPU others used during it (cores, on average)
    says whether its timing can be trusted, and the report flags it.
    """
    print(f"  {label} ...", end="", file=sys.stderr, flush=True)
    load = OtherLoad()
    process = subprocess.run(command, capture_output=True, text=True, env=environment)
    wall, cpu, others = load.measure()  # cpu: the trial's whole process (startup, imports, training, test)
    print(f" {wall:.0f} s (other processes: {others} cores)", file=sys.stderr, flush=True)
    if process.returncode != 0:
        tail = " | ".join(process.stderr.strip().splitlines()[-5:])
        raise TrialError(f"{label}: exit status {process.returncode}: {tail}")
    return {"process_seconds": round(wall, 1), "process_cpu_seconds": round(cpu, 2), "other_cpu_cores": others}


def train_rlconf(plan: Plan, seed: int, scratch: Path, compiled: bool = False) -> dict[str, Any]:
    """One ``rlconf run`` through the real CLI; its summary.json has the training rate and the test returns.
    ``compiled``: with ``hardware.compile=true`` (otherwise false: auto would decide by itself), in a fresh
    compiler cache so that every trial pays its compilation, as a first run does."""
    logdir = scratch / f"rlconf{'-compiled' if compiled else ''}-{plan.name}-s{seed}"
    hardware = ["hardware=gpu"] if plan.device == "cuda" else []
    command = [sys.executable, "-m", "rlconf", "run", *hardware, *plan.overrides, f"seed={seed}",
               f"test_episodes={plan.test_episodes}", "quiet=true", f"logdir={logdir}", "hardware.torch_threads=1",
               f"hardware.compile={str(compiled).lower()}",
               # No periodic evaluation or checkpoints inside the timed loop: SB3's learn() does neither.
               "eval_every=0", "checkpoint_every=0"]
    environment = ({**os.environ, "TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(prefix="inductor-", dir=scratch)}
                   if compiled else None)
    process = run_process(command, f"{'rlconf+compile' if compiled else 'rlconf'} {plan.name} seed {seed}",
                          environment)
    summary = json.loads(next(logdir.glob("*/summary.json")).read_text())
    keys = ("steps", "wall_seconds", "steps_per_second", "test_return_mean", "test_return_std", "test_episodes",
            "compile_seconds")
    return {**{key: summary[key] for key in keys if key in summary}, **process}


def run_trial(args: list[str], label: str, scratch: Path) -> dict[str, Any]:
    """One trial.py process; it leaves its result as JSON in a file of its own."""
    out = Path(tempfile.mkdtemp(prefix=f"{args[0]}-", dir=scratch)) / "result.json"
    process = run_process([sys.executable, str(TRIAL), *args, "--out", str(out)], label)
    return {**json.loads(out.read_text()), **process}


def measure(trials: Trials, args: list[str], label: str) -> dict[str, Any]:
    """A trial.py measurement (no training) under ``trials``, journalled by its label."""
    return trials.run(" ".join(label.split()), run_trial, args, label, trials.scratch)


LABELS = {"sb3": "SB3", "limit": "limit", **{name: peer.label for name, peer in PEERS.items()}}


def train_in_trial(library: str, plan: Plan, seed: int, scratch: Path) -> dict[str, Any]:
    """Train ``library`` (``sb3``, ``limit`` or a peer's name: trial.py's ``LIBRARY-train``) on the workload."""
    args = [f"{library}-train", plan.name, "--steps", str(plan.steps), "--seed", str(seed),
            "--test-episodes", str(plan.test_episodes), "--device", plan.device]
    return run_trial(args, f"{LABELS[library]:8} {plan.name} seed {seed}", scratch)


def peers_to_run(plans: list[Plan]) -> tuple[list[str], dict[str, str]]:
    """The peers that run (installed, with a workload here), and a reason for each that is skipped."""
    wanted = [name for name in PEERS if any(p.peers.get(name) is not None for p in plans)]
    running = [name for name in wanted if installed(PEERS[name])]
    skipped = {name: f"{PEERS[name].label} is not installed in this interpreter ({sys.executable})"
               for name in wanted if name not in running}
    return running, skipped


class Trials:
    """Runs the benchmark's trials, keeps their failures, and journals every finished trial the moment it lands
    (one journal per kind of run: journal_path), so that a benchmark of hours that is interrupted (a session's
    end, a killed shell) resumes with ``--resume`` where it stopped instead of starting over; ``--resume --seeds
    3`` after a 2-seed run adds the third seed. A journal holds one commit and one set of options: trials of other
    code or other budgets in one report would compare different things, so resuming under others is refused."""

    def __init__(self, scratch: Path, header: dict[str, Any], journal: Path, resume: bool = False) -> None:
        self.scratch, self.header, self.journal = scratch, header, journal
        self.errors: list[str] = []
        self.done: dict[str, dict[str, Any]] = read_journal(journal, header) if resume else {}
        self.resumed = 0
        self._write()

    def run(self, key: str, trial, *args) -> dict[str, Any]:
        """``trial(*args)``'s result, or the journal's where an earlier run finished the same trial; a failure is
        recorded and reported, and the rest of the benchmark still runs."""
        if key in self.done:
            print(f"  {key} ... from the journal ({self.done[key]['finished']})", file=sys.stderr, flush=True)
            self.resumed += 1
            return self.done[key]
        try:
            result = trial(*args)
        except (TrialError, OSError, StopIteration, json.JSONDecodeError) as error:
            message = str(error) or f"{type(error).__name__} (no result file)"
            print(f"  FAILED: {message}", file=sys.stderr)
            self.errors.append(message)
            return {"error": message}
        self.done[key] = {**result, "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        self._write()
        return self.done[key]

    def _write(self) -> None:
        """Replace the journal whole (written aside, then renamed): a kill mid-write leaves the previous one."""
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        aside = self.journal.with_suffix(".tmp")
        aside.write_text(json.dumps({"header": self.header, "trials": self.done}, indent=1))
        aside.replace(self.journal)


class JournalError(ValueError):
    """--resume cannot use the journal; the message says why and what to do."""


def read_journal(path: Path, header: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The finished trials of the journal at ``path``, which must have been written under ``header``."""
    if not path.exists():
        raise JournalError(f"--resume: no journal at {path}; run without --resume to start one")
    try:
        saved = json.loads(path.read_text())
        written, trials = saved["header"], saved["trials"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise JournalError(f"--resume: {path} is not a benchmark journal ({error}); run without --resume") from None
    differs = [f"{key} {written.get(key)!r} there, {value!r} now" for key, value in header.items()
               if written.get(key) != value]
    if differs:
        raise JournalError(f"--resume: {path} was written under other settings ({'; '.join(differs)}); "
                           "run without --resume to start again")
    return trials


def training(plans: list[Plan], seeds: int, trials: Trials, compile_too: bool = True,
             peers: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    rows = [{"title": p.title, **asdict(p), "rlconf": [], "compiled": [], "sb3": [], "limit": [],
             **{name: [] for name in PEERS}} for p in plans]
    # Seeds outermost and the libraries back to back: a slow drift of the machine (a noisy neighbour,
    # thermal limits) then falls on all sides alike instead of on whichever library ran last.
    for seed in range(seeds):
        for row, p in zip(rows, plans, strict=True):
            key = f"{p.name} seed {seed}"
            row["rlconf"].append({"seed": seed, **trials.run(f"rlconf {key}", train_rlconf, p, seed, trials.scratch)})
            if compile_too:
                row["compiled"].append({"seed": seed, **trials.run(f"rlconf+compile {key}", train_rlconf, p, seed,
                                                                   trials.scratch, True)})
            others = [("sb3", p.sb3_kwargs is not None), *((name, p.peers.get(name) is not None) for name in peers),
                      ("limit", p.limit)]
            for library, runs in others:
                if runs:
                    row[library].append({"seed": seed, **trials.run(f"{library} {key}", train_in_trial, library, p,
                                                                    seed, trials.scratch)})
    return rows


def rates(plans: list[Plan], seconds: float, trials: Trials) -> list[dict[str, Any]]:
    """Loop rates without learning: each env raw (1 copy and the workloads' sizes), then each agent's greedy
    acting over its training env; only where SB3 runs the workload too."""
    window = ["--seconds", str(seconds)]
    compared = [p for p in plans if p.sb3_kwargs is not None]
    rows = []
    envs: dict[str, tuple[str, set[int]]] = {}  # env id -> (a workload on it, its sizes)
    for p in compared:
        envs.setdefault(p.env_id, (p.name, {1}))[1].add(p.n_envs)
    for env_id, (name, sizes) in envs.items():
        for n in sorted(sizes):
            args = [name, str(n), *window]
            ours = measure(trials, ["env-rlconf", *args], f"env rlconf {env_id} x{n}")
            theirs = measure(trials, ["env-sb3", *args], f"env SB3    {env_id} x{n}")
            kinds = f"rlconf: {ours.get('vectorisation', '?')}, SB3: {theirs.get('vectorisation', '?')}"
            title = f"{env_id} raw env, {plural(n, 'env')}, random actions ({kinds})"
            rows.append({"title": title, "rlconf": ours, "sb3": theirs})
    for p in compared:
        ours = measure(trials, ["collect-rlconf", p.name, *window], f"act rlconf {p.name}")
        theirs = measure(trials, ["collect-sb3", p.name, *window], f"act SB3    {p.name}")
        title = f"{p.agent.upper()} {p.env_id} greedy acting, {plural(p.n_envs, 'env')}"
        rows.append({"title": title, "rlconf": ours, "sb3": theirs})
    return rows


def scaling(groups: list[Scaling], seeds: int, quick: bool, test_episodes: int,
            trials: Trials) -> list[dict[str, Any]]:
    """rlconf against itself: each group's workload run each of its ways (sampler, runner, learners), the
    variants of a group back to back within a seed so that a drift of the machine falls on all alike."""
    rows = []
    for group in groups:
        base = plan(replace(group.workload, sb3=False), quick, test_episodes)
        variants = []
        for label, extra in group.variants:
            overrides = [*base.overrides[:-1], *extra, base.overrides[-1]] if quick else [*base.overrides, *extra]
            variants.append({"label": label, "plan": Plan(**{**asdict(base), "name": f"{group.name}-{label}",
                                                             "overrides": overrides, "sb3_kwargs": None}),
                             "trials": []})
        rows.append({"name": group.name, "title": base.title, "note": group.note, "variants": variants})
    for seed in range(seeds):
        for row in rows:
            for variant in row["variants"]:
                name = variant["plan"].name
                variant["trials"].append({"seed": seed, **trials.run(f"rlconf {name} seed {seed}", train_rlconf,
                                                                     variant["plan"], seed, trials.scratch)})
    for row in rows:
        for variant in row["variants"]:
            variant["overrides"] = variant.pop("plan").overrides
    return rows


def memory(plans: list[Plan], trials: Trials) -> list[dict[str, Any]]:
    """Replay memory per transition for the first replay workload on stacked frames (Atari)."""
    for p in plans:
        if p.family == "atari" and p.sb3_kwargs is not None and "buffer_size" in p.sb3_kwargs:
            result = measure(trials, ["memory", p.name], f"memory {p.name}")
            return [{"title": p.env_id, **result}]
    return []


# -- the run -------------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=None, help="seeds per algorithm per library (default 3; 1 quick)")
    parser.add_argument("--quick", action="store_true", help="1 seed, a tenth of the budgets: a smoke test")
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS),
                        metavar="NAME", help=f"default: all of {', '.join(WORKLOADS)}")
    parser.add_argument("--scaling", nargs="*", choices=list(SCALING), default=None, metavar="NAME",
                        help="instead of the comparison with SB3, rlconf against itself: samplers, the async "
                             f"runner and data-parallel learners (all, or some of: {', '.join(SCALING)})")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where both libraries train: cuda puts rlconf on hardware=gpu and SB3 on device=cuda "
                             "(default: %(default)s)")
    parser.add_argument("--no-compile", action="store_true",
                        help="skip the trials of rlconf with hardware.compile=true")
    parser.add_argument("--resume", action="store_true",
                        help="take the trials an interrupted run finished from its journal "
                             "(benchmarks/results/bench-journal.json, scaling- or quick-; same "
                             "commit and options) and run the rest, or the seeds and workloads added since")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"folder for the results (default: {REPORTS.relative_to(HERE.parent)}, committed; "
                             f"{RESULTS.relative_to(HERE.parent)} for --quick)")
    args = parser.parse_args(argv)
    if args.seeds is None:
        args.seeds = 1 if args.quick else 3
    if args.seeds < 1:
        parser.error(f"--seeds {args.seeds}: must be at least 1")
    if args.out is None:
        args.out = RESULTS if args.quick else REPORTS
    return args


def journal_path(args: argparse.Namespace) -> Path:
    """The journal of this kind of run: a --quick smoke test or a --scaling run never overwrites the journal of an
    interrupted comparison (nor each other's)."""
    kind = "quick" if args.quick else "scaling" if args.scaling is not None else "bench"
    return JOURNALS / f"{kind}-journal.json"


def report_stem(results: dict[str, Any], when: datetime) -> str:
    """``bench-YYYYMMDD-HHMMSS`` (``scaling-`` for --scaling, ``quick-`` for --quick): the name the README cites."""
    kind = "scaling-" if results.get("scaling") else "bench-"
    return ("quick-" if results["options"]["quick"] else kind) + when.strftime("%Y%m%d-%H%M%S")


def write_results(results: dict[str, Any], report: str, folder: Path) -> Path:
    """Timestamped files in ``folder``, plus latest.* copies in the scratch folder (benchmarks/results/, ignored)
    to diff against the README without hunting for names."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = report_stem(results, datetime.now())
    (folder / f"{stem}.json").write_text(json.dumps(results, indent=2))
    (folder / f"{stem}.md").write_text(report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / f"{stem}.json", RESULTS / "latest.json")
    shutil.copyfile(folder / f"{stem}.md", RESULTS / "latest.md")
    return folder / f"{stem}.md"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    test_episodes = 10 if args.quick else 100
    window_seconds = 0.3 if args.quick else 2.0
    start = time.perf_counter()
    header = {"commit": git_commit(), "quick": args.quick, "device": args.device, "scaling": args.scaling is not None,
              "test_episodes": SCALING_TEST_EPISODES if args.scaling is not None else test_episodes,
              "window_seconds": window_seconds}
    with tempfile.TemporaryDirectory(prefix="rlconf-bench-") as tmp:
        try:
            trials = Trials(Path(tmp), header, journal_path(args), resume=args.resume)
        except JournalError as error:
            print(f"bench: {error}", file=sys.stderr)
            return 2
        if args.scaling is not None:  # rlconf against itself
            groups = [SCALING[name] for name in args.scaling or SCALING]
            print(f"scaling ({args.seeds} seed(s)):", file=sys.stderr)
            scaling_rows = scaling(groups, args.seeds, args.quick, SCALING_TEST_EPISODES, trials)
            results = {"options": {"seeds": args.seeds, "quick": args.quick, "test_episodes": SCALING_TEST_EPISODES,
                                   "scaling": [g.name for g in groups]},
                       "machine": machine_info(), "training": [], "rates": [], "scaling": scaling_rows}
            return finish({**results, **outcome(trials, start)}, args.out)
        plans = [plan(WORKLOADS[name], args.quick, test_episodes, args.device) for name in args.workloads]
        print("loop rates:", file=sys.stderr)
        rate_rows = rates(plans, window_seconds, trials)
        memory_rows = memory(plans, trials)
        peers, skipped = peers_to_run(plans)
        for reason in skipped.values():
            print(f"skipped: {reason}", file=sys.stderr)
        print(f"training ({args.seeds} seed(s)):", file=sys.stderr)
        training_rows = training(plans, args.seeds, trials, compile_too=not args.no_compile, peers=tuple(peers))
    results = {
        "options": {"seeds": args.seeds, "quick": args.quick, "test_episodes": test_episodes,
                    "window_seconds": window_seconds, "workloads": args.workloads, "device": args.device},
        "machine": machine_info(),
        "training": training_rows,
        "rates": rate_rows,
        "memory": memory_rows,
        "peers": {"ran": peers, "skipped": skipped},
    }
    return finish({**results, **outcome(trials, start)}, args.out)


def outcome(trials: Trials, start: float) -> dict[str, Any]:
    """What the report says of the run itself: failures, trials taken from the journal, and its duration."""
    return {"errors": trials.errors, "resumed_trials": trials.resumed,
            "bench_seconds": round(time.perf_counter() - start, 1)}


def finish(results: dict[str, Any], folder: Path) -> int:
    """Write and print the report; the exit status says whether every trial ran."""
    report = render(results)
    path = write_results(results, report, folder)
    print(report)
    print(f"results: {path} (and .json); benchmark took {results['bench_seconds']:.0f} s", file=sys.stderr)
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
