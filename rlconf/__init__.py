"""rlconf: a declarative, config-driven experiment platform for deep reinforcement learning.

Importing this package is cheap (no torch): the command line answers ``rlconf list`` quickly.
"""

from rlconf.api import compose, load, train
from rlconf.registry import register
from rlconf.version import __version__

__all__ = ["Callback", "__version__", "compose", "load", "register", "train"]


def __getattr__(name: str):
    if name == "Callback":  # imported when first asked for: ``import rlconf`` stays quick (rlconf list)
        from rlconf.experiments.loop.callbacks import Callback

        return Callback
    raise AttributeError(f"module 'rlconf' has no attribute {name!r}")
