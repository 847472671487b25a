"""BenchMARL's side of benchmarks/teams.py: one trial in a fresh process, through BenchMARL's Python API.

    python benchmarks/teams_benchmarl.py SPEC.json --out RESULT.json

SPEC (written by teams.py) names the algorithm, the VMAS task, the seed, the frame budget, the evaluation
interval and episodes, and the settings matched to rlconf's preset, in BenchMARL's own names: ``experiment``
(ExperimentConfig fields), ``algorithm`` (the algorithm config's fields), ``model`` (the MLP of actor and
critic) and ``task`` (the VMAS scenario's arguments). Everything else is BenchMARL 1.5.2's default. The run is
BenchMARL's plain ``Experiment.run()`` on the CPU with one torch thread, its CSV logger on (its per-iteration
timers are what the speed is read from), no rendering, no checkpoints, in a scratch folder.

Before training, the settings are read back from the built experiment (the losses, optimisers, collector,
replay buffer and networks themselves, not the configs that asked for them) and must equal the spec's: a
BenchMARL that ignored or renamed one would otherwise be compared at settings nobody chose. RESULT holds
what was read back, the evaluation curve, the final evaluation's return and the training time.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch: one core's worth of threads, as rlconf's side

import argparse  # noqa: E402  (after the thread pin)
import csv  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(1)  # BenchMARL never sets threads itself

from benchmarl.experiment.callback import Callback  # noqa: E402

# rlconf's agent name -> BenchMARL's algorithm config class (benchmarl.algorithms)
ALGORITHMS = {"mappo": "MappoConfig", "ippo": "IppoConfig", "qmix": "QmixConfig", "vdn": "VdnConfig",
              "masac": "MasacConfig", "isac": "IsacConfig", "maddpg": "MaddpgConfig", "iddpg": "IddpgConfig"}
ACTIVATIONS = {"relu": "ReLU", "tanh": "Tanh", "elu": "ELU", "gelu": "GELU", "silu": "SiLU"}  # rlconf -> torch.nn


class Unmatched(Exception):
    """A setting BenchMARL does not take as asked: the comparison would not be at matched settings."""


def build(spec: dict[str, Any], save_folder: Path, callbacks: list | None = None):
    """The BenchMARL Experiment of ``spec`` (built, not run): its yamls, then the spec's settings over them."""
    import benchmarl.algorithms
    from benchmarl.environments import VmasTask
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig

    config = ExperimentConfig.get_from_yaml()  # base_experiment.yaml: ExperimentConfig() alone has MISSING fields
    fixed = {"sampling_device": "cpu", "train_device": "cpu", "buffer_device": "cpu",
             "loggers": ["csv"],  # its timers_*.csv give the training time; the default adds wandb
             "create_json": True, "render": False, "save_folder": str(save_folder),
             "checkpoint_interval": 0, "checkpoint_at_end": False, "max_n_iters": None,
             "max_n_frames": spec["frames"], "evaluation": True, "evaluation_interval": spec["eval_every"],
             "evaluation_episodes": spec["eval_episodes"], "evaluation_deterministic_actions": True}
    _set(config, {**fixed, **spec["experiment"]}, "experiment")
    algorithm = getattr(benchmarl.algorithms, ALGORITHMS[spec["algorithm_name"]]).get_from_yaml()
    _set(algorithm, spec["algorithm"], "algorithm")
    model = MlpConfig.get_from_yaml()
    _set(model, {"num_cells": list(spec["model"]["num_cells"]), "layer_class": torch.nn.Linear,
                 "activation_class": getattr(torch.nn, ACTIVATIONS[spec["model"]["activation"]])}, "model")
    task = VmasTask[spec["task"].upper()].get_from_yaml()
    unknown = sorted(set(spec["task_config"]) - set(task.config))
    if unknown:
        raise Unmatched(f"task {spec['task']}: BenchMARL's yaml has no argument {unknown[0]!r}")
    task.config.update(spec["task_config"])
    return Experiment(task=task, algorithm_config=algorithm, model_config=model, critic_model_config=model,
                      seed=spec["seed"], config=config, callbacks=callbacks or [])


def _set(target: Any, values: dict[str, Any], what: str) -> None:
    for key, value in values.items():
        if not hasattr(target, key):
            raise Unmatched(f"BenchMARL's {what} config has no field {key!r}")
        setattr(target, key, value)


def observed(experiment, algorithm: str) -> dict[str, Any]:
    """The matched settings as the built experiment holds them, in the spec's layout (``OBSERVERS``: one reader
    per kind of algorithm, as teams.MATCHERS has one translation per kind)."""
    if algorithm not in OBSERVERS:
        raise Unmatched(f"no reader of {algorithm}'s settings in a BenchMARL experiment yet (OBSERVERS)")
    return OBSERVERS[algorithm](experiment)


def observed_on_policy(experiment) -> dict[str, Any]:
    """MAPPO and IPPO: ClipPPOLoss on a GAE estimate, an Adam per loss term, a collector, a replay buffer of
    one rollout, MultiAgentMLPs for actor and critic."""
    group = next(iter(experiment.group_map))
    loss = experiment.losses[group]
    optimisers = experiment.optimizers[group].values()
    lrs = {o.param_groups[0]["lr"] for o in optimisers}
    eps = {o.param_groups[0]["eps"] for o in optimisers}
    actor = _mlp(experiment.algorithm.get_policy_for_loss(group))
    critic = _mlp(loss.critic_network)
    config = experiment.config
    return {
        "experiment": {
            "lr": _one(lrs, "lr"), "adam_eps": _one(eps, "adam_eps"),
            "gamma": float(loss.value_estimator.gamma),
            "clip_grad_norm": config.clip_grad_norm, "clip_grad_val": float(config.clip_grad_val),
            "on_policy_collected_frames_per_batch": experiment.collector.requested_frames_per_batch,
            "on_policy_n_envs_per_worker": experiment.collector.env.batch_size.numel(),
            "on_policy_minibatch_size": experiment.replay_buffers[group]._batch_size,
            "on_policy_n_minibatch_iters": config.n_optimizer_steps(on_policy=True),
            "share_policy_params": actor.share_params,
            "prefer_continuous_actions": experiment.continuous_actions,
        },
        "algorithm": {
            "lmbda": float(loss.value_estimator.lmbda), "clip_epsilon": float(loss.clip_epsilon),
            "entropy_coef": float(loss.entropy_coeff), "critic_coef": float(loss.critic_coeff),
            "share_param_critic": critic.share_params,
        },
        "model": {"num_cells": list(actor.num_cells), "activation": _activation(actor)},
        "task_config": dict(experiment.task.config),
        # what the spec does not set but the comparison depends on
        "critic_centralised": critic.centralized,
        "normalize_advantage": bool(loss.normalize_advantage),
        "value_clipping": getattr(loss, "clip_value", None) is not None,
        "critic_num_cells": list(critic.num_cells),
    }


def observed_value_decomposition(experiment) -> dict[str, Any]:
    """QMIX and VDN: QMixerLoss (its mixer) on a TD(0) estimate, one Adam, a SoftUpdate of the target networks,
    epsilon-greedy collection, a replay buffer, a MultiAgentMLP of the agents' utilities."""
    group = next(iter(experiment.group_map))
    loss = experiment.losses[group]
    utilities = _mlp(experiment.algorithm.get_policy_for_loss(group))
    greedy = _collection_module(experiment, "EGreedyModule")
    mixer = loss.mixer_network.module
    algorithm = {"loss_function": loss.loss_function, "delay_value": bool(loss.delay_value)}
    if type(mixer).__name__ == "QMixer":
        algorithm["mixing_embed_dim"] = mixer.embed_dim
    return {
        "experiment": _off_policy(experiment, group, utilities) | {
            "exploration_eps_init": float(greedy.eps_init), "exploration_eps_end": float(greedy.eps_end),
            "exploration_anneal_frames": int(greedy.annealing_num_steps)},
        "algorithm": algorithm,
        "model": {"num_cells": list(utilities.num_cells), "activation": _activation(utilities)},
        "task_config": dict(experiment.task.config),
    }


def observed_actor_critic(experiment) -> dict[str, Any]:
    """MASAC and ISAC (SACLoss: twin critics, a tuned or fixed temperature) and MADDPG and IDDPG (DDPGLoss, with
    Gaussian exploration noise at collection): an Adam per loss term, a SoftUpdate of the targets, a replay
    buffer, MultiAgentMLPs for the actor and the critics."""
    group = next(iter(experiment.group_map))
    loss = experiment.losses[group]
    actor = _mlp(experiment.algorithm.get_policy_for_loss(group))
    sac = type(loss).__name__ == "SACLoss"
    critic = _mlp(loss.qvalue_network if sac else loss.value_network)
    algorithm = {"loss_function": loss.loss_function, "share_param_critic": critic.share_params}
    extra: dict[str, Any] = {"critic_centralised": critic.centralized}
    observed = _off_policy(experiment, group, actor)
    if sac:
        algorithm |= {"num_qvalue_nets": int(loss.num_qvalue_nets), "delay_qvalue": bool(loss.delay_qvalue),
                      "target_entropy": loss._target_entropy, "fixed_alpha": bool(loss.fixed_alpha),
                      "alpha_init": float(loss.alpha_init)}
        extra |= {"target_entropy_value": float(loss.target_entropy), "alpha": float(loss.log_alpha.detach().exp())}
    else:
        noise = _collection_module(experiment, "AdditiveGaussianModule")
        algorithm |= {"delay_value": bool(loss.delay_value)}
        observed |= {"exploration_eps_init": float(noise.sigma_init), "exploration_eps_end": float(noise.sigma_end),
                     "exploration_anneal_frames": int(noise.annealing_num_steps)}
        extra |= {"target_policy": bool(loss.delay_actor)}
    return {"experiment": observed, "algorithm": algorithm,
            "model": {"num_cells": list(actor.num_cells), "activation": _activation(actor)},
            "task_config": dict(experiment.task.config), **extra}


def _off_policy(experiment, group: str, actor) -> dict[str, Any]:
    """The off-policy ExperimentConfig fields as the built experiment holds them: optimisers, collector, replay
    buffer, target updater, and the policy's MultiAgentMLP ``actor`` (its parameter sharing)."""
    loss = experiment.losses[group]
    optimisers = experiment.optimizers[group].values()
    updater = experiment.target_updaters[group]
    config = experiment.config
    buffer = experiment.replay_buffers[group]
    return {
        "lr": _one({o.param_groups[0]["lr"] for o in optimisers}, "lr"),
        "adam_eps": _one({o.param_groups[0]["eps"] for o in optimisers}, "adam_eps"),
        "gamma": float(loss.value_estimator.gamma),
        "clip_grad_norm": config.clip_grad_norm, "clip_grad_val": float(config.clip_grad_val),
        "off_policy_collected_frames_per_batch": experiment.collector.requested_frames_per_batch,
        "off_policy_n_envs_per_worker": experiment.collector.env.batch_size.numel(),
        "off_policy_n_optimizer_steps": config.n_optimizer_steps(on_policy=False),
        "off_policy_train_batch_size": buffer._batch_size,
        "off_policy_memory_size": buffer._storage.max_size,
        "off_policy_init_random_frames": int(experiment.collector.init_random_frames or 0),
        "soft_target_update": type(updater).__name__ == "SoftUpdate", "polyak_tau": 1 - float(updater.eps),
        "share_policy_params": actor.share_params,
        "prefer_continuous_actions": experiment.continuous_actions,
    }


def _collection_module(experiment, name: str):
    """The exploration module (by its class's name) in the collector's policy."""
    return next(m for m in experiment.collector.policy.modules() if type(m).__name__ == name)


OBSERVERS = {"mappo": observed_on_policy, "ippo": observed_on_policy,
             "qmix": observed_value_decomposition, "vdn": observed_value_decomposition,
             "masac": observed_actor_critic, "isac": observed_actor_critic,
             "maddpg": observed_actor_critic, "iddpg": observed_actor_critic}


def _mlp(module):
    """The first torchrl MultiAgentMLP inside a policy or critic."""
    return next(m for m in module.modules() if type(m).__name__ == "MultiAgentMLP")


def _activation(mlp) -> str:
    names = {torch_name: name for name, torch_name in ACTIVATIONS.items()}
    return names.get(mlp.activation_class.__name__, mlp.activation_class.__name__)


def _one(values: set, name: str):
    if len(values) != 1:
        raise Unmatched(f"BenchMARL's optimisers differ in {name}: {sorted(values)}")
    return next(iter(values))


def differences(spec: dict[str, Any], seen: dict[str, Any]) -> list[str]:
    """Each setting of ``spec`` that the experiment does not hold, as ``section.key: asked X, holds Y``."""
    out = []
    for section in ("experiment", "algorithm", "model", "task_config"):
        for key, asked in spec[section].items():
            held = seen[section].get(key)
            if not _equal(asked, held):
                out.append(f"{section}.{key}: asked {asked!r}, holds {held!r}")
    for key, asked in spec.get("expect", {}).items():  # what rlconf's side does that BenchMARL has no setting for
        if seen.get(key) != asked:
            out.append(f"{key}: rlconf's side {asked!r}, BenchMARL's {seen.get(key)!r}")
    return out


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and math.isclose(a, b, rel_tol=1e-6)
    return a == b


class EvaluationRecorder(Callback):
    """Each evaluation's return as BenchMARL's logger reports it (rollouts already cut at their first done): an
    episode's reward summed over time and averaged over agents, then averaged over episodes. At module level:
    BenchMARL pickles its callbacks with its config."""

    def __init__(self):
        super().__init__()
        self.curve: list[tuple[int, float]] = []

    def on_evaluation_end(self, rollouts) -> None:
        returns = [float(r.get(("next", group, "reward")).sum(0).mean())
                   for r in rollouts for group in self.experiment.group_map]
        self.curve.append((int(self.experiment.total_frames), sum(returns) / len(returns)))


def timers(experiment) -> dict[str, float]:
    """Seconds of collection, training and evaluation summed over the iterations, from BenchMARL's own
    timers (its CSV logger's ``timers_*_time.csv``: one ``step,value`` row per iteration)."""
    folder = next(Path(experiment.folder_name).rglob("scalars"))
    out = {}
    for name in ("collection", "training", "evaluation"):
        path = folder / f"timers_{name}_time.csv"
        with path.open(newline="") as f:
            out[name] = sum(float(row[1]) for row in csv.reader(f) if row and _number(row[1]))
    return out


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def run(spec: dict[str, Any]) -> dict[str, Any]:
    import benchmarl
    import torchrl
    import vmas

    with tempfile.TemporaryDirectory(prefix="teams-benchmarl-") as scratch:
        recorder = EvaluationRecorder()
        experiment = build(spec, Path(scratch), [recorder])
        seen = observed(experiment, spec["algorithm_name"])
        wrong = differences(spec, seen)
        if wrong:
            raise Unmatched("; ".join(wrong))
        start = time.perf_counter()
        experiment.run()
        wall = time.perf_counter() - start
        spent = timers(experiment)
    train = spent["collection"] + spent["training"]  # evaluation excluded, as on rlconf's side
    frames = int(experiment.total_frames)
    return {"library": "benchmarl", "frames": frames,
            "final_return": recorder.curve[-1][1] if recorder.curve else None,
            "final_frames": recorder.curve[-1][0] if recorder.curve else None,
            "curve": recorder.curve, "train_seconds": round(train, 3),
            "collection_seconds": round(spent["collection"], 3), "update_seconds": round(spent["training"], 3),
            "eval_seconds": round(spent["evaluation"], 3), "wall_seconds": round(wall, 3),
            "frames_per_second": round(frames / max(train, 1e-9), 1), "settings": seen,
            "torch_threads": torch.get_num_threads(),
            "versions": {"benchmarl": benchmarl.__version__, "torchrl": torchrl.__version__,
                         "vmas": vmas.__version__, "torch": torch.__version__}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("spec", type=Path, help="the trial's spec (JSON, written by teams.py)")
    parser.add_argument("--out", type=Path, required=True, help="where the result (JSON) goes")
    args = parser.parse_args(argv)
    try:
        result = run(json.loads(args.spec.read_text()))
    except Unmatched as error:
        print(f"teams_benchmarl: error: settings not matched: {error}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
