"""The benchmark's peers beyond Stable-Baselines3: Tianshou 2.x and TorchRL, at the workloads' settings.

As presets.py does for SB3, one function per peer maps a workload's composed rlconf settings (read at run time,
so a preset change reaches every peer) to that library's own names: ``tianshou_kwargs`` and
``torchrl_kwargs``. Each returns the groups of arguments its trainer (peer_tianshou.py, peer_torchrl.py) hands to
the library's classes unchanged, and refuses in one line a setting the library cannot express. Neither library is
imported here: the mapping is tested, and the report written, where a peer is not installed.

What "matched" holds equal, for every peer: the environment steps, the number of env copies, the networks
(hidden sizes, activation, orthogonal weights where rlconf uses them, the Nature CNN on Atari), the batch size,
the replay size and warm-up, updates per step (a burst of ``gradient_steps`` updates every
``update_frequency`` env steps) or PPO's rollout, epochs and minibatches, the optimiser (Adam with rlconf's eps)
and the learning-rate and exploration schedules.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from typing import Any

from rlconf.settings import Settings

ACTIVATIONS = ("relu", "tanh", "elu", "gelu", "silu")  # torch.nn's names, capitalised by the trainers


@dataclass(frozen=True)
class Peer:
    """A library the benchmark compares with: its name in the report and the trial kind that trains it."""

    name: str  # trial.py's kind is f"{name}-train"; the results' key
    label: str  # the report's column
    module: str  # what must import for the peer to run
    agents: tuple[str, ...]  # rlconf agents the peer's trainer implements


PEERS = {p.name: p for p in (
    Peer("tianshou", "Tianshou", "tianshou", ("dqn", "ppo", "sac")),
    Peer("torchrl", "TorchRL", "torchrl", ("dqn", "ppo", "sac")),
)}


def installed(peer: Peer) -> bool:
    """Whether this interpreter can import the peer (a peer that is not installed is skipped, not a failure)."""
    return importlib.util.find_spec(peer.module) is not None


class Unmatched(ValueError):
    """A workload setting a peer cannot express: comparing with it would not be matched."""


def _unmatched(peer: str, key: str, value: Any, why: str) -> Unmatched:
    return Unmatched(f"{key}={value}: no {peer} equivalent ({why}); the comparison would not be matched")


def _network(settings: Settings, peer: str) -> dict[str, Any]:
    """The model as both trainers build it: an MLP's layers, or the Nature CNN's convolutions and units."""
    model = settings.approximation
    for key in ("dueling", "noisy"):
        if model.get(key):
            raise _unmatched(peer, f"approximation.{key}", True, "the benchmark builds plain heads")
    if model.get("recurrent", "none") != "none":
        raise _unmatched(peer, "approximation.recurrent", model["recurrent"], "the benchmark maps feed-forward models")
    if model["model"] == "mlp":
        if model["activation"] not in ACTIVATIONS:
            raise _unmatched(peer, "approximation.activation", model["activation"], f"one of {ACTIVATIONS}")
        return {"kind": "mlp", "hidden": list(model["hidden"]), "activation": model["activation"],
                "ortho_init": model.get("ortho_init", False), "shared": model.get("shared", False)}
    if model["model"] == "nature_cnn":
        if not model["scale_frames"]:
            raise _unmatched(peer, "approximation.scale_frames", False, "both scale frames to [0, 1]")
        return {"kind": "nature_cnn", "convs": [list(c) for c in model["convs"]], "hidden": model["hidden"],
                "ortho_init": model.get("ortho_init", False), "shared": model.get("shared", True)}
    raise _unmatched(peer, "approximation.model", model["model"], "the benchmark builds an MLP or the Nature CNN")


def _env(settings: Settings, peer: str) -> dict[str, Any]:
    """The env and its preprocessing: gymnasium's id and, on Atari, the ALE settings and DeepMind's body."""
    if settings.body.name not in ("none", "", "atari"):
        raise _unmatched(peer, "body", settings.body.name, "the peers see the env's own observations")
    env: dict[str, Any] = {"id": settings.env.id, "family": settings.env.family, "n_envs": settings.hardware.n_envs,
                           "test_envs": settings.hardware.eval_envs}
    if settings.env.family == "atari":
        game, body = settings.env.kwargs, settings.body
        env |= {"ale": {"frameskip": 1, "repeat_action_probability": game["repeat_action_probability"],
                        "full_action_space": game["full_action_space"],
                        "max_num_frames_per_episode": game["max_num_frames_per_episode"]},
                "noop_max": game["noop_max"], "frame_skip": game["frame_skip"], "frame_stack": body.frame_stack,
                "episodic_lives": body.episodic_lives, "clip_rewards": body.clip_rewards}
    elif settings.env.family not in ("classic", "continuous", "mujoco"):
        raise _unmatched(peer, "env.family", settings.env.family, "the benchmark maps gymnasium and atari envs")
    return env


def target_period_in_updates(settings: Settings) -> int:
    """rlconf refreshes a fixed target, when due, before a burst of updates; counted in gradient updates (as
    both peers count it), that is every burst, or every k-th when the period spans k bursts."""
    a = settings.agent
    return a.gradient_steps * max(1, a.target_update_frequency // a.update_frequency)


def _burst(settings: Settings, peer: str) -> dict[str, int]:
    """Off-policy updates as rlconf makes them: ``gradient_steps`` updates after every ``update_frequency``
    env steps (all envs together), from ``replay_start_size`` steps on, after that many steps of warm-up."""
    a, n_envs = settings.agent, settings.hardware.n_envs
    if a.update_frequency % n_envs:
        raise _unmatched(peer, "agent.update_frequency", a.update_frequency,
                         f"collection comes in multiples of the {n_envs} envs")
    return {"steps": settings.run.steps, "warmup": a.replay_start_size, "collect": a.update_frequency,
            "updates": a.gradient_steps, "batch_size": a.batch_size,
            "buffer_size": min(a.replay_buffer_size, settings.run.steps)}


def _dqn(settings: Settings, peer: str) -> dict[str, Any]:
    a = settings.agent
    if a.replay != "uniform":
        raise _unmatched(peer, "agent.replay", a.replay, "the benchmark's peers replay uniformly")
    if a.target not in ("fixed",):
        raise _unmatched(peer, "agent.target", a.target, "both peers' DQN refresh a fixed target network")
    if settings.approximation["model"] != "mlp" or (peer == "TorchRL" and a.n_steps != 1):
        raise _unmatched(peer, "agent.n_steps and approximation.model",
                         f"{a.n_steps} and {settings.approximation['model']}",
                         "the benchmark builds the peers' DQN as their CartPole examples: an MLP (TorchRL's with "
                         "one-step targets)")
    return {"lr": a.lr, "lr_final": a.lr if a.lr_final is None else a.lr_final, "adam_eps": a.adam_eps,
            "gamma": a.discount_factor, "n_steps": a.n_steps, "double_q": a.double_q, "loss": a.loss,
            "clip_grad": a.clip_grad or None, "target_period": target_period_in_updates(settings),
            "epsilon": (a.epsilon, a.epsilon_final, a.epsilon_decay_steps), **_burst(settings, peer)}


def _ppo(settings: Settings, peer: str) -> dict[str, Any]:
    a, n_envs = settings.agent, settings.hardware.n_envs
    if a.lr_v is not None:
        raise _unmatched(peer, "agent.lr_v", a.lr_v, "one optimiser for policy and value")
    return {"steps": settings.run.steps, "rollout": a.n_steps * n_envs, "epochs": a.epochs, "batch_size": a.batch_size,
            "lr": a.lr, "lr_final": a.lr if a.lr_final is None else a.lr_final, "adam_eps": a.adam_eps,
            "clip": a.clip, "clip_final": a.clip if a.clip_final is None else a.clip_final,
            "gamma": a.discount_factor, "lam": a.lam, "ent_coef": a.entropy_loss_scaling,
            "vf_coef": a.value_loss_scaling, "clip_grad": a.clip_grad or None,
            "normalize_advantages": a.normalize_advantages}


def _sac(settings: Settings, peer: str) -> dict[str, Any]:
    a = settings.agent
    if a.temperature is not None:
        raise _unmatched(peer, "agent.temperature", a.temperature, "the benchmark tunes the temperature")
    return {"lr_q": a.lr_q, "lr_pi": a.lr_pi, "lr_temperature": a.lr_temperature, "adam_eps": a.adam_eps,
            "gamma": a.discount_factor, "tau": a.polyak_rate, "log_alpha": math.log(a.temperature_initial),
            "entropy_target": a.entropy_target, **_burst(settings, peer)}


ALGORITHMS = {"dqn": _dqn, "ppo": _ppo, "sac": _sac}


def _matched(settings: Settings, peer: Peer) -> dict[str, Any]:
    if settings.agent_name not in peer.agents:
        raise _unmatched(peer.label, "agent", settings.agent_name, f"the benchmark runs its {', '.join(peer.agents)}")
    return {"agent": settings.agent_name, "env": _env(settings, peer.label), "network": _network(settings, peer.label),
            "algorithm": ALGORITHMS[settings.agent_name](settings, peer.label)}


def tianshou_kwargs(settings: Settings) -> dict[str, Any]:
    """rlconf's settings in Tianshou 2's terms: ``algorithm`` (the DQN/PPO/SAC class's keywords), ``trainer``
    (OffPolicyTrainerParams / OnPolicyTrainerParams), the ``network`` and ``env``, and the ``schedule`` the
    trainer's training_fn and learning-rate factory apply."""
    m = _matched(settings, PEERS["tianshou"])
    a, agent = m["algorithm"], m["agent"]
    if agent == "ppo":
        algorithm = {"gamma": a["gamma"], "gae_lambda": a["lam"], "eps_clip": a["clip"], "vf_coef": a["vf_coef"],
                     "ent_coef": a["ent_coef"], "max_grad_norm": a["clip_grad"], "value_clip": False,
                     "advantage_normalization": a["normalize_advantages"], "recompute_advantage": False,
                     "return_scaling": False}
        # One trainer step collects a rollout, then repeats the epochs over it in minibatches.
        trainer = {"max_epochs": 1, "epoch_num_steps": a["steps"], "collection_step_num_env_steps": a["rollout"],
                   "update_step_num_repetitions": a["epochs"], "batch_size": a["batch_size"]}
        schedule = {"lr": (a["lr"], a["lr_final"]), "clip": (a["clip"], a["clip_final"]), "steps": a["steps"]}
        return {**m, "algorithm": algorithm, "trainer": trainer, "schedule": schedule, "adam_eps": a["adam_eps"]}
    # Off-policy: a warm-up of random actions, then trainer steps of `collect` env steps and `updates` updates.
    trainer = {"max_epochs": 1, "epoch_num_steps": a["steps"] - a["warmup"],
               "collection_step_num_env_steps": a["collect"],
               "update_step_num_gradient_steps_per_sample": a["updates"] / a["collect"], "batch_size": a["batch_size"]}
    common = {**m, "trainer": trainer, "buffer_size": a["buffer_size"], "warmup": a["warmup"],
              "adam_eps": a["adam_eps"]}
    if agent == "dqn":
        if a["clip_grad"] is not None:  # Tianshou's DQN takes no max_grad_norm: said in the report's notes
            common["departures"] = [f"no gradient clipping (rlconf clips at {a['clip_grad']:g})"]
        algorithm = {"gamma": a["gamma"], "n_step_return_horizon": a["n_steps"], "target_update_freq":
                     a["target_period"], "is_double": a["double_q"],
                     "huber_loss_delta": 1.0 if a["loss"] == "huber" else None}
        schedule = {"lr": (a["lr"], a["lr_final"]), "epsilon": a["epsilon"], "steps": a["steps"]}
        return {**common, "algorithm": algorithm, "schedule": schedule}
    algorithm = {"gamma": a["gamma"], "tau": a["tau"], "n_step_return_horizon": 1}
    return {**common, "algorithm": algorithm, "lr": {"actor": a["lr_pi"], "critic": a["lr_q"],
                                                     "alpha": a["lr_temperature"]},
            "alpha": {"log_alpha": a["log_alpha"], "target_entropy": a["entropy_target"]}}


def torchrl_kwargs(settings: Settings) -> dict[str, Any]:
    """rlconf's settings in TorchRL's terms, as its sota-implementations name them: ``collector``
    (SyncDataCollector's frames), ``loss`` (DQNLoss / ClipPPOLoss / SACLoss and its value estimator), ``optim``,
    ``buffer`` and the updates a batch of frames gets, the ``network`` and ``env``."""
    m = _matched(settings, PEERS["torchrl"])
    a, agent = m["algorithm"], m["agent"]
    if agent == "ppo":
        return {**m, "collector": {"frames_per_batch": a["rollout"], "total_frames": a["steps"]},
                "loss": {"clip_epsilon": a["clip"], "entropy_coeff": a["ent_coef"], "critic_coeff": a["vf_coef"],
                         "loss_critic_type": "l2", "normalize_advantage": a["normalize_advantages"]},
                "gae": {"gamma": a["gamma"], "lmbda": a["lam"], "average_gae": False},
                "optim": {"lr": a["lr"], "lr_final": a["lr_final"], "eps": a["adam_eps"],
                          "max_grad_norm": a["clip_grad"], "clip_final": a["clip_final"]},
                "ppo_epochs": a["epochs"], "mini_batch_size": a["batch_size"]}
    collector = {"frames_per_batch": a["collect"], "total_frames": a["steps"], "init_random_frames": a["warmup"]}
    buffer = {"buffer_size": a["buffer_size"], "batch_size": a["batch_size"]}
    if agent == "dqn":
        start, end, decay = a["epsilon"]
        return {**m, "collector": collector, "buffer": buffer, "num_updates": a["updates"],
                "greedy": {"eps_init": start, "eps_end": end, "annealing_num_steps": decay},
                "loss": {"loss_function": "smooth_l1" if a["loss"] == "huber" else "l2", "delay_value": True,
                         "double_dqn": a["double_q"]},
                # HardUpdate copies when its counter (reset to 0 by a copy) has reached the interval: every
                # interval + 1 updates
                "gamma": a["gamma"], "hard_update": {"value_network_update_interval": a["target_period"] - 1},
                "optim": {"lr": a["lr"], "lr_final": a["lr_final"], "eps": a["adam_eps"],
                          "max_grad_norm": a["clip_grad"]}}
    return {**m, "collector": collector, "buffer": buffer, "num_updates": a["updates"],
            "loss": {"loss_function": "l2", "num_qvalue_nets": 2, "delay_actor": False, "delay_qvalue": True,
                     "alpha_init": math.exp(a["log_alpha"]),
                     "target_entropy": "auto" if a["entropy_target"] is None else a["entropy_target"]},
            "gamma": a["gamma"], "soft_update": {"eps": 1 - a["tau"]},
            "optim": {"lr_actor": a["lr_pi"], "lr_critic": a["lr_q"], "lr_alpha": a["lr_temperature"],
                      "eps": a["adam_eps"]}}


MAPPINGS = {"tianshou": tianshou_kwargs, "torchrl": torchrl_kwargs}


def peer_kwargs(peer: str, settings: Settings) -> dict[str, Any]:
    """The peer's arguments for the workload (Unmatched where it cannot express a setting)."""
    return MAPPINGS[peer](settings)


def orthogonal(modules: list[Any], heads: dict[Any, float]) -> None:
    """rlconf's ortho_init on a peer's networks, as the peers' PPO examples apply it: orthogonal weights of gain
    sqrt(2) and zero biases, then each head's last linear layer at its own gain (0.01 the policy, 1 the value)."""
    from torch import nn  # here: the mappings above are read without torch

    for module in modules:
        for layer in module.modules():
            if isinstance(layer, nn.Linear | nn.Conv2d):
                nn.init.orthogonal_(layer.weight, math.sqrt(2))
                nn.init.zeros_(layer.bias)
    for head, gain in heads.items():
        last = [layer for layer in head.modules() if isinstance(layer, nn.Linear)][-1]
        nn.init.orthogonal_(last.weight, gain)
