"""Gymnasium environments, always vectorised: n_envs >= 1 copies stepped together.

The adapter turns gymnasium's arrays into a ``StateArray`` and keeps the episode statistics (returns and
lengths) the experiment loop reports. Gymnasium's vector environments reset a finished copy on the *next*
call to ``step`` (its action is ignored, its reward is 0): the agent therefore sees every terminal state,
exactly as with a single environment, and the reset step is not counted as an environment step.

For watching a trained agent (``rlconf watch``) an adapter takes a ``render_mode`` (``human``: a window,
``rgb_array``: frames for a video) and ``wrappers`` around each copy (gymnasium's RecordVideo): its copies
are then built and stepped in this process (``sync``), whatever ``vectorization`` says.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

from rlconf.config import VECTORIZATION_MODES
from rlconf.core import EnvKind, StateArray
from rlconf.environments.base import Environment
from rlconf.environments.parallel import SharedMemoryVectorEnv, sampled_vector_env


@dataclass
class Episode:
    env_index: int
    returns: float
    length: int
    stalled: bool = False  # cut short after ``stall_steps`` steps without a reward (tests of Atari games)


# The ALE (and other C++ simulators) take seeds as 32-bit signed ints, copy i of a vector env seed + i.
SIMULATOR_SEEDS = 2**31 - 2**16


def simulator_seed(seed: int) -> int:
    """``seed`` within what every simulator takes, with room for 65,536 copies: a run's seed (up to 2^32 - 1)
    plus an offset (its tests') is folded in; seeds below ``SIMULATOR_SEEDS`` are unchanged."""
    return seed % SIMULATOR_SEEDS


def make_vector_env(env_id: str, n_envs: int, kwargs: dict, vectorization: str, max_episode_steps: int | None,
                    render_mode: str | None = None, wrappers: Sequence[Callable[[gym.Env], gym.Env]] = ()
                    ) -> gym.vector.VectorEnv:
    """Gymnasium's fastest vectorisation that fits: its native vector version when there is one and more
    than one copy is asked for (CartPole's is 3x faster than stepping copies at 8 envs), subprocesses on
    request (``async``), else copies stepped in this process (``sync``, always when rendering or wrapped)."""
    if vectorization not in VECTORIZATION_MODES:
        raise ValueError(f"hardware.vectorization={vectorization}: allowed: {', '.join(VECTORIZATION_MODES)}")
    spec = gym.spec(env_id)
    if vectorization == "auto":
        vectorization = "native" if spec.vector_entry_point is not None and n_envs > 1 else "sync"
    if render_mode or wrappers:  # a window or a recorder per copy, in this process
        vectorization = "sync"
    mode = {"native": "vector_entry_point", "sync": "sync", "async": "async"}[vectorization]
    extra = dict(kwargs)
    if max_episode_steps is not None:
        extra["max_episode_steps"] = max_episode_steps
    if render_mode is not None:
        extra["render_mode"] = render_mode
    return gym.make_vec(env_id, num_envs=n_envs, vectorization_mode=mode, wrappers=list(wrappers) or None, **extra)


class GymVectorEnvironment(Environment):
    """``n_envs`` copies of a gymnasium environment behind one ``reset`` / ``step`` of StateArrays.

    A family whose simulator needs more than gymnasium's ids (MuJoCo) names its own ``vector_env``, which is
    given everything it reads; one whose settings shape the adapter too (Atari) builds its vector env in its
    constructor and hands it to ``_adopt``. Either way construction depends on no attribute set before it."""

    kind = EnvKind.SINGLE_AGENT
    image_observations = False  # observations are frames (the image networks' input), not vectors
    vector_env = staticmethod(make_vector_env)  # (env_id, n_envs, kwargs, vectorization, max_episode_steps, ...)
    # The keys of the vector env's info that ``_state`` reads, with their dtypes: what a parallel sampler's
    # workers pass back besides observations, rewards and flags (Atari's lives).
    info_keys: ClassVar[dict[str, Any]] = {}

    def __init__(self, env_id: str, n_envs: int = 1, *, kwargs: dict | None = None,
                 vectorization: str = "auto", max_episode_steps: int | None = None,
                 device: str | torch.device = "cpu", name: str | None = None, render_mode: str | None = None,
                 wrappers: Sequence[Callable[[gym.Env], gym.Env]] = (), sampler: str = "serial", workers: int = 1):
        """``sampler`` (``environments.parallel``): the copies step in this process (serial) or in ``workers``
        worker processes (parallel, alternating); watching (``render_mode``, ``wrappers``) is always serial."""
        if render_mode or wrappers:
            env = self.vector_env(env_id, n_envs, kwargs or {}, vectorization, max_episode_steps, render_mode,
                                  tuple(wrappers))
        else:
            make = partial(vector_env_share, self.vector_env, env_id, kwargs or {}, vectorization, max_episode_steps)
            env = sampled_vector_env(make, n_envs, sampler, workers, self.info_keys)
        self._adopt(env, name or env_id, n_envs, device)

    def _adopt(self, env: gym.vector.VectorEnv, name: str, n_envs: int, device: str | torch.device) -> None:
        """Become the adapter of the vector env ``env`` (its ``n_envs`` copies), handing states to ``device``."""
        self.name = name
        self.n_envs = n_envs
        self.device = torch.device(device)
        self.env = env
        # Groups of copies that step on their own (the alternating sampler's two; 1: all step together).
        self.groups = len(env.groups) if isinstance(env, SharedMemoryVectorEnv) else 1
        self.observation_space = _float32(self.env.single_observation_space)
        self.action_space = self.env.single_action_space
        # Continuous actions are clipped to the Box here, the one place every agent's actions pass.
        self._action_bounds = _bounds(self.action_space)
        self._returns = np.zeros(n_envs)
        self._lengths = np.zeros(n_envs, dtype=np.int64)
        self._resetting = np.zeros(n_envs, dtype=bool)
        self.steps = 0  # environment steps taken (reset steps excluded)
        self.completed: list[Episode] = []  # episodes that ended on the last step
        # Cut an episode short (truncated: done, mask 1, ``Episode.stalled``) after this many steps without a
        # reward; None: never. Only families whose simulators reset single copies (reset_mask) set it.
        self.stall_steps: int | None = None
        self._idle = np.zeros(n_envs, dtype=np.int64)  # steps since each copy's last reward
        self._restart = np.zeros(n_envs, dtype=bool)  # copies cut short on the last step: reset before the next

    def reset(self, seed: int | None = None) -> StateArray:
        observation, info = self.env.reset(seed=None if seed is None else simulator_seed(seed))
        self._returns[:] = 0
        self._lengths[:] = 0
        self._resetting[:] = False
        self._idle[:] = 0
        self._restart[:] = False
        n = self.n_envs
        return self._state(observation, np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool), info)

    def step(self, actions: torch.Tensor) -> StateArray:
        self._restart_stalled(slice(None))
        return self._stepped(slice(None), *self.env.step(self._env_actions(actions, slice(None))))

    # The alternating sampler steps the copies in groups (its vector env: environments.parallel), one group
    # while the agent acts on another: the same bookkeeping, on the group's copies (a slice of them all).
    def group_copies(self, group: int) -> slice:
        copies = self.env.group_copies(group)
        return slice(copies.start, copies.stop)

    def step_async(self, actions: torch.Tensor, group: int) -> None:
        """Start stepping ``group``'s copies with ``actions`` (one per copy of the group)."""
        copies = self.group_copies(group)
        self._restart_stalled(copies)
        self.env.step_async(self._env_actions(actions, copies), group)

    def step_wait(self, group: int) -> StateArray:
        """``group``'s next states (``completed``: the episodes of the group's copies that ended)."""
        return self._stepped(self.group_copies(group), *self.env.step_wait(group))

    def _env_actions(self, actions: torch.Tensor, copies: slice) -> np.ndarray:
        """The agent's actions as the simulator takes them (continuous ones clipped to the Box)."""
        actions = actions.cpu().numpy()
        if self._action_bounds is not None:
            actions = np.clip(actions, *self._action_bounds).astype(self.action_space.dtype, copy=False)
        return actions

    def _restart_stalled(self, copies: slice) -> None:
        """Copies cut short on their last step start their next episode now (the simulator will not reset them)."""
        restart = np.zeros(self.n_envs, dtype=bool)
        restart[copies] = self._restart[copies]
        if restart.any():
            self.env.reset(options={"reset_mask": restart})

    def _stepped(self, copies: slice, observation, reward, terminated, truncated, info: dict) -> StateArray:
        """The bookkeeping of a step of ``copies``: steps, returns, lengths, ``completed``; their states."""
        live = ~self._resetting[copies]
        self.steps += int(live.sum())
        self._returns[copies] += reward
        self._lengths[copies] += live
        stalled = self._stalled(copies, np.asarray(reward), live, terminated | truncated)
        truncated = truncated | stalled
        done = terminated | truncated
        first = copies.start or 0
        returns, lengths = self._returns[copies], self._lengths[copies]
        self.completed = [Episode(first + int(i), float(returns[i]), int(lengths[i]), bool(stalled[i]))
                          for i in np.flatnonzero(done)] if done.any() else []
        returns[done] = 0
        lengths[done] = 0
        # The simulator resets what it ended on the next step (its action ignored, not counted); a copy cut
        # short here is reset before that step instead, so the step is its next episode's first, counted.
        self._resetting[copies] = done & ~stalled
        self._restart[copies] = stalled
        return self._state(observation, reward, terminated, truncated, info, copies)

    def _stalled(self, copies: slice, reward: np.ndarray, live: np.ndarray, done: np.ndarray) -> np.ndarray:
        """The copies whose episodes go on but have had no reward for ``stall_steps`` steps."""
        if self.stall_steps is None:
            return np.zeros(len(reward), dtype=bool)
        idle = np.where((reward != 0) | ~live | done, 0, self._idle[copies] + 1)
        stalled = idle >= self.stall_steps
        idle[stalled] = 0
        self._idle[copies] = idle
        return stalled

    def _state(self, observation, reward, terminated, truncated, info: dict,
               copies: slice = slice(None)) -> StateArray:
        """The StateArray of one reset or step of ``copies``; ``info`` is there for families that report more
        keys."""
        state = StateArray({
            "observation": torch.from_numpy(np.asarray(observation, dtype=self.observation_space.dtype)),
            "reward": torch.from_numpy(np.asarray(reward, dtype=np.float32)),
            "done": torch.from_numpy(terminated | truncated),
            "mask": torch.from_numpy((~terminated).astype(np.float32)),
        }, (len(reward),))  # built where numpy's arrays are, then moved: labelled cuda, .to() would not move it
        return state.to(self.device)

    def close(self) -> None:
        self.env.close()


def vector_env_share(factory: Callable[..., gym.vector.VectorEnv], env_id: str, kwargs: dict, vectorization: str,
                   max_episode_steps: int | None, n_envs: int) -> gym.vector.VectorEnv:
    """``factory``'s vector env of ``n_envs`` copies, not rendered: what each sampler worker builds (picklable)."""
    return factory(env_id, n_envs, kwargs, vectorization, max_episode_steps, None, ())


def has_display() -> bool:
    """Whether windows can open here (an X11 or Wayland display): ``render_mode="human"``."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _float32(space: gym.Space) -> gym.Space:
    """Float64 Box observations (MuJoCo's) as float32: the precision networks compute in, half the memory."""
    if isinstance(space, gym.spaces.Box) and space.dtype == np.float64:
        return gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32)
    return space


def _bounds(space: gym.Space) -> tuple[np.ndarray, np.ndarray] | None:
    return (space.low, space.high) if isinstance(space, gym.spaces.Box) else None
