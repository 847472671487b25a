"""Approximation: a model together with everything needed to train it.

The agent asks for values (``approx(x)``, ``approx.no_grad(x)``, ``approx.eval(x)``, ``approx.target(x)``) and
hands back a loss (``approx.reinforce(loss)``). The optimiser, gradient clipping, loss scaling, learning-rate
schedule, target network and checkpoint state all live here, so algorithm code reads like the paper.
"""

from __future__ import annotations

import torch
from torch import nn

from rlconf import distributed
from rlconf.approximation.compiled import compiled
from rlconf.approximation.target import TargetNetwork, TrivialTarget


class Approximation:
    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        *,
        clip_grad: float = 0.0,
        loss_scaling: float = 1.0,
        scheduler=None,
        target: TargetNetwork | None = None,
        name: str = "approximation",
        logger=None,
    ):
        self.model = model
        self._forward = compiled(model)  # the model itself unless hardware.compile compiles it
        self.optimizer = optimizer
        self.clip_grad = clip_grad
        self.loss_scaling = loss_scaling
        self.scheduler = scheduler
        self.name = name
        self.logger = logger
        self._target = target or TrivialTarget()
        self._target.init(model)
        self._params = [p for p in model.parameters() if p.requires_grad]
        self._modules = _flag_only_modules(model)
        self.updates = 0

    # -- forward passes ------------------------------------------------------------------------------
    def __call__(self, *inputs) -> torch.Tensor:
        """A forward pass that records gradients, for computing a loss."""
        return self._forward(*inputs)

    @torch.no_grad()
    def no_grad(self, *inputs) -> torch.Tensor:
        return self._forward(*inputs)

    def eval(self, *inputs) -> torch.Tensor:
        """A forward pass in eval mode and without gradients; the model's mode is restored afterwards."""
        was_training = self.model.training
        if was_training:
            self._set_mode(False)
        try:
            if not torch.is_grad_enabled():  # acting under the loop's inference mode: no context to enter
                return self._forward(*inputs)
            with torch.no_grad():
                return self._forward(*inputs)
        finally:
            if was_training:
                self._set_mode(True)

    def _set_mode(self, training: bool) -> None:
        """``model.train(training)``, at a twentieth of its cost where every module only sets its flag: train()
        walks the tree through nn.Module.__setattr__'s checks, which on a small network cost as much as a
        forward pass on one state, and acting calls ``eval`` at every step."""
        if self._modules is None:
            self.model.train(training)
            return
        for module in self._modules:
            module.__dict__["training"] = training  # what train() leaves, without __setattr__'s checks

    def target(self, *inputs) -> torch.Tensor:
        return self._target(*inputs)

    @property
    def target_network(self) -> TargetNetwork:
        return self._target

    # -- training ------------------------------------------------------------------------------------
    def reinforce(self, loss: torch.Tensor) -> Approximation:
        """Backpropagate ``loss`` and take one optimiser step (with clipping, schedule and target update)."""
        self.zero_grad()
        (loss * self.loss_scaling if self.loss_scaling != 1.0 else loss).backward()
        self.step(loss)
        return self

    def step(self, loss: torch.Tensor | None = None, clip: bool = True, averaged: bool = False,
             checked: bool = False) -> Approximation:
        """One optimiser step, given that gradients are in place (``clip=False``: already clipped; ``checked``:
        the loss and norm already found finite).

        With several data-parallel learners (``rlconf.distributed``) the gradients and the loss are first
        averaged over them (``averaged``: they already are), so every learner takes the same step. A loss or
        gradient norm that is nan or inf raises ``NonFinite`` before the step: the weights stay as they were,
        and training stops (``experiments.Experiment``) rather than carry on from poisoned ones. The check reads
        numbers this step computes anyway (the loss, the clipped norm), never the weights."""
        if not averaged:
            (loss,) = distributed.average(self._params, [loss])
        norm = clip_grad_norm(self._params, self.clip_grad) if clip and self.clip_grad else None
        if not checked:
            check_finite({f"loss/{self.name}": loss, f"grad_norm/{self.name}": norm})
        self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()
        self._target.update()
        self.updates += 1
        if loss is not None and self.logger is not None and self.logger.wants_debug(self.updates):
            self.logger.add_scalar(f"loss/{self.name}", loss.item())
        return self

    def zero_grad(self) -> Approximation:
        self.optimizer.zero_grad(set_to_none=True)
        return self

    # -- checkpoints ---------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        state = {"model": self.model.state_dict(), "target": self._target.state_dict(), "updates": self.updates}
        if self.optimizer is not None:
            state["optimizer"] = self.optimizer.state_dict()
        if self.scheduler is not None:
            state["scheduler"] = self.scheduler.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self._target.load_state_dict(state["target"])
        self.updates = state.get("updates", 0)
        if self.optimizer is not None and "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None and "scheduler" in state:
            self.scheduler.load_state_dict(state["scheduler"])


def _flag_only_modules(model: nn.Module) -> tuple[nn.Module, ...] | None:
    """Every module of ``model`` (itself included), when none overrides ``train()`` (so switching the mode
    is setting each one's ``training`` flag); None when one does (DistributedDataParallel, fused QAT
    modules): then only its own ``train()`` switches the mode. Listed once: a network's tree of modules is
    fixed once an Approximation holds it."""
    modules = tuple(model.modules())
    return modules if all(type(m).train is nn.Module.train for m in modules) else None


class QNetwork(Approximation):
    """Action values Q(s, .) for a discrete action space: the model maps observations to one value per action."""

    def __init__(self, model: nn.Module, optimizer=None, name: str = "q", **kwargs):
        super().__init__(model, optimizer, name=name, **kwargs)


class VNetwork(Approximation):
    """State values V(s): the model's single output is squeezed to one number per state."""

    def __init__(self, model: nn.Module, optimizer=None, name: str = "v", **kwargs):
        super().__init__(_Squeeze(model), optimizer, name=name, **kwargs)


class FeatureNetwork(Approximation):
    """Shared features for several heads.

    ``features(x)`` runs the model once and hands the heads a detached copy, so each head's loss stops at the
    features; the heads' gradients collect on that copy and ``reinforce()`` (no argument) pushes their sum
    back through the shared layers in one backward pass.
    """

    def __init__(self, model: nn.Module, optimizer=None, name: str = "features", **kwargs):
        super().__init__(model, optimizer, name=name, **kwargs)
        self._cache: list[tuple[torch.Tensor, torch.Tensor]] = []

    def __call__(self, *inputs) -> torch.Tensor:
        return self._handed_to_heads(self._forward(*inputs))

    def _handed_to_heads(self, out: torch.Tensor) -> torch.Tensor:
        """A detached copy of ``out`` for the heads, kept with ``out`` for ``reinforce``."""
        detached = out.detach().requires_grad_(True)
        self._cache.append((out, detached))
        return detached

    def reinforce(self, loss: torch.Tensor | None = None) -> FeatureNetwork:  # type: ignore[override]
        outs = [o for o, d in self._cache if d.grad is not None]
        grads = [d.grad for o, d in self._cache if d.grad is not None]
        self._cache.clear()
        self.zero_grad()
        if outs:
            torch.autograd.backward(outs, grads)
        self.step()
        return self


class RecurrentFeatureNetwork(FeatureNetwork):
    """Shared features from a recurrent trunk (rlconf.nn.recurrent): ``features(x, state, resets)`` unrolls it
    over sequences ``[T, B, *obs]`` and returns the features ``[T, B, width]`` (detached for the heads, as
    FeatureNetwork's) and the state after the last step; the heads' gradients flow back through the whole
    unroll in ``reinforce()``: truncated backpropagation through time over the sequences given."""

    def __call__(self, x: torch.Tensor, state: torch.Tensor,  # type: ignore[override]
                 resets: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        features, after = self._forward(x, state, resets)
        return self._handed_to_heads(features), after.detach()

    @property
    def state_size(self) -> int:
        return self.model.state_size


class Identity(Approximation):
    """Features that are the input itself: no parameters, nothing to train."""

    def __init__(self, name: str = "features"):
        super().__init__(nn.Identity(), None, name=name)

    def reinforce(self, loss: torch.Tensor | None = None) -> Identity:  # type: ignore[override]
        return self

    def step(self, loss: torch.Tensor | None = None, clip: bool = True, averaged: bool = False,
             checked: bool = False) -> Identity:
        return self

    def zero_grad(self) -> Identity:
        return self


class _Squeeze(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        return self.model(*inputs).squeeze(-1)


class NonFinite(ArithmeticError):
    """A network's loss or gradient norm became nan or inf: one more optimiser step would poison its weights."""

    def __init__(self, what: str, value: float):
        self.what = what
        self.value = value
        super().__init__(f"{what} is {value}")


def check_finite(values: dict[str, torch.Tensor | None]) -> None:
    """Raise ``NonFinite`` naming the first of ``values`` (``loss/q``, ``grad_norm/q``...) that is nan or inf.
    One device-to-host read for all of them, of numbers already computed."""
    present = {name: v.detach().reshape(()) for name, v in values.items() if v is not None}
    if not present:
        return
    together = torch.stack(list(present.values())) if len(present) > 1 else next(iter(present.values()))
    if bool(torch.isfinite(together).all()):
        return
    for name, value in present.items():
        if not torch.isfinite(value):
            raise NonFinite(name, float(value))


@torch.no_grad()
def clip_grad_norm(parameters: list[torch.Tensor], max_norm: float) -> torch.Tensor | None:
    """Scale gradients so their global L2 norm is at most ``max_norm`` (as torch.nn.utils.clip_grad_norm_);
    the norm before scaling is returned (None without gradients).

    The same arithmetic in five tensor operations: torch's utility spends three times as long in Python
    checks and wrappers, which shows on networks small enough that an update takes well under a
    millisecond.
    """
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return None
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    torch._foreach_mul_(grads, (max_norm / (total + 1e-6)).clamp_(max=1.0))
    return total


def reinforce_together(*losses: tuple[Approximation, torch.Tensor], jointly: bool = True) -> None:
    """Train several approximations from one backward pass through the sum of their losses.

    Their parameters are disjoint, so this equals calling ``reinforce`` on each, at the price of one
    autograd traversal instead of several. When they share a ``clip_grad``, the gradient norm is taken
    over all of them together, as PPO implementations clip the whole actor-critic; not ``jointly``, each is
    clipped to its own (an optimiser per network, as BenchMARL's).
    """
    approximations = [approximation for approximation, _ in losses]
    for approximation in approximations:
        approximation.zero_grad()
    sum(loss * approximation.loss_scaling for approximation, loss in losses).backward()
    params = [p for approximation in approximations for p in approximation._params]
    means = distributed.average(params, [loss for _, loss in losses])  # one all-reduce for all of them
    clip = {approximation.clip_grad for approximation in approximations}
    if jointly and len(clip) == 1 and (limit := clip.pop()):
        norm = clip_grad_norm(params, limit)
        check_finite({f"grad_norm/{'+'.join(a.name for a in approximations)}": norm,
                      **{f"loss/{a.name}": loss for a, loss in zip(approximations, means, strict=True)}})
        for approximation, loss in zip(approximations, means, strict=True):
            approximation.step(loss, clip=False, averaged=True, checked=True)
    else:
        for approximation, loss in zip(approximations, means, strict=True):
            approximation.step(loss, averaged=True)
