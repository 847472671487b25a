"""Environment adapters: each turns a family's simulators into StateArrays for the agent.

The Atari adapter (``rlconf.environments.atari``) is imported on demand: it needs the ``atari`` extra.
"""

from rlconf.environments.gym import Episode, GymVectorEnvironment, make_vector_env

__all__ = ["Episode", "GymVectorEnvironment", "make_vector_env"]
