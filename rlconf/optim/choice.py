"""How networks are optimised: the approximation group's ``optimizer``, ``optimizer_args``, ``lr_schedule`` and
``lr_schedule_args``, their names, arguments and checks, importing no torch (a config is checked without it;
only a ``torch.optim.lr_scheduler`` class named by the user imports it, to read that class's arguments).
rlconf.approximation.optimizers builds what these settings name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlconf.errors import ConfigError, require

# The approximation group's keys that choose the optimiser and the schedule (the rest choose the network).
OPTIMIZATION_KEYS = ("optimizer", "optimizer_args", "lr_schedule", "lr_schedule_args")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# An argument's kind: (does a value fit, what is allowed in words).
Kind = tuple[Callable[[Any], bool], str]
UNIT: Kind = (lambda v: _number(v) and 0 <= v < 1, "a number in [0, 1)")
POSITIVE: Kind = (lambda v: _number(v) and v > 0, "a positive number")
NON_NEGATIVE: Kind = (lambda v: _number(v) and v >= 0, "a number of at least 0")
BOOLEAN: Kind = (lambda v: isinstance(v, bool), "true or false")
BETAS: Kind = (lambda v: isinstance(v, (list, tuple)) and len(v) == 2 and all(UNIT[0](b) for b in v),
               "two numbers in [0, 1), e.g. [0.9, 0.999]")
ADAM_ARGUMENTS = {"betas": BETAS, "eps": POSITIVE, "weight_decay": NON_NEGATIVE, "amsgrad": BOOLEAN}


@dataclass(frozen=True)
class OptimizerKind:
    """One choice of ``approximation.optimizer``: what it is, in a line, and the arguments it takes."""

    description: str
    arguments: dict[str, Kind]


OPTIMIZERS: dict[str, OptimizerKind] = {
    "adam": OptimizerKind("Adam (Kingma & Ba), torch's fused kernel; eps is agent.adam_eps unless given here",
                          ADAM_ARGUMENTS),
    "adamw": OptimizerKind("Adam with decoupled weight decay (Loshchilov & Hutter), fused; weight_decay 0.01",
                           ADAM_ARGUMENTS),
    "rmsprop": OptimizerKind("torch's RMSprop (Hinton's); eps added after the square root",
                             {"alpha": UNIT, "eps": POSITIVE, "weight_decay": NON_NEGATIVE, "momentum": NON_NEGATIVE,
                              "centered": BOOLEAN}),
    "rmsprop_nature": OptimizerKind("the Nature DQN's centered RMSProp (Mnih et al. 2015): decay 0.95, min squared "
                                    "gradient 0.01 inside the square root; Nature's rate is agent.lr=0.00025",
                                    {"decay": UNIT, "min_squared_gradient": POSITIVE}),
    "sgd": OptimizerKind("stochastic gradient descent, with optional (Nesterov) momentum",
                         {"momentum": NON_NEGATIVE, "dampening": NON_NEGATIVE, "weight_decay": NON_NEGATIVE,
                          "nesterov": BOOLEAN}),
}

# approximation.lr_schedule: the learning rate over the run, read from the agent's clock of environment steps.
SCHEDULES: dict[str, str] = {
    "linear": "from agent.lr to agent.lr_final over the run's steps (constant without lr_final)",
    "cosine": "half a cosine from agent.lr to agent.lr_final (0 without it) over the run's steps",
    "constant": "agent.lr throughout (agent.lr_final, a preset's too, left aside)",
}
# The torch.optim.lr_scheduler classes built from numbers alone: each steps once per optimiser step (an
# update, not an environment step). The others need a function, a metric or other schedulers: TORCH_REFUSED.
TORCH_SCHEDULERS = ("StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR", "PolynomialLR",
                    "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR", "OneCycleLR")
TORCH_REFUSED = {"LambdaLR": "a function", "MultiplicativeLR": "a function", "SequentialLR": "other schedulers",
                 "ChainedScheduler": "other schedulers", "ReduceLROnPlateau": "a metric to watch"}
# Arguments rlconf passes itself (the optimiser) or that change nothing a run computes.
TORCH_OWN_ARGUMENTS = ("optimizer", "last_epoch", "verbose")


@dataclass
class OptimizationConfig:
    """The optimiser and learning-rate schedule of every network of a run (the approximation group's keys)."""

    optimizer: str = "adam"  # adam, adamw, rmsprop, rmsprop_nature or sgd
    optimizer_args: dict[str, Any] = field(default_factory=dict)  # its arguments besides the learning rate
    lr_schedule: str = "linear"  # linear, cosine, constant, or a torch.optim.lr_scheduler class by name
    lr_schedule_args: dict[str, Any] = field(default_factory=dict)  # a torch scheduler's arguments

    def __post_init__(self):
        check_optimizer(self.optimizer, self.optimizer_args)
        check_schedule(self.lr_schedule, self.lr_schedule_args)

    @classmethod
    def of(cls, approximation: Mapping[str, Any] | None) -> OptimizationConfig:
        """The choice an approximation group's settings hold (a dict as agents get it); adam and linear where
        they name none (an agent built directly, a plugin's own dict)."""
        approximation = approximation or {}
        return cls(**{key: approximation[key] for key in OPTIMIZATION_KEYS if approximation.get(key) is not None})

    @property
    def torch_schedule(self) -> bool:
        """The schedule is a torch.optim.lr_scheduler class (stepped with the optimiser, not read from a clock)."""
        return self.lr_schedule not in SCHEDULES


def check_optimizer(name: str, arguments: Mapping[str, Any]) -> None:
    """``approximation.optimizer`` and its arguments: a known optimiser, its own arguments, each of its kind."""
    require(name in OPTIMIZERS, "approximation.optimizer", name, f"allowed: {', '.join(OPTIMIZERS)}")
    require(isinstance(arguments, Mapping), "approximation.optimizer_args", arguments,
            "a mapping of the optimiser's arguments, e.g. {weight_decay: 0.01}")
    allowed = OPTIMIZERS[name].arguments
    for key, value in arguments.items():
        where = f"approximation.optimizer_args.{key}"
        if key == "lr":
            raise ConfigError(f"{where}={value}: the learning rate is the agent's (agent.lr, lr_q, lr_pi ...); "
                              f"allowed here: {', '.join(allowed)}")
        require(key in allowed, where, value, f"not an argument of {name}; allowed: {', '.join(allowed)}")
        fits, words = allowed[key]
        require(fits(value), where, value, f"must be {words}")
    if name == "sgd" and arguments.get("nesterov"):
        require(arguments.get("momentum", 0) > 0 and arguments.get("dampening", 0) == 0,
                "approximation.optimizer_args.nesterov", True, "needs momentum > 0 and dampening 0")


def check_schedule(name: str, arguments: Mapping[str, Any]) -> None:
    """``approximation.lr_schedule`` and its arguments: one of SCHEDULES (no arguments: the agent's lr and
    lr_final say where it goes), or a torch.optim.lr_scheduler class built from numbers, its arguments tried on
    a throwaway optimiser so a wrong one is a line here rather than a traceback mid-build."""
    require(isinstance(arguments, Mapping), "approximation.lr_schedule_args", arguments,
            "a mapping of the schedule's arguments, e.g. {step_size: 1000}")
    if name in SCHEDULES:
        require(not arguments, "approximation.lr_schedule_args", dict(arguments),
                f"lr_schedule={name} reads agent.lr and agent.lr_final; allowed: {{}} (arguments are for a "
                f"torch.optim.lr_scheduler class: {', '.join(TORCH_SCHEDULERS)})")
        return
    if name in TORCH_REFUSED:
        raise ConfigError(f"approximation.lr_schedule={name}: needs {TORCH_REFUSED[name]}, which a config cannot "
                          f"give; allowed: {', '.join([*SCHEDULES, *TORCH_SCHEDULERS])}")
    require(name in TORCH_SCHEDULERS, "approximation.lr_schedule", name,
            f"allowed: {', '.join(SCHEDULES)}, or a torch.optim.lr_scheduler class: {', '.join(TORCH_SCHEDULERS)}")
    _try_torch_schedule(name, dict(arguments))


def _try_torch_schedule(name: str, arguments: dict[str, Any]) -> None:
    import inspect

    import torch

    scheduler = getattr(torch.optim.lr_scheduler, name)
    accepted = [p for p in inspect.signature(scheduler).parameters if p not in TORCH_OWN_ARGUMENTS]
    for key, value in arguments.items():
        require(key in accepted, f"approximation.lr_schedule_args.{key}", value,
                f"not an argument of {name}; allowed: {', '.join(accepted)}")
    # CyclicLR cycles the momentum by default, which only optimisers with momentum have: try it on one.
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1e-3, momentum=0.9)
    try:
        scheduler(optimizer, **arguments)
    except (TypeError, ValueError, ZeroDivisionError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ConfigError(f"approximation.lr_schedule={name} lr_schedule_args={arguments}: {reason}; allowed "
                          f"arguments: {', '.join(accepted)}") from None


def check_with_agent(choice: OptimizationConfig, agent: Any, agent_name: str) -> None:
    """The schedule fits the agent: cosine needs one whose rate moves over the run (one with ``lr_final``: the
    others' rates are constant, or moved by a torch scheduler), a torch scheduler one whose rate has no rule of
    its own. (``lr_final`` is where linear and cosine end; constant and a torch scheduler leave it aside, so that
    ``lr_schedule=constant`` means constant whatever a preset's ``lr_final``.)"""
    if choice.lr_schedule == "cosine" and not hasattr(agent, "lr_final"):
        raise ConfigError(f"approximation.lr_schedule=cosine: agent={agent_name} keeps its learning rates constant "
                          "over the run (it has no agent.lr_final); allowed: linear, constant, or a "
                          f"torch.optim.lr_scheduler class stepped per update: {', '.join(TORCH_SCHEDULERS)}")
    if choice.torch_schedule and hasattr(agent, "lr_decay"):
        raise ConfigError(f"approximation.lr_schedule={choice.lr_schedule}: agent={agent_name}'s rate is "
                          "lr / (1 + lr_decay t) (agent.lr_decay, GenRL's); allowed: linear or constant")


def described() -> dict[str, list[tuple[str, str]]]:
    """(name, description) of every optimiser and of every schedule, by key, for ``rlconf list``."""
    optimizers = [(name, f"{kind.description} (optimizer_args: {', '.join(kind.arguments)})")
                  for name, kind in OPTIMIZERS.items()]
    torch_classes = (f"stepped once per update (agent.lr_final left aside), lr_schedule_args its arguments: "
                     f"{', '.join(TORCH_SCHEDULERS)}")
    schedules = [*SCHEDULES.items(), ("<torch class>", torch_classes)]
    return {"approximation.optimizer": optimizers, "approximation.lr_schedule": schedules}
