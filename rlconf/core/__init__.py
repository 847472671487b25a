"""Core data types shared by environments and agents."""

from rlconf.core.kinds import EnvKind
from rlconf.core.state import MultiagentState, State, StateArray

__all__ = ["EnvKind", "MultiagentState", "State", "StateArray"]
