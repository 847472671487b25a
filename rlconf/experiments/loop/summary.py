"""What a finished run reports: summary.json's record of it (``summarize``) and the one line the console
prints of it (``summary_line``)."""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlconf.approximation import compiled
from rlconf.experiments.loop.bandit import regret_line
from rlconf.experiments.loop.experiment import Experiment
from rlconf.experiments.loop.learner_group import STEPS_PER_EXCHANGE
from rlconf.experiments.rundir.directory import slurm_job_id
from rlconf.settings import Settings, redact
from rlconf.text import counted


def summarize(settings: Settings, experiment: Experiment, returns: list[float], test_seconds: float,
              run_dir: Path, started_at: float) -> dict[str, Any]:
    """summary.json: the run's budget spent, its test, what the loop found besides (multi-agent players'
    returns, a bandit's regret), why it stopped early (``stop_reason``), and where this attempt ran."""
    steps = experiment.env.steps
    r = np.asarray(returns, dtype=float)
    summary = {
        "state": "done",  # or "pruned" (by an Optuna sweep's pruner, after an evaluation): rlconf status shows it
        "agent": settings.agent_name,
        "env": settings.env.name,
        "env_id": settings.env.id,
        "seed": settings.run.seed,
        "steps": steps,
        "frames": round(steps * experiment.env.frames_per_step),
        "episodes": experiment.episodes,
        "wall_seconds": round(experiment.train_seconds, 3),
        "steps_per_second": round(steps / max(experiment.train_seconds, 1e-9), 1),
        "eval_seconds": round(experiment.eval_seconds, 3),  # of wall_seconds: the periodic evaluations'
        "test_return_mean": float(r.mean()) if len(r) else None,
        "test_return_std": float(r.std()) if len(r) else None,
        "test_episodes": len(r),
        "test_seconds": round(test_seconds, 3),
        **_stalled(experiment),
        **({"compile_seconds": seconds} if (seconds := compiled.seconds()) is not None else {}),
        "n_envs": settings.hardware.n_envs,
        "resumes": experiment.resumes,
        "run_dir": redact(str(run_dir)),  # a token typed into logdir is not kept, as in config.yaml
        "hardware": asdict(settings.hardware),
    }
    summary.update(experiment.details())  # multi-agent: each player's test return; bandits: regret
    if experiment.stop_reason is not None:  # a callback ended it early (stop.*): done, and why
        summary["stop_reason"] = experiment.stop_reason
    summary.update(_placement(started_at))
    return summary


def _stalled(experiment: Experiment) -> dict[str, int]:
    """How many test episodes were cut short for want of rewards, where the test env does that (Atari)."""
    stall_steps = experiment.test_env().stall_steps if experiment.test_stalled else None
    return {"test_episodes_stalled": experiment.test_stalled, "test_stall_steps": stall_steps} if stall_steps else {}


def _placement(started_at: float) -> dict[str, Any]:
    """Where and when this attempt ran: the machine, its Slurm job, its GPUs and CPUs, and the most GPU memory
    its tensors held (what a researcher needs to pack runs_per_gpu runs onto one GPU)."""
    gpu_peak = torch.cuda.max_memory_allocated() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return {"host": os.uname().nodename, "slurm_job_id": slurm_job_id(),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "gpu_memory_peak_bytes": gpu_peak,
            "cpus": sorted(os.sched_getaffinity(0)), "started_at": started_at, "finished_at": time.time()}


def summary_line(title: str, s: dict[str, Any], budget: int) -> str:
    """The console's one line of a finished run's summary."""
    tested = counted(s["test_episodes"], "episode")
    test = (f"test return {s['test_return_mean']:.1f} ± {s['test_return_std']:.1f} over {tested}"
            if s["test_episodes"] else "no test episodes")
    if s["state"] == "pruned":
        test = (f"pruned by the sweep's pruner after the evaluation at step {s['pruned_at_step']:,} (return "
                f"{s['pruned_eval_return']:.1f}): not tested")
    if s.get("test_episodes_stalled"):
        test += (f" ({s['test_episodes_stalled']} cut short after {counted(s['test_stall_steps'], 'step')} "
                 "without a reward)")
    if "test_win_or_draw" in s:  # a multi-agent test against opponents
        test += f" (won or drawn: {s['test_win_or_draw']:.1%})"
    if "cumulative_regret" in s:  # a bandit: its test pulls the greedy arms
        test = regret_line(s) + (f"; greedy reward {s['test_return_mean']:.3f} over "
                                 f"{counted(s['test_episodes'], 'test pull')}" if s["test_episodes"] else "")
    steps = counted(s["steps"], "step")
    if s["steps"] > budget:  # said, not hidden
        over = s["steps"] - budget
        learners = s["hardware"]["learners"]
        why = (f"{s['n_envs']} environments step together" if over < s["n_envs"] else
               f"{learners} learners add up their steps every {STEPS_PER_EXCHANGE} or so"
               if learners > 1 and over < STEPS_PER_EXCHANGE + s["n_envs"] * learners else
               "it resumed from a checkpoint past it")
        steps += f" ({over:,} past the budget of {budget:,}: {why})"
    if s.get("stop_reason"):
        steps += f" (stopped early: {s['stop_reason']})"
    compiling = f", {s['compile_seconds']:.1f} s of it compiling" if "compile_seconds" in s else ""
    return (f"{title}: {steps} in {s['wall_seconds']:.1f} s ({s['steps_per_second']:,.0f} steps/s{compiling}), "
            f"{counted(s['episodes'], 'episode')}; {test}; tested in {s['test_seconds']:.1f} s -> {s['run_dir']}")
