"""Environment adapters: each turns a family's simulators into StateArrays for the agent.

Every adapter is an ``Environment`` of one ``EnvKind``; what each family is (its kind, observations, lives, the
pip extra it needs) is its spec in ``rlconf.environments.specs``, read without importing torch or the adapter.
Each name is imported where it is first used. The Atari adapter (``rlconf.environments.atari``) and the
multi-agent PettingZoo one (``rlconf.environments.pettingzoo``) need the ``atari`` and ``pettingzoo`` extras.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {"EnvKind": "rlconf.core.kinds", "Environment": "rlconf.environments.base",
          "Episode": "rlconf.environments.gym", "GymVectorEnvironment": "rlconf.environments.gym",
          "make_vector_env": "rlconf.environments.gym", "EnvSpec": "rlconf.environments.specs"}
__all__ = ["EnvKind", "EnvSpec", "Environment", "Episode", "GymVectorEnvironment", "make_vector_env"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'rlconf.environments' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
