"""Gymnasium families whose tasks a package of their own simulates and registers: Box2D, MiniGrid, highway-env.

Each is GymVectorEnvironment's adapter with one difference: the family's package is imported before anything
is made, by this process and by every process that makes copies (async subprocesses, a parallel sampler's
workers). That does two things:

- importing ``minigrid`` or ``highway_env`` registers their ids with gymnasium (nothing else would);
- a missing extra is a ModuleNotFoundError naming the package, which the run turns into
  "pip install 'rlconf[EXTRA]'" (gymnasium would raise its own DependencyNotInstalled, naming neither).

A family may also wrap each copy (``copy_wrappers``): MiniGrid's observations carry a ``mission`` string,
which no network can take, so its copies drop the observation keys whose spaces are not arrays.

Settings of a task go through ``env.kwargs`` to ``gym.make(id, **kwargs)``: highway-env takes them all as one
``config`` dictionary (``env.kwargs.config.duration=40``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import partial

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

from rlconf.environments.gym import GymVectorEnvironment, make_vector_env, make_wrapped

Wrapper = Callable[[gym.Env], gym.Env]


def make_package_vector_env(package: str, copy_wrappers: tuple[Wrapper, ...], env_id: str | EnvSpec, n_envs: int,
                            kwargs: dict, vectorization: str, max_episode_steps: int | None,
                            render_mode: str | None, wrappers: tuple[Wrapper, ...]) -> gym.vector.VectorEnv:
    """``make_vector_env``'s vector env of ``env_id`` (an id, or gymnasium's EnvSpec with
    the config's wrappers: environments.registered), ``package`` imported first, each copy wrapped in
    ``copy_wrappers`` (innermost) and ``wrappers`` (a watcher's). Async copies are made by subprocesses that
    import the package themselves."""
    importlib.import_module(package)
    if vectorization == "async" and not (render_mode or wrappers):
        make = partial(make_package_env, package, env_id, kwargs, max_episode_steps, copy_wrappers)
        return gym.vector.AsyncVectorEnv([make] * n_envs)
    return make_vector_env(env_id, n_envs, kwargs, vectorization, max_episode_steps, render_mode,
                           (*copy_wrappers, *wrappers))


def make_package_env(package: str, env_id: str | EnvSpec, kwargs: dict, max_episode_steps: int | None,
                     copy_wrappers: tuple[Wrapper, ...]) -> gym.Env:
    """One copy, ``package`` imported first, packed as ``make_vector_env``'s copies are (structured
    observations: core.layout); module-level so that AsyncVectorEnv can pickle it."""
    importlib.import_module(package)
    extra = {} if max_episode_steps is None else {"max_episode_steps": max_episode_steps}
    return make_wrapped(env_id, {**kwargs, **extra}, copy_wrappers)


ARRAY_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary,
                gym.spaces.Dict, gym.spaces.Tuple)


def array_keys_only(env: gym.Env) -> gym.Env:
    """``env`` with the keys of its Dict observation whose spaces are not arrays (a Text, MiniGrid's
    MissionSpace: the ``mission`` string) dropped; any other observation as it is."""
    space = env.observation_space
    if not isinstance(space, gym.spaces.Dict):
        return env
    keep = [key for key, sub in space.spaces.items() if isinstance(sub, ARRAY_SPACES)]
    return env if len(keep) == len(space.spaces) else gym.wrappers.FilterObservation(env, keep)


class Box2DEnvironment(GymVectorEnvironment):
    """gymnasium's Box2D tasks (LunarLander, BipedalWalker): the ``box2d`` extra."""

    vector_env = staticmethod(partial(make_package_vector_env, "Box2D", ()))


class MinigridEnvironment(GymVectorEnvironment):
    """MiniGrid's grid worlds (the ``minigrid`` extra): Dict observations of an image and a direction."""

    vector_env = staticmethod(partial(make_package_vector_env, "minigrid", (array_keys_only,)))


class HighwayEnvironment(GymVectorEnvironment):
    """highway-env's driving tasks (the ``highway`` extra): settings in ``env.kwargs.config``."""

    vector_env = staticmethod(partial(make_package_vector_env, "highway_env", ()))
