"""Teams side by side: rlconf and BenchMARL trained on the same VMAS tasks at matched settings (issue 36).

    python benchmarks/teams.py --list                       # the rows, and the trials on disk
    python benchmarks/teams.py                              # every row that runs, 3 seeds, 300k frames each
    python benchmarks/teams.py mappo-balance ippo-balance --seeds 0 1
    python benchmarks/teams.py mappo-balance --seeds 0 --frames 12000 --quick --results /tmp/teams
    python benchmarks/teams.py --report                     # only rewrite the table and figures
    nox -s teams -- mappo-navigation

A row is an algorithm on a VMAS task; a trial is one library training one row with one seed, in a process of
its own, one trial at a time (on 2 cores, two trials at once would time each other), on the CPU with one
torch thread. rlconf trains through its command line (``rlconf run agent=A env=vmas/T steps=N seed=S ...``);
BenchMARL through its Python API (teams_benchmarl.py). Both evaluate the greedy policy on 10 episodes at the
same frames; the final return is the evaluation at the end of the budget, the speed is frames (steps of all
copies) per second of training (collection and updates; evaluations left out on both sides: rlconf's
summary.json says how many of its seconds they took, ``eval_seconds``).

The settings are rlconf's preset (configs/preset/vmas/<algorithm>.yaml, composed as ``rlconf run`` composes
it), translated into BenchMARL's names by one function per kind of algorithm (``on_policy``,
``value_decomposition``, ``actor_critic``): learning rate, Adam's eps, discount, gradient clipping, copies,
the 256x256 tanh MLPs, parameter sharing and the task's arguments; PPO's GAE lambda, clip range, entropy and
critic coefficients, frames per rollout, minibatch size and epochs; QMIX's and VDN's frames per batch, updates
per batch, batch size, replay size, epsilon schedule, soft target rate and mixer width; MASAC's, ISAC's,
MADDPG's and IDDPG's the same off-policy cadence, random first frames, the temperature and its entropy target,
and the exploration noise's schedule. A preset setting BenchMARL cannot take fails the row in one line, and
BenchMARL's side reads every setting back from its built experiment before training; each trial's JSON records
both sides' settings.

Each trial is written to RESULTS/trials/<library>-<row>-s<seed>.json as it finishes, so a run can be stopped
and started again: finished trials are skipped (``--force`` trains them again). Then RESULTS/table.md (each
row's final returns, mean and 95% interval over seeds, and both speeds) and RESULTS/<task>.png (the evaluation
curves, matplotlib permitting) are rewritten from every trial on disk. RESULTS defaults to
benchmarks/results/teams, committed with the code.

These runs take hours (a 300k-frame MAPPO trial is tens of minutes a library here): never a CI step.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "teams"
LIBRARIES = ("rlconf", "benchmarl")
SEEDS = (0, 1, 2)
# BenchMARL's default budget is 3M frames: about 6 hours a MAPPO trial on this machine's 2 cores (either
# library trains MAPPO on balance at about 135 frames/s here at the preset's settings), 9 days for the 36 trials
# of the MAPPO and IPPO rows. 300k frames is 50 rollouts of 6,000 frames: about 40 minutes a trial, a day for 36.
FRAMES = 300_000
EVALUATIONS = 10  # periodic evaluations over the budget (BenchMARL's default: one every 120k of 3M frames)
EVAL_EPISODES = 10  # BenchMARL's evaluation_episodes
# A trial whose other processes averaged fewer cores than this ran alone: a second trial beside it takes about one.
IDLE_CORES = 0.3
# What the rows can be held against besides BenchMARL run here (issue 36: rows cite a published figure where one
# exists). Checked 2026-12-02: BenchMARL's VMAS results are plots only, and the MPE figures are other tasks.
PUBLISHED = (
    "Published figures: none in text to cite for these rows. BenchMARL's paper (Bettini, Prorok & Moens, JMLR 2024, "
    "appendix A: figures 2 and 3) and its README's fine-tuned VMAS benchmarks (plots on Wandb) show VMAS navigation, "
    "sampling and balance only as curves and normalised-return plots, at their fine-tuned settings "
    "(fine_tuned/vmas/conf/config.yaml) and budgets of millions of frames, not this table's. The MAPPO paper "
    "(Yu et al. 2022) and EPyMARL (Papoudakis et al. 2021) publish MPE simple_spread, which is not a row here. "
    "The reference for every row is therefore BenchMARL itself, trained beside rlconf at the same settings.")
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


@dataclass(frozen=True)
class Row:
    algorithm: str  # rlconf's agent name, and the key of BenchMARL's algorithm (teams_benchmarl.ALGORITHMS)
    task: str  # rlconf's env name, vmas/<scenario> (BenchMARL's task vmas/<scenario> too)

    @property
    def name(self) -> str:
        return f"{self.algorithm}-{self.task.split('/', 1)[1]}"


ROWS = {row.name: row for row in (
    Row("mappo", "vmas/balance"), Row("mappo", "vmas/navigation"), Row("mappo", "vmas/sampling"),
    Row("ippo", "vmas/balance"), Row("ippo", "vmas/navigation"), Row("ippo", "vmas/sampling"),
    # The other goals: QMIX picks VMAS's 9 discrete moves (BenchMARL does so by itself), MASAC its forces.
    Row("qmix", "vmas/navigation"), Row("masac", "vmas/balance"), Row("maddpg", "vmas/balance"),
)}


class Refused(Exception):
    """A row or an option that cannot run as asked; its message is the one line the user sees."""


# -- matched settings -------------------------------------------------------------------------------------
def rlconf_overrides(row: Row, frames: int, seed: int, eval_every: int, quick: bool) -> list[str]:
    """The overrides of the trial's ``rlconf run``, the quick scaling last so it wins."""
    # checkpoint_every past the budget: only the checkpoint every run writes at its end, outside the timed part
    overrides = [f"agent={row.algorithm}", f"env={row.task}", f"steps={frames}", f"seed={seed}",
                 f"eval_every={eval_every}", f"eval_episodes={EVAL_EPISODES}", f"test_episodes={EVAL_EPISODES}",
                 f"checkpoint_every={2 * frames}", "hardware.device=cpu", "hardware.torch_threads=1"]
    return overrides + (quick_overrides(row) if quick else [])


def settings_of(overrides: list[str]):
    """The validated settings ``rlconf run`` composes from ``overrides``, the family's preset included."""
    from rlconf.config import compose, validate

    return validate(compose(overrides, []))


def quick_overrides(row: Row) -> list[str]:
    """--quick: a rollout a tenth as long, 9 times fewer epochs and minibatches half as large (so that one
    still divides a rollout), or, off-policy, batches a tenth as long with a tenth of the updates each, applied
    to rlconf's preset and so to both sides alike."""
    matcher(row)  # refused before composing an agent rlconf may not have
    agent = settings_of([f"agent={row.algorithm}", f"env={row.task}"]).agent
    if off_policy(row):  # batches and their updates a tenth as many (no warm-up stays none)
        return [f"agent.update_frequency={max(1, agent.update_frequency // 10)}",
                f"agent.replay_start_size={max(1, agent.replay_start_size // 10) if agent.replay_start_size else 0}",
                f"agent.gradient_steps={max(1, agent.gradient_steps // 10)}"]
    return [f"agent.n_steps={max(1, agent.n_steps // 10)}", f"agent.epochs={max(1, agent.epochs // 9)}",
            f"agent.batch_size={max(1, agent.batch_size // 2)}"]


def refuse_unmatched(settings, cannot: dict[str, Any]) -> None:
    """Refused, the first of ``cannot`` (settings BenchMARL has no equivalent of) that the preset asks for, or a
    model other than the MLP without a core."""
    model = settings.approximation
    asked = {key: value for key, value in cannot.items() if value not in (False, None)}
    if model["model"] != "mlp" or model["recurrent"] != "none":
        asked["approximation.model"] = f"{model['model']} (recurrent {model['recurrent']})"
    if asked:
        key, value = next(iter(asked.items()))
        raise Refused(f"{key}={value}: BenchMARL's {settings.agent_name} has no such setting; the rows would not "
                      "be matched")


def on_policy(settings) -> dict[str, Any]:
    """MAPPO and IPPO: rlconf's PPO settings in BenchMARL's names (ExperimentConfig, Mappo/IppoConfig, the MLP).

    BenchMARL's on-policy algorithms have no advantage normalisation, agent-id feature, schedules, separate
    critic learning rate, shared trunk or orthogonal init: a preset that asks for one is refused.
    """
    agent, model = settings.agent, settings.approximation
    cannot = {"agent.normalize_advantages": agent.normalize_advantages, "agent.agent_id": agent.agent_id,
              "agent.lr_final": agent.lr_final, "agent.clip_final": agent.clip_final, "agent.lr_v": agent.lr_v,
              "approximation.shared": model["shared"], "approximation.ortho_init": model["ortho_init"]}
    refuse_unmatched(settings, cannot)
    n_envs = settings.hardware.n_envs
    return {
        "experiment": {
            "lr": agent.lr, "adam_eps": agent.adam_eps, "gamma": agent.discount_factor,
            "clip_grad_norm": agent.clip_grad > 0, "clip_grad_val": float(agent.clip_grad or 5.0),
            "on_policy_collected_frames_per_batch": agent.n_steps * n_envs,
            "on_policy_n_envs_per_worker": n_envs,
            "on_policy_minibatch_size": agent.batch_size,  # frames, on both sides
            "on_policy_n_minibatch_iters": agent.epochs,
            "share_policy_params": agent.share_parameters,
            "prefer_continuous_actions": bool(settings.env.kwargs.get("continuous_actions", True)),
        },
        "algorithm": {"lmbda": agent.lam, "clip_epsilon": agent.clip, "entropy_coef": agent.entropy_loss_scaling,
                      "critic_coef": agent.value_loss_scaling, "share_param_critic": agent.share_parameters},
        "model": {"num_cells": list(model["hidden"]), "activation": model["activation"]},
        "expect": {"critic_centralised": agent.centralised_critic, "normalize_advantage": False,
                   "value_clipping": False},
        "frames_per_batch": agent.n_steps * n_envs,
        # what the two sides still do differently (configs/preset/vmas/*.yaml says why)
        "departures": [
            "rlconf's Gaussian has a learned state-independent std; BenchMARL's tanh-normal predicts its scale",
            "rlconf bootstraps VMAS's time limit (a truncation); BenchMARL counts it as terminal",
            "rlconf clips the gradient norm of actor and critic together; BenchMARL each optimiser's own",
            "rlconf's rollouts of n_steps x n_envs include the steps that reset ended copies (not counted as "
            "frames); BenchMARL's collector resets between steps",
        ],
    }


def off_policy_experiment(settings, lr: float, polyak_rate: float) -> dict[str, Any]:
    """BenchMARL's off-policy ExperimentConfig fields for rlconf's settings: one learning rate, collected batches,
    updates and their minibatches, replay, soft targets, sharing and the action kind."""
    agent = settings.agent
    return {
        "lr": lr, "adam_eps": agent.adam_eps, "gamma": agent.discount_factor,
        "clip_grad_norm": agent.clip_grad > 0, "clip_grad_val": float(agent.clip_grad or 5.0),
        "off_policy_collected_frames_per_batch": agent.update_frequency,
        "off_policy_n_envs_per_worker": settings.hardware.n_envs,
        "off_policy_n_optimizer_steps": agent.gradient_steps,
        "off_policy_train_batch_size": agent.batch_size,  # frames, on both sides
        "off_policy_memory_size": agent.replay_buffer_size,
        "soft_target_update": True, "polyak_tau": polyak_rate,
        "share_policy_params": agent.share_parameters,
        "prefer_continuous_actions": bool(settings.env.kwargs.get("continuous_actions", True)),
    }


def value_decomposition(settings) -> dict[str, Any]:
    """QMIX and VDN: rlconf's settings in BenchMARL's names (ExperimentConfig's off-policy fields, Qmix/VdnConfig,
    the MLP). BenchMARL's have no agent-id feature, double Q-learning, Huber loss or hard target copies counted in
    frames, and update after every collected batch: a preset that asks otherwise is refused."""
    agent, model = settings.agent, settings.approximation
    cannot = {"agent.agent_id": agent.agent_id, "agent.double_q": agent.double_q,
              "agent.loss": agent.loss if agent.loss != "mse" else None,
              "agent.target": agent.target if agent.target != "polyak" else None,
              "agent.replay_start_size": agent.replay_start_size
              if agent.replay_start_size > agent.update_frequency else None,
              "approximation.shared": model["shared"], "approximation.ortho_init": model["ortho_init"]}
    refuse_unmatched(settings, cannot)
    algorithm = {"loss_function": "l2", "delay_value": True}  # the squared TD error against target networks
    if agent.mixer == "qmix":
        algorithm["mixing_embed_dim"] = agent.mixing_embed_dim
    return {
        "experiment": off_policy_experiment(settings, agent.lr, agent.target_rate) | {
            "exploration_eps_init": agent.epsilon, "exploration_eps_end": agent.epsilon_final,
            "exploration_anneal_frames": agent.epsilon_decay_steps,
        },
        "algorithm": algorithm,
        "model": {"num_cells": list(model["hidden"]), "activation": model["activation"]},
        "frames_per_batch": agent.update_frequency,
        # what the two sides still do differently (configs/preset/vmas/qmix.yaml says why)
        "departures": ["rlconf's epsilon decays every frame; BenchMARL's once per collected batch"] + (
            ["rlconf bootstraps VMAS's time limit (a truncation); BenchMARL counts it as terminal"]
            if agent.bootstrap_time_limits else []),
    }


def actor_critic(settings) -> dict[str, Any]:
    """MASAC and ISAC, MADDPG and IDDPG: rlconf's settings in BenchMARL's names (ExperimentConfig's off-policy
    fields, Masac/Isac/Maddpg/IddpgConfig, the MLP). BenchMARL's have no agent-id feature, one learning rate for
    every optimiser, no target policy (DDPGLoss keeps delay_actor False) and update after every collected batch;
    its ``off_policy_init_random_frames`` makes whole batches random without delaying the updates, which is
    rlconf's warm-up of random frames only when that warm-up is none or exactly the first batch. A preset that
    asks otherwise is refused."""
    agent, model, name = settings.agent, settings.approximation, settings.agent_name
    sac = name in ("masac", "isac")
    rates = {"agent.lr_q": agent.lr_q, "agent.lr_pi": agent.lr_pi} | (
        {"agent.lr_temperature": agent.lr_temperature} if sac and agent.temperature is None else {})
    centralised = name in ("masac", "maddpg")
    cannot = {"agent.agent_id": agent.agent_id,
              "agent.lr_pi": agent.lr_pi if len(set(rates.values())) > 1 else None,  # one lr in BenchMARL
              "agent.replay_start_size": agent.replay_start_size
              if agent.replay_start_size not in (0, agent.update_frequency) else None,
              "agent.centralised_critic": agent.centralised_critic
              if agent.centralised_critic != centralised else None,  # the algorithm decides in BenchMARL
              "agent.target_policy": getattr(agent, "target_policy", False),
              "approximation.shared": model["shared"], "approximation.ortho_init": model["ortho_init"]}
    refuse_unmatched(settings, cannot)
    experiment = off_policy_experiment(settings, agent.lr_q, agent.polyak_rate) | {
        "off_policy_init_random_frames": agent.replay_start_size}
    # one critic per group, shared by its agents and seeing no agent index: one Q per frame on both sides
    algorithm = {"loss_function": "l2", "share_param_critic": agent.share_parameters}
    if sac:
        algorithm |= {"num_qvalue_nets": 2, "delay_qvalue": True,
                      "target_entropy": "auto" if agent.entropy_target is None else float(agent.entropy_target),
                      "fixed_alpha": agent.temperature is not None,
                      "alpha_init": float(agent.temperature or agent.temperature_initial)}
        departures = ["rlconf's squashed Gaussian clamps a predicted log-std; BenchMARL's tanh-normal maps its "
                      "scale through a biased softplus"]
    else:
        algorithm |= {"delay_value": True}
        departures = ["rlconf's exploration noise decays every frame; BenchMARL's once per collected batch",
                      "rlconf's noise is in half-widths of the action Box, BenchMARL's sigma in action units (the "
                      "same on VMAS's tasks, whose forces are within +-1)"]
        experiment |= {"exploration_eps_init": agent.noise,
                       "exploration_eps_end": agent.noise if agent.noise_final is None else agent.noise_final,
                       "exploration_anneal_frames": agent.noise_decay_steps}
    return {
        "experiment": experiment, "algorithm": algorithm,
        "model": {"num_cells": list(model["hidden"]), "activation": model["activation"]},
        "expect": {"critic_centralised": agent.centralised_critic} | ({} if sac else {"target_policy": False}),
        "frames_per_batch": agent.update_frequency,
        "departures": departures + (
            ["rlconf bootstraps VMAS's time limit (a truncation); BenchMARL counts it as terminal"]
            if agent.bootstrap_time_limits else []),
    }


MATCHERS = {"mappo": on_policy, "ippo": on_policy, "qmix": value_decomposition, "vdn": value_decomposition,
            "masac": actor_critic, "isac": actor_critic, "maddpg": actor_critic, "iddpg": actor_critic}
OFF_POLICY = (value_decomposition, actor_critic)  # learn from replay: quick scales batches, not rollouts


def off_policy(row: Row) -> bool:
    """Whether the row's algorithm learns from replay (its settings are counted in batches and updates)."""
    return MATCHERS[row.algorithm] in OFF_POLICY


def matcher(row: Row):
    """The row's translation into BenchMARL's settings; Refused where rlconf has no such agent yet."""
    if not (ROOT / "configs" / "agent" / f"{row.algorithm}.yaml").is_file():
        raise Refused(f"{row.name}: rlconf has no agent={row.algorithm} yet (issue 36); rows that run now: "
                      f"{', '.join(runnable())}")
    if row.algorithm not in MATCHERS:
        raise Refused(f"{row.name}: no translation of {row.algorithm}'s settings into BenchMARL's yet "
                      f"(benchmarks/teams.py MATCHERS); rows that run now: {', '.join(runnable())}")
    return MATCHERS[row.algorithm]


def runnable() -> list[str]:
    return [name for name, row in ROWS.items() if row.algorithm in MATCHERS
            and (ROOT / "configs" / "agent" / f"{row.algorithm}.yaml").is_file()]


def spec(row: Row, frames: int, seed: int, evaluations: int, quick: bool) -> dict[str, Any]:
    """Everything both sides of one trial run with: rlconf's overrides and BenchMARL's matched settings."""
    match = matcher(row)
    eval_every = max(1, frames // evaluations)
    overrides = rlconf_overrides(row, frames, seed, eval_every, quick)
    settings = settings_of(overrides)
    matched = match(settings)
    per_batch = matched.pop("frames_per_batch")
    if frames % evaluations or eval_every % per_batch:
        raise Refused(f"--frames {frames:,} with --evaluations {evaluations}: BenchMARL evaluates only at the end "
                      f"of a rollout ({per_batch:,} frames here), so the budget must be a multiple of "
                      f"{evaluations * per_batch:,} frames")
    task_config = {k: v for k, v in settings.env.kwargs.items() if k != "continuous_actions"}
    task_config["max_steps"] = settings.env.max_episode_steps
    return {"row": row.name, "algorithm_name": row.algorithm, "task": row.task.split("/", 1)[1],
            "seed": seed, "frames": frames, "eval_every": eval_every, "eval_episodes": EVAL_EPISODES,
            "quick": quick, **matched, "task_config": task_config, "rlconf_overrides": overrides,
            "rlconf_settings": {"agent": _plain(settings.agent), "approximation": _plain(settings.approximation),
                                "hardware": _plain(settings.hardware), "env": _plain(settings.env)}}


def _plain(value: Any) -> Any:
    """A settings object as JSON data (dataclasses and OmegaConf containers alike)."""
    from dataclasses import asdict, is_dataclass

    from omegaconf import OmegaConf

    if is_dataclass(value):
        return asdict(value)
    if OmegaConf.is_config(value):
        return OmegaConf.to_container(value, resolve=True)
    return json.loads(json.dumps(value, default=str))


# -- trials -----------------------------------------------------------------------------------------------
def trial_path(results: Path, library: str, row: str, seed: int) -> Path:
    return results / "trials" / f"{library}-{row}-s{seed}.json"


def finished(path: Path, trial: dict[str, Any]) -> bool:
    """The trial is on disk at this budget; at another budget it is Refused (--force replaces it)."""
    if not path.is_file():
        return False
    done = json.loads(path.read_text())
    if (done["spec"]["frames"], done["spec"]["quick"]) != (trial["frames"], trial["quick"]):
        raise Refused(f"{path} was trained at {done['spec']['frames']:,} frames (quick {done['spec']['quick']}), "
                      f"not {trial['frames']:,} (quick {trial['quick']}); pass --force to replace it, or --results DIR")
    return True


def child_env() -> dict[str, str]:
    """One thread for every library a trial loads, and this folder importable."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    return env


def run_rlconf(trial: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """``rlconf run`` of the trial, read back from its summary.json and evaluations.csv."""
    argv = [sys.executable, "-m", "rlconf", "run", *trial["rlconf_overrides"], "quiet=true", f"logdir={scratch}"]
    _call(argv, scratch / "rlconf.log")
    run_dir = next(p for p in scratch.iterdir() if (p / "summary.json").is_file())
    summary = json.loads((run_dir / "summary.json").read_text())
    evaluations = (run_dir / "evaluations.csv").read_text().splitlines()[1:]
    curve = [(int(line.split(",")[0]), float(line.split(",")[2])) for line in evaluations]
    curve = curve[:-1]  # the last row is the final test (summary.json's), not a periodic evaluation
    evaluation_seconds = summary["eval_seconds"]
    train = summary["wall_seconds"] - evaluation_seconds
    from rlconf.experiments.rundir.provenance import installed_versions

    return {"library": "rlconf", "frames": summary["steps"], "final_return": summary["test_return_mean"],
            "final_frames": summary["steps"], "curve": curve, "train_seconds": round(train, 3),
            "eval_seconds": round(evaluation_seconds, 3), "wall_seconds": summary["wall_seconds"],
            "frames_per_second": round(summary["steps"] / max(train, 1e-9), 1),
            "settings": trial["rlconf_settings"], "torch_threads": summary["hardware"]["torch_threads"],
            "versions": installed_versions(("rlconf", "torch", "vmas"))}


def run_benchmarl(trial: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """teams_benchmarl.py on the trial's spec, in a process of its own."""
    spec_file, out = scratch / "spec.json", scratch / "benchmarl.json"
    spec_file.write_text(json.dumps(trial))
    _call([sys.executable, str(HERE / "teams_benchmarl.py"), str(spec_file), "--out", str(out)],
          scratch / "benchmarl.log")
    return json.loads(out.read_text())


def _call(argv: list[str], log: Path) -> None:
    with log.open("w") as f:
        code = subprocess.call(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=child_env(),
                               cwd=ROOT)
    if code:
        tail = [line for line in log.read_text().splitlines() if line.strip()][-1:] or ["(no output)"]
        raise RuntimeError(f"exit status {code}: {tail[0]}")


def train(library: str, trial: dict[str, Any], path: Path) -> dict[str, Any]:
    """One trial, written to ``path`` (atomically) once it has finished."""
    from report import OtherLoad, machine_info

    with tempfile.TemporaryDirectory(prefix=f"teams-{library}-") as scratch:
        load = OtherLoad()
        result = (run_rlconf if library == "rlconf" else run_benchmarl)(trial, Path(scratch))
        result["other_cpu_cores"] = load.measure()[2]  # what else the machine ran meanwhile: is the speed fair?
    result.update(row=trial["row"], seed=trial["seed"], spec={k: v for k, v in trial.items()
                                                               if k not in ("rlconf_settings",)})
    result["machine"] = machine_info()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(result, indent=2))
    partial.replace(path)
    return result


# -- report -----------------------------------------------------------------------------------------------
def load_trials(results: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((results / "trials").glob("*.json"))]


def interval(values: list[float]) -> str:
    """Mean ± the half-width of its 95% Student-t interval over seeds (one seed: the value alone)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:.2f} (1 seed)"
    t = T95.get(len(values) - 1, 1.96)
    return f"{mean:.2f} ± {t * statistics.stdev(values) / math.sqrt(len(values)):.2f} ({len(values)} seeds)"


def table(trials: list[dict[str, Any]]) -> str:
    """table.md: a line per row and budget, both libraries' final returns and speeds."""
    lines = ["| task | algorithm | frames | rlconf final return | BenchMARL final return | rlconf steps/s | "
             "BenchMARL steps/s | speed ratio |", "|---|---|--:|--:|--:|--:|--:|--:|"]
    keys = sorted({(t["spec"]["task"], t["spec"]["algorithm_name"], t["spec"]["frames"], t["spec"]["quick"])
                   for t in trials})
    for task, algorithm, frames, quick in keys:
        mine = [t for t in trials if (t["spec"]["task"], t["spec"]["algorithm_name"], t["spec"]["frames"],
                                      t["spec"]["quick"]) == (task, algorithm, frames, quick)]
        cells, speeds = [], {}
        for library in LIBRARIES:
            theirs = [t for t in mine if t["library"] == library]
            cells.append(interval([t["final_return"] for t in theirs]) if theirs else "–")
            if theirs:
                speeds[library] = statistics.fmean(t["frames_per_second"] for t in theirs)
        rates = [f"{speeds[library]:,.0f}" if library in speeds else "–" for library in LIBRARIES]
        ratio = f"{speeds['rlconf'] / speeds['benchmarl']:.2f}x" if len(speeds) == 2 else "–"
        budget = f"{frames:,}" + (" (quick)" if quick else "")
        lines.append(f"| vmas/{task} | {algorithm} | {budget} | {cells[0]} | {cells[1]} | {rates[0]} | {rates[1]} "
                     f"| {ratio} |")
    notes = ("Final return: the greedy policy's mean return over 10 episodes at the end of the budget (per episode "
             "the agents' mean return), mean and 95% Student-t interval over seeds. Steps/s: frames (steps of all "
             "copies) per second of training, collection and updates, evaluations excluded; one torch thread each, "
             "on the CPU. Ratio: rlconf's steps/s over BenchMARL's.")
    loads = [t["other_cpu_cores"] for t in trials if t.get("other_cpu_cores") is not None]
    if not loads:
        notes += " The trials recorded no load of other processes: their speeds are not a measurement."
    elif max(loads) < IDLE_CORES:
        notes += (f" Each trial ran alone: other processes used at most {max(loads):.2f} cores on average during a "
                  "trial (its other_cpu_cores).")
    else:
        notes += (f" Other processes used {min(loads):.2f} to {max(loads):.2f} cores on average during the trials "
                  "(each trial's other_cpu_cores): speeds compare only between trials under like loads.")
    departures = sorted({d for t in trials for d in t["spec"].get("departures", [])})
    kept = "".join(f"\n- {d}" for d in departures)
    sections = ["\n".join(lines), notes, *(["What still differs:" + kept] if kept else []), PUBLISHED]
    return "\n\n".join(sections) + "\n"


def figures(trials: list[dict[str, Any]], results: Path) -> list[Path]:
    """RESULTS/vmas-<task>.png: each library's and algorithm's evaluation curve, mean over seeds and the
    band from the lowest to the highest seed (the largest budget on disk; none without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("teams: matplotlib is not installed: no figures", file=sys.stderr)
        return []
    written = []
    for task in sorted({t["spec"]["task"] for t in trials}):
        on_task = [t for t in trials if t["spec"]["task"] == task]
        budget = max((t["spec"]["frames"], not t["spec"]["quick"]) for t in on_task)
        on_task = [t for t in on_task if (t["spec"]["frames"], not t["spec"]["quick"]) == budget]
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for a, algorithm in enumerate(sorted({t["spec"]["algorithm_name"] for t in on_task})):
            for library, style in zip(LIBRARIES, ("-", "--"), strict=True):
                curves = [t["curve"] for t in on_task if t["library"] == library
                          and t["spec"]["algorithm_name"] == algorithm and t["curve"]]
                if curves:
                    _band(ax, curves, f"{library} {algorithm}", f"C{a}", style)
        ax.set_title(f"vmas/{task}, {budget[0]:,} frames" + ("" if budget[1] else " (quick)"))
        ax.set_xlabel("frames")
        ax.set_ylabel("evaluation return")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = results / f"vmas-{task}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def _band(ax, curves: list[list[list[float]]], label: str, color: str, style: str) -> None:
    """The seeds' mean and their range at the evaluation points every seed has (rlconf's fall a few frames
    after the interval: each seed's i-th point is drawn at their mean frames)."""
    n = min(len(c) for c in curves)
    x = [statistics.fmean(c[i][0] for c in curves) for i in range(n)]
    ys = [[c[i][1] for c in curves] for i in range(n)]
    seeds = f"{len(curves)} seed" + ("s" if len(curves) > 1 else "")
    ax.plot(x, [statistics.fmean(y) for y in ys], style, color=color, label=f"{label} ({seeds})")
    if len(curves) > 1:
        ax.fill_between(x, [min(y) for y in ys], [max(y) for y in ys], color=color, alpha=0.15)


def report(results: Path) -> None:
    trials = load_trials(results)
    if not trials:
        print(f"teams: no trials in {results / 'trials'} yet")
        return
    results.mkdir(parents=True, exist_ok=True)
    (results / "table.md").write_text(table(trials))
    written = figures(trials, results)
    print(f"teams: wrote {results / 'table.md'}" + "".join(f", {p.name}" for p in written))


# -- command line -----------------------------------------------------------------------------------------
def show(results: Path) -> None:
    for name, row in ROWS.items():
        try:
            matcher(row)
            state = ""
        except Refused:
            state = " (not yet: rlconf has no such agent, or no translation)"
        on_disk = sorted(p.stem for p in (results / "trials").glob(f"*-{name}-s*.json"))
        print(f"{name:18} agent={row.algorithm} env={row.task}{state}")
        print(f"{'':18} on disk: {', '.join(on_disk) or 'nothing yet'}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/teams.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__, epilog="rows: " + ", ".join(ROWS))
    parser.add_argument("rows", nargs="*", metavar="ROW", help="rows to train (default: every row that runs now)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS), metavar="S",
                        help="seeds (default: 0 1 2)")
    parser.add_argument("--frames", type=int, default=FRAMES, metavar="N",
                        help=f"the budget of each trial in frames (default {FRAMES:,}, about 40 min a trial here; "
                             "BenchMARL's default is 3M, about 6 h a trial on this 2-core machine: 9 days for the "
                             "36 trials of the MAPPO and IPPO rows)")
    parser.add_argument("--evaluations", type=int, default=EVALUATIONS, metavar="K",
                        help=f"periodic evaluations over the budget, one every N/K frames (default {EVALUATIONS}); "
                             "N/K must be a multiple of a rollout's frames")
    parser.add_argument("--quick", action="store_true",
                        help="rollouts a tenth as long, 9x fewer epochs, minibatches halved (off-policy: "
                             "batches and their updates a tenth as many), on both sides "
                             "(a smoke test of the benchmark, not a measurement)")
    parser.add_argument("--libraries", nargs="+", choices=LIBRARIES, default=list(LIBRARIES),
                        help="which sides to train (default: both)")
    parser.add_argument("--results", type=Path, default=RESULTS, metavar="DIR",
                        help="where trials/, table.md and the figures go (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="train trials again that are on disk")
    parser.add_argument("--list", action="store_true", help="list the rows and the trials on disk, then stop")
    parser.add_argument("--report", action="store_true", help="only rewrite table.md and the figures")
    args = parser.parse_args(argv)
    unknown = [name for name in args.rows if name not in ROWS]
    if unknown:
        parser.exit(2, f"teams: error: unknown row {unknown[0]!r}; rows: {', '.join(ROWS)}\n")
    for option in ("frames", "evaluations"):
        if getattr(args, option) < 1:
            parser.exit(2, f"teams: error: --{option} {getattr(args, option)}: must be at least 1\n")
    if any(seed < 0 for seed in args.seeds):
        parser.exit(2, "teams: error: --seeds: must be at least 0\n")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.list:
        show(args.results)
        return 0
    if args.report:
        report(args.results)
        return 0
    names = args.rows or runnable()
    try:
        specs = [spec(ROWS[name], args.frames, seed, args.evaluations, args.quick)
                 for name in names for seed in args.seeds]
        trials = [(library, trial) for trial in specs for library in args.libraries]
        todo = [(library, trial) for library, trial in trials
                if args.force or not finished(trial_path(args.results, library, trial["row"], trial["seed"]), trial)]
    except Refused as error:
        print(f"teams: error: {error}", file=sys.stderr)
        return 2
    if len(todo) < len(trials):
        print(f"teams: {len(trials) - len(todo)} of the {len(trials)} trials are on disk already (--force trains "
              "them again)")
    failed = 0
    for i, (library, trial) in enumerate(todo, 1):
        path = trial_path(args.results, library, trial["row"], trial["seed"])
        print(f"teams: [{i}/{len(todo)}] {library} {trial['row']} seed {trial['seed']}: "
              f"{trial['frames']:,} frames...", flush=True)
        try:
            result = train(library, trial, path)
        except RuntimeError as error:
            print(f"teams: {library} {trial['row']} seed {trial['seed']} failed: {error}", file=sys.stderr)
            failed += 1
            continue
        print(f"teams: {library} {trial['row']} seed {trial['seed']}: final return {result['final_return']:.2f}, "
              f"{result['frames_per_second']:,.0f} steps/s ({result['train_seconds']:.0f} s training, "
              f"{result['eval_seconds']:.0f} s evaluating)", flush=True)
    report(args.results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))  # report.machine_info, when run as a script from elsewhere
    sys.exit(main())
