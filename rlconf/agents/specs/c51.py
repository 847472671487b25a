"""C51 and Rainbow (rlconf.agents.c51): their schema and what they declare."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._spec import AgentSpec
from rlconf.agents.specs.dqn import VALUE_BASED, DQNConfig
from rlconf.errors import require


@dataclass
@agent_defaults("c51")
class C51Config(DQNConfig):
    atoms: int
    v_min: float
    v_max: float

    def __post_init__(self):
        super().__post_init__()
        require(self.atoms >= 2, "agent.atoms", self.atoms, "must be at least 2")
        require(self.v_min < self.v_max, "agent.v_min", self.v_min, f"must be below agent.v_max ({self.v_max})")


@dataclass
@agent_defaults("rainbow")
class RainbowConfig(C51Config):
    """C51's settings; rainbow.yaml changes replay, returns, targets and exploration."""



registry.built_in(AgentSpec("c51", "rlconf.agents.c51:C51", C51Config,
                            "distributional DQN: 51-atom categorical returns, projected targets", **VALUE_BASED))
registry.built_in(AgentSpec("rainbow", "rlconf.agents.c51:Rainbow", RainbowConfig,
                            "C51 + prioritized + 3-step replay + dueling noisy networks", **VALUE_BASED))
