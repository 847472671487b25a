"""The serial vector env (environments.gym.SerialVectorEnv), rlconf's fast path for one or a few copies stepped
in this process, plays exactly the trajectories of gymnasium's SyncVectorEnv with next-step autoreset:
observations (values and dtypes), rewards, terminations, truncations, infos, episode ends and masked resets."""

from __future__ import annotations

import warnings
from functools import partial

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf.environments.gym import GymVectorEnvironment, SerialVectorEnv, make_vector_env

CASES = [("CartPole-v1", 1, {}), ("CartPole-v1", 3, {}), ("Pendulum-v1", 2, {}), ("HalfCheetah-v5", 1, {})]


def both(env_id: str, n: int, kwargs: dict) -> tuple[gym.vector.VectorEnv, gym.vector.VectorEnv]:
    if env_id.startswith("HalfCheetah"):
        pytest.importorskip("mujoco")
    warnings.filterwarnings("ignore", message=".*settotalmass.*")
    make = partial(gym.make, env_id, max_episode_steps=25, **kwargs)  # time limits within the test
    reference = gym.vector.SyncVectorEnv([make] * n, autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)
    return SerialVectorEnv([make] * n), reference


def assert_same(mine: tuple, theirs: tuple, where: str) -> None:
    """Two vector envs' results of a step (or, with its two items, a reset) are the same, dtypes included."""
    *arrays, info = mine
    *expected_arrays, expected_info = theirs
    assert len(arrays) == len(expected_arrays), where
    names = ("observation", "reward", "terminated", "truncated")[:len(arrays)]  # a reset: the observation only
    for name, a, b in zip(names, arrays, expected_arrays, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, (where, name, a.dtype, b.dtype, a.shape, b.shape)
        np.testing.assert_array_equal(a, b, err_msg=f"{where}: {name}")
    assert info.keys() == expected_info.keys(), where
    for key in expected_info:
        np.testing.assert_array_equal(info[key], expected_info[key], err_msg=f"{where}: info {key}")


@pytest.mark.parametrize("env_id, n, kwargs", CASES)
def test_the_serial_vector_env_plays_sync_vector_envs_trajectories(env_id, n, kwargs):
    mine, theirs = both(env_id, n, kwargs)
    assert_same(mine.reset(seed=7), theirs.reset(seed=7), "reset")
    theirs.action_space.seed(0)
    ends = 0
    for step in range(300):
        if step == 150:  # a masked reset of the first copy only, mid-episode (options: one dict each, it is popped)
            mask = np.arange(n) == 0
            assert_same(mine.reset(seed=3, options={"reset_mask": mask.copy()}),
                        theirs.reset(seed=3, options={"reset_mask": mask.copy()}), "masked reset")
        actions = theirs.action_space.sample()
        expected = theirs.step(actions)
        assert_same(mine.step(actions), expected, f"{env_id} x{n} step {step}")
        ends += int((expected[2] | expected[3]).sum())
    assert ends >= 10, "the test needs episode ends: terminations, truncations and the resets after them"
    mine.close()
    theirs.close()


def test_a_step_hands_over_arrays_no_later_step_writes_to():
    env = GymVectorEnvironment("CartPole-v1", 2, vectorization="sync")
    assert isinstance(env.env, SerialVectorEnv)
    states = [env.reset(seed=0)]
    kept = [states[0]["observation"].clone()]
    for _ in range(60):  # through episode ends and resets
        states.append(env.step(torch.randint(0, 2, (2,))))
        kept.append(states[-1]["observation"].clone())
    assert all(torch.equal(s["observation"], k) for s, k in zip(states, kept, strict=True))
    env.close()


def test_infos_are_batched_for_the_keys_the_adapter_reads():
    pytest.importorskip("mujoco")
    warnings.filterwarnings("ignore", message=".*settotalmass.*")
    env = make_vector_env("HalfCheetah-v5", 1, {}, "sync", None)
    env.reset(seed=0)
    *_, info = env.step(env.action_space.sample())
    assert {"x_position", "_x_position", "reward_ctrl"} <= info.keys()  # gymnasium's batching, by default
    env.info_keys = ("x_position",)
    *_, info = env.step(env.action_space.sample())
    assert info.keys() == {"x_position", "_x_position"}
    adapter = GymVectorEnvironment("CartPole-v1", 1)
    assert adapter.env.info_keys == ()  # CartPole's adapter reads no info
    env.close()
    adapter.close()


class _ActionTypes(gym.Env):
    """A discrete task that records the type of every action it is handed."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self):
        self.types: list[type] = []

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        assert self.action_space.contains(action)
        self.types.append(type(action))
        return np.zeros(1, np.float32), 0.0, False, False, {}


def test_discrete_actions_reach_the_copies_as_gymnasium_hands_them():
    """Numpy integers, as SyncVectorEnv hands them (and the cheaper path of gymnasium 1.4's Discrete.contains,
    which most tasks' step calls), whatever integer tensor or array the agent produced."""
    env = SerialVectorEnv([_ActionTypes] * 2)
    reference = gym.vector.SyncVectorEnv([_ActionTypes] * 2)
    for vector in (env, reference):
        vector.reset(seed=0)
        vector.step(np.array([0, 2]))
        vector.step(torch.tensor([1, 1]).numpy())
    assert [copy.types for copy in env.envs] == [copy.types for copy in reference.envs] == [[np.int64] * 2] * 2
    reference.close()
    env.close()


def hand_counted(env: GymVectorEnvironment, steps: int, groups: int) -> tuple[list[tuple], list[tuple], int]:
    """The adapter's finished episodes (copy, return, length) over ``steps`` steps of random actions, one group
    of copies after the other, beside the same episodes counted by hand from the states it handed over: a copy's
    step after its episode ended is the simulator's reset (reward 0), which no episode and no step count."""
    env.reset(seed=3)
    generator = torch.Generator().manual_seed(0)
    n = env.n_envs
    returns, lengths, resetting = [0.0] * n, [0] * n, [False] * n
    reported, counted, counted_steps = [], [], 0
    for step in range(steps):
        group = step % groups
        copies = env.group_copies(group) if groups > 1 else slice(0, n)
        actions = torch.randint(0, 2, (copies.stop - copies.start,), generator=generator)
        if groups > 1:
            env.step_async(actions, group)
            state = env.step_wait(group)
        else:
            state = env.step(actions)
        reported += [(e.env_index, e.returns, e.length) for e in env.completed]
        for row, i in enumerate(range(copies.start, copies.stop)):
            reward = float(state["reward"][row])
            if resetting[i]:
                assert reward == 0 and not state["done"][row]
                resetting[i] = False
                continue
            counted_steps += 1
            returns[i] += reward
            lengths[i] += 1
            if state["done"][row]:
                counted.append((i, pytest.approx(returns[i], rel=1e-6), lengths[i]))
                returns[i], lengths[i], resetting[i] = 0.0, 0, True
    assert env.steps == counted_steps
    return reported, counted, counted_steps


@pytest.mark.parametrize("env_id, sampler", [("CartPole-v1", "serial"), ("MountainCar-v0", "serial"),
                                             ("CartPole-v1", "alternating")])
def test_the_adapter_counts_every_episode_and_step_as_a_hand_count_of_its_states(env_id, sampler):
    """Lengths, returns and the step count through terminations, time-limit truncations and the reset steps
    after them, with every copy stepping together or in the alternating sampler's two groups (each its own
    clock). MountainCar's reward is -1 a step, so its returns are the negated lengths."""
    env = GymVectorEnvironment(env_id, 4, vectorization="sync", max_episode_steps=17, sampler=sampler,
                               workers=2)
    try:
        reported, counted, steps = hand_counted(env, 400, env.groups)
        assert reported == counted and len(counted) >= 20 and steps > 350 * 4 / env.groups
        if env_id == "MountainCar-v0":
            assert all(returns == -length for _, returns, length in reported)
    finally:
        env.close()
