"""An agent's spec: everything rlconf knows of an agent before it imports it (and torch)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rlconf.agents.specs._plays import Plays

RECURRENT = ("never", "optional", "required", "ignored")
# The discount a return is scaled with (body.normalize_rewards) for an agent whose schema has none (bandits,
# random): about a hundred steps' horizon.
UNDISCOUNTED_SCALE = 0.99


def _runs_async_as_configured(config: Any) -> str | None:
    return None


@dataclass(frozen=True)
class AgentSpec:
    """An agent, as the registry knows it: ``agent=<name>`` (or ``agent._target_=<agent>``) picks it.

    ``config``: its schema, the dataclass ``configs/agent/<name>.yaml`` is checked against (the values come
    from that file). ``class_path``: its class, ``"package.module:Class"``, imported only when the agent is built.
    The rest is what it declares it can do, which every check of a config and of hardware choices reads:

    - ``plays``: the kinds of environment and of action space it plays (``Plays``);
    - ``recurrent``: whether it takes a recurrent core (``approximation.recurrent``): never, optional,
      required, or ignored (it builds no network);
    - ``data_parallel``: several data-parallel learners (``hardware.learners``) can train it: every learner
      makes its optimiser steps at the same moments (counted in its own steps and updates, never decided by
      what its data holds); ``data_parallel_recurrent``: ... and so with a recurrent core too;
    - ``runs_async``: it can act and learn in two processes (``hardware.runner=async``); ``async_refusal``:
      why a config of it cannot (None: it can), e.g. an option whose state lives only where it learns;
    - ``alternates``: it acts on one group of its environments at a time (``hardware.sampler=alternating``):
      its ``act`` takes ``lanes``, the columns of that group.
    """

    registry_kind: ClassVar[str] = "agent"

    name: str
    class_path: str
    config: type
    description: str = ""
    group: str = ""  # where ``rlconf list agent`` shows it ("" : built-ins by registry.AGENT_GROUPS, else "other")
    plays: Plays = Plays.single_agent()
    recurrent: str = "never"
    data_parallel: bool = False
    data_parallel_recurrent: bool = True
    runs_async: bool = False
    async_refusal: Callable[[Any], str | None] = _runs_async_as_configured
    alternates: bool = False

    def __post_init__(self):
        if self.recurrent not in RECURRENT:
            raise ValueError(f"AgentSpec {self.name!r}: recurrent={self.recurrent!r}; allowed: {', '.join(RECURRENT)}")
        if not dataclasses.is_dataclass(self.config):
            raise TypeError(f"AgentSpec {self.name!r}: config={self.config!r} is not a dataclass (the agent's schema)")
        if not isinstance(self.plays, Plays):
            raise TypeError(f"AgentSpec {self.name!r}: plays={self.plays!r} is not a Plays")

    def discount(self, config: Any) -> float:
        """The discount factor of the agent's returns (``config``, its checked Config): its schema's
        ``discount_factor``, or ``UNDISCOUNTED_SCALE`` for an agent whose schema has none."""
        fields = {f.name for f in dataclasses.fields(self.config)}
        return config.discount_factor if "discount_factor" in fields else UNDISCOUNTED_SCALE
