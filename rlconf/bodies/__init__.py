"""Bodies wrap agents: what happens to states before the agent sees them and to actions after."""

from rlconf.bodies.body import Body

__all__ = ["Body"]
