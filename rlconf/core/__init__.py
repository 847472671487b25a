"""Core data types shared by environments and agents."""

from rlconf.core.state import MultiagentState, State, StateArray

__all__ = ["MultiagentState", "State", "StateArray"]
