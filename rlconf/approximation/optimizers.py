"""Every network's optimiser and learning-rate schedule, made here and nowhere else, from the approximation
group's choice (``approximation.optimizer``, ``optimizer_args``, ``lr_schedule``, ``lr_schedule_args``: checked
by rlconf.optim.choice). Agents ask ``learning_rate`` for the rate over the run and ``make_optimizer`` for the
optimiser with what steps its rate; ``training`` gives both as an Approximation's keyword arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

from rlconf.errors import ConfigError
from rlconf.optim import Clock, CosineScheduler, LinearScheduler, schedule
from rlconf.optim.choice import OptimizationConfig

Choice = Mapping[str, Any] | OptimizationConfig | None  # an approximation group's settings, or the choice itself


def _choice(approximation: Choice) -> OptimizationConfig:
    return approximation if isinstance(approximation, OptimizationConfig) else OptimizationConfig.of(approximation)


def learning_rate(initial: float, final: float | None, total_steps: int, clock: Clock, name: str,
                  approximation: Choice) -> float | LinearScheduler:
    """The learning rate over the run as ``approximation.lr_schedule`` says: linear (constant without ``final``),
    cosine (to ``final``, or 0), over ``total_steps`` of ``clock``; a number where the rate is constant or a torch
    scheduler moves it (``make_optimizer``)."""
    choice = _choice(approximation)
    if choice.lr_schedule == "cosine":
        return CosineScheduler(initial, 0.0 if final is None else final, 0, total_steps, clock, name)
    return schedule(initial, final if choice.lr_schedule == "linear" else None, total_steps, clock, name)


def make_optimizer(parameters: Iterable[torch.nn.Parameter], lr: float | LinearScheduler, approximation: Choice,
                   adam_eps: float = 1e-8) -> tuple[torch.optim.Optimizer, Any]:
    """The chosen optimiser of ``parameters`` at ``lr``, and what moves its rate (None where nothing does): the
    schedule ``lr`` is (``learning_rate``'s), or the chosen torch.optim.lr_scheduler class. ``adam_eps``: the
    agent's ``adam_eps``, Adam's and AdamW's epsilon unless ``optimizer_args`` gives one."""
    choice = _choice(approximation)
    arguments = dict(choice.optimizer_args)
    optimizer = OPTIMIZERS[choice.optimizer](list(parameters), float(lr), adam_eps, arguments)
    if isinstance(lr, LinearScheduler):
        return optimizer, ScheduledLearningRate(optimizer, lr)
    if choice.torch_schedule:
        scheduler = _torch_scheduler(optimizer, choice)
        return optimizer, (HeldAtItsEnd(scheduler) if isinstance(scheduler, torch.optim.lr_scheduler.OneCycleLR)
                           else scheduler)
    return optimizer, None


def _torch_scheduler(optimizer: torch.optim.Optimizer, choice: OptimizationConfig) -> Any:
    """The chosen torch.optim.lr_scheduler class on ``optimizer``; what it refuses of this optimiser (CyclicLR's
    cycled momentum where the optimiser has none) is a ConfigError, before the run's directory is made."""
    try:
        return getattr(torch.optim.lr_scheduler, choice.lr_schedule)(optimizer, **choice.lr_schedule_args)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"approximation.lr_schedule={choice.lr_schedule} with approximation.optimizer="
                          f"{choice.optimizer}: {' '.join(str(error).split())}") from None


def training(parameters: Iterable[torch.nn.Parameter], lr: float | LinearScheduler, approximation: Choice,
             adam_eps: float = 1e-8) -> dict[str, Any]:
    """``make_optimizer``'s optimiser and schedule as an Approximation's ``optimizer`` and ``scheduler``."""
    optimizer, scheduler = make_optimizer(parameters, lr, approximation, adam_eps)
    return {"optimizer": optimizer, "scheduler": scheduler}


def _adam(parameters: list, lr: float, eps: float, arguments: dict[str, Any]) -> torch.optim.Optimizer:
    # torch's fused kernel: one call updates every tensor, a third faster than the default on small networks,
    # where per-tensor overhead dominates. Without arguments, exactly the Adam every run used before the choice.
    return torch.optim.Adam(parameters, lr=lr, **{"eps": eps, **arguments}, fused=True)


def _adamw(parameters: list, lr: float, eps: float, arguments: dict[str, Any]) -> torch.optim.Optimizer:
    return torch.optim.AdamW(parameters, lr=lr, **{"eps": eps, **arguments}, fused=True)


def _rmsprop(parameters: list, lr: float, eps: float, arguments: dict[str, Any]) -> torch.optim.Optimizer:
    return torch.optim.RMSprop(parameters, lr=lr, **arguments, foreach=True)


def _rmsprop_nature(parameters: list, lr: float, eps: float, arguments: dict[str, Any]) -> torch.optim.Optimizer:
    return NatureRMSprop(parameters, lr=lr, **arguments)


def _sgd(parameters: list, lr: float, eps: float, arguments: dict[str, Any]) -> torch.optim.Optimizer:
    return torch.optim.SGD(parameters, lr=lr, **arguments, foreach=True)


OPTIMIZERS = {"adam": _adam, "adamw": _adamw, "rmsprop": _rmsprop, "rmsprop_nature": _rmsprop_nature, "sgd": _sgd}


class NatureRMSprop(torch.optim.Optimizer):
    """The centered RMSProp of the Nature DQN (Mnih et al. 2015, Extended Data Table 1: squared gradient momentum
    0.95, gradient momentum 0.95, min squared gradient 0.01), as DeepMind's published Lua code applies it:

        g  <- decay * g  + (1 - decay) * grad
        g2 <- decay * g2 + (1 - decay) * grad^2
        w  <- w - lr * grad / sqrt(g2 - g^2 + min_squared_gradient)

    What is matched: the "min squared gradient" is added *inside* the square root, to the variance estimate.
    torch's RMSprop(centered=True, alpha=0.95, eps=0.01) adds its eps *after* the square root,
    sqrt(g2 - g^2) + 0.01: where gradients are small (variance well under 0.01) its denominator is near 0.01
    against DeepMind's near 0.1, steps ten times larger, so it is not Nature's optimiser. (TensorFlow's centered
    RMSProp, which Dopamine uses, also adds epsilon inside the root, as here.) No momentum term: Nature's is 0."""

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float = 0.00025, decay: float = 0.95,
                 min_squared_gradient: float = 0.01):
        super().__init__(params, {"lr": lr, "decay": decay, "min_squared_gradient": min_squared_gradient})

    @torch.no_grad()
    def step(self, closure=None):  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            for p in params:
                if not self.state[p]:
                    self.state[p].update(grad_avg=torch.zeros_like(p), square_avg=torch.zeros_like(p))
            means = [self.state[p]["grad_avg"] for p in params]
            squares = [self.state[p]["square_avg"] for p in params]
            decay = group["decay"]
            torch._foreach_lerp_(means, grads, 1 - decay)
            torch._foreach_mul_(squares, decay)
            torch._foreach_addcmul_(squares, grads, grads, value=1 - decay)
            denominators = torch._foreach_addcmul(squares, means, means, value=-1)
            torch._foreach_add_(denominators, group["min_squared_gradient"])
            torch._foreach_sqrt_(denominators)
            torch._foreach_addcdiv_(params, grads, denominators, value=-group["lr"])
        return loss


class HeldAtItsEnd:
    """OneCycleLR, which raises at the first step past its ``total_steps``, holding its last rate from there on:
    a run's number of updates is rarely known to the step, and a schedule that ends must not end the run. Its
    state is the scheduler's own (the same checkpoint as the bare scheduler's)."""

    def __init__(self, scheduler: torch.optim.lr_scheduler.OneCycleLR):
        self.scheduler = scheduler

    def step(self) -> None:
        if self.scheduler.last_epoch < self.scheduler.total_steps - 1:
            self.scheduler.step()

    def state_dict(self) -> dict:
        return self.scheduler.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.scheduler.load_state_dict(state)


class ScheduledLearningRate:
    """Sets the learning rate from a schedule after every optimiser step.

    Stateless on purpose: the schedule reads the agent's clock, which the agent checkpoints. (torch's
    LambdaLR does the same with several times the per-step overhead.)
    """

    def __init__(self, optimizer: torch.optim.Optimizer, lr: LinearScheduler):
        self.optimizer = optimizer
        self.lr = lr

    def step(self) -> None:
        lr = self.lr.value
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        # Nothing to set: the optimiser's own state holds the rate its next step uses (set after its last step),
        # as an uninterrupted run would use it. Setting it from the clock here made a resumed run's first step
        # differ from the uninterrupted run's.
        pass
