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
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

from rlconf.core import EnvKind, StateArray
from rlconf.core.layout import ACTION_MASK, PLAIN, PackedSpace, packed
from rlconf.core.state import ALL_COPIES, CPU
from rlconf.environments.base import Environment
from rlconf.environments.parallel import SharedMemoryVectorEnv, sampled_vector_env
from rlconf.environments.registered import find_spec
from rlconf.settings import VECTORIZATION_MODES


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


def make_vector_env(env_id: str | gym.envs.registration.EnvSpec, n_envs: int, kwargs: dict, vectorization: str,
                    max_episode_steps: int | None, render_mode: str | None = None,
                    wrappers: Sequence[Callable[[gym.Env], gym.Env]] = ()
                    ) -> gym.vector.VectorEnv:
    """Gymnasium's fastest vectorisation that fits: its native vector version when there is one and more
    than one copy is asked for (CartPole's is 3x faster than stepping copies at 8 envs), subprocesses on
    request (``async``), else copies stepped in this process (``sync``, always when rendering or wrapped)."""
    if vectorization not in VECTORIZATION_MODES:
        raise ValueError(f"hardware.vectorization={vectorization}: allowed: {', '.join(VECTORIZATION_MODES)}")
    # ``env_id`` may be gymnasium's EnvSpec itself, with the config's wrappers (environments.registered), which a
    # native vector env, one simulator stepping arrays, has no copies to apply to: those copies are stepped.
    spec = find_spec(env_id)
    if vectorization in ("auto", "native") and spec.additional_wrappers:
        vectorization = "sync"
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
    if mode == "sync":
        return SerialVectorEnv([partial(make_wrapped, env_id, extra, tuple(wrappers))] * n_envs)
    # Async copies are packed in their processes (structured observations, action masks: core.layout); a
    # native vector env is one simulator stepping arrays, plain by construction.
    wrappers = [packed] if mode == "async" else None
    return gym.make_vec(env_id, num_envs=n_envs, vectorization_mode=mode, wrappers=wrappers, **extra)


def make_wrapped(env_id: str | gym.envs.registration.EnvSpec, kwargs: dict,
                 wrappers: tuple[Callable[[gym.Env], gym.Env], ...]) -> gym.Env:
    """One copy, as gym.make_vec makes each of its copies: ``wrappers`` around it, outermost last."""
    env = gym.make(env_id, **kwargs)
    for wrapper in wrappers:
        env = wrapper(env)
    return packed(env)


class SerialVectorEnv(gym.vector.SyncVectorEnv):
    """Copies stepped one after another in this process: gymnasium's SyncVectorEnv (next-step autoreset, its
    infos, its reset with a ``reset_mask``) without what its step costs beyond the copies' own steps, which
    for one copy of a classic-control task is twice the task's step: a generic batching of the observations
    into a buffer, then a deep copy of that buffer. Here each step's observations go straight into a fresh
    array (the agent may keep it: nothing writes to it again), rewards and flags into fresh arrays, and the
    copies' infos are batched only for the keys of ``info_keys`` (None: all of them, as gymnasium does; the
    adapter sets the keys it reads, which for most families is none: batching MuJoCo's four info keys costs
    as much as the rest of the step). Observations that are not plain arrays (Dict, Tuple spaces) take
    SyncVectorEnv's own step."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]]):
        super().__init__(env_fns, copy=True, autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)
        space = self.single_observation_space
        self._plain = isinstance(space, (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiBinary,
                                         gym.spaces.MultiDiscrete))
        self._observation_shape, self._observation_dtype = (self.num_envs, *space.shape), space.dtype
        # Discrete actions go to the copies as numpy integers, as SyncVectorEnv hands them: gymnasium 1.4's
        # Discrete.contains (the check most tasks' step makes) looks up np.iinfo for a Python int, 7 us against
        # 4 for a numpy one here, a tenth of a classic-control step.
        self.info_keys: Collection[str] | None = None

    def step(self, actions):
        if not self._plain:
            return super().step(actions)
        n, resetting = self.num_envs, self._autoreset_envs
        observations = np.empty(self._observation_shape, self._observation_dtype)
        rewards = np.zeros(n)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        infos: dict[str, Any] = {}
        for i, env in enumerate(self.envs):
            if resetting[i]:  # ended on the last step: this step starts its next episode
                observation, info = env.reset()
            else:
                observation, rewards[i], terminated[i], truncated[i], info = env.step(actions[i])
            self._env_obs[i] = observations[i] = observation  # _env_obs: what a masked reset keeps
            if info:
                if self.info_keys is not None:
                    info = {key: info[key] for key in self.info_keys if key in info}
                infos = self._add_info(infos, info, i)
        self._terminations, self._truncations = terminated, truncated
        self._autoreset_envs = terminated | truncated
        return observations, rewards, terminated, truncated, infos


class GymVectorEnvironment(Environment):
    """``n_envs`` copies of a gymnasium environment behind one ``reset`` / ``step`` of StateArrays.

    A family whose simulator needs more than gymnasium's ids (MuJoCo) names its own ``vector_env``, which is
    given everything it reads; one whose settings shape the adapter too (Atari) builds its vector env in its
    constructor and hands it to ``_adopt``. Either way construction depends on no attribute set before it."""

    kind = EnvKind.SINGLE_AGENT
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
        if isinstance(env, SerialVectorEnv):  # batch only the infos _state reads
            env.info_keys = tuple(self.info_keys)
        self._adopt_space(self.env.single_observation_space)
        self.action_space = self.env.single_action_space
        # Continuous actions are clipped to the Box here, the one place every agent's actions pass.
        self._action_bounds = _bounds(self.action_space)
        self._returns = np.zeros(n_envs)
        # Episode lengths are counted by the clock of each group of copies (key: its first copy, None for all the
        # copies): a copy's length is the clock's reading less the reading its episode began at, a Python
        # subtraction when it ends instead of a numpy addition on every step.
        self._clock: dict[int | None, int] = {}
        self._began = np.zeros(n_envs, dtype=np.int64)
        self._resets_due: dict[int | None, int] = {}  # copies each group's simulator resets on its next step
        self._on_cpu = self.device == CPU
        self.steps = 0  # environment steps taken (reset steps excluded)
        self.completed: list[Episode] = []  # episodes that ended on the last step
        # Cut an episode short (truncated: done, mask 1, ``Episode.stalled``) after this many steps without a
        # reward; None: never. Only families whose simulators reset single copies (reset_mask) set it.
        self.stall_steps: int | None = None
        self._idle = np.zeros(n_envs, dtype=np.int64)  # steps since each copy's last reward
        self._restart = np.zeros(n_envs, dtype=bool)  # copies cut short on the last step: reset before the next

    def _adopt_space(self, space: gym.Space) -> None:
        """The observation space agents see. Packed rows (core.layout) carry a structured observation, an action
        mask or both: the mask goes to the states' ``action_mask``, and a plain observation that only travelled
        with one is handed over plain again."""
        self.layout = space.layout if isinstance(space, PackedSpace) else None
        self._row_dtype = np.uint8 if self.layout is not None else _float32(space).dtype
        self.masks_actions = self.layout is not None and self.layout.has_mask  # read every step
        if self.layout is None:
            self.observation_space = _float32(space)
        elif self.layout.plain:
            self.observation_space = _float32(self.layout.space)
        else:
            self.observation_space = self.layout.without_mask().packed_space()

    def reset(self, seed: int | None = None) -> StateArray:
        observation, info = self.env.reset(seed=None if seed is None else simulator_seed(seed))
        self._returns[:] = 0
        self._clock.clear()
        self._began[:] = 0
        self._resets_due.clear()
        self._idle[:] = 0
        self._restart[:] = False
        n = self.n_envs
        return self._state(observation, np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool), info)

    def step(self, actions: torch.Tensor) -> StateArray:
        if self.stall_steps is not None:  # only tests of some families stall; the others skip a call a step
            self._restart_stalled(ALL_COPIES)
        return self._stepped(ALL_COPIES, *self.env.step(self._env_actions(actions, ALL_COPIES)))

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
        try:
            actions = actions.numpy()
        except TypeError:  # on an accelerator
            actions = actions.cpu().numpy()
        if self._action_bounds is not None:  # np.clip's dispatch costs three times this on a few actions
            low, high = self._action_bounds
            actions = np.minimum(np.maximum(actions, low), high).astype(self.action_space.dtype, copy=False)
        return actions

    def _restart_stalled(self, copies: slice) -> None:
        """Copies cut short on their last step start their next episode now (the simulator will not reset them)."""
        if self.stall_steps is None or not np.count_nonzero(self._restart[copies]):  # only tests of some families stall
            return
        restart = np.zeros(self.n_envs, dtype=bool)
        restart[copies] = self._restart[copies]
        self.env.reset(options={"reset_mask": restart})

    def _stepped(self, copies: slice, observation, reward, terminated, truncated, info: dict) -> StateArray:
        """The bookkeeping of a step of ``copies``: steps, returns, lengths, ``completed``; their states.
        Written for one or a few copies as much as for many: on a step where no episode ends or restarts, three
        numpy calls on the copies (the returns' sum, the done flags and their count)."""
        group = copies.start
        clock = self._clock[group] = self._clock.get(group, 0) + 1
        resets = self._resets_due.pop(group, 0)  # reset steps (their reward is 0) are not counted
        self.steps += len(reward) - resets
        returns = self._returns[copies]  # a view: the sum lands in the adapter's array
        returns += reward
        stalled = None  # only tests of some families cut episodes short
        if self.stall_steps is not None:
            resetting = self._began[copies] == clock  # reset by the simulator now: their episodes begin after
            stalled = self._stalled(copies, np.asarray(reward), resetting, terminated | truncated)
            truncated = truncated | stalled
            self._restart[copies] = stalled
        done = terminated | truncated
        ended = np.count_nonzero(done)  # numpy's fastest "any" on a few elements
        self.completed = []
        if ended:
            first, began = copies.start or 0, self._began[copies]
            self.completed = [Episode(first + int(i), float(returns[i]), clock - int(began[i]),
                                      stalled is not None and bool(stalled[i])) for i in np.flatnonzero(done)]
            returns[done] = 0
            # The simulator resets what it ended on the next step (its action ignored, not counted); a copy cut
            # short here is reset before that step instead, so the step is its next episode's first, counted.
            began[done] = clock + 1
            if stalled is not None:
                began[stalled] = clock
                ended -= np.count_nonzero(stalled)
            self._resets_due[group] = int(ended)
        return self._state(observation, reward, terminated, done, info, copies)

    def _stalled(self, copies: slice, reward: np.ndarray, resetting: np.ndarray, done: np.ndarray) -> np.ndarray:
        """The copies whose episodes go on but have had no reward for ``stall_steps`` steps."""
        idle = np.where((reward != 0) | resetting | done, 0, self._idle[copies] + 1)
        stalled = idle >= self.stall_steps
        idle[stalled] = 0
        self._idle[copies] = idle
        return stalled

    def _state(self, observation, reward, terminated, done, info: dict,
               copies: slice = slice(None)) -> StateArray:
        """The StateArray of one reset or step of ``copies`` (``done``: terminated or truncated); ``info`` is
        there for families that report more keys."""
        x = {
            "observation": torch.from_numpy(np.asarray(observation, dtype=self._row_dtype)),
            "reward": torch.from_numpy(np.asarray(reward, dtype=np.float32)),
            "done": torch.from_numpy(done),
            "mask": torch.from_numpy(np.logical_not(terminated).astype(np.float32)),
        }
        if self.masks_actions:
            self._unpack_mask(x)
        state = StateArray(x, (len(reward),))  # built where numpy's arrays are, then moved: labelled cuda,
        # .to() would not move it; on the CPU (most runs) not even asked to, a call less per step
        return state if self._on_cpu else state.to(self.device)

    def _unpack_mask(self, x: dict[str, torch.Tensor]) -> None:
        """Split packed rows into the observation agents read and the ``action_mask`` (True: legal)."""
        rows = x["observation"]
        x[ACTION_MASK] = self.layout.view(rows, ACTION_MASK).bool()
        if self.layout.plain:
            x["observation"] = self.layout.view(rows, PLAIN).clone()
        else:
            x["observation"] = rows[:, :self.layout.input_bytes].contiguous()

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
