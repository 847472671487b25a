"""rlconf: a declarative, config-driven experiment platform for deep reinforcement learning.

Importing this package is cheap (no torch): the command line answers ``rlconf list`` quickly.
"""

from rlconf.api import compose, load, train
from rlconf.registry import register

__version__ = "0.1.0"
__all__ = ["__version__", "compose", "load", "register", "train"]
