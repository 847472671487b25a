"""Atari 2600 games through ale-py, with DeepMind's preprocessing (Mnih et al. 2015, Machado et al. 2018).

What the agent gets per environment and step: one 84x84 grayscale uint8 frame of shape (1, 84, 84), the
maximum of the last two of ``frame_skip`` emulator frames. Frames are not stacked here: the body stacks
them (``rlconf.bodies.FrameStack``), so a replay buffer can store each frame once. A reset plays FIRE for one
frame in games that have it, then no-ops: ale-py's reset, d frames in all for d drawn from 0 to ``noop_max`` - 1
(at least the FIRE). Sticky actions
(``repeat_action_probability``) are on by default, as in ALE v5. A lost life does not end the episode: the
state's ``life_lost`` says it happened, and the body decides what it means to the agent. Rewards and
episode returns are raw game scores (all lives); clipping them is the body's business too. Tests (an env built
with ``test=True``) bound their games: FIRE after a lost life where the game has it, and a game without reward
for 5 minutes of play is cut short (``AtariEnvironment.__init__``); training games are never changed.

Two simulators behind one adapter, with the same semantics (same reset procedure, same truncation after
``max_num_frames_per_episode`` frames counted from the end of the reset, same next-step autoreset):

- ``sync`` / ``async``: gymnasium's ALE env under ``AtariPreprocessing``, in this process or in subprocesses;
- ``native``: ale-py's ``AtariVectorEnv``, preprocessing in C++ threads (1.6x sync's steps/s at 8 envs on
  2 cores).

Rendering (``rlconf watch``: a ``render_mode``, wrappers such as RecordVideo) takes the ``sync`` path, whatever
``vectorization`` says: the native vector env cannot render, and the frames shown are the emulator's full colour
screens, not the agent's 84x84 grayscale observations.

``auto`` picks native, for one copy too (20% faster than sync there: 2.3k vs 1.9k steps/s, Breakout). Without
randomness (no sticky actions, no no-op resets) the two play the same game frame for frame (tests/test_atari.py).
With native, keep ``hardware.torch_threads`` low: torch's OpenMP workers spin between operations and take
the cores ale-py's threads step on.

The env configs ``configs/env/atari/<game>.yaml`` are generated from ale-py's game list, each its game's name
and id; the settings every game shares, ``AtariSettings``' defaults, go once into configs/family/atari/game.yaml,
which each game's defaults list merges in:

    python -m rlconf.environments.atari --write-configs configs
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

from rlconf import registry
from rlconf.core import StateArray
from rlconf.environments.gym import GymVectorEnvironment, SerialVectorEnv
from rlconf.environments.parallel import sampled_vector_env
from rlconf.errors import ConfigError, require
from rlconf.settings import VECTORIZATION_MODES

FRAME_SHAPE = (1, 84, 84)  # one grayscale frame, channels first


@dataclass(frozen=True)
class AtariSettings:
    """The Atari keys of ``env.kwargs``; each field's ``doc`` is also its comment in the generated configs."""

    repeat_action_probability: float = field(default=0.25, metadata={
        "doc": "sticky actions as in ALE v5 (0: the DQN papers' deterministic games)"})
    full_action_space: bool = field(default=False, metadata={
        "doc": "false: the game's minimal action set; true: all 18 actions"})
    noop_max: int = field(default=30, metadata={
        "doc": "a reset plays FIRE (where the game has it), then no-ops: 0..noop_max-1 frames in all"})
    frame_skip: int = field(default=4, metadata={
        "doc": "emulator frames per agent step, the last two max-pooled"})
    max_num_frames_per_episode: int = field(default=108_000, metadata={
        "doc": "truncate a game after this many frames (108000: 30 minutes of play)"})
    test_frames_without_reward: int = field(default=18_000, metadata={
        "doc": "tests end a game after this many frames without a reward (SABER's 5 minutes; 0: never)"})
    test_fire_after_life_loss: bool = field(default=True, metadata={
        "doc": "tests press FIRE at a game's start and after a lost life, in games that have it"})

    def __post_init__(self):
        p = self.repeat_action_probability
        require(_is_number(p) and 0 <= p <= 1, "env.kwargs.repeat_action_probability", p,
                "allowed: a probability in [0, 1]")
        require(isinstance(self.full_action_space, bool), "env.kwargs.full_action_space",
                self.full_action_space, "allowed: true, false")
        require(_is_int(self.noop_max) and self.noop_max >= 0, "env.kwargs.noop_max", self.noop_max,
                "allowed: an integer >= 0")
        require(_is_int(self.frame_skip) and self.frame_skip >= 1, "env.kwargs.frame_skip", self.frame_skip,
                "allowed: an integer >= 1")
        cap = self.max_num_frames_per_episode
        require(_is_int(cap) and cap >= 1, "env.kwargs.max_num_frames_per_episode", cap,
                "allowed: an integer >= 1 (emulator frames)")
        stall = self.test_frames_without_reward
        require(_is_int(stall) and stall >= 0, "env.kwargs.test_frames_without_reward", stall,
                "allowed: an integer >= 0 (emulator frames; 0: never)")
        require(isinstance(self.test_fire_after_life_loss, bool), "env.kwargs.test_fire_after_life_loss",
                self.test_fire_after_life_loss, "allowed: true, false")

    @classmethod
    def from_kwargs(cls, kwargs: dict | None) -> AtariSettings:
        """The settings in ``env.kwargs``; an unknown key or a bad value raises a one-line ConfigError."""
        allowed = [f.name for f in dataclasses.fields(cls)]
        for key in kwargs or {}:
            if key not in allowed:
                raise ConfigError(registry.unknown_message("env.kwargs key", key, allowed))
        return cls(**(kwargs or {}))

    def episode_steps(self, max_episode_steps: int | None) -> int:
        """Agent steps after which a game is truncated: the frame cap in steps (both simulators count
        ``frame_skip`` frames a step from the end of the reset), or ``env.max_episode_steps`` if fewer."""
        steps = math.ceil(self.max_num_frames_per_episode / self.frame_skip)
        return min(steps, max_episode_steps) if max_episode_steps else steps


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class AtariEnvironment(GymVectorEnvironment):
    """``n_envs`` copies of an Atari game, with DeepMind's preprocessing, behind StateArrays.

    States carry ``observation`` (uint8, ``(n, 1, 84, 84)``), ``reward`` (the change of the game score),
    ``done``, ``mask`` (0 only when the game is over, 1 on truncation) and ``life_lost`` (bool: a life was
    lost on this step, the last life included). Resets, step counting and ``completed`` episodes are
    GymVectorEnvironment's.
    """

    info_keys: ClassVar[dict[str, Any]] = {"lives": np.int64}  # _state reads them

    def __init__(self, env_id: str, n_envs: int = 1, *, kwargs: dict | None = None,
                 vectorization: str = "auto", max_episode_steps: int | None = None,
                 device: str | torch.device = "cpu", name: str | None = None, render_mode: str | None = None,
                 wrappers: tuple = (), test: bool = False, sampler: str = "serial", workers: int = 1):
        """``test``: the copies play tests (evaluations, the final test, ``rlconf eval`` and ``watch``), whose
        games are bounded as the Atari literature bounds them: a game with no reward for
        ``test_frames_without_reward`` frames is cut short (``Episode.stalled``; SABER, Toromanoff et al. 2019,
        ends an episode stuck 5 minutes without reward), and in games with FIRE the first step of a game and
        the step after a lost life press it (``test_fire_after_life_loss``, as baselines' FireResetEnv with
        episodic lives): Breakout's ball waits for it, so a greedy agent that never learned to press it would
        otherwise stand still until the frame cap (the reset's own FIRE is one frame, which a sticky action
        swallows a quarter of the time). Training is never changed."""
        _import_ale()
        self.settings = AtariSettings.from_kwargs(kwargs)
        self.game = game_of(env_id)
        episode_steps = self.settings.episode_steps(max_episode_steps)
        if render_mode or wrappers:  # watching: in this process
            env = make_atari_vector_env(env_id, self.game, n_envs, self.settings, vectorization, episode_steps,
                                        render_mode, tuple(wrappers))
        else:
            make = partial(_atari_share, env_id, self.game, self.settings, vectorization, episode_steps)
            env = sampled_vector_env(make, n_envs, sampler, workers, self.info_keys)
        self._adopt(env, name or env_id, n_envs, device)
        self.observation_space = gym.spaces.Box(0, 255, FRAME_SHAPE, np.uint8)
        self.frames_per_step = self.settings.frame_skip
        self.simulator_fps = 60  # the 2600's NTSC frames per second: a video plays in real time at 60 / frame_skip
        self._lives = np.zeros(n_envs, np.int64)  # lives at the previous state, 0 after a finished game
        self._fire_next = np.zeros(n_envs, dtype=bool)  # a game's first state, or a life lost and the game goes on
        self._ended = np.ones(n_envs, dtype=bool)  # the last state ended its game: the next one starts a game
        self.fire_action: int | None = None  # played in tests at a game's start and after a lost life
        if test and self.settings.test_frames_without_reward:
            self.stall_steps = math.ceil(self.settings.test_frames_without_reward / self.settings.frame_skip)
        if test and self.settings.test_fire_after_life_loss:
            self.fire_action = fire_action(env_id, self.settings.full_action_space)

    def reset(self, seed: int | None = None) -> StateArray:
        self._lives[:] = 0
        self._ended[:] = True
        return super().reset(seed)

    def _env_actions(self, actions: torch.Tensor, copies: slice) -> np.ndarray:
        fire = self._fire_next[copies]
        if self.fire_action is not None and fire.any():
            fire = torch.from_numpy(fire).to(actions.device)
            actions = torch.where(fire, torch.full_like(actions, self.fire_action), actions)
        return super()._env_actions(actions, copies)

    def _state(self, observation, reward, terminated, done, info: dict,
               copies: slice = slice(None)) -> StateArray:
        lives = np.asarray(info["lives"])
        life_lost = lives < self._lives[copies]
        self._lives[copies] = np.where(done, 0, lives)  # the next game's first state loses nothing
        starting = self._ended[copies].copy()
        self._ended[copies] = done
        self._fire_next[copies] = starting | (life_lost & ~done)
        frames = np.asarray(observation).reshape(len(reward), *FRAME_SHAPE)
        state = super()._state(frames, reward, terminated, done, info, copies)
        state["life_lost"] = torch.from_numpy(life_lost).to(state.device)
        return state


def make_atari_vector_env(env_id: str, game: str, n_envs: int, settings: AtariSettings, vectorization: str,
                          episode_steps: int, render_mode: str | None = None,
                          wrappers: tuple = ()) -> gym.vector.VectorEnv:
    """The simulator behind ``AtariEnvironment``: ale-py's native vector env, or gymnasium's ALE env under
    ``AtariPreprocessing`` in this process (always when rendering or wrapped) or in subprocesses."""
    if vectorization not in VECTORIZATION_MODES:
        raise ValueError(f"hardware.vectorization={vectorization}: allowed: {', '.join(VECTORIZATION_MODES)}")
    if vectorization == "auto":
        vectorization = "native"
    if render_mode or wrappers:
        make = partial(make_preprocessed_env, env_id, settings, episode_steps, render_mode, wrappers)
        return SerialVectorEnv([make] * n_envs)
    if vectorization == "native":
        return make_native_env(game, n_envs, settings, episode_steps)
    make = partial(make_preprocessed_env, env_id, settings, episode_steps)
    vector_class = SerialVectorEnv if vectorization == "sync" else gym.vector.AsyncVectorEnv
    return vector_class([make] * n_envs)


def _atari_share(env_id: str, game: str, settings: AtariSettings, vectorization: str, episode_steps: int,
                 n_envs: int) -> gym.vector.VectorEnv:
    """``make_atari_vector_env`` of ``n_envs`` copies, not rendered: what each sampler worker builds."""
    return make_atari_vector_env(env_id, game, n_envs, settings, vectorization, episode_steps)


def _import_ale():
    """ale-py, imported only when an Atari env is built (a missing one raises ModuleNotFoundError
    naming ``ale_py``, which the run turns into "pip install 'rlconf[atari]'"). Importing it registers
    the ``ALE/...`` ids with gymnasium."""
    import ale_py

    gym.register_envs(ale_py)
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # no banner on every run's console
    return ale_py


def fire_action(env_id: str, full_action_space: bool) -> int | None:
    """The index of FIRE in the game's action set (both simulators use ALE's, in the same order), or None
    when the game has no FIRE: ALE reports each action's meaning."""
    env = gym.make(env_id, full_action_space=full_action_space, disable_env_checker=True)
    try:
        meanings = env.unwrapped.get_action_meanings()
    finally:
        env.close()
    return meanings.index("FIRE") if "FIRE" in meanings else None


def game_of(env_id: str) -> str:
    """The ROM name (``breakout``) behind an ale-py gymnasium id (``ALE/Breakout-v5``)."""
    _import_ale()  # the ids are registered as ale-py is imported
    spec = gym.registry.get(env_id)
    if spec is None or spec.entry_point != "ale_py.env:AtariEnv":
        raise ConfigError(f"env.id={env_id}: not an ale-py game id; e.g. ALE/Breakout-v5 (rlconf list env)")
    return spec.kwargs["game"]


def make_native_env(game: str, n_envs: int, settings: AtariSettings, episode_steps: int,
                    frame_stack: int = 1) -> gym.vector.VectorEnv:
    """ale-py's C++ vector env, configured to match ``make_preprocessed_env``: single frames (the body stacks
    them; ``frame_stack`` has the simulator stack them instead), no episodic life and no reward clipping (both
    belong to the body), and its next-step autoreset."""
    from ale_py.vector_env import AtariVectorEnv

    return AtariVectorEnv(
        game, n_envs, num_threads=min(n_envs, _available_cpus()), stack_num=frame_stack, img_height=FRAME_SHAPE[1],
        img_width=FRAME_SHAPE[2], grayscale=True, maxpool=True, frameskip=settings.frame_skip,
        noop_max=settings.noop_max, use_fire_reset=True, episodic_life=False, reward_clipping=False,
        repeat_action_probability=settings.repeat_action_probability,
        full_action_space=settings.full_action_space,
        max_num_frames_per_episode=episode_steps * settings.frame_skip,
        autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # a Slurm job's cores, not the whole node's
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def make_preprocessed_env(env_id: str, settings: AtariSettings, episode_steps: int, render_mode: str | None = None,
                          wrappers: tuple = ()) -> gym.Env:
    """One game under gymnasium's ``AtariPreprocessing`` (needs opencv), frame by frame underneath; rendered
    in ``render_mode`` (the emulator's screen), inside ``wrappers`` (outermost last).

    Module-level, so AsyncVectorEnv can pickle it into its subprocesses."""
    _import_ale()
    import cv2  # noqa: F401  # AtariPreprocessing's resize; a missing one names the package to install

    env = gym.make(env_id, frameskip=1, repeat_action_probability=settings.repeat_action_probability,
                   full_action_space=settings.full_action_space, max_num_frames_per_episode=None,
                   disable_env_checker=True, render_mode=render_mode)
    env = NoopFireReset(env, settings.noop_max)
    env = gym.wrappers.AtariPreprocessing(env, noop_max=0, frame_skip=settings.frame_skip, screen_size=84,
                                          grayscale_obs=True, terminal_on_life_loss=False)
    env = gym.wrappers.TimeLimit(env, episode_steps)
    for wrapper in wrappers:
        env = wrapper(env)
    return env


class NoopFireReset(gym.Wrapper):
    """ale-py's vector env reset (v0.12, preprocessed_env.cpp), frame by frame, so that both simulators start
    games alike: d frames for d drawn from 0 to ``noop_max`` - 1, the first of them FIRE in games whose action
    set has it (one FIRE frame at least: Breakout's ball waits for it), the others no-ops."""

    def __init__(self, env: gym.Env, noop_max: int):
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()
        assert meanings[0] == "NOOP", "ALE action sets start with NOOP"
        self.noop_max = noop_max
        self.fire = meanings.index("FIRE") if "FIRE" in meanings else None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = self.env.reset(seed=seed, options=options)
        frames = int(self.env.unwrapped.np_random.integers(0, self.noop_max)) if self.noop_max else 0
        actions = [0] * frames
        if self.fire is not None:
            actions[:1] = [self.fire]
        for action in actions:
            observation, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                observation, info = self.env.reset()
        return observation, info


# -- the generated env configs ------------------------------------------------------------------------------
def games() -> dict[str, str]:
    """ale-py's single-player games: ROM name -> gymnasium id (``breakout`` -> ``ALE/Breakout-v5``)."""
    _import_ale()
    return {spec.kwargs["game"]: spec.id for spec in gym.registry.values()
            if spec.id.startswith("ALE/") and spec.id.endswith("-v5")}


GENERATED_BY = "# Generated by: python -m rlconf.environments.atari --write-configs configs"
SHARED = "family/atari/game"  # the config every game's env merges in, below the config folder


def config_text(game: str, env_id: str) -> str:
    """The YAML of ``env=atari/<game>``: the game's name and id over the settings every game shares."""
    title = env_id.removeprefix("ALE/").removesuffix("-v5")
    return "\n".join([
        "# @package _global_",
        f"# {title} (Atari 2600, {env_id}) with DeepMind preprocessing",
        GENERATED_BY,
        "defaults:",
        f"  - /{SHARED}@env            # kwargs and the rest every game shares",
        "  - override /family: atari",
        "env:",
        f"  name: atari/{game}",
        f"  id: {env_id}",
    ]) + "\n"


def shared_config_text() -> str:
    """The YAML every game's env merges in: the layout of every env config, the Atari settings in kwargs with
    ``AtariSettings``' defaults and docs (each game fills in the name and id left ``???`` here)."""
    lines = [
        "# Every Atari game's env settings; env=atari/<game> fills in its name and id (configs/env/atari/)",
        GENERATED_BY,
        "name: ???",
        "family: atari",
        "id: ???",
        "kwargs:",
    ]
    for f in dataclasses.fields(AtariSettings):
        value = f"{f.name}: {_yaml_scalar(f.default)}"
        lines.append(f"  {value:<40}# {f.metadata['doc']}")
    lines.append("max_episode_steps: null   # agent steps; null: the frame cap above decides")
    return "\n".join(lines) + "\n"


def _yaml_scalar(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def write_configs(config_folder: str | Path) -> list[Path]:
    """Below ``config_folder`` (configs/), env/atari/<game>.yaml for every game and the config they share,
    overwriting; the output depends only on ale-py's game list and ``AtariSettings``."""
    folder = Path(config_folder)
    shared = folder / f"{SHARED}.yaml"
    shared.parent.mkdir(parents=True, exist_ok=True)
    shared.write_text(shared_config_text())
    games_folder = folder / "env" / "atari"
    games_folder.mkdir(parents=True, exist_ok=True)
    ids = games()
    paths = [shared]
    for game in sorted(ids):
        path = games_folder / f"{game}.yaml"
        path.write_text(config_text(game, ids[game]))
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlconf.environments.atari", description=__doc__.split("\n")[0])
    parser.add_argument("--write-configs", metavar="DIR", required=True,
                        help="write env/atari/<game>.yaml for every ale-py game, and the family/atari/game.yaml "
                             "they share, into the config folder DIR")
    args = parser.parse_args(argv)
    paths = write_configs(args.write_configs)
    print(f"wrote {len(paths)} configs to {args.write_configs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
