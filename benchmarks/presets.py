"""rlconf's preset hyperparameters, read at run time and translated into Stable-Baselines3 arguments.

The benchmark never restates a hyperparameter: it composes the same config ``rlconf run`` would, and maps
each value to its SB3 name in one function per algorithm. A preset change is therefore benchmarked on
both sides at once, and a setting SB3 cannot express fails loudly instead of comparing different things.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from torch import nn

from rlconf.cli import compose
from rlconf.config import Settings, validate

ENV = "classic/cartpole"
ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU,
                                           "silu": nn.SiLU}


@dataclass(frozen=True)
class Linear:
    """An SB3 schedule: SB3 calls it with the progress remaining (1 at the start, 0 at the end).

    A class rather than a lambda so the results file can say what the schedule was.
    """

    start: float
    end: float

    def __call__(self, progress_remaining: float) -> float:
        return self.end + progress_remaining * (self.start - self.end)

    def __repr__(self) -> str:
        return f"linear({self.start:g} -> {self.end:g})"


def load_settings(agent: str, steps: int | None = None, env: str = ENV) -> Settings:
    """The validated config of ``rlconf run agent=AGENT env=ENV [steps=STEPS]``, preset included."""
    overrides = [f"agent={agent}", f"env={env}"] + ([f"steps={steps}"] if steps is not None else [])
    return validate(compose(overrides, []))


def _schedule(start: float, end: float | None) -> float | Linear:
    return start if end is None else Linear(start, end)


def _max_grad_norm(clip_grad: float) -> float:
    # rlconf's 0 means "no clipping"; SB3 always clips, so an infinite norm is its way to say the same.
    return clip_grad if clip_grad > 0 else math.inf


def _unsupported(key: str, value: Any, why: str) -> ValueError:
    return ValueError(f"{key}={value}: no Stable-Baselines3 equivalent ({why}); the comparison would not be matched")


def sb3_dqn_kwargs(settings: Settings) -> dict[str, Any]:
    """rlconf's DQN settings as keyword arguments of ``stable_baselines3.DQN``."""
    a, model, n_envs = settings.agent, settings.approximation, settings.hardware.n_envs
    if a.loss != "huber":
        raise _unsupported("agent.loss", a.loss, "SB3's DQN always uses the Huber loss")
    if a.target == "trivial":
        raise _unsupported("agent.target", a.target, "SB3's DQN always has a target network")
    polyak = a.target == "polyak"
    return {
        "learning_rate": _schedule(a.lr, a.lr_final),
        "buffer_size": a.replay_buffer_size,
        "learning_starts": a.replay_start_size,
        "batch_size": a.batch_size,
        "gamma": a.discount_factor,
        # rlconf counts its periods in environment steps and acts on all envs at once; SB3's train_freq counts
        # calls to the vector env (its target interval already divides by n_envs itself).
        "train_freq": max(1, a.update_frequency // n_envs),
        "gradient_steps": a.gradient_steps,
        "tau": a.target_rate if polyak else 1.0,
        "target_update_interval": n_envs if polyak else a.target_update_frequency,
        # SB3 decays epsilon over a fraction of the run; rlconf over a number of steps.
        "exploration_fraction": a.epsilon_decay_steps / settings.run.steps,
        "exploration_initial_eps": a.epsilon,
        "exploration_final_eps": a.epsilon_final,
        "max_grad_norm": _max_grad_norm(a.clip_grad),
        "policy_kwargs": {
            "net_arch": list(model["hidden"]),
            "activation_fn": ACTIVATIONS[model["activation"]],
            "optimizer_kwargs": {"eps": a.adam_eps},
        },
    }


def sb3_ppo_kwargs(settings: Settings) -> dict[str, Any]:
    """rlconf's PPO settings as keyword arguments of ``stable_baselines3.PPO``."""
    a, model = settings.agent, settings.approximation
    if model["shared"]:
        raise _unsupported("approximation.shared", True, "SB3 2.x builds separate policy and value MLPs")
    hidden = list(model["hidden"])
    return {
        "n_steps": a.n_steps,
        "batch_size": a.batch_size,
        "n_epochs": a.epochs,
        "gamma": a.discount_factor,
        "gae_lambda": a.lam,
        "learning_rate": _schedule(a.lr, a.lr_final),
        "clip_range": _schedule(a.clip, a.clip_final),
        "ent_coef": a.entropy_loss_scaling,
        "vf_coef": a.value_loss_scaling,
        "max_grad_norm": _max_grad_norm(a.clip_grad),
        "normalize_advantage": a.normalize_advantages,
        "policy_kwargs": {
            "net_arch": {"pi": hidden, "vf": hidden},
            "activation_fn": ACTIVATIONS[model["activation"]],
            "ortho_init": model["ortho_init"],
            "optimizer_kwargs": {"eps": a.adam_eps},
        },
    }


SB3_KWARGS = {"dqn": sb3_dqn_kwargs, "ppo": sb3_ppo_kwargs}


def describe(kwargs: dict[str, Any]) -> dict[str, Any]:
    """SB3 arguments as JSON-friendly values (classes and schedules by name) for the results file."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list | int | float | str | bool) or value is None:
            return value if not (isinstance(value, float) and math.isinf(value)) else "inf"
        return getattr(value, "__name__", repr(value))

    return plain(kwargs)
