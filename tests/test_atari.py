"""Atari: the environment family on the real ALE (both simulators), the Atari bodies, and their configs."""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import one_error_line, states
from omegaconf import OmegaConf

pytest.importorskip("ale_py", reason="the atari extra is not installed: pip install -e '.[dev,atari]'")

from rlconf.agents import ParallelAgent, TestAgent  # noqa: E402
from rlconf.bodies import Body, ClipRewards, DeepmindAtariBody, EpisodicLives, FrameStack, body_options  # noqa: E402
from rlconf.config import BodySettings  # noqa: E402
from rlconf.core import StateArray  # noqa: E402
from rlconf.environments.atari import AtariEnvironment, NoopFireReset, _import_ale, write_configs  # noqa: E402
from rlconf.errors import ConfigError  # noqa: E402
from rlconf.paths import config_dir  # noqa: E402

SIMULATORS = ["sync", "native"]  # gymnasium's AtariPreprocessing in this process; ale-py's C++ vector env
DETERMINISTIC = {"repeat_action_probability": 0.0, "noop_max": 0}




def make(n_envs: int = 1, vectorization: str = "sync", **kwargs) -> AtariEnvironment:
    max_episode_steps = kwargs.pop("max_episode_steps", None)
    return AtariEnvironment("ALE/Breakout-v5", n_envs, kwargs=kwargs, vectorization=vectorization,
                            max_episode_steps=max_episode_steps, name="atari/breakout")


def random_actions(env: AtariEnvironment, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield torch.randint(0, env.action_space.n, (env.n_envs,), generator=generator)


def play(env: AtariEnvironment, steps: int, seed: int = 0) -> list[StateArray]:
    """The states of ``steps`` random steps after a seeded reset, the reset state first."""
    actions = random_actions(env, seed)
    states = [env.reset(seed=seed)]
    states += [env.step(next(actions)) for _ in range(steps)]
    return states


# -- the environment ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("vectorization", SIMULATORS)
def test_observations_are_single_uint8_frames(vectorization):
    env = make(2, vectorization)
    try:
        states = play(env, 30)
    finally:
        env.close()
    assert env.observation_space == gym.spaces.Box(0, 255, (1, 84, 84), np.uint8)
    assert env.action_space == gym.spaces.Discrete(4)
    assert env.frames_per_step == 4
    for state in states:
        assert set(state) == {"observation", "reward", "done", "mask", "life_lost"}
        assert state.observation.shape == (2, 1, 84, 84) and state.observation.dtype == torch.uint8
        assert state["life_lost"].dtype == torch.bool and state.done.dtype == torch.bool
        assert state.reward.dtype == torch.float32 and state.mask.dtype == torch.float32
    frames = torch.stack([s.observation for s in states])
    assert frames.min() >= 0 and frames.max() <= 255 and frames.max() > frames.min()  # a picture, not a blank
    assert env.steps == 60


@pytest.mark.parametrize("noop_max", [0, 2])
def test_both_simulators_play_the_same_game_frame_for_frame(noop_max):
    """Without randomness (no sticky actions, no no-op resets) gymnasium's preprocessing and ale-py's
    vector env are the same function: same frames, rewards, ends and life losses, across a reset. With
    noop_max 2 both resets draw 0 or 1 frames, which in Breakout is the one FIRE frame either way."""
    runs = {}
    for vectorization in SIMULATORS:
        env = make(1, vectorization, **{**DETERMINISTIC, "noop_max": noop_max})
        try:
            states = play(env, 400, seed=3)
        finally:
            env.close()
        runs[vectorization] = {key: torch.stack([s[key] for s in states]) for key in states[0]}
        assert env.steps == 400 - int(runs[vectorization]["done"][:-1].sum())  # reset steps are not counted
    sync, native = runs["sync"], runs["native"]
    assert int(sync["done"].sum()) >= 1, "the game should end (and restart) within 400 random steps"
    for key in sync:
        assert torch.equal(sync[key], native[key]), key


class ActionRecorder(gym.Wrapper):
    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.actions: list[int] = []

    def step(self, action):
        self.actions.append(int(action))
        return self.env.step(action)


@pytest.mark.parametrize("game, fire", [("ALE/Breakout-v5", 1), ("ALE/Freeway-v5", None)])
def test_the_gymnasium_reset_plays_ale_pys_fire_then_no_ops(game, fire):
    """ale-py's vector env resets with FIRE (where the game has it) and then no-ops, d frames in all for d
    drawn from 0..noop_max-1 (at least the FIRE); the sync simulator's NoopFireReset plays the same."""
    _import_ale()  # registers the ALE/ ids, as every Atari env's construction does
    recorder = ActionRecorder(gym.make(game, frameskip=1, repeat_action_probability=0.0))
    env = NoopFireReset(recorder, noop_max=30)
    lengths = set()
    try:
        for seed in range(40):
            recorder.actions = []
            env.reset(seed=seed)
            played = recorder.actions
            lengths.add(len(played))
            if fire is None:
                assert played == [0] * len(played)
            else:
                assert played == [fire] + [0] * (len(played) - 1)
    finally:
        env.close()
    assert min(lengths) >= (1 if fire else 0) and max(lengths) <= 29 and len(lengths) > 10, sorted(lengths)


@pytest.mark.parametrize("vectorization", SIMULATORS)
def test_rewards_ends_and_lives_follow_the_game(vectorization):
    """Random play with the default settings (sticky actions, no-op resets), two copies, until each copy
    has finished two games: rewards are score changes, ``mask`` is 0 only at game over, five lives are
    lost per game of Breakout (the last one on the final state), and ``completed`` reports each game's
    raw score and length."""
    env = make(2, vectorization)
    actions = random_actions(env)
    state = env.reset(seed=1)
    rewards, lengths, lives_lost = [[], []], [0, 0], [0, 0]
    games: list[tuple[int, float, int]] = []  # env, return, length
    starting = torch.zeros(2, dtype=torch.bool)
    try:
        while min(sum(1 for g in games if g[0] == i) for i in range(2)) < 2:
            state = env.step(next(actions))
            assert torch.equal(state.mask, (~state.done).float())  # no truncation within 108,000 frames
            finished = []
            for i in range(2):
                reward, done, lost = float(state.reward[i]), bool(state.done[i]), bool(state["life_lost"][i])
                assert reward >= 0 and reward == int(reward)  # Breakout's score only goes up
                if starting[i]:  # the reset step: not counted, nothing earned, nothing lost
                    assert reward == 0 and not done and not lost
                    continue
                rewards[i].append(reward)
                lengths[i] += 1
                lives_lost[i] += lost
                if done:  # four lives lost before the game ends, the fifth at its end
                    assert lost and lives_lost[i] == 5, lives_lost[i]
                    finished.append((i, sum(rewards[i]), lengths[i]))
                    rewards[i], lengths[i], lives_lost[i] = [], 0, 0
            assert sorted((e.env_index, e.returns, e.length) for e in env.completed) == finished
            games += finished
            starting = state.done.clone()
    finally:
        env.close()
    assert env.steps == sum(length for *_, length in games) + sum(lengths)


@pytest.mark.parametrize("vectorization", SIMULATORS)
def test_the_frame_cap_truncates_with_mask_one(vectorization):
    env = make(2, vectorization, max_num_frames_per_episode=38)  # ceil(38 / 4) = 10 agent steps
    try:
        states = play(env, 10)
        assert [bool(s.done.any()) for s in states] == [False] * 10 + [True]
        assert torch.equal(states[10].done, torch.ones(2, dtype=torch.bool))
        assert torch.equal(states[10].mask, torch.ones(2))  # truncation still bootstraps
        assert sorted((e.env_index, e.length) for e in env.completed) == [(0, 10), (1, 10)]
        restart = env.step(torch.zeros(2, dtype=torch.long))
    finally:
        env.close()
    assert not restart.done.any() and env.completed == [] and env.steps == 20  # the reset step is not counted


@pytest.mark.parametrize("vectorization", SIMULATORS)
def test_env_max_episode_steps_caps_too(vectorization):
    env = make(1, vectorization, max_episode_steps=6)
    try:
        states = play(env, 6)
    finally:
        env.close()
    assert bool(states[6].done) and float(states[6].mask) == 1.0
    assert [(e.env_index, e.length) for e in env.completed] == [(0, 6)]


def play_noop(env: AtariEnvironment, games: int, seed: int = 1, limit: int = 20_000) -> list:
    """The first ``games`` episodes an agent that only ever plays NOOP finishes (at most ``limit`` steps)."""
    noop = torch.zeros(env.n_envs, dtype=torch.long)
    env.reset(seed=seed)
    finished = []
    for _ in range(limit):
        env.step(noop)
        finished += env.completed
        if len(finished) >= games:
            break
    return finished


@pytest.mark.parametrize("vectorization", SIMULATORS)
def test_tests_press_fire_where_a_game_waits_for_it(vectorization):
    """An agent that never presses FIRE (an untrained greedy one): in Breakout the ball waits for FIRE after
    every lost life, so in training it stands still until the no-reward cap or the 108,000-frame cap. A test
    env presses FIRE at each game's start and after each lost life: five balls are lost in ~125 steps, and
    every game ends by itself (none cut short), sticky actions and no-op resets included."""
    training = make(2, vectorization, test_frames_without_reward=0)
    test_env = AtariEnvironment("ALE/Breakout-v5", 2, vectorization=vectorization, name="atari/breakout", test=True)
    try:
        assert training.fire_action is None and training.stall_steps is None  # training is never changed
        assert test_env.fire_action == 1 and test_env.stall_steps == 4500  # Breakout's FIRE; 18,000 frames
        assert play_noop(training, 1, limit=2000) == []  # still waiting for FIRE after 2,000 steps
        games = play_noop(test_env, 6)
    finally:
        training.close()
        test_env.close()
    assert len(games) >= 6 and all(not g.stalled and g.length < 200 for g in games), games


@pytest.mark.parametrize("vectorization", SIMULATORS)
def test_tests_cut_a_game_without_reward_short(vectorization):
    """Without FIRE the NOOP agent earns nothing: a test env ends each game after
    test_frames_without_reward frames without a reward (truncated: done, mask 1, ``stalled``), and the
    copy's next game starts at once, its first step counted."""
    env = AtariEnvironment("ALE/Breakout-v5", 2, vectorization=vectorization, name="atari/breakout", test=True,
                           kwargs={"test_fire_after_life_loss": False, "test_frames_without_reward": 398})
    noop = torch.zeros(2, dtype=torch.long)
    try:
        assert env.stall_steps == 100 and env.fire_action is None  # ceil(398 / 4)
        env.reset(seed=0)
        states = [env.step(noop) for _ in range(200)]
    finally:
        env.close()
    ends = [i for i, s in enumerate(states) if s.done.any()]
    assert ends == [99, 199]
    assert all(torch.equal(states[i].done, torch.ones(2, dtype=torch.bool)) for i in ends)
    assert all(torch.equal(states[i].mask, torch.ones(2)) for i in ends)  # cut short, not game over
    assert sorted((e.env_index, e.returns, e.length, e.stalled) for e in env.completed) == [
        (0, 0.0, 100, True), (1, 0.0, 100, True)]
    assert env.steps == 400  # every step counted: a cut copy is reset before its next step, not by the simulator


def test_a_test_env_only_where_the_family_declares_test_bounds():
    """make_env(test=True) asks Atari for its bounded test games; families without them are built as usual."""
    from rlconf.config import compose
    from rlconf.experiments.build.environment import make_env
    from rlconf.experiments.build.setup import prepare

    for overrides, bounded in ((["agent=dqn", "env=atari/breakout"], True),
                               (["agent=dqn", "env=classic/cartpole"], False)):
        settings = prepare(compose(overrides, []))
        env = make_env(settings, 1, test=True)
        try:
            assert (env.stall_steps is not None) == bounded
        finally:
            env.close()


@pytest.mark.parametrize("vectorization", SIMULATORS)
def test_sticky_actions_pass_through(vectorization):
    """With repeat_action_probability 1 the emulator repeats the first action (NOOP) for ever: what the
    agent chooses changes nothing. With 0 it does."""

    def frames(probability: float, agent_seed: int | None) -> torch.Tensor:
        env = make(1, vectorization, repeat_action_probability=probability, noop_max=0)
        try:
            actions = random_actions(env, agent_seed) if agent_seed is not None else None
            states = [env.reset(seed=0)]
            for _ in range(60):
                states.append(env.step(next(actions) if actions else torch.zeros(1, dtype=torch.long)))
        finally:
            env.close()
        return torch.stack([s.observation for s in states])

    assert torch.equal(frames(1.0, 7), frames(1.0, None))
    assert not torch.equal(frames(0.0, 7), frames(0.0, None))


@pytest.mark.parametrize("vectorization", SIMULATORS)
def test_full_action_space(vectorization):
    env = make(1, vectorization, full_action_space=True)
    env.close()
    assert env.action_space == gym.spaces.Discrete(18)


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"noopmax": 3}, ["env.kwargs key 'noopmax'", "did you mean 'noop_max'", "frame_skip"]),
    ({"repeat_action_probability": 1.5}, ["env.kwargs.repeat_action_probability=1.5", "[0, 1]"]),
    ({"full_action_space": "yes"}, ["env.kwargs.full_action_space=yes", "true, false"]),
    ({"frame_skip": 0}, ["env.kwargs.frame_skip=0", ">= 1"]),
    ({"max_num_frames_per_episode": 2.5}, ["env.kwargs.max_num_frames_per_episode=2.5", "integer"]),
    ({"test_frames_without_reward": -1}, ["env.kwargs.test_frames_without_reward=-1", ">= 0"]),
    ({"test_fire_after_life_loss": 1}, ["env.kwargs.test_fire_after_life_loss=1", "true, false"]),
])
def test_bad_settings_are_one_line_config_errors(kwargs, words):
    with pytest.raises(ConfigError) as error:
        make(1, **kwargs)
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_an_unknown_game_is_a_config_error():
    with pytest.raises(ConfigError, match=r"env.id=ALE/Nosuchgame-v5: not an ale-py game"):
        AtariEnvironment("ALE/Nosuchgame-v5", 1)


def test_without_ale_py_the_error_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "ale_py", None)  # as if the atari extra were not installed
    with pytest.raises(ModuleNotFoundError) as error:
        make(1)
    assert error.value.name == "ale_py"


def test_async_vectorization_runs_in_subprocesses():
    env = make(2, "async", **DETERMINISTIC)
    try:
        states = play(env, 5)
    finally:
        env.close()
    assert type(env.env).__name__ == "AsyncVectorEnv"
    assert states[-1].observation.shape == (2, 1, 84, 84)


# -- the bodies -----------------------------------------------------------------------------------------------
class Recorder(ParallelAgent):
    """A stand-in agent that keeps every state it is shown and always plays action 0."""

    def __init__(self):
        self.seen: list[StateArray] = []
        self.testers: list[Recorder] = []  # the test agents it has made

    def act(self, states: StateArray) -> torch.Tensor:
        self.seen.append(states)
        return torch.zeros(len(states), dtype=torch.long)

    def test_agent(self) -> TestAgent:
        self.testers.append(Recorder())
        return self.testers[-1]


def frame_states(frames: list[int], done=None, reward=None, life_lost=None) -> StateArray:
    """A state per frame (an environment each); frame ``k`` is an image filled with the value ``k``."""
    observation = torch.tensor(frames, dtype=torch.uint8).view(-1, 1, 1, 1).expand(-1, 1, 84, 84).clone()
    nothing = [False] * len(frames)
    return states(observation, reward or [0.0] * len(frames), done or nothing,
                  life_lost=torch.tensor(life_lost or nothing))


def stacked(state: StateArray) -> list[list[int]]:
    """Each environment's stack as the list of frame values, oldest first."""
    return state.observation[:, :, 0, 0].tolist()


def test_frame_stack_fills_at_episode_starts_and_rolls_otherwise():
    agent = Recorder()
    body = FrameStack(agent, size=3)
    body.act(frame_states([1, 10]))
    body.act(frame_states([2, 11]))
    body.act(frame_states([3, 12], done=(True, False)))  # env 0's game ends: its next state starts a new one
    body.act(frame_states([50, 13]))
    body.act(frame_states([51, 14]))
    assert [stacked(s) for s in agent.seen] == [
        [[1, 1, 1], [10, 10, 10]],
        [[1, 1, 2], [10, 10, 11]],
        [[1, 2, 3], [10, 11, 12]],
        [[50, 50, 50], [11, 12, 13]],
        [[50, 50, 51], [12, 13, 14]],
    ]
    seen = [s.observation for s in agent.seen]
    assert all(o.shape == (2, 3, 84, 84) and o.dtype == torch.uint8 for o in seen)
    assert len({o.untyped_storage().data_ptr() for o in seen}) == len(seen)  # a fresh tensor every step


def test_frame_stack_test_agent_starts_its_own_stacks():
    agent = Recorder()
    body = FrameStack(agent, size=2)
    body.act(frame_states([1, 2]))
    body.test_agent().act(frame_states([7, 8, 9]))  # another environment, with three copies
    assert stacked(agent.testers[0].seen[0]) == [[7, 7], [8, 8], [9, 9]]
    body.act(frame_states([3, 4]))
    assert stacked(agent.seen[1]) == [[1, 3], [2, 4]]  # training's stacks are untouched


def test_clip_rewards_gives_the_agent_the_sign():
    agent = Recorder()
    ClipRewards(agent).act(frame_states([0, 0], reward=(-3.0, 7.0)))
    ClipRewards(agent).act(frame_states([0, 0], reward=(0.0, 0.5)))
    assert [s.reward.tolist() for s in agent.seen] == [[-1.0, 1.0], [0.0, 1.0]]


def test_episodic_lives_ends_the_agents_episode_on_a_lost_life_in_training_only():
    agent = Recorder()
    body = EpisodicLives(agent)
    body.act(frame_states([0, 0], life_lost=(True, False)))
    seen = agent.seen[0]
    assert seen.done.tolist() == [True, False] and seen.mask.tolist() == [0.0, 1.0]

    tester = body.test_agent()
    assert isinstance(tester, Recorder)  # the test agent plays whole games
    tester.act(frame_states([0, 0], life_lost=(True, False)))
    assert tester.seen[0].done.tolist() == [False, False] and tester.seen[0].mask.tolist() == [1.0, 1.0]


def test_episodic_lives_needs_life_lost():
    state = StateArray({"observation": torch.zeros(1, 4), "reward": torch.zeros(1),
                        "done": torch.zeros(1, dtype=torch.bool), "mask": torch.ones(1)}, (1,))
    with pytest.raises(KeyError, match="life_lost"):
        EpisodicLives(Recorder()).act(state)


def test_deepmind_body_space_and_settings():
    frame = gym.spaces.Box(0, 255, (1, 84, 84), np.uint8)
    assert DeepmindAtariBody.transform_space(frame) == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    assert DeepmindAtariBody.transform_space(frame, frame_stack=2).shape == (2, 84, 84)
    assert Body.transform_space(frame) is frame
    settings = BodySettings(name="atari", frame_stack=2, clip_rewards=False, episodic_lives=True)
    assert body_options(DeepmindAtariBody, settings) == {"frame_stack": 2, "clip_rewards": False,
                                                         "episodic_lives": True}
    assert body_options(Body, settings) == {}


def test_deepmind_body_on_the_real_game():
    """What the agent sees through body=atari in training and in test, on Breakout."""
    env = make(2, "native")
    agent = Recorder()
    body = DeepmindAtariBody(agent)
    tester = body.test_agent()
    actions = random_actions(env)
    state = env.reset(seed=0)
    raw = []
    try:
        while not env.completed:  # a whole game: several lost lives, then the end
            body.act(state)
            tester.act(state)
            raw.append(state)
            state = env.step(next(actions))
    finally:
        env.close()
    space = DeepmindAtariBody.transform_space(env.observation_space)
    trained, tested = agent.seen, agent.testers[0].seen
    for seen in (trained, tested):
        assert all(space.contains(s.observation[0].numpy()) for s in seen)
    assert all(torch.equal(s.observation[:, -1:], r.observation) for s, r in zip(trained, raw, strict=True))
    lost = torch.stack([r["life_lost"] for r in raw])
    assert lost.any(), "a life is lost before the first game ends"
    assert torch.equal(torch.stack([s.done for s in trained]), torch.stack([r.done for r in raw]) | lost)
    assert torch.equal(torch.stack([s.done for s in tested]), torch.stack([r.done for r in raw]))
    assert set(torch.cat([s.reward for s in trained]).tolist()) <= {0.0, 1.0}


# -- configs and the command line ------------------------------------------------------------------------
def test_generated_configs_are_up_to_date(tmp_path):
    written = {p.relative_to(tmp_path).as_posix(): p.read_text() for p in write_configs(tmp_path)}
    shared = config_dir() / "family" / "atari" / "game.yaml"
    game_files = (config_dir() / "env" / "atari").glob("*.yaml")
    shipped = {p.relative_to(config_dir()).as_posix(): p.read_text() for p in [shared, *game_files]}
    assert written == shipped, "regenerate: python -m rlconf.environments.atari --write-configs configs"
    games = {path.removeprefix("env/atari/") for path in written}
    assert {"breakout.yaml", "pong.yaml", "space_invaders.yaml", "ms_pacman.yaml", "beam_rider.yaml"} <= games
    breakout = OmegaConf.create(written["env/atari/breakout.yaml"])
    assert dict(breakout.env) == {"name": "atari/breakout", "id": "ALE/Breakout-v5"}, "a game writes its name and id"
    shared = OmegaConf.create(written["family/atari/game.yaml"])
    assert shared.family == "atari" and dict(shared.kwargs) == {
        "repeat_action_probability": 0.25, "full_action_space": False, "noop_max": 30, "frame_skip": 4,
        "max_num_frames_per_episode": 108000, "test_frames_without_reward": 18000, "test_fire_after_life_loss": True}


def test_a_game_config_composes_the_shared_settings_under_its_name_and_id(run_cli, workdir):
    result = run_cli("run", "agent=dqn", "env=atari/breakout", "env.kwargs.noop_max=0", "--cfg", "job", cwd=workdir)
    assert result.returncode == 0, result.stderr
    env = OmegaConf.create(result.stdout).env
    assert list(env) == ["wrappers", "name", "family", "id", "kwargs", "max_episode_steps"]  # wrappers: every env's
    assert (env.name, env.family, env.id) == ("atari/breakout", "atari", "ALE/Breakout-v5")
    assert env.kwargs.noop_max == 0 and env.kwargs.frame_skip == 4


def test_list_env_shows_atari_games(run_cli, workdir):
    result = run_cli("list", "env", cwd=workdir)
    assert result.returncode == 0, result.stderr
    options = {line.split()[0] for line in result.stdout.splitlines()[1:]}
    assert {"atari/breakout", "atari/pong", "atari/qbert", "classic/cartpole"} <= options


def test_an_atari_env_picks_the_atari_family_body_and_approximation(run_cli, workdir):
    result = run_cli("run", "agent=dqn", "env=atari/breakout", "--cfg", "job", cwd=workdir)
    assert result.returncode == 0, result.stderr
    cfg = OmegaConf.create(result.stdout)
    assert cfg.family == "atari" and cfg.env.family == "atari" and cfg.env.id == "ALE/Breakout-v5"
    assert dict(cfg.body) == {"name": "atari", "frame_stack": 4, "clip_rewards": True, "episodic_lives": True}
    assert cfg.approximation.model == "nature_cnn"


def test_a_bad_atari_setting_on_the_command_line_is_one_line(run_cli, workdir):
    line = one_error_line(run_cli("run", "agent=dqn", "env=atari/breakout", "env.kwargs.noop_max=-1",
                                  "quiet=true", cwd=workdir))
    assert "env.kwargs.noop_max=-1" in line
    assert list(workdir.iterdir()) == []


def test_a_runs_test_reports_games_cut_short_for_want_of_rewards(run_cli, workdir, tmp_path):
    """A real run's final test plays in a bounded test env: with a cap of 40 frames (10 steps) without reward
    every game is cut short before its first brick, and summary.json and the summary line say so."""
    import json

    logdir = tmp_path / "runs"
    result = run_cli("run", "agent=dqn", "env=atari/breakout", "steps=100", "agent.replay_buffer_size=1000",
                     "agent.replay_start_size=100", "test_episodes=2", "hardware.eval_envs=2", "eval_every=0",
                     "env.kwargs.test_frames_without_reward=40", f"logdir={logdir}", cwd=workdir)
    assert result.returncode == 0, result.stderr
    summary = json.loads(next(logdir.glob("*/summary.json")).read_text())
    assert summary["test_episodes"] == 2 and summary["test_return_mean"] == 0.0
    assert summary["test_episodes_stalled"] == 2 and summary["test_stall_steps"] == 10
    assert "over 2 episodes (2 cut short after 10 steps without a reward)" in result.stderr
    assert "testing 2 episodes (2 environments at once)" in result.stderr
