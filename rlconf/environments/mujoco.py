"""MuJoCo robots through gymnasium's v5 environments (the ``mujoco`` extra).

The adapter is GymVectorEnvironment's: float64 observations handed over as float32, actions clipped to the
Box, time limits as truncations (``done`` with ``mask`` 1, so agents bootstrap through them). What it adds:

- ``mujoco`` is imported first, so a missing extra is a ModuleNotFoundError naming it, which the run turns
  into "pip install 'rlconf[mujoco]'" (gymnasium itself would raise its own error, naming neither);
- MuJoCo's warnings (gymnasium's HalfCheetah model uses a compiler attribute that MuJoCo 3.3+ deprecates)
  become Python warnings, instead of lines on the console and a MUJOCO_LOG.TXT in the working directory.

Rendering (``rlconf watch``) needs an OpenGL context: without a display, frames for a video are rendered
offscreen through EGL (``MUJOCO_GL=egl``, set here unless the user chose, e.g. ``MUJOCO_GL=osmesa``).

The env configs ``configs/env/mujoco/<task>.yaml`` name gymnasium's ids (``HalfCheetah-v5``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from functools import partial

import gymnasium as gym

from rlconf.environments.gym import GymVectorEnvironment, has_display, make_vector_env
from rlconf.errors import ConfigError, first_line


def make_mujoco_vector_env(env_id: str, n_envs: int, kwargs: dict, vectorization: str,
                           max_episode_steps: int | None, render_mode: str | None,
                           wrappers: tuple[Callable[[gym.Env], gym.Env], ...]) -> gym.vector.VectorEnv:
    """``make_vector_env``'s vector env, MuJoCo imported first (and its renderer chosen) and, in subprocesses,
    imported by each of them."""
    if render_mode in ("rgb_array", "depth_array") and not os.environ.get("MUJOCO_GL") and not has_display():
        os.environ["MUJOCO_GL"] = "egl"  # read when MuJoCo and its renderer are imported: before import_mujoco
    import_mujoco()
    rendering = render_mode or wrappers  # in this process (make_vector_env's sync)
    if vectorization == "async" and not rendering:  # each subprocess routes MuJoCo's warnings too
        make = partial(make_mujoco_env, env_id, kwargs, max_episode_steps)
        return gym.vector.AsyncVectorEnv([make] * n_envs)
    return make_vector_env(env_id, n_envs, kwargs, vectorization, max_episode_steps, render_mode, wrappers)


class MujocoEnvironment(GymVectorEnvironment):
    """``n_envs`` copies of a gymnasium MuJoCo task behind StateArrays."""

    vector_env = staticmethod(make_mujoco_vector_env)


def import_mujoco():
    """The ``mujoco`` module, its warnings routed to Python's ``warnings``. MuJoCo loads the OpenGL platform
    that ``MUJOCO_GL`` names as it is imported: one this machine lacks (osmesa without libOSMesa) is a
    ConfigError naming the setting."""
    try:
        import mujoco
    except ModuleNotFoundError:
        raise
    except Exception as error:
        if not os.environ.get("MUJOCO_GL"):
            raise
        raise ConfigError(f"MUJOCO_GL={os.environ['MUJOCO_GL']}: MuJoCo cannot load this OpenGL platform here "
                          f"({first_line(error)}); "
                          "try MUJOCO_GL=egl, or unset it") from None

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
