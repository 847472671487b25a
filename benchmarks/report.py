"""What the benchmark ran on, and its results as a markdown report (the README's table is copied from it)."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rlconf.experiments.rundir.provenance import installed_versions

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rlconf", "torch", "stable_baselines3", "tianshou", "torchrl", "gymnasium", "numpy")
PEERS = {"tianshou": "Tianshou", "torchrl": "TorchRL"}  # the peers beside SB3 (benchmarks/peers.py PEERS)


class OtherLoad:
    """How busy the rest of the machine was while a trial's child process ran: made just before it starts,
    ``measure()`` just after it ends gives (wall seconds, the children's CPU seconds, the cores other processes
    used on average: None off Linux). A trial's timing is comparable with another's only under like loads."""

    def __init__(self):
        self.busy, self.ours, self.start = busy_cpu_seconds(), children_cpu_seconds(), time.perf_counter()

    def measure(self) -> tuple[float, float, float | None]:
        wall = time.perf_counter() - self.start
        cpu = children_cpu_seconds() - self.ours
        others = None
        if self.busy is not None and (busy := busy_cpu_seconds()) is not None:
            others = round(max(0.0, (busy - self.busy) - cpu) / wall, 2)
        return wall, cpu, others


def busy_cpu_seconds() -> float | None:
    """CPU time all processes of the machine have used since boot (Linux), or None elsewhere."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle, iowait = fields[3], fields[4]
    return (sum(fields[:8]) - idle - iowait) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit() -> str | None:
    """The checkout's commit (read-only); numbers are only comparable between runs of known code."""
    try:
        result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return result.stdout.strip()


def machine_info() -> dict[str, Any]:
    installed = installed_versions(PACKAGES)
    versions = {package: installed.get(package) for package in PACKAGES}  # None: not installed
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "commit": git_commit(),
        "gpu": gpu_name(),
    }


def gpu_name() -> str | None:
    """The CUDA device a ``--device cuda`` benchmark trains on (None where none is visible)."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


# -- formatting ------------------------------------------------------------------------------------------
def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _rate(value: float | None, ran: bool = True) -> str:
    if not ran:
        return "–"
    return "failed" if value is None else f"{value:,.0f}"


def _ratio(ours: float | None, theirs: float | None) -> str:
    return "–" if ours is None or not theirs else f"{ours / theirs:.2f}×"


def _returns(trials: list[dict]) -> str:
    values = [t["test_return_mean"] for t in trials if t.get("test_return_mean") is not None]
    if not values:
        return "–"
    per_seed = ", ".join(f"{v:.1f}" for v in values)
    return f"{_mean(values):.1f} ({per_seed})" if len(values) > 1 else f"{values[0]:.1f}"


def _train_rate(trials: list[dict]) -> float | None:
    return _mean([t["steps_per_second"] for t in trials if "steps_per_second" in t])


def training_table(training: list[dict]) -> list[str]:
    """Training steps/s of rlconf, SB3 and the limit (limit.py: the same arithmetic in plain PyTorch), with
    the ratios, greedy test returns and each library's CPU seconds per 1,000 steps, its whole process."""
    lines = ["| workload | rlconf steps/s | SB3 steps/s | limit steps/s | rlconf/SB3 | rlconf/limit | "
             "rlconf test return | SB3 test return | limit test return | CPU s per 1k steps (rlconf, SB3, limit) |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for row in training:
        ours, theirs, limit = (_train_rate(row.get(side, [])) for side in ("rlconf", "sb3", "limit"))
        compared = row.get("sb3_kwargs", True) is not None  # SB3 has no such algorithm otherwise
        cpu = ", ".join(_cpu_per_k(row.get(side, [])) for side in ("rlconf", "sb3", "limit"))
        lines.append(f"| {row['title']} | {_rate(ours)} | {_rate(theirs, compared)} | "
                     f"{_rate(limit, bool(row.get('limit')))} | {_ratio(ours, theirs)} | {_ratio(ours, limit)} "
                     f"| {_returns(row['rlconf'])} | {_returns(row['sb3'])} | {_returns(row.get('limit', []))} "
                     f"| {cpu} |")
    return lines


def peers_table(results: dict[str, Any]) -> list[str]:
    """rlconf against each peer beyond SB3 (peers.py): training rates, ratios, greedy test returns and CPU seconds
    per 1,000 steps, on the workloads a peer runs; a peer not installed is one line saying so."""
    peers = results.get("peers", {"ran": [], "skipped": {}})
    lines = [f"Skipped: {reason}." for reason in peers["skipped"].values()]
    ran = [name for name in PEERS if name in peers["ran"]]
    rows = [row for row in results["training"] if any(row.get(name) for name in ran)]
    if not rows:
        return ["", *lines] if lines else []
    labels = [PEERS[name] for name in ran]
    header = (["workload", "rlconf steps/s", *(f"{label} steps/s" for label in labels),
               *(f"rlconf/{label}" for label in labels), "rlconf test return",
               *(f"{label} test return" for label in labels),
               f"CPU s per 1k steps (rlconf, {', '.join(labels)})"])
    table = ["| " + " | ".join(header) + " |", "|---|" + "--:|" * (len(header) - 1)]
    notes = []
    for row in rows:
        ours = _train_rate(row["rlconf"])
        theirs = [_train_rate(row.get(name, [])) for name in ran]
        cells = [row["title"], _rate(ours),
                 *(_rate(rate, bool(row.get(name))) for rate, name in zip(theirs, ran, strict=True)),
                 *(_ratio(ours, rate) for rate in theirs), _returns(row["rlconf"]),
                 *(_returns(row.get(name, [])) for name in ran),
                 ", ".join(_cpu_per_k(row.get(side, [])) for side in ("rlconf", *ran))]
        table.append("| " + " | ".join(cells) + " |")
        for name in ran:
            departures = sorted({d for t in row.get(name, []) for d in t.get("departures", [])})
            notes += [f"- {PEERS[name]}, {row['title']}: {d}." for d in departures]
    intro = (f"Beside them, in the same run, {' and '.join(labels)} at the same settings (benchmarks/peers.py maps the "
             "workload to each library's names; peer_tianshou.py and peer_torchrl.py train as the libraries' own "
             "examples do, env copies in-process). Steps/s: env steps over the wall time of the library's training "
             "call or loop, its off-policy warm-up included as rlconf's is.")
    return ["", *lines, *([""] if lines else []), intro, "", *table,
            *(["", "Where a peer's run departs from the workload:", *notes] if notes else [])]


def compile_table(training: list[dict]) -> list[str]:
    """rlconf eager against rlconf with ``hardware.compile=true``: training rates with compilation and without
    it (its seconds taken out), the compilation itself, and the greedy test returns of both."""
    rows = [row for row in training if row.get("compiled")]
    if not rows:
        return []
    lines = ["", "| workload | eager steps/s | compiled steps/s | compiled/eager | compiled, without compiling | "
             "compile s | eager test return | compiled test return |", "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for row in rows:
        eager, compiled = _train_rate(row["rlconf"]), _train_rate(row["compiled"])
        warm = _mean([t["steps"] / (t["wall_seconds"] - t["compile_seconds"]) for t in row["compiled"]
                      if t.get("compile_seconds") is not None and t["wall_seconds"] > t["compile_seconds"]])
        seconds = _mean([t["compile_seconds"] for t in row["compiled"] if t.get("compile_seconds") is not None])
        lines.append(f"| {row['title']} | {_rate(eager)} | {_rate(compiled)} | {_ratio(compiled, eager)} | "
                     f"{_rate(warm)} ({_ratio(warm, eager)}) | {'–' if seconds is None else f'{seconds:.1f}'} | "
                     f"{_returns(row['rlconf'])} | {_returns(row['compiled'])} |")
    return lines


def _cpu_per_k(trials: list[dict]) -> str:
    """The trials' whole-process CPU seconds (startup, imports, training and test) per 1,000 training steps."""
    values = [t["process_cpu_seconds"] / t["steps"] * 1000 for t in trials
              if t.get("process_cpu_seconds") is not None and t.get("steps")]
    return f"{_mean(values):.2f}" if values else "–"


def rates_table(rates: list[dict]) -> list[str]:
    lines = ["| measurement (no learning) | rlconf steps/s | SB3 steps/s | rlconf/SB3 |", "|---|--:|--:|--:|"]
    for row in rates:
        ours, theirs = row["rlconf"].get("steps_per_second"), row["sb3"].get("steps_per_second")
        lines.append(f"| {row['title']} | {_rate(ours)} | {_rate(theirs)} | {_ratio(ours, theirs)} |")
    return lines


def memory_lines(memory: list[dict]) -> list[str]:
    """Replay memory of a million stacked-frame transitions, from the bytes each library allocates per slot."""
    lines = []
    for row in memory:
        if "rlconf_bytes_per_transition" not in row:
            continue
        ours = row["rlconf_bytes_per_transition"]
        theirs = row["sb3_bytes_per_transition"]
        shape = "x".join(str(n) for n in row["observation_shape"])
        sb3 = "; ".join(f"SB3 {option}: {_gb(size)} ({size / ours:.1f}x)" for option, size in theirs.items())
        lines += ["", f"Replay memory, {row['title']} ({shape} uint8 observations), 1M transitions: "
                  f"rlconf {_gb(ours)} ({ours:,.0f} bytes per transition, every frame stored once); {sb3}."]
    return lines


def _gb(bytes_per_transition: float) -> str:
    return f"{bytes_per_transition * 1e6 / 1e9:.2f} GB"


def machine_line(machine: dict[str, Any]) -> str:
    v = machine["versions"]
    commit = f" @ {machine['commit']}" if machine["commit"] else ""
    gpu = f", GPU {machine['gpu']}" if machine.get("gpu") else ""
    peers = "".join(f"{label} {v[name]}, " for name, label in PEERS.items() if v.get(name))
    return (f"{machine['cpu']}, {machine['cores']} cores ({machine['usable_cores']} usable){gpu}; "
            f"Python {machine['python']}, torch {v['torch']}, SB3 {v['stable_baselines3']}, "
            f"{peers}gymnasium {v['gymnasium']}, rlconf {v['rlconf']}{commit}; {machine['date']}")


BUSY_CORES = 0.25  # other processes using more than this (on average, during a trial) make its timing suspect


def closing_notes(results: dict[str, Any]) -> list[str]:
    """What qualifies the whole report: contention, trials resumed from a journal, failures."""
    lines = contention_note(results) + resumed_note(results)
    if results["errors"]:
        lines += ["", "Failed trials:", *(f"- {error}" for error in results["errors"])]
    return lines


def _trials(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every trial of the report: training, loop rates and scaling."""
    trials = [t for row in results["training"] for side in ("rlconf", "compiled", "sb3", "limit", *PEERS)
              for t in row.get(side, [])]
    trials += [row[side] for row in results["rates"] for side in ("rlconf", "sb3")]
    return trials + [t for row in results.get("scaling", []) for v in row["variants"] for t in v["trials"]]


def contention_note(results: dict[str, Any]) -> list[str]:
    """A warning when other processes shared the CPU with the trials: their timings are then lower bounds."""
    loads = [t["other_cpu_cores"] for t in _trials(results) if t.get("other_cpu_cores") is not None]
    if not loads or max(loads) <= BUSY_CORES:
        return []
    busy = sum(load > BUSY_CORES for load in loads)
    return ["", f"Warning: other processes used more than {BUSY_CORES} cores during {busy} of {len(loads)} trials "
            f"(up to {max(loads):.2f} cores, mean {_mean(loads):.2f}); those timings are distorted. Rerun on an idle "
            "machine before quoting them."]


def resumed_note(results: dict[str, Any]) -> list[str]:
    """Where ``--resume`` took trials from an interrupted run's journal: how many, and when the trials ran."""
    if not results.get("resumed_trials"):
        return []
    finished = sorted(t["finished"] for t in _trials(results) if t.get("finished"))
    return ["", f"{results['resumed_trials']} of these trials were finished by an earlier, interrupted run of the "
            f"same commit and options (taken from its journal with --resume); the trials finished between "
            f"{finished[0]} and {finished[-1]}."]


def scaling_table(rows: list[dict]) -> list[str]:
    """rlconf against itself: each way of running a workload, its rate beside its group's first (baseline)."""
    lines = ["| workload | how | steps/s | vs first | test return |", "|---|---|--:|--:|--:|"]
    for row in rows:
        baseline = _train_rate(row["variants"][0]["trials"])
        for variant in row["variants"]:
            rate = _train_rate(variant["trials"])
            lines.append(f"| {row['title']} | {variant['label']} | {_rate(rate)} | {_ratio(rate, baseline)} "
                         f"| {_returns(variant['trials'])} |")
    notes = [f"- {row['title']}: {row['note']}" for row in rows if row.get("note")]
    return lines + ([""] + notes if notes else [])


def render_scaling(results: dict[str, Any]) -> str:
    options = results["options"]
    lines = [f"## rlconf: samplers, runners and learners{' (quick: smoke test only)' if options['quick'] else ''}",
             "", f"Machine: {machine_line(results['machine'])}", "",
             f"Each workload run each way through `rlconf run` (its overrides in benchmarks/presets.py SCALING), "
             f"{options['seeds']} seed(s), one process tree per trial, one trial at a time, torch.set_num_threads(1) "
             "in every process. Steps/s: environment steps over training wall time, mean over seeds; test return: "
             f"greedy, {options['test_episodes']} episodes, mean over seeds (per seed in brackets).", ""]
    lines += scaling_table(results["scaling"])
    lines += closing_notes(results)
    return "\n".join(lines) + "\n"


def render(results: dict[str, Any]) -> str:
    """The markdown report: training at matched hyperparameters, then the loop rates behind it."""
    if results.get("scaling"):
        return render_scaling(results)
    options = results["options"]
    mode = " (quick: shortened budgets, smoke test only)" if options["quick"] else ""
    cuda = options.get("device") == "cuda"
    where = " on the GPU (rlconf: hardware=gpu; SB3: device=cuda)" if cuda else ""
    lines = [f"## rlconf vs Stable-Baselines3, Tianshou and TorchRL{where}{mode}", "",
             f"Machine: {machine_line(results['machine'])}", "",
             f"Training at the hyperparameters of rlconf's presets (plus each workload's overrides in "
             f"benchmarks/presets.py), {options['seeds']} seed(s) per library, one process per trial, run one after "
             "another, torch.set_num_threads(1). Steps/s is agent steps over training wall time (rlconf: its "
             "training loop; SB3: model.learn), mean over seeds. Test return: greedy, "
             f"{options['test_episodes']} episodes, mean over seeds (per seed in brackets); the 20k-step Atari "
             "agents are not tested.", ""]
    lines += training_table(results["training"])
    lines += peers_table(results)
    if any(row.get("compiled") for row in results["training"]):
        mode = "mode reduce-overhead: CUDA graphs" if cuda else "torch.compile's default mode on a CPU"
        lines += ["", f"rlconf with `hardware.compile=true` ({mode}; a fresh compiler "
                  "cache per trial, so each pays its compilation as a first run does): its training rate with the "
                  "compilation counted, and without it."]
        lines += compile_table(results["training"])
    lines += ["", f"Loop rates: median of 3 windows of {options['window_seconds']:g} s after a warm-up, untrained "
              "networks. Raw env: random actions, rlconf vectorised as its adapter does (SB3: its DummyVecEnv). "
              "Acting: rlconf's test agent (agent.test_agent()) over its env; SB3's model.predict(deterministic=True) "
              "over its vector env.", ""]
    lines += rates_table(results["rates"])
    lines += memory_lines(results.get("memory", []))
    lines += closing_notes(results)
    return "\n".join(lines) + "\n"
