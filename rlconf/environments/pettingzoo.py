"""PettingZoo environments: several agents in one game, taking turns (PettingZoo's AEC API).

One game at a time (``n_envs`` is 1): an AEC game is a sequence of turns, not a batch. ``reset`` and ``step``
return a ``MultiagentState``: the view of the agent whose turn it is (``state.agent``), which the training loop
hands to that agent's learner (independent learning, as ALL's ``IndependentMultiagent``):

- ``observation``: a torch tensor, float32 for vectors and boards, uint8 ``(1, 84, 84)`` for frames;
- ``reward``: what this agent received since its previous turn (PettingZoo's ``last()`` reward);
- ``done`` / ``mask`` / ``truncated``: the agent's game is over; ``mask`` is 0 only when it really ended
  (not when a time limit cut it short), so values still bootstrap across a truncation;
- ``action_mask`` (board games): bool, True for the legal actions; the observation is then the board alone.

Every agent is shown its final state exactly once (its action there is ignored: ``step(None)`` is fine), so
each learner sees its own last transition; once all have been, the game resets (with a seed derived from the
``reset`` seed and the game count, so runs reproduce) and ``step`` returns the first state of the next game,
with the finished game in ``completed``. ``steps`` counts turns in which an action was applied: the training
budget and ``env.max_episode_steps`` count these.

Families, all through this module (``rlconf list env``): ``pettingzoo_classic`` (board games with action
masks), ``pettingzoo_mpe`` (mpe2's particle worlds, vectors), ``pettingzoo_atari`` (two- and four-player Atari
through multi-agent ALE, DeepMind-style frames with a frame skip) and ``pettingzoo_butterfly`` (pixel games such
as pistonball, seen as grey 84x84 frames).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from rlconf.core import EnvKind, MultiagentState
from rlconf.environments.base import Environment
from rlconf.errors import ConfigError, require
from rlconf.settings import VECTORIZATION_MODES

FRAME_SHAPE = (1, 84, 84)  # one grey frame, channels first, as the single-agent Atari adapter hands over
FRAME_SPACE = gym.spaces.Box(0, 255, FRAME_SHAPE, np.uint8)


@dataclass
class MultiagentEpisode:
    """One finished game: each agent's undiscounted return, and the turns taken by all agents together."""

    env_index: int
    returns: dict[str, float]
    length: int
    stalled: bool = False  # as single-agent episodes: never cut short for want of rewards here


@dataclass(frozen=True)
class _View:
    """How one agent's raw PettingZoo observation becomes what the agent sees."""

    space: gym.Space
    observation: Callable[[Any], np.ndarray]
    masked: bool = False  # raw observations are {"observation", "action_mask"} dicts


def make_aec_env(env_id: str, kwargs: dict, render_mode: str | None):
    """The AEC game of the module ``env_id``: its ``env()``, or its ``parallel_env()`` converted to turns."""
    module = import_env_module(env_id)
    if hasattr(module, "env"):
        return module.env(render_mode=render_mode, **kwargs)
    if hasattr(module, "parallel_env"):
        from pettingzoo.utils.conversions import parallel_to_aec

        return parallel_to_aec(module.parallel_env(render_mode=render_mode, **kwargs))
    raise ConfigError(f"env.id={env_id}: not a PettingZoo environment module (it has no env())")


def make_drawn_aec_env(env_id: str, kwargs: dict, render_mode: str | None):
    """``make_aec_env`` for games seen in pixels: they draw their screen, which the observations are cut from,
    only when they render; without a render mode every observation is the first one (PettingZoo 1.27).
    rgb_array draws off-screen."""
    return make_aec_env(env_id, kwargs, render_mode or "rgb_array")


class MultiagentEnvironment(Environment):
    """One PettingZoo game behind ``reset`` / ``step`` of MultiagentStates (see the module docstring).

    ``env_id`` names the module of the game (``pettingzoo.classic.tictactoe_v3``, ``mpe2.simple_spread_v3``);
    ``kwargs`` go to its ``env()`` constructor. ``max_episode_steps`` truncates a game after that many turns.

    A family that plays its games differently names its own ``aec_env`` (given everything it reads); one whose
    settings shape the adapter too (Atari's frame skip) builds its game in its constructor and hands it to
    ``_adopt``. Either way construction depends on no attribute set before it.
    """

    kind = EnvKind.MULTI_AGENT
    n_envs = 1
    frames = False  # image observations become one grey 84x84 frame (the butterfly family)
    aec_env = staticmethod(make_aec_env)  # (env_id, kwargs, render_mode): the game a family plays

    def __init__(self, env_id: str, n_envs: int = 1, *, kwargs: dict | None = None, vectorization: str = "auto",
                 max_episode_steps: int | None = None, device: str | torch.device = "cpu", name: str | None = None,
                 render_mode: str | None = None, wrappers: Sequence[Callable] = ()):
        _check_options(n_envs, vectorization, wrappers)
        self._adopt(self.aec_env(env_id, dict(kwargs or {}), render_mode), env_id, name=name, device=device,
                    render_mode=render_mode, max_episode_steps=max_episode_steps)

    def _adopt(self, env: Any, env_id: str, *, name: str | None, device: str | torch.device,
               render_mode: str | None, max_episode_steps: int | None) -> None:
        """Become the adapter of the AEC game ``env`` (built from ``env_id``), handing states to ``device``."""
        self.name = name or env_id
        self.device = torch.device(device)
        self.render_mode = render_mode
        self.max_episode_steps = max_episode_steps
        self.env = env
        self.agents: list[str] = list(self.env.possible_agents)
        self._views = {agent: self._view(self.env.observation_space(agent), env_id) for agent in self.agents}
        self.observation_spaces: dict[str, gym.Space] = {agent: view.space for agent, view in self._views.items()}
        self.action_spaces: dict[str, gym.Space] = {agent: self.env.action_space(agent) for agent in self.agents}
        self.steps = 0  # turns with an action applied, over all games
        self.completed: list[MultiagentEpisode] = []  # the game that ended on the last step, if one did
        self._seed: int | None = None
        self._games = 0
        self._returns: dict[str, float] = {}
        self._length = 0
        self._since_acted: dict[str, float] = {}  # each agent's rewards since its last action (time limits)
        self._flush: list[str] = []  # agents still to be shown their last state after the time limit
        self._state: MultiagentState | None = None

    # -- the public interface --------------------------------------------------------------------------
    @property
    def observation_space(self) -> gym.Space:
        """The first agent's observation space, for code that needs a single one."""
        return self.observation_spaces[self.agents[0]]

    @property
    def action_space(self) -> gym.Space:
        return self.action_spaces[self.agents[0]]

    @property
    def state(self) -> MultiagentState:
        """The state of the agent whose turn it is (the one ``reset`` or ``step`` last returned)."""
        if self._state is None:
            raise RuntimeError(f"{self.name}: call reset() first")
        return self._state

    @property
    def current_agent(self) -> str:
        return self.state.agent

    def reset(self, seed: int | None = None) -> MultiagentState:
        """A new game; its later games are seeded from ``seed`` and their number."""
        self._seed, self._games = seed, 0
        self.completed = []
        self._start(seed)
        return self.state

    def step(self, action: Any) -> MultiagentState:
        """Apply the current agent's action (ignored on its final state) and return the next agent's state."""
        self.completed = []
        state = self.state
        if self._flush or self._truncating():
            return self._next_flushed()
        if state.done:  # PettingZoo drops a finished agent when it steps with None
            self.env.step(None)
        else:
            self.env.step(self._action(state.agent, action))
            self.steps += 1
            self._length += 1
            self._since_acted[state.agent] = 0.0
        for agent, reward in self.env.rewards.items():
            self._since_acted[agent] = self._since_acted.get(agent, 0.0) + float(reward)
        if not self.env.agents:
            return self._next_game()
        if self._truncating():
            self._flush = self._turn_order()
            return self._next_flushed()
        self._state = self._current()
        return self._state

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    # -- games and turns -------------------------------------------------------------------------------
    def _start(self, seed: int | None) -> None:
        self.env.reset(seed=seed)
        self._returns = dict.fromkeys(self.agents, 0.0)
        self._since_acted = dict.fromkeys(self.agents, 0.0)
        self._length = 0
        self._flush = []
        self._on_reset()
        self._state = self._current()

    def _next_game(self) -> MultiagentState:
        """Every agent has seen the end: record the game, start the next one with a derived seed."""
        self.completed = [MultiagentEpisode(0, dict(self._returns), self._length)]
        self._games += 1
        self._start(None if self._seed is None else game_seed(self._seed, self._games))
        return self.state

    def _truncating(self) -> bool:
        """The time limit is reached (the flush that shows each agent its last state may be under way)."""
        return bool(self.max_episode_steps) and self._length >= self.max_episode_steps

    def _turn_order(self) -> list[str]:
        """The agents still in the game, starting with the one whose turn it is."""
        agents = list(self.env.agents)
        first = agents.index(self.env.agent_selection) if self.env.agent_selection in agents else 0
        return agents[first:] + agents[:first]

    def _next_flushed(self) -> MultiagentState:
        """The next agent's last state of a game cut short by ``max_episode_steps``; the game, when all were.

        PettingZoo knows nothing of this limit, so the states are built here: each agent's current observation
        and the rewards it received since its last action (PettingZoo's cumulative rewards are not reliably
        cleared when an agent acts, so they would count some rewards twice here)."""
        if not self._flush:
            return self._next_game()
        agent = self._flush.pop(0)
        terminated = bool(self.env.terminations.get(agent, False))
        reward = self._since_acted.get(agent, 0.0)
        self._since_acted[agent] = 0.0
        self._state = self._build(agent, self.env.observe(agent), reward, terminated, not terminated,
                                  self.env.infos.get(agent, {}))
        return self._state

    def _current(self) -> MultiagentState:
        observation, reward, terminated, truncated, info = self.env.last()
        return self._build(self.env.agent_selection, observation, reward, terminated, truncated, info)

    def _build(self, agent: str, raw: Any, reward: float, terminated: bool, truncated: bool,
               info: dict) -> MultiagentState:
        """The MultiagentState of ``agent``; its return so far grows by ``reward``."""
        reward = float(reward)
        self._returns[agent] = self._returns.get(agent, 0.0) + reward
        view = self._views[agent]
        terminated, truncated = bool(terminated), bool(truncated) and not terminated
        x = {
            "agent": agent,
            "observation": torch.from_numpy(view.observation(raw)),
            "reward": torch.tensor(reward, dtype=torch.float32),
            "done": torch.tensor(terminated or truncated),
            "mask": torch.tensor(0.0 if terminated else 1.0),
            "truncated": torch.tensor(truncated),
            **self._extra(agent, info),
        }
        if view.masked:
            x["action_mask"] = torch.from_numpy(np.asarray(raw["action_mask"], dtype=bool))
        if self.device.type != "cpu":
            x = {k: v.to(self.device) if torch.is_tensor(v) else v for k, v in x.items()}
        return MultiagentState(x, self.device)

    def _action(self, agent: str, action: Any) -> Any:
        """The action as PettingZoo takes it: an int for Discrete spaces, a clipped array for Box ones."""
        if torch.is_tensor(action):
            action = action.detach().cpu().numpy()
        space = self.action_spaces[agent]
        if isinstance(space, gym.spaces.Discrete):
            return int(np.asarray(action).reshape(()))
        if isinstance(space, gym.spaces.Box):
            return np.clip(np.asarray(action, dtype=space.dtype).reshape(space.shape), space.low, space.high)
        return action

    # -- what the families change ----------------------------------------------------------------------
    def _view(self, space: gym.Space, env_id: str) -> _View:
        """What an agent sees of ``space``: board games' dicts become a flat float32 board plus the mask."""
        if isinstance(space, gym.spaces.Dict) and {"observation", "action_mask"} <= set(space.spaces):
            board = space["observation"]
            if not isinstance(board, gym.spaces.Box):
                raise ConfigError(f"env.id={env_id}: observations {board} are not supported (Box only)")
            flat = gym.spaces.Box(board.low.astype(np.float32).ravel(), board.high.astype(np.float32).ravel(),
                                  dtype=np.float32)
            return _View(flat, lambda raw: np.asarray(raw["observation"], dtype=np.float32).ravel(), masked=True)
        if not isinstance(space, gym.spaces.Box):
            raise ConfigError(f"env.id={env_id}: observations {space} are not supported (Box, or dicts with "
                              "an action_mask)")
        if space.dtype == np.uint8:
            if self.frames and _is_image(space):
                return _View(FRAME_SPACE, grey_frame)
            return _View(space, np.ascontiguousarray)  # torch takes no flipped views (negative strides)
        as_float = gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), dtype=np.float32)
        return _View(as_float, lambda raw: np.ascontiguousarray(raw, dtype=np.float32))

    def _on_reset(self) -> None:
        """Called when a game starts, before its first state is built."""

    def _extra(self, agent: str, info: dict) -> dict[str, torch.Tensor]:
        """More entries of ``agent``'s state, from PettingZoo's info (the Atari family's ``life_lost``)."""
        return {}


class MultiagentFrameEnvironment(MultiagentEnvironment):
    """PettingZoo games seen in pixels (butterfly's pistonball, cooperative pong): each agent's RGB view
    becomes one grey 84x84 uint8 frame, so the ``atari`` body's frame stack and the Nature CNN apply."""

    frames = True
    aec_env = staticmethod(make_drawn_aec_env)


class MultiagentAtariEnvironment(MultiagentEnvironment):
    """Multi-player Atari games (PettingZoo's ``pettingzoo.atari``, multi-agent ALE) as DeepMind-style frames.

    Every agent sees the same screen: one grey 84x84 uint8 frame, the maximum of the last two of ``frame_skip``
    emulator frames (``env.kwargs.frame_skip``, default 4) over which all agents' actions repeat; the ``atari``
    body stacks frames per agent. States carry ``life_lost`` (the agent's lives went down), which the body's
    episodic lives read. PettingZoo's ``max_cycles`` counts emulator frames. The ROMs are ale-py's.
    """

    def __init__(self, env_id: str, n_envs: int = 1, *, kwargs: dict | None = None, vectorization: str = "auto",
                 max_episode_steps: int | None = None, device: str | torch.device = "cpu", name: str | None = None,
                 render_mode: str | None = None, wrappers: Sequence[Callable] = ()):
        kwargs = dict(kwargs or {})
        frame_skip = kwargs.pop("frame_skip", 4)
        require(isinstance(frame_skip, int) and not isinstance(frame_skip, bool) and frame_skip >= 1,
                "env.kwargs.frame_skip", frame_skip, "allowed: an integer >= 1 (emulator frames per turn)")
        _check_options(n_envs, vectorization, wrappers)
        self._adopt(make_atari_aec_env(env_id, kwargs, render_mode, frame_skip), env_id, name=name, device=device,
                    render_mode=render_mode, max_episode_steps=max_episode_steps)
        self.frame_skip = frame_skip
        self.simulator_fps = 60
        self._lives: dict[str, int] = {}
        # The joint action of all players repeats for frame_skip frames: each player's turn is a share of them.
        self.frames_per_step = frame_skip / len(self.agents)

    def _on_reset(self) -> None:
        self._lives = {}

    def _extra(self, agent: str, info: dict) -> dict[str, torch.Tensor]:
        lives = int(info.get("lives", 0))
        lost = lives < self._lives.get(agent, lives)
        self._lives[agent] = lives
        return {"life_lost": torch.tensor(lost)}


def make_atari_aec_env(env_id: str, kwargs: dict, render_mode: str | None, frame_skip: int):
    """The multi-player Atari game ``env_id`` (a ``pettingzoo.atari`` module) in grey frames, each joint action
    repeated ``frame_skip`` frames, taken in turns."""
    module = import_env_module(env_id)
    import ale_py  # the ROMs ship inside ale-py (the atari extra, which rlconf[pettingzoo] includes)
    import cv2  # noqa: F401  # the resize; a missing one names the package
    from pettingzoo.atari.base_atari_env import ParallelAtariEnv
    from pettingzoo.utils.conversions import parallel_to_aec

    require(kwargs.setdefault("obs_type", "grayscale_image") == "grayscale_image", "env.kwargs.obs_type",
            kwargs["obs_type"], "allowed: grayscale_image (frames are grey 84x84)")
    kwargs.setdefault("auto_rom_install_path", os.path.dirname(ale_py.__file__))
    game = None
    if module.__name__.startswith("pettingzoo.atari.") and hasattr(module, "raw_env"):
        game = module.raw_env(render_mode=render_mode, **kwargs).unwrapped
    if not isinstance(game, ParallelAtariEnv):
        raise ConfigError(f"env.id={env_id}: not a PettingZoo Atari game; e.g. pettingzoo.atari.pong_v3")
    return parallel_to_aec(_atari_frames(game, frame_skip))


def _atari_frames(game, frame_skip: int):
    """``game`` (a ParallelAtariEnv) with every joint action repeated ``frame_skip`` frames, the summed
    rewards, the maximum of the last two grey screens shrunk to 84x84, and each agent's lives in its info."""
    from pettingzoo.utils.wrappers import BaseParallelWrapper

    class AtariFrames(BaseParallelWrapper):
        @property
        def agents(self) -> list[str]:
            return self.env.agents

        @property
        def possible_agents(self) -> list[str]:
            return self.env.possible_agents

        @property
        def observation_spaces(self) -> dict[str, gym.Space]:
            return dict.fromkeys(self.env.possible_agents, FRAME_SPACE)

        def observation_space(self, agent: str) -> gym.Space:
            return FRAME_SPACE

        def reset(self, seed: int | None = None, options: dict | None = None):
            observations, _ = self.env.reset(seed=seed, options=options)
            frame = grey_frame(next(iter(observations.values())))
            return dict.fromkeys(observations, frame), self._infos(observations)

        def step(self, actions: dict):
            rewards = dict.fromkeys(self.env.agents, 0.0)
            screens: list[np.ndarray] = []
            for _ in range(frame_skip):
                observations, reward, terminations, truncations, _ = self.env.step(actions)
                for agent, r in reward.items():
                    rewards[agent] += float(r)
                screens = [*screens[-1:], next(iter(observations.values()))]
                if any(terminations.values()) or any(truncations.values()):
                    break
            frame = grey_frame(np.maximum(*screens) if len(screens) == 2 else screens[0])
            return (dict.fromkeys(observations, frame), rewards, terminations, truncations,
                    self._infos(observations))

        def _infos(self, agents) -> dict[str, dict]:
            lives = self.env.ale.allLives()
            index = {agent: i for i, agent in enumerate(self.env.possible_agents)}
            return {agent: {"lives": int(lives[index[agent]])} for agent in agents}

    return AtariFrames(game)


def grey_frame(image: np.ndarray) -> np.ndarray:
    """An RGB or grey ``(H, W, C)`` image as one grey ``(1, 84, 84)`` uint8 frame (area interpolation, as
    gymnasium's AtariPreprocessing)."""
    import cv2

    image = np.asarray(image)
    if image.ndim == 3 and image.shape[-1] == 3:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    elif image.ndim == 3:
        image = image[..., 0]
    return cv2.resize(image, FRAME_SHAPE[:0:-1], interpolation=cv2.INTER_AREA)[None]


def _is_image(space: gym.spaces.Box) -> bool:
    return len(space.shape) == 3 and space.shape[-1] in (1, 3)


def game_seed(seed: int, game: int) -> int:
    """The seed of game number ``game`` of a run seeded ``seed``: distinct across seeds and games."""
    return int(np.random.SeedSequence([seed, game]).generate_state(1)[0])


def import_env_module(env_id: str):
    """The module of a PettingZoo game. A missing package (pettingzoo, mpe2, pygame, multi_agent_ale_py,
    pymunk) raises ModuleNotFoundError naming it, which the run turns into "pip install 'rlconf[pettingzoo]'";
    an unknown game in an installed package is a ConfigError."""
    try:
        return importlib.import_module(env_id)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        inside = env_id == missing or env_id.startswith(missing + ".")
        if missing and inside and "." in missing:
            raise ConfigError(f"env.id={env_id}: no such PettingZoo environment module; e.g. "
                              "pettingzoo.classic.tictactoe_v3, pettingzoo.atari.pong_v3 (rlconf list env)") from None
        raise


def _check_options(n_envs: int, vectorization: str, wrappers: Sequence[Callable]) -> None:
    if n_envs != 1:
        raise ConfigError(f"hardware.n_envs={n_envs}: PettingZoo environments play one game at a time, "
                          "turn by turn; allowed: 1")
    if vectorization not in VECTORIZATION_MODES:
        raise ConfigError(f"hardware.vectorization={vectorization}: allowed: {', '.join(VECTORIZATION_MODES)}")
    if wrappers:
        raise ConfigError("gymnasium wrappers (video recording) do not apply to PettingZoo environments")
