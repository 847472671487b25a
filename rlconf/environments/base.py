"""The one interface every environment adapter offers the builder and the experiment loop.

An adapter declares its ``kind`` (``EnvKind``): the loop that runs it and the agents that can play it follow
from that, never from probing for attributes. What only some kinds or families have is declared here with an
honest default, so the loop reads it from every environment alike: a family that differs says so in its class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, Protocol

import gymnasium as gym

from rlconf.core import EnvKind


class Environment(Protocol):
    """``reset`` / ``step`` / ``close`` over ``n_envs`` copies (one game for the multi-agent kind), with the
    spaces an agent is built for and the counts the loop reports. Adapters subclass it for its defaults."""

    # The kind of run it makes, as the spec of every family it runs declares it (rlconf.environments.specs: what
    # the family is, read before anything is built; tests/test_pairing.py keeps the two equal). A family whose
    # spec declares ``test_bounds`` is built with ``test=True`` for tests; others take no ``test`` argument.
    kind: ClassVar[EnvKind]

    name: str
    n_envs: int
    steps: int  # environment steps taken so far (turns, pulls), over all copies
    completed: list  # the episodes that ended on the last step
    observation_space: gym.Space
    action_space: gym.Space
    frames_per_step: float = 1  # simulator frames per agent step (Atari's frame skip makes it 4)
    # The simulator's frames per second, for videos in real time; None: the renderer's own (render_fps).
    simulator_fps: float | None = None
    # Test episodes are cut short after this many steps without a reward; None: never (all but Atari's tests).
    stall_steps: int | None = None
    # The rewards a step can give, (low, high); None: unknown (gymnasium dropped reward_range). Bandits know.
    reward_range: tuple[float, float] | None = None
    # Whether its single-agent states carry ``action_mask`` (rlconf.core.layout: a Dict key or info["action_mask"]).
    masks_actions: bool = False
    groups: int = 1  # groups of copies that step on their own (the alternating sampler's two)
    agents: Sequence[str] = ()  # the players of a multi-agent game; other kinds have none
    arms: int = 0  # the arms of a bandit; other kinds have none
    # The groups of a team's agents, by name (rlconf.core.team.AgentGroup); other kinds have none.
    agent_groups: Mapping[str, Any] = MappingProxyType({})

    def reset(self, seed: int | None = None) -> Any:
        """The first state of every copy (a StateArray; a MultiagentState for the multi-agent kind)."""
        ...

    def step(self, actions: Any) -> Any:
        """Apply one action per copy (the current player's, multi-agent); the next state."""
        ...

    def close(self) -> None: ...
