"""Independent multi-agent learning (``agent=independent``): one agent per player, each learning from its own
turns as if the other players were part of the environment (as the Autonomous Learning Library's
IndependentMultiagent does).

Each player's agent is a registry agent (``agent.base``, e.g. dqn), built by its own ``from_config`` for that
player's observation and action spaces as its body transforms them (the body group applies per player: frame
stacks for multi-agent Atari), and acting on the player's states as a batch of one. What it learns from is
the player's own sequence of states: a transition runs from one of its turns to its next, the reward being
what it received in between. The checkpoint holds every player's agent under the player's name.

Each agent's hyperparameters are under its name (``agent.dqn.lr=1e-4``). Options: ``players`` gives some
players another agent (``{player_2: random}``: train against a random opponent); ``shared`` gives every base
player one set of parameters (self-play: one network; each player keeps its own replay memory and
exploration, since a transition must join one player's consecutive turns); ``test_against`` tests each
trained player alone against opponents (``random``), seat by seat.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from rlconf import registry
from rlconf.agents._agent import ParallelAgent
from rlconf.agents._multiagent import Match, Multiagent, MultiagentBuildContext, MultiagentTestAgent
from rlconf.agents.random_agent import RandomTestAgent
from rlconf.config import ConfigError, check, require
from rlconf.core import MultiagentState, StateArray

OPPONENTS = ("random",)  # what agent.test_against may name


@dataclass
class IndependentConfig:
    """Which agent each player uses, and the hyperparameters of each agent under its name: ``agent.dqn.lr``
    (configs/agent/independent.yaml composes each agent's own config there, so every key can be overridden
    as it is typed and a misspelt one is refused). Other agents (ppo, ...) play with their defaults."""

    base: str = "dqn"  # the agent every player uses (unless named in players)
    players: dict[str, str] | None = None  # player -> agent name, for players not using base
    shared: bool = False  # one set of parameters for every player using base (self-play)
    test_against: str | None = None  # null: the test is self-play; random: each trained seat vs random moves
    test_seat: str | None = None  # with test_against: the seat tested (null: every learning seat, games shared)
    dqn: dict[str, Any] = field(default_factory=dict)
    ddqn: dict[str, Any] = field(default_factory=dict)
    c51: dict[str, Any] = field(default_factory=dict)
    rainbow: dict[str, Any] = field(default_factory=dict)
    random: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        self.players = dict(self.players or {})  # null in YAML, so that agent.players={...} can replace it
        require(self.test_against is None or self.test_against in OPPONENTS, "agent.test_against",
                self.test_against, f"allowed: null, {', '.join(OPPONENTS)}")
        require(self.test_seat is None or self.test_against is not None, "agent.test_seat", self.test_seat,
                "chooses the seat tested against agent.test_against; set that too, e.g. agent.test_against=random")
        for name in {self.base, *self.players.values()}:
            self.agent_config(name)  # every agent named, and its hyperparameters, checked now

    def agent_config(self, name: str) -> tuple[type, Any]:
        """The agent class ``name`` and its Config from ``agent.<name>`` (its defaults where there is none).
        A bad key or value is one line naming it as it was written."""
        where = "agent.base" if name == self.base else "agent.players"
        try:
            agent_class = registry.get("agent", name)
        except registry.UnknownComponent as error:
            raise ConfigError(f"{where}: {error}") from None
        if getattr(agent_class, "multiagent", False):
            raise ConfigError(f"{where}={name}: is itself a multi-agent agent; allowed: single-agent agents such "
                              "as dqn, ddqn, c51, rainbow, random")
        values = {k: v for k, v in (getattr(self, name, None) or {}).items() if k != "name"}
        return agent_class, _checked(agent_class, values, f"agent.{name}.")


def _checked(agent_class: type, values: dict, prefix: str) -> Any:
    """``values`` as the agent's Config. Its own checks name keys as ``agent.<key>``; here they live under
    ``prefix``, so the message says so."""
    try:
        return check(agent_class.Config, values, prefix)
    except ConfigError as error:
        message = str(error)
        if message.startswith("agent.") and not message.startswith(prefix):
            message = prefix + message.removeprefix("agent.")
        raise ConfigError(message) from None


class IndependentMultiagent(Multiagent):
    """One agent per player (a dict player -> ParallelAgent, bodies included)."""

    Config = IndependentConfig

    def __init__(self, agents: dict[str, ParallelAgent], opponents: dict[str, Any] | None = None,
                 test_seats: list[str] | None = None):
        self.agents = agents
        self.opponents = opponents or {}  # player -> the test agent that plays that seat against a tested one
        self.test_seats = test_seats or []

    @classmethod
    def from_config(cls, config: IndependentConfig, context: MultiagentBuildContext) -> IndependentMultiagent:
        for key, players in (("agent.players", list(config.players)), ("agent.test_seat", [config.test_seat])):
            for player in players:
                require(player is None or player in context.agents, key, player,
                        f"not a player of this env; allowed: {', '.join(context.agents)}")
        shared = {} if config.shared else None
        if config.shared:
            _check_same_spaces(config, context)
        agents = {}
        for player in context.agents:
            name = config.players.get(player, config.base)
            agent_class, agent_config = config.agent_config(name)
            agents[player] = context.build(player, agent_class, agent_config, shared if name == config.base else None)
        if config.shared and not shared:  # nothing was built through BuildContext.share
            raise ConfigError(f"agent.shared=true: agent.base={config.base} cannot share its parameters among "
                              "players; allowed with dqn, ddqn, c51, rainbow (or agent.shared=false)")
        opponents, seats = {}, []
        if config.test_against is not None:  # "random", the one opponent so far
            opponents = {player: RandomTestAgent(context.action_spaces[player]) for player in context.agents}
            learners = [p for p in context.agents if config.players.get(p, config.base) != "random"]
            seats = [config.test_seat] if config.test_seat else learners or list(context.agents)
        return cls(agents, opponents, seats)

    # -- acting ----------------------------------------------------------------------------------------
    def act(self, state: MultiagentState) -> torch.Tensor:
        return self.agents[state.agent].act(batch_of_one(state))[0]

    # -- testing ---------------------------------------------------------------------------------------
    def test_agent(self) -> IndependentTestAgent:
        return IndependentTestAgent({player: agent.test_agent() for player, agent in self.agents.items()})

    def test_matches(self) -> list[Match]:
        """Self-play of the trained agents; with ``test_against``, one match per tested seat, in which that
        seat's trained agent plays and the opponents take every other seat."""
        if not self.test_seats:
            return super().test_matches()
        trained = self.test_agent().agents
        return [Match(seat, IndependentTestAgent({**self.opponents, seat: trained[seat]}))
                for seat in self.test_seats]

    # -- checkpoints: every player's, under its name ---------------------------------------------------
    def state_dict(self) -> dict:
        return {player: agent.state_dict() for player, agent in self.agents.items()}

    def load_state_dict(self, state: dict) -> None:
        missing = [player for player in self.agents if player not in state]
        if missing:
            raise KeyError(f"the checkpoint holds no agent for {', '.join(missing)} (players: {', '.join(state)})")
        for player, agent in self.agents.items():
            agent.load_state_dict(state[player])

    def replay_state_dict(self) -> dict:
        replays = {player: agent.replay_state_dict() for player, agent in self.agents.items()}
        return {player: replay for player, replay in replays.items() if replay}  # empty: no player has replay

    def load_replay_state_dict(self, state: dict) -> None:
        for player, replay in state.items():
            self.agents[player].load_replay_state_dict(replay)


class IndependentTestAgent(MultiagentTestAgent):
    """Every player's test agent (a TestAgent on batches), each acting on its own player's states."""

    def __init__(self, agents: dict[str, Any]):
        self.agents = agents

    def act(self, state: MultiagentState) -> torch.Tensor:
        return self.agents[state.agent].act(batch_of_one(state))[0]


def batch_of_one(state: MultiagentState) -> StateArray:
    """A player's state as the batch of one its agent acts on; the player's name stays behind (agents and
    bodies see tensors only)."""
    x = {key: value.unsqueeze(0) if torch.is_tensor(value) else torch.as_tensor([value], device=state.device)
         for key, value in state.items() if key != "agent"}
    return StateArray(x, (1,), state.device)


def _check_same_spaces(config: IndependentConfig, context: MultiagentBuildContext) -> None:
    """One set of parameters serves players who see the same spaces."""
    players = [p for p in context.agents if config.players.get(p, config.base) == config.base]
    for player in players[1:]:
        same = (context.observation_spaces[player] == context.observation_spaces[players[0]]
                and context.action_spaces[player] == context.action_spaces[players[0]])
        require(same, "agent.shared", True, f"players {players[0]} and {player} see different spaces; "
                "allowed: false")
