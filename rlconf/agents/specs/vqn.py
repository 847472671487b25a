"""VQN and VSarsa (rlconf.agents.vqn): their schema and what they declare."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults, require_epsilon_schedule
from rlconf.agents.specs._plays import DISCRETE
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require


@dataclass
@agent_defaults("vqn")
class VQNConfig:
    discount_factor: float
    lr: float
    lr_final: float | None
    adam_eps: float
    clip_grad: float
    epsilon: float
    epsilon_final: float
    epsilon_decay_steps: int
    eval_epsilon: float

    def __post_init__(self):
        require(self.lr > 0, "agent.lr", self.lr, "must be positive")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require_epsilon_schedule(self)



registry.built_in(AgentSpec("vqn", "rlconf.agents.vqn:VQN", VQNConfig,
                            "vanilla Q-learning over parallel envs: no replay, no target", plays=DISCRETE))
registry.built_in(AgentSpec("vsarsa", "rlconf.agents.vqn:VSarsa", VQNConfig,
                            "SARSA over parallel envs: on-policy TD(0), no replay", plays=DISCRETE))
