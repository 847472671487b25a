"""PettingZoo environments (rlconf.environments.pettingzoo) on the real games: turns, final states, returns,
action masks, time limits, seeding, Atari frames, and the env configs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo", reason="the pettingzoo extra is not installed: pip install -e '.[dev,pettingzoo]'")

from rlconf import registry  # noqa: E402
from rlconf.core import EnvKind, MultiagentState  # noqa: E402
from rlconf.environments.pettingzoo import (  # noqa: E402
    MultiagentAtariEnvironment,
    MultiagentEnvironment,
    MultiagentFrameEnvironment,
    game_seed,
    import_env_module,
)
from rlconf.errors import ConfigError  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "env" / "pettingzoo"
BOARDS = {"tictactoe": "pettingzoo.classic.tictactoe_v3", "connect_four": "pettingzoo.classic.connect_four_v3"}


def random_action(state: MultiagentState, env: MultiagentEnvironment, rng: np.random.Generator):
    """A uniformly random legal action; None on a final state (PettingZoo's convention)."""
    if state.done:
        return None
    if "action_mask" in state:
        return int(rng.choice(np.flatnonzero(state["action_mask"].numpy())))
    space = env.action_spaces[state.agent]
    if isinstance(space, gym.spaces.Discrete):
        return torch.tensor(int(rng.integers(space.n)))
    return torch.as_tensor(rng.uniform(-2, 2, space.shape), dtype=torch.float32)  # clipped by the env


def play(env: MultiagentEnvironment, games: int, seed: int | None = 0, rng_seed: int = 0):
    """``games`` games with a random policy: per game, the states shown (the first of the next game excluded)
    and the finished episode from ``completed``."""
    rng = np.random.default_rng(rng_seed)
    state = env.reset(seed=seed)
    played, shown = [], [state]
    while len(played) < games:
        state = env.step(random_action(state, env, rng))
        if env.completed:
            played.append((shown, env.completed[0]))
            shown = []
        shown.append(state)
    return played


def check_game(env: MultiagentEnvironment, shown: list[MultiagentState], episode) -> None:
    """What every game must satisfy, whatever the environment."""
    finals = [s.agent for s in shown if s.done]
    assert sorted(finals) == sorted(env.agents), "each agent sees its final state exactly once"
    assert all(s.done for s in shown[-len(env.agents):]), "the game ends with the agents' final states"
    assert episode.length == sum(not s.done for s in shown)
    for agent in env.agents:
        rewards = sum(float(s.reward) for s in shown if s.agent == agent)
        assert episode.returns[agent] == pytest.approx(rewards)
    for s in shown:
        assert isinstance(s, MultiagentState) and s.agent in env.agents
        assert s.observation.shape == env.observation_spaces[s.agent].shape
        assert s.observation.dtype == torch.from_numpy(np.zeros(0, env.observation_spaces[s.agent].dtype)).dtype
        assert s.reward.dtype == torch.float32 and s.mask.dtype == torch.float32
        assert s.done.dtype == torch.bool and s["truncated"].dtype == torch.bool
        assert float(s.mask) == (0.0 if s.done and not s["truncated"] else 1.0)


@pytest.mark.parametrize("game", list(BOARDS))
def test_board_games_alternate_turns_and_end_zero_sum(game):
    env = MultiagentEnvironment(BOARDS[game], name=f"pettingzoo/{game}")
    assert env.kind is EnvKind.MULTI_AGENT and env.n_envs == 1 and env.frames_per_step == 1
    assert env.observation_space == env.observation_spaces[env.agents[0]]
    games = play(env, 30)
    turns = 0
    for shown, episode in games:
        check_game(env, shown, episode)
        assert set(episode.returns.values()) <= {-1.0, 0.0, 1.0}
        assert sum(episode.returns.values()) == 0
        live = [s.agent for s in shown if not s.done]
        assert live[0] == env.agents[0]
        assert all(a != b for a, b in zip(live, live[1:], strict=False)), "the players alternate"
        assert all(s["action_mask"].dtype == torch.bool and s["action_mask"].any() for s in shown if not s.done)
        turns += episode.length
    assert any(episode.returns[env.agents[0]] != 0 for _, episode in games), "somebody won a game"
    assert env.steps == turns


def test_tictactoe_masks_occupied_cells_and_shows_the_board():
    env = MultiagentEnvironment(BOARDS["tictactoe"])
    assert env.observation_spaces["player_1"] == gym.spaces.Box(0, 1, (18,), np.float32)
    assert env.action_spaces["player_2"] == gym.spaces.Discrete(9)
    state = env.reset(seed=0)
    assert state["action_mask"].all() and state.observation.sum() == 0
    state = env.step(4)
    assert state.agent == "player_2" and env.current_agent == "player_2"
    state = env.step(torch.tensor(0))
    assert state.agent == "player_1"
    assert state["action_mask"].tolist() == [i not in (0, 4) for i in range(9)]
    assert state.observation.sum() == 2 and env.steps == 2


def test_connect_four_masks_a_full_column():
    env = MultiagentEnvironment(BOARDS["connect_four"])
    state = env.reset(seed=0)
    for _ in range(6):  # alternating discs: nobody connects four
        state = env.step(0)
    assert not state.done and state["action_mask"].tolist() == [False] + [True] * 6


def test_a_win_is_shown_to_both_players_then_the_next_game_starts():
    env = MultiagentEnvironment(BOARDS["tictactoe"])
    env.reset(seed=0)
    for cell in (0, 3, 1, 4):
        env.step(cell)
    loser = env.step(2)  # player_1 completes the top row
    assert (loser.agent, loser.done, float(loser.reward), float(loser.mask)) == ("player_2", True, -1.0, 0.0)
    assert not env.completed
    winner = env.step(None)
    assert (winner.agent, winner.done, float(winner.reward)) == ("player_1", True, 1.0)
    first = env.step(torch.tensor(7))  # ignored: a final state's action
    assert env.completed[0].returns == {"player_1": 1.0, "player_2": -1.0} and env.completed[0].length == 5
    assert (first.agent, first.done, float(first.observation.sum())) == ("player_1", False, 0.0)
    assert env.steps == 5
    env.step(0)
    assert not env.completed


def test_max_episode_steps_truncates_and_shows_every_agent_its_last_state():
    env = MultiagentEnvironment(BOARDS["tictactoe"], max_episode_steps=3)
    env.reset(seed=0)
    for cell in (0, 4):
        env.step(cell)
    second = env.step(8)
    assert (second.agent, second.done, bool(second["truncated"]), float(second.mask)) == ("player_2", True, True, 1.0)
    first = env.step(None)
    assert (first.agent, first.done, bool(first["truncated"])) == ("player_1", True, True)
    assert not env.completed
    fresh = env.step(None)
    assert env.completed[0].length == 3 and env.completed[0].returns == {"player_1": 0.0, "player_2": 0.0}
    assert not fresh.done and fresh.observation.sum() == 0 and env.steps == 3


def test_a_time_limit_in_the_middle_of_a_round_keeps_every_reward_once():
    """MPE rewards arrive when a round ends; a limit after 4 turns (of 3 agents) cuts the second round short."""
    env = MultiagentEnvironment("mpe2.simple_spread_v3", kwargs={"max_cycles": 25}, max_episode_steps=4)
    for shown, episode in play(env, 3):
        check_game(env, shown, episode)
        assert episode.length == 4 and all(s["truncated"] for s in shown if s.done)
        finals = {s.agent: float(s.reward) for s in shown if s.done}
        assert list(finals) == ["agent_1", "agent_2", "agent_0"]
        # agent_0 saw the first round's reward on its second turn; the others get it with their last state
        assert finals["agent_0"] == 0 and finals["agent_1"] < 0 and finals["agent_2"] < 0


def test_seeds_reproduce_games_and_later_games_get_derived_seeds():
    def first_observations(seed, games=3):
        env = MultiagentEnvironment("mpe2.simple_spread_v3")
        rng, state, firsts = np.random.default_rng(0), env.reset(seed=seed), []
        firsts.append(state.observation)
        while len(firsts) < games:
            state = env.step(random_action(state, env, rng))
            if env.completed:
                firsts.append(state.observation)
        return firsts

    a, b, c = first_observations(7), first_observations(7), first_observations(8)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0]) and not torch.equal(a[0], a[1])
    env = MultiagentEnvironment("mpe2.simple_spread_v3")
    assert torch.equal(env.reset(seed=game_seed(7, 1)).observation, a[1])
    assert len({game_seed(0, 1), game_seed(0, 2), game_seed(1, 1), game_seed(1, 0)}) == 4


@pytest.fixture(scope="module")
def pong():
    env = MultiagentAtariEnvironment("pettingzoo.atari.pong_v3", kwargs={"max_cycles": 2000}, name="pettingzoo/pong")
    yield env
    env.close()


def test_pong_turns_are_single_grey_frames(pong):
    assert pong.agents == ["first_0", "second_0"] and pong.frame_skip == 4 and pong.frames_per_step == 2
    assert all(space == gym.spaces.Box(0, 255, (1, 84, 84), np.uint8) for space in pong.observation_spaces.values())
    assert pong.action_spaces["second_0"] == gym.spaces.Discrete(6)
    rng = np.random.default_rng(1)
    state = pong.reset(seed=3)
    start, agents, scores, frames = state.observation.clone(), [], {}, set()
    for _ in range(601):  # second_0 sees the rewards of the last round too
        state = pong.step(random_action(state, pong, rng))
        assert state.observation.shape == (1, 84, 84) and state.observation.dtype == torch.uint8
        assert not state["life_lost"]
        agents.append(state.agent)
        frames.add(hash(state.observation.numpy().tobytes()))
        scores[state.agent] = scores.get(state.agent, 0.0) + float(state.reward)
    assert agents[:600:2] == ["second_0"] * 300 and agents[1:600:2] == ["first_0"] * 300
    assert len(frames) > 200 and not torch.equal(state.observation, start)
    assert scores["first_0"] == -scores["second_0"] != 0  # 1200 frames of play: somebody scored
    assert pong.steps == 601


def test_pong_is_reproducible_and_truncates_at_max_cycles(pong):
    def trajectory():
        rng, state, out = np.random.default_rng(2), pong.reset(seed=5), []
        for _ in range(100):
            state = pong.step(random_action(state, pong, rng))
            out.append((state.observation.numpy().tobytes(), float(state.reward)))
        return out

    assert trajectory() == trajectory()
    games = play(pong, 1)  # max_cycles=2000 frames: 500 rounds of 4 frames
    shown, episode = games[0]
    check_game(pong, shown, episode)
    assert episode.length == 1000 and all(s["truncated"] for s in shown if s.done)


def test_pistonball_frames_and_box_actions():
    env = MultiagentFrameEnvironment("pettingzoo.butterfly.pistonball_v6", kwargs={"n_pistons": 5, "max_cycles": 30})
    assert env.observation_spaces["piston_0"] == gym.spaces.Box(0, 255, (1, 84, 84), np.uint8)
    assert isinstance(env.action_space, gym.spaces.Box)  # continuous pistons: the env clips the actions
    for shown, episode in play(env, 1):
        check_game(env, shown, episode)
        assert len({s.observation.numpy().tobytes() for s in shown}) > 10
    env.close()


def test_mpe_agents_have_their_own_spaces():
    env = MultiagentEnvironment("mpe2.simple_adversary_v3", kwargs={"max_cycles": 10})
    assert env.agents == ["adversary_0", "agent_0", "agent_1"]
    assert env.observation_spaces["adversary_0"].shape == (8,) and env.observation_spaces["agent_0"].shape == (10,)
    for shown, episode in play(env, 2):
        check_game(env, shown, episode)
        assert episode.length == 30 and shown[0].observation.dtype == torch.float32


def test_building_errors_are_clear():
    with pytest.raises(ValueError, match="n_envs=4.*allowed: 1"):
        MultiagentEnvironment(BOARDS["tictactoe"], 4)
    with pytest.raises(ConfigError, match="no such PettingZoo environment"):
        MultiagentEnvironment("pettingzoo.classic.nosuch_v1")
    with pytest.raises(ModuleNotFoundError) as missing:
        import_env_module("nosuch_zoo.games.tag_v1")
    assert missing.value.name == "nosuch_zoo"
    with pytest.raises(ConfigError, match="obs_type"):
        MultiagentAtariEnvironment("pettingzoo.atari.pong_v3", kwargs={"obs_type": "rgb_image"})
    with pytest.raises(ConfigError, match="frame_skip"):
        MultiagentAtariEnvironment("pettingzoo.atari.pong_v3", kwargs={"frame_skip": 0})
    with pytest.raises(ConfigError, match="not a PettingZoo Atari game"):
        MultiagentAtariEnvironment(BOARDS["tictactoe"])
    with pytest.raises(ConfigError, match="wrappers"):
        MultiagentEnvironment(BOARDS["tictactoe"], render_mode="rgb_array", wrappers=(lambda env: env,))


MISSING = """
import sys
from rlconf.environments import pettingzoo as zoo


class Uninstalled:  # an import finder that finds nothing of one package, as if it were not installed
    package = None

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == self.package:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


uninstalled = Uninstalled()
sys.meta_path.insert(0, uninstalled)
cases = [("pettingzoo", zoo.MultiagentEnvironment, "pettingzoo.classic.tictactoe_v3"),
         ("multi_agent_ale_py", zoo.MultiagentAtariEnvironment, "pettingzoo.atari.pong_v3"),
         ("pymunk", zoo.MultiagentFrameEnvironment, "pettingzoo.butterfly.pistonball_v6"),
         ("mpe2", zoo.MultiagentEnvironment, "mpe2.simple_spread_v3")]
for package, env_class, env_id in cases:
    for name in [n for n in sys.modules if n.split(".")[0] in ("pettingzoo", "mpe2", package)]:
        del sys.modules[name]
    uninstalled.package = package
    try:
        env_class(env_id)
    except ModuleNotFoundError as error:
        print(package, error.name)
"""


def test_a_missing_package_is_named():
    """run.make_env turns the ModuleNotFoundError into "needs the missing package ...: pip install 'rlconf[...]'"."""
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", MISSING], capture_output=True, text=True,
                         timeout=600)  # a safety net for a busy machine
    assert out.stdout.split("\n")[:-1] == [f"{name} {name}" for name in
                                           ("pettingzoo", "multi_agent_ale_py", "pymunk", "mpe2")], out.stderr


def test_every_family_is_registered_and_named_to_its_extra():
    families = ["pettingzoo_classic", "pettingzoo_atari", "pettingzoo_mpe", "pettingzoo_butterfly"]
    for family in families:
        assert issubclass(registry.get("environment", family), MultiagentEnvironment)
        assert registry.env_spec(family).extra == "pettingzoo"
        assert (CONFIGS.parents[1] / "family" / f"{family}.yaml").is_file()


@pytest.mark.parametrize("config", sorted(p.stem for p in CONFIGS.glob("*.yaml")))
def test_every_env_config_builds_and_plays(config):
    from omegaconf import OmegaConf

    env_settings = OmegaConf.load(CONFIGS / f"{config}.yaml").env
    assert env_settings.name == f"pettingzoo/{config}"
    env_class = registry.get("environment", env_settings.family)
    kwargs = OmegaConf.to_container(env_settings.kwargs)
    env = env_class(env_settings.id, 1, kwargs=kwargs, vectorization="auto",
                    max_episode_steps=env_settings.max_episode_steps, device="cpu", name=env_settings.name,
                    render_mode=None, wrappers=())
    rng, state = np.random.default_rng(0), env.reset(seed=0)
    for _ in range(2 * len(env.agents)):
        state = env.step(random_action(state, env, rng))
        assert state.observation.shape == env.observation_spaces[state.agent].shape
    env.close()
