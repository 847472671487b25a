"""Core data types shared by environments and agents.

Each name is imported where it is first used: ``EnvKind`` (what specs declare) imports no torch, the states do.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {"EnvKind": "rlconf.core.kinds", "MultiagentState": "rlconf.core.state", "State": "rlconf.core.state",
          "StateArray": "rlconf.core.state"}
__all__ = ["EnvKind", "MultiagentState", "State", "StateArray"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'rlconf.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
