"""QMIX and VDN (rlconf.agents.qmix): their schema and what they declare."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._groups import PerGroup
from rlconf.agents.specs._plays import TEAM_DISCRETE
from rlconf.agents.specs._spec import AgentSpec
from rlconf.agents.specs.dqn import check_q_learning
from rlconf.errors import require

MIXERS = ("qmix", "vdn")  # qmix.MIXERS builds them


@dataclass
@agent_defaults("qmix")
class QMIXConfig(PerGroup):
    """How each group of a team learns its utilities and their mix; steps, periods and batches in frames."""

    mixer: str
    mixing_embed_dim: int
    share_parameters: bool
    agent_id: bool
    discount_factor: float
    lr: float
    adam_eps: float
    loss: str
    clip_grad: float
    batch_size: int
    replay_buffer_size: int
    replay_start_size: int
    update_frequency: int
    gradient_steps: int
    target: str
    target_update_frequency: int
    target_rate: float
    epsilon: float
    epsilon_final: float
    epsilon_decay_steps: int
    double_q: bool
    bootstrap_time_limits: bool

    TEAM_WIDE = ("replay_start_size", "update_frequency", "gradient_steps", "target_update_frequency")

    def __post_init__(self):
        super().__post_init__()
        require(self.mixer in MIXERS, "agent.mixer", self.mixer, f"allowed: {', '.join(MIXERS)}")
        check_q_learning(self, ("mixing_embed_dim",))


@dataclass
@agent_defaults("vdn")
class VDNConfig(QMIXConfig):
    """QMIX's settings with the sum as the mixer (vdn.yaml)."""


registry.built_in(AgentSpec("qmix", "rlconf.agents.qmix:QMIX", QMIXConfig,
                            "QMIX: agents' utilities mixed monotonically by hypernetworks on the global state",
                            plays=TEAM_DISCRETE))
registry.built_in(AgentSpec("vdn", "rlconf.agents.qmix:VDN", VDNConfig,
                            "VDN: the team's value as the sum of its agents' utilities", plays=TEAM_DISCRETE))
