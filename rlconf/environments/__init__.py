"""Environment adapters: each turns a family's simulators into StateArrays for the agent.

Every adapter is an ``Environment`` of one ``EnvKind``; what each family is (its kind, observations, lives, the
pip extra it needs) is its spec in ``rlconf.environments.specs``, read without importing torch or the adapter.
Each name is imported where it is first used. The Atari adapter (``rlconf.environments.atari``) and the
multi-agent PettingZoo one (``rlconf.environments.pettingzoo``) need the ``atari`` and ``pettingzoo`` extras.
"""

from __future__ import annotations

from rlconf.lazy import lazy_names

_HOMES = {"EnvKind": "rlconf.core.kinds", "Environment": "rlconf.environments.base",
          "Episode": "rlconf.environments.gym", "GymVectorEnvironment": "rlconf.environments.gym",
          "make_vector_env": "rlconf.environments.gym", "EnvSpec": "rlconf.environments.specs"}
__all__ = ["EnvKind", "EnvSpec", "Environment", "Episode", "GymVectorEnvironment", "make_vector_env"]


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
