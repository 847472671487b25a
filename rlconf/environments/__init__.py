"""Environment adapters: each turns a family's simulators into StateArrays for the agent."""

from rlconf.environments.gym import Episode, GymVectorEnvironment, make_vector_env

__all__ = ["Episode", "GymVectorEnvironment", "make_vector_env"]
