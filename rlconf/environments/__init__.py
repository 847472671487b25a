"""Environment adapters: each turns a family's simulators into StateArrays for the agent.

Every adapter is an ``Environment`` of one ``EnvKind``. The Atari adapter (``rlconf.environments.atari``) and
the multi-agent PettingZoo one (``rlconf.environments.pettingzoo``) are imported on demand: they need the
``atari`` and ``pettingzoo`` extras.
"""

from rlconf.core import EnvKind
from rlconf.environments.base import Environment
from rlconf.environments.gym import Episode, GymVectorEnvironment, make_vector_env

__all__ = ["EnvKind", "Environment", "Episode", "GymVectorEnvironment", "make_vector_env"]
