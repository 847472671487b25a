"""The tabular agents (rlconf.agents.tabular): their schemas and what they declare."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults, require_epsilon_schedule
from rlconf.agents.specs._plays import TABULAR
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import require

TRACE_KINDS = ("replacing", "accumulating")  # SARSA(lambda)'s eligibility traces


@dataclass
class TabularConfig:
    """What every tabular agent takes."""

    alpha: float
    alpha_final: float | None
    discount_factor: float
    epsilon: float
    epsilon_final: float
    epsilon_decay_steps: int
    eval_epsilon: float
    initial_value: float

    def __post_init__(self):
        require(0 < self.alpha <= 1, "agent.alpha", self.alpha, "must be in (0, 1]")
        require(self.alpha_final is None or 0 <= self.alpha_final <= 1, "agent.alpha_final", self.alpha_final,
                "must be null or in [0, 1]")
        require(0 <= self.discount_factor <= 1, "agent.discount_factor", self.discount_factor, "must be in [0, 1]")
        require_epsilon_schedule(self)


@dataclass
@agent_defaults("q_learning")
class QLearningConfig(TabularConfig):
    """Q-learning has no options of its own."""


@dataclass
@agent_defaults("sarsa_lambda")
class SarsaLambdaConfig(TabularConfig):
    lam: float
    traces: str

    def __post_init__(self):
        super().__post_init__()
        require(0 <= self.lam <= 1, "agent.lam", self.lam, "must be in [0, 1]")
        require(self.traces in TRACE_KINDS, "agent.traces", self.traces, f"allowed: {', '.join(TRACE_KINDS)}")


@dataclass
@agent_defaults("dyna_q")
class DynaQConfig(TabularConfig):
    planning_steps: int

    def __post_init__(self):
        super().__post_init__()
        require(self.planning_steps >= 0, "agent.planning_steps", self.planning_steps, "must be at least 0")


AGENT = "rlconf.agents.tabular"
for spec in (
    AgentSpec("q_learning", f"{AGENT}:QLearning", QLearningConfig, "tabular Q-learning, epsilon-greedy",
              plays=TABULAR),
    AgentSpec("sarsa_lambda", f"{AGENT}:SarsaLambda", SarsaLambdaConfig,
              "tabular SARSA(lambda) with eligibility traces", plays=TABULAR),
    AgentSpec("dyna_q", f"{AGENT}:DynaQ", DynaQConfig,
              "tabular Dyna-Q: Q-learning plus planning steps from a learned model", plays=TABULAR),
):
    registry.built_in(spec)
