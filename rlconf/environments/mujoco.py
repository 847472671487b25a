"""MuJoCo robots through gymnasium's v5 environments (the ``mujoco`` extra).

The adapter is GymVectorEnvironment's: float64 observations handed over as float32, actions clipped to the
Box, time limits as truncations (``done`` with ``mask`` 1, so agents bootstrap through them). What it adds:

- ``mujoco`` is imported first, so a missing extra is a ModuleNotFoundError naming it, which the run turns
  into "pip install 'rlconf[mujoco]'" (gymnasium itself would raise its own error, naming neither);
- MuJoCo's warnings (gymnasium's HalfCheetah model uses a compiler attribute that MuJoCo 3.3+ deprecates)
  become Python warnings, instead of lines on the console and a MUJOCO_LOG.TXT in the working directory.

The env configs ``configs/env/mujoco/<task>.yaml`` name gymnasium's ids (``HalfCheetah-v5``).
"""

from __future__ import annotations

import warnings
from functools import partial

import gymnasium as gym

from rlconf.environments.gym import GymVectorEnvironment


class MujocoEnvironment(GymVectorEnvironment):
    """``n_envs`` copies of a gymnasium MuJoCo task behind StateArrays."""

    def _make_env(self, env_id: str, n_envs: int, kwargs: dict, vectorization: str,
                  max_episode_steps: int | None) -> gym.vector.VectorEnv:
        import_mujoco()
        if vectorization == "async":  # each subprocess routes MuJoCo's warnings too
            make = partial(make_mujoco_env, env_id, kwargs, max_episode_steps)
            return gym.vector.AsyncVectorEnv([make] * n_envs)
        return super()._make_env(env_id, n_envs, kwargs, vectorization, max_episode_steps)


def import_mujoco():
    """The ``mujoco`` module, its warnings routed to Python's ``warnings``."""
    import mujoco

    mujoco.set_mju_user_warning(_warn)
    return mujoco


def _warn(message: str) -> None:
    # Deprecations concern gymnasium's model files, not the user: attributed to this module (stacklevel 1),
    # Python's default filters hide them (gymnasium shows its own modules' deprecations).
    category = DeprecationWarning if "deprecated" in message else RuntimeWarning
    warnings.warn(f"MuJoCo: {message}", category, stacklevel=1)


def make_mujoco_env(env_id: str, kwargs: dict, max_episode_steps: int | None) -> gym.Env:
    """One task, as ``gym.make_vec`` would make it; module-level so AsyncVectorEnv can pickle it."""
    import_mujoco()
    extra = {} if max_episode_steps is None else {"max_episode_steps": max_episode_steps}
    return gym.make(env_id, **kwargs, **extra)
