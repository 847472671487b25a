"""Environment adapters: each turns a family's simulators into StateArrays for the agent.

The Atari adapter (``rlconf.environments.atari``) and the multi-agent PettingZoo one
(``rlconf.environments.pettingzoo``) are imported on demand: they need the ``atari`` and ``pettingzoo`` extras.
"""

from rlconf.environments.gym import Episode, GymVectorEnvironment, make_vector_env

__all__ = ["Episode", "GymVectorEnvironment", "make_vector_env"]
