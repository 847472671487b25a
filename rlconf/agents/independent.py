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

from typing import Any

import torch

from rlconf.agents._agent import ParallelAgent
from rlconf.agents._multiagent import Match, Multiagent, MultiagentBuildContext, MultiagentTestAgent
from rlconf.agents.random_agent import RandomTestAgent
from rlconf.agents.specs.independent import IndependentConfig
from rlconf.core import MultiagentState, StateArray
from rlconf.errors import ConfigError, require


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
            spec, agent_config = config.agent_config(name)
            agents[player] = context.build(player, spec, agent_config, shared if name == config.base else None)
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

    def schedules(self) -> dict[str, Any]:
        """Each player's schedules, under ``player/name`` (shared parameters: one clock per player still)."""
        return {f"{player}/{name}": scheduler for player, agent in self.agents.items()
                for name, scheduler in agent.schedules().items()}

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
