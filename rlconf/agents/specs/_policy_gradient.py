"""What every policy gradient agent's schema holds (rlconf.agents._policy_gradient)."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf.errors import require
from rlconf.settings import SQUASHES


@dataclass
class PolicyGradientConfig:
    discount_factor: float
    lr: float
    lr_final: float | None
    lr_v: float | None
    adam_eps: float
    clip_grad: float
    entropy_loss_scaling: float
    value_loss_scaling: float
    log_std_init: float
    squash: str  # Box actions: how the Gaussian's samples reach the bounds (rlconf.policies.gaussian)

    def __post_init__(self):
        parent = getattr(super(), "__post_init__", None)  # a mixin's checks (StateDependentExploration)
        if parent is not None:
            parent()
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        require(self.lr_v is None or self.lr_v > 0, "agent.lr_v", self.lr_v, "must be positive or null")
        require(self.lr_final is None or self.lr_final >= 0, "agent.lr_final", self.lr_final,
                "must be non-negative or null")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require(self.adam_eps > 0, "agent.adam_eps", self.adam_eps, "must be positive")
        require(self.squash in SQUASHES, "agent.squash", self.squash, f"allowed: {', '.join(SQUASHES)}")
        for key in ("clip_grad", "entropy_loss_scaling", "value_loss_scaling"):
            require(getattr(self, key) >= 0, f"agent.{key}", getattr(self, key), "must be non-negative")


@dataclass
class StateDependentExploration:
    """A rollout agent's gSDE (rlconf.policies.gaussian): ``gsde`` on or off for a Box action space, and the
    steps an environment copy keeps its noise matrix (``gsde_every``; 0: a whole rollout)."""

    gsde: bool
    gsde_every: int

    def __post_init__(self):
        require(self.gsde_every >= 0, "agent.gsde_every", self.gsde_every,
                "must be non-negative (0: new noise at each rollout only)")
