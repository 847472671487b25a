"""R2D1 (rlconf.agents.r2d1): its schema and what it declares."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._plays import DISCRETE
from rlconf.agents.specs._spec import AgentSpec
from rlconf.agents.specs.dqn import DQNConfig
from rlconf.errors import require


@dataclass
@agent_defaults("r2d1")
class R2D1Config(DQNConfig):
    sequence_length: int
    burn_in: int
    period: int
    value_rescaling: bool
    rescale_epsilon: float
    eta: float
    prev_action_reward: bool  # the Q-network also reads the previous action (one-hot) and reward (R2D2, rlpyt)
    input_priorities: bool  # new sequences enter the replay at priorities from the acting network's Q-values

    def __post_init__(self):
        super().__post_init__()
        require(self.sequence_length >= 1, "agent.sequence_length", self.sequence_length, "must be at least 1")
        require(self.burn_in >= 0, "agent.burn_in", self.burn_in, "must be at least 0")
        span = self.burn_in + self.sequence_length
        require(1 <= self.period <= span, "agent.period", self.period,
                f"must be in [1, burn_in + sequence_length = {span}]: sequences start every period rows")
        require(self.rescale_epsilon > 0, "agent.rescale_epsilon", self.rescale_epsilon, "must be positive")
        require(0 <= self.eta <= 1, "agent.eta", self.eta, "must be in [0, 1]")
        require(not self.input_priorities or self.replay == "prioritized", "agent.input_priorities", "true",
                f"needs agent.replay=prioritized (agent.replay={self.replay} has no priorities)")


# The async runner shares its sequence replay, priorities and stored states too (rlconf.memory.shared).
registry.built_in(AgentSpec("r2d1", "rlconf.agents.r2d1:R2D1", R2D1Config,
                            "R2D2 on one learner: LSTM Q, sequence replay, burn-in, value rescaling", plays=DISCRETE,
                            recurrent="required", data_parallel=True, alternates=True, runs_async=True))
