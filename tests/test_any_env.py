"""Any gymnasium environment: ``env=gym env.id=ID`` (an id a plugin registers too), the id checked before anything
is built, gymnasium wrappers from the config (``env.wrappers``) on every path that makes copies and again in
evaluation, and ``rlconf check-env``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import yaml
from conftest import FAST_RUN, build, one_error_line, only_run_dir

import rlconf
from rlconf.errors import ConfigError

# A plugin module of the user's: it registers a gymnasium id and defines a wrapper, a Dict-space env and a masked
# one. Written to a test's folder, which goes on sys.path (or the CLI's PYTHONPATH).
PLUGIN = textwrap.dedent('''
    import gymnasium as gym
    import numpy as np


    class Corridor(gym.Env):
        """Walk right along a corridor of 4 cells: reward 1 at its end, 10 steps at most."""

        observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.cell = 0
            return np.zeros(1, np.float32), {}

        def step(self, action):
            self.cell = max(0, self.cell + (1 if action == 1 else -1))
            done = self.cell == 3
            return np.array([self.cell / 3], np.float32), float(done), done, False, {}


    class Rooms(gym.Env):
        """A Dict observation: a small image, a position vector and a room number."""

        observation_space = gym.spaces.Dict({
            "view": gym.spaces.Box(0, 255, (6, 6, 3), np.uint8),
            "position": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
            "room": gym.spaces.Discrete(3),
        })
        action_space = gym.spaces.Discrete(4)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return self.observe(), {}

        def step(self, action):
            self.t += 1
            return self.observe(), 0.0, self.t >= 5, False, {}

        def observe(self):
            return {"view": self.np_random.integers(0, 256, (6, 6, 3), dtype=np.uint8),
                    "position": self.np_random.uniform(-1, 1, 2).astype(np.float32),
                    "room": int(self.np_random.integers(3))}


    class Unseeded(Rooms):
        """Observations drawn from a generator that reset's seed does not reach: gymnasium's checker fails it."""

        def observe(self):
            return self.observation_space.sample()


    class Gates(Corridor):
        """The corridor with a gate: going left is illegal in the first cell (info["action_mask"])."""

        def reset(self, *, seed=None, options=None):
            observation, _ = super().reset(seed=seed)
            return observation, {"action_mask": self.legal()}

        def step(self, action):
            *rest, info = super().step(action)
            return (*rest, {**info, "action_mask": self.legal()})

        def legal(self):
            return np.array([self.cell > 0, True])


    class ScaleReward(gym.RewardWrapper):
        def __init__(self, env, factor=1.0):
            super().__init__(env)
            self.factor = factor

        def reward(self, reward):
            return reward * self.factor


    gym.register("AnyEnvCorridor-v0", entry_point=Corridor, max_episode_steps=10)
    gym.register("AnyEnvRooms-v0", entry_point=Rooms)
    gym.register("AnyEnvUnseeded-v0", entry_point=Unseeded)
    gym.register("AnyEnvGates-v0", entry_point=Gates, max_episode_steps=10)
''')


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The module ``any_env_plugin`` on sys.path (a spawned worker inherits it); its folder."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "any_env_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(folder))
    return folder


def train(tmp_path, *overrides: str) -> tuple:
    return rlconf.train(rlconf.compose(*overrides, *FAST_RUN, f"logdir={tmp_path / 'runs'}"))


def test_env_gym_runs_any_registered_id(tmp_path):
    run_dir, summary = train(tmp_path, "agent=dqn", "env=gym", "env.id=Acrobot-v1", "steps=300")
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["env"]["id"] == "Acrobot-v1"
    assert summary["env"] == "gym/Acrobot-v1" and "gym-Acrobot-v1" in run_dir.name
    assert summary["test_episodes"] == 2 and -500 <= summary["test_return_mean"] <= 0


def test_an_id_a_plugin_registers_runs_with_parallel_workers(tmp_path, plugin):
    """The id is found after plugins are imported; spawned sampler workers, which never imported the plugin,
    make their copies from gymnasium's spec, whose import path leads to it."""
    _, summary = train(tmp_path, "agent=random", "env=gym", "env.id=AnyEnvCorridor-v0", "plugins=[any_env_plugin]",
                       "steps=200", "hardware.n_envs=2", "hardware.sampler=parallel", "hardware.cpus_per_run=2")
    assert summary["steps"] >= 200 and 0 <= summary["test_return_mean"] <= 1


def test_a_module_id_is_taken_from_a_plugin_module_only(tmp_path, plugin):
    _, summary = train(tmp_path, "agent=random", "env=gym", "env.id=any_env_plugin:AnyEnvCorridor-v0",
                       "plugins=[any_env_plugin]", "steps=50")
    assert summary["steps"] >= 50
    with pytest.raises(ConfigError, match="plugins=\\[any_env_plugin\\]"):
        rlconf.compose("agent=random", "env=gym", "env.id=any_env_plugin:AnyEnvCorridor-v0")


def test_a_wrong_id_is_refused_before_any_run_directory(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    result = run_cli("run", "agent=ppo", "env=gym", "env.id=CartPol-v1", f"logdir={logdir}", cwd=workdir)
    line = one_error_line(result)
    assert line == ("rlconf: error: env.id=CartPol-v1: not a registered gymnasium id; did you mean CartPole-v1, "
                    "CartPole-v0, phys2d/CartPole-v1")
    assert not logdir.exists() and list(workdir.iterdir()) == []


def test_every_family_of_gymnasium_ids_is_checked():
    with pytest.raises(ConfigError, match="env.id=HalfCheetah-v9: not a registered gymnasium id; did you mean "
                                          "HalfCheetah-v"):
        rlconf.compose("agent=sac", "env=mujoco/half_cheetah", "env.id=HalfCheetah-v9")
    with pytest.raises(ConfigError, match="env.id=ALE/Pongg-v5: not a registered gymnasium id; did you mean "
                                          "ALE/Pong-v5"):
        rlconf.compose("agent=dqn", "env=atari/pong", "env.id=ALE/Pongg-v5")


@pytest.mark.parametrize("hardware", [
    ["hardware.vectorization=sync"],
    ["hardware.vectorization=async"],
    ["hardware.vectorization=native"],  # CartPole's native vector env has no copies to wrap: stepped ones instead
    ["hardware.sampler=parallel", "hardware.cpus_per_run=2"],
])
def test_wrappers_from_the_config_reach_every_path_that_makes_copies(hardware):
    """TimeAwareObservation adds the time to CartPole's 4 observations: the agent's network takes 5."""
    settings, env, agent = build("agent=dqn", "env=classic/cartpole", "hardware.n_envs=2", *hardware,
                                 "env.wrappers=[gymnasium.wrappers.TimeAwareObservation]")
    try:
        assert env.observation_space.shape == (5,)
        state = env.reset(seed=0)
        assert state["observation"].shape == (2, 5)
        state = env.step(agent.act(state))
        assert state["observation"][:, 4].tolist() == [1.0, 1.0]  # one step into each episode
    finally:
        env.close()


def test_without_wrappers_copies_are_made_as_before():
    _, env, _ = build("agent=dqn", "env=classic/cartpole", "hardware.n_envs=2")
    try:
        assert type(env.env).__name__ == "CartPoleVectorEnv" and env.observation_space.shape == (4,)
    finally:
        env.close()


def test_a_plugin_wrapper_scales_the_returns_and_evaluation_rebuilds_it(tmp_path, plugin):
    """agent=random plays the same episodes with and without the wrapper: every return is 10 times as large,
    in training and in the final test, and again when ``rlconf.load`` rebuilds the run, which needs the plugin
    named (a run directory is data)."""
    common = ("agent=random", "env=classic/cartpole", "steps=200", "test_episodes=3", "plugins=[any_env_plugin]",
              "hardware.vectorization=sync")  # wrapped copies are stepped copies: the same simulators both times
    plain_dir, plain = train(tmp_path / "plain", *common)
    scaled_dir, scaled = train(tmp_path / "scaled", *common,
                               "env.wrappers=[{target:any_env_plugin.ScaleReward,kwargs:{factor:10}}]")
    assert scaled["test_return_mean"] == pytest.approx(10 * plain["test_return_mean"])
    episodes = [(run / "episodes.csv").read_text().splitlines() for run in (plain_dir, scaled_dir)]
    assert len(episodes[0]) == len(episodes[1]) > 1
    rlconf.load(scaled_dir, plugins=["any_env_plugin"])  # rebuilt with the wrapper: its module named
    with pytest.raises(rlconf.errors.RlconfError, match="any_env_plugin"):
        rlconf.load(scaled_dir)


def test_a_gymnasium_wrapper_is_rebuilt_by_eval(run_cli, workdir, tmp_path):
    logdir = tmp_path / "runs"
    done = run_cli("run", "agent=dqn", "env=classic/cartpole", "steps=300", *FAST_RUN, f"logdir={logdir}",
                   "env.wrappers=[gymnasium.wrappers.TimeAwareObservation]", cwd=workdir)
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(logdir)
    evaluated = run_cli("eval", str(run_dir), "--episodes", "2", cwd=workdir)
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads((run_dir / "eval.json").read_text())["episodes"] == 2


def test_an_unknown_wrapper_is_refused_with_the_nearest_names():
    with pytest.raises(ConfigError, match="did you mean gymnasium.wrappers.TimeAwareObservation"):
        rlconf.compose("agent=dqn", "env=classic/cartpole", "env.wrappers=[gymnasium.wrappers.TimeAwareObservatio]")


def test_check_env_reports_cartpole(run_cli, workdir):
    result = run_cli("check-env", "CartPole-v1", cwd=workdir)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "CartPole-v1: gymnasium's checker passed" in out
    assert "observations: Box(" in out and "actions: Discrete(2)" in out and "action mask: none" in out
    able = next(line for line in out.splitlines() if line.startswith("agents that can play it:"))
    assert {"dqn", "ppo", "a2c"} <= set(able.split(": ")[1].split(", ")) and "sac" not in able
    assert "ddpg, sac, td3: needs continuous (Box) actions" in out
    assert "run it: rlconf run agent=ppo env=gym env.id=CartPole-v1" in out


def test_check_env_of_a_plain_env_does_not_import_torch(tmp_path):
    """``rlconf check-env`` answers at once: a plain environment's report needs no torch."""
    code = ("import sys, io, contextlib; from rlconf.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): assert main(['check-env', 'CartPole-v1']) == 0\n"
            "assert 'torch' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_check_env_says_where_the_action_mask_comes_from(run_cli, workdir, plugin):
    result = run_cli("check-env", "AnyEnvGates-v0", "--plugins", "any_env_plugin", cwd=workdir, pythonpath=[plugin])
    assert result.returncode == 0, result.stderr
    assert "action mask: info['action_mask']" in result.stdout and "observation keys" not in result.stdout


def test_check_env_reports_a_dict_space_env_of_a_plugin(run_cli, workdir, plugin):
    result = run_cli("check-env", "AnyEnvRooms-v0", "--plugins", "any_env_plugin", cwd=workdir, pythonpath=[plugin])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "observations: Dict(" in out and "actions: Discrete(4)" in out
    keys = out.split("observation keys")[1].splitlines()[1:4]
    assert [line.split(":")[0].strip() for line in keys] == ["position", "room", "view"]  # gymnasium sorts them
    assert "float32 [2]" in keys[0] and "uint8 [6, 6, 3]" in keys[2]
    assert "plugins=[any_env_plugin]" in out
    by_class = run_cli("check-env", "any_env_plugin:Rooms", cwd=workdir, pythonpath=[plugin])
    assert by_class.returncode == 0, by_class.stderr
    assert "observations: Dict(" in by_class.stdout


def test_check_env_reports_what_gymnasiums_checker_finds(run_cli, workdir, plugin):
    result = run_cli("check-env", "AnyEnvUnseeded-v0", "plugins=[any_env_plugin]", cwd=workdir, pythonpath=[plugin])
    assert result.returncode == 1, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("AnyEnvUnseeded-v0: gymnasium's checker failed: AssertionError: ") and "seed" in first
    assert "observation keys" in result.stdout  # and the rest is reported all the same


def test_check_env_of_an_unknown_id_is_one_line(run_cli, workdir):
    line = one_error_line(run_cli("check-env", "Pendulm-v1", cwd=workdir))
    assert line.startswith("rlconf: error: Pendulm-v1: not a registered gymnasium id; did you mean Pendulum-v1")


def test_a_run_saved_before_env_wrappers_existed_resumes(tmp_path):
    """Its config.yaml has no env.wrappers: the empty list a resume composes now is the same run."""
    run_dir, _ = train(tmp_path, "agent=dqn", "env=classic/cartpole", "steps=200")
    config = run_dir / "config.yaml"
    saved = yaml.safe_load(config.read_text())
    assert saved["env"].pop("wrappers") == []
    config.write_text(yaml.safe_dump(saved, sort_keys=False))
    resumed, summary = rlconf.train(rlconf.compose(f"resume={run_dir}", "steps=400"))
    assert resumed == run_dir and summary["steps"] >= 400
