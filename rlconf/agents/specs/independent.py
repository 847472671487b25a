"""The independent multi-agent agent (rlconf.agents.independent): its schema and what it declares."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._plays import MULTIAGENT
from rlconf.agents.specs._spec import AgentSpec
from rlconf.errors import ConfigError, require
from rlconf.schema import check_nested

OPPONENTS = ("random",)  # what agent.test_against may name (independent)


@dataclass
@agent_defaults("independent")
class IndependentConfig:
    """Which agent each player uses, and the hyperparameters of each agent under its name: ``agent.dqn.lr``
    (configs/agent/independent.yaml composes each agent's own config there, so every key can be overridden
    as it is typed and a misspelt one is refused). Other agents (a2c, ...) play with their defaults."""

    base: str
    players: dict[str, str] | None
    shared: bool
    test_against: str | None
    test_seat: str | None
    dqn: dict[str, Any] = field(default_factory=dict)
    ddqn: dict[str, Any] = field(default_factory=dict)
    c51: dict[str, Any] = field(default_factory=dict)
    rainbow: dict[str, Any] = field(default_factory=dict)
    r2d1: dict[str, Any] = field(default_factory=dict)
    ppo: dict[str, Any] = field(default_factory=dict)
    random: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        self.players = dict(self.players or {})  # null in YAML, so that agent.players={...} can replace it
        require(self.test_against is None or self.test_against in OPPONENTS, "agent.test_against",
                self.test_against, f"allowed: null, {', '.join(OPPONENTS)}")
        require(self.test_seat is None or self.test_against is not None, "agent.test_seat", self.test_seat,
                "chooses the seat tested against agent.test_against; set that too, e.g. agent.test_against=random")
        for name in {self.base, *self.players.values()}:
            self.config_of(name)  # every agent named, and its hyperparameters, checked now

    def config_of(self, name: str) -> Any:
        """The Config of agent ``name`` from ``agent.<name>`` (its defaults where there is none), without
        importing the agent. A bad key or value is one line naming it as it was written."""
        where = "agent.base" if name == self.base else "agent.players"
        try:
            spec = registry.agent_spec(name)
        except registry.UnknownComponent as error:
            raise ConfigError(f"{where}: {error}") from None
        if spec.plays.multiagent:
            raise ConfigError(f"{where}={name}: is itself a multi-agent agent; allowed: single-agent agents such "
                              "as dqn, ddqn, c51, rainbow, random")
        values = {k: v for k, v in (getattr(self, name, None) or {}).items() if k != "name"}
        return check_nested(spec.config, values, f"agent.{name}.")

    def agent_config(self, name: str) -> tuple[AgentSpec, Any]:
        """The spec of agent ``name`` and its Config (``config_of``)."""
        return registry.agent_spec(name), self.config_of(name)


registry.built_in(AgentSpec("independent", "rlconf.agents.independent:IndependentMultiagent", IndependentConfig,
                            "multi-agent (PettingZoo): one agent per player (agent.base), or shared for self-play",
                            plays=MULTIAGENT))
