"""The multi-agent interfaces: ``act(state: MultiagentState) -> action`` for whichever player's turn it is.

A multi-agent environment (PettingZoo's agent-environment cycle) hands over one player's state at a time;
the state names the player (``state.agent``). The experiment loop is the single-agent one,

    state = env.step(agent.act(state))

so a ``Multiagent`` is what the loop holds in place of an agent. It learns like one (``Learner``: its
checkpoint holds every player's), and is tested through ``test_matches``: the games a test consists of.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from rlconf.agents._agent import Learner, ParallelAgent
from rlconf.core import MultiagentState


class MultiagentTestAgent(ABC):
    """How the players behave when tested: no learning. Random numbers come from the global generators,
    which ``evaluate`` seeds (see ``TestAgent``)."""

    @abstractmethod
    def act(self, state: MultiagentState) -> Any: ...


@dataclass
class Match:
    """Test games of one kind. ``seat``: the player whose trained agent is tested, the other seats played by
    opponents (``agent.test_against``); None: every player plays with its own trained agent."""

    seat: str | None
    agent: MultiagentTestAgent


class Multiagent(Learner):
    """A multi-agent learner: ``act(state)`` acts (and learns) for the player ``state.agent``."""

    @abstractmethod
    def act(self, state: MultiagentState) -> Any: ...

    @abstractmethod
    def test_agent(self) -> MultiagentTestAgent:
        """Every player with its trained agent, in test mode."""

    def test_matches(self) -> list[Match]:
        """The kinds of games a test plays, its episodes shared evenly among them (default: self-play)."""
        return [Match(None, self.test_agent())]


@dataclass
class MultiagentBuildContext:
    """What a multi-agent builder may know: the players, their spaces, and how to build one player's agent.

    ``build(player, spec, config, shared)`` returns that player's agent (of its AgentSpec) built for its spaces
    as its body transforms them, wrapped in its own body; ``shared`` is a dict of parameters common to the
    agents built with it (``BuildContext.share``), or None."""

    agents: list[str]
    observation_spaces: dict[str, gym.Space]
    action_spaces: dict[str, gym.Space]
    build: Callable[[str, Any, Any, dict | None], ParallelAgent]
