"""Core data types shared by environments and agents."""

from rlconf.core.state import State, StateArray

__all__ = ["State", "StateArray"]
