"""DQN and Double DQN (rlconf.agents.dqn): their schema and what they declare. The value-based agents' kin
(c51, r2d1) build on DQNConfig."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._plays import DISCRETE
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require

LOSSES = ("mse", "huber")  # DQN's TD losses (dqn.LOSS_FUNCTIONS)
REPLAYS = ("uniform", "prioritized")
TARGETS = ("fixed", "polyak", "trivial")


@dataclass
@agent_defaults("dqn")
class DQNConfig:
    discount_factor: float
    lr: float
    lr_final: float | None
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
    eval_epsilon: float
    replay: str
    n_steps: int
    alpha: float
    beta: float
    priority_epsilon: float
    double_q: bool
    epsilon_per_copy: bool
    epsilon_copy_base: float
    epsilon_copy_alpha: float

    def __post_init__(self):
        check_q_learning(self, ("n_steps",), ("eval_epsilon", "alpha", "beta", "epsilon_copy_base"))
        require(self.epsilon_copy_alpha >= 0, "agent.epsilon_copy_alpha", self.epsilon_copy_alpha,
                "must be non-negative")
        require(self.replay in REPLAYS, "agent.replay", self.replay, f"allowed: {', '.join(REPLAYS)}")


def check_q_learning(config, at_least_one: tuple[str, ...] = (), unit: tuple[str, ...] = ()) -> None:
    """The checks of every Q-learning schema's values (DQN's family, QMIX's): its loss, target, learning rate,
    discount, counts (and ``at_least_one``), epsilons and target rate (and ``unit``, in [0, 1])."""
    require(config.loss in LOSSES, "agent.loss", config.loss, f"allowed: {', '.join(LOSSES)}")
    require(config.target in TARGETS, "agent.target", config.target, f"allowed: {', '.join(TARGETS)}")
    require(config.lr > 0, "agent.lr", config.lr, "must be positive")
    require(0 <= config.discount_factor <= 1, "agent.discount_factor", config.discount_factor, "must be in [0, 1]")
    for key in ("batch_size", "replay_buffer_size", "update_frequency", "gradient_steps", "target_update_frequency",
                "epsilon_decay_steps", *at_least_one):
        require(getattr(config, key) >= 1, f"agent.{key}", getattr(config, key), "must be at least 1")
    for key in ("epsilon", "epsilon_final", "target_rate", *unit):
        require(0 <= getattr(config, key) <= 1, f"agent.{key}", getattr(config, key), "must be in [0, 1]")


@dataclass
@agent_defaults("ddqn")
class DDQNConfig(DQNConfig):
    """DQN's settings; ddqn.yaml turns on double Q-learning and prioritized replay."""



# Bursts of gradient_steps updates every update_frequency steps: data-parallel learners step together. The async
# runner shares the replay, priorities too (rlconf.memory.shared).
VALUE_BASED = {"plays": DISCRETE, "data_parallel": True, "runs_async": True, "alternates": True}
registry.built_in(AgentSpec("dqn", "rlconf.agents.dqn:DQN", DQNConfig,
                            "Deep Q-Network: replay, target network, epsilon-greedy", **VALUE_BASED))
registry.built_in(AgentSpec("ddqn", "rlconf.agents.dqn:DDQN", DDQNConfig,
                            "Double DQN: online net picks, target net values; prioritized replay", **VALUE_BASED))
