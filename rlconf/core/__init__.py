"""Core data types shared by environments and agents.

Each name is imported where it is first used: ``EnvKind`` (what specs declare) imports no torch, the states do.
"""

from __future__ import annotations

from rlconf.lazy import lazy_names

_HOMES = {"ALL_COPIES": "rlconf.core.state", "EnvKind": "rlconf.core.kinds", "MultiagentState": "rlconf.core.state",
          "State": "rlconf.core.state", "StateArray": "rlconf.core.state", "AgentGroup": "rlconf.core.team",
          "TeamState": "rlconf.core.team", "TeamEpisode": "rlconf.core.team",
          "with_rows": "rlconf.core.state"}
__all__ = ["ALL_COPIES", "AgentGroup", "EnvKind", "MultiagentState", "State", "StateArray", "TeamEpisode", "TeamState",
           "with_rows"]


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
