"""Structured observations as rows of bytes (rlconf.core.layout), and the adapter's action masks: every leaf comes
back exactly as the environment gave it, in its own dtype, from every way copies are stepped."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlconf.core.layout import (
    ACTION_MASK,
    LayoutError,
    ObservationLayout,
    PackedSpace,
    check_mask,
    layout_of,
    mask_width,
)
from rlconf.environments.gym import GymVectorEnvironment

NESTED = gym.spaces.Dict({
    "image": gym.spaces.Box(0, 255, (7, 7, 3), np.uint8),
    "direction": gym.spaces.Discrete(4),
    "goal": gym.spaces.Dict({"position": gym.spaces.Box(-1, 1, (2,), np.float64)}),
    "extra": gym.spaces.Tuple((gym.spaces.MultiBinary(3), gym.spaces.MultiDiscrete([2, 5]))),
})


class StructuredEnv(gym.Env):
    """A Dict observation counting its steps in every leaf; an optional action mask in the observation or the
    info. Taking an illegal action raises."""

    def __init__(self, mask: str = "none"):
        spaces = {"image": gym.spaces.Box(0, 255, (4, 4, 3), np.uint8),
                  "position": gym.spaces.Box(-10, 10, (2,), np.float32), "room": gym.spaces.Discrete(9)}
        if mask == "observation":
            spaces[ACTION_MASK] = gym.spaces.MultiBinary(3)
        self.observation_space = gym.spaces.Dict(spaces)
        self.action_space = gym.spaces.Discrete(3)
        self.mask = mask
        self.t = 0

    def _observation(self):
        observation = {"image": np.full((4, 4, 3), self.t, np.uint8),
                       "position": np.array([self.t, -self.t], np.float32), "room": self.t % 9}
        if self.mask == "observation":
            observation[ACTION_MASK] = self._legal()
        return observation

    def _legal(self):
        legal = np.zeros(3, bool)
        legal[self.t % 3] = True
        return legal

    def _info(self):
        return {ACTION_MASK: self._legal()} if self.mask == "info" else {}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._observation(), self._info()

    def step(self, action):
        if self.mask != "none" and not self._legal()[action]:
            raise AssertionError(f"illegal action {action} at step {self.t}")
        self.t += 1
        return self._observation(), 1.0, self.t >= 5, False, self._info()


class MaskedBox(gym.Env):
    """A plain Box observation with its legal actions in ``info``, as many board-game ports give them."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def __init__(self, width: int = 4, dtype=bool, legal: int = 1):
        self.width, self.dtype, self.legal, self.t = width, dtype, legal, 0

    def _info(self):
        mask = np.zeros(self.width, self.dtype)
        mask[:self.legal] = 1
        return {ACTION_MASK: mask}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), self._info()

    def step(self, action):
        self.t += 1
        return np.full(2, self.t / 10, np.float32), 0.0, self.t >= 3, False, self._info()


for _id, _kwargs in {"LayoutDict-v0": {}, "LayoutDictMask-v0": {"mask": "observation"},
                     "LayoutInfoMask-v0": {"mask": "info"}}.items():
    gym.register(_id, entry_point=StructuredEnv, kwargs=_kwargs)
gym.register("LayoutMaskedBox-v0", entry_point=MaskedBox)


def test_every_leaf_comes_back_in_its_own_dtype_and_shape():
    layout = ObservationLayout(NESTED)
    assert layout.keys == ("direction", "extra.0", "extra.1", "goal.position", "image")  # Dict sorts its keys
    observation = NESTED.sample()
    rows = torch.from_numpy(np.stack([layout.pack(observation)] * 3))
    leaves = layout.unpack(rows)
    assert leaves["image"].dtype == torch.uint8 and leaves["image"].shape == (3, 7, 7, 3)
    assert torch.equal(leaves["image"][1], torch.from_numpy(observation["image"]))
    assert leaves["direction"].tolist() == [observation["direction"]] * 3
    assert leaves["goal.position"].dtype == torch.float32  # float64 stored as the float32 networks compute in
    assert np.allclose(leaves["goal.position"][2].numpy(), observation["goal"]["position"])
    assert leaves["extra.1"][0].tolist() == list(observation["extra"][1])
    assert layout.nest({"goal.position": 1, "image": 2}) == {"goal": {"position": 1}, "image": 2}


def test_an_image_costs_a_byte_a_pixel_and_every_view_is_aligned():
    layout = ObservationLayout(NESTED)
    image = layout["image"]
    assert image.nbytes == 7 * 7 * 3
    assert layout.nbytes % 8 == 0 and layout.nbytes < 7 * 7 * 3 + 64
    assert all(field.offset % field.dtype.itemsize == 0 for field in layout.fields)
    assert [layout[key].kind for key in ("image", "direction", "goal.position")] == ["image", "discrete", "vector"]


def test_a_space_no_network_takes_is_refused_by_name():
    space = gym.spaces.Dict({"image": gym.spaces.Box(0, 255, (4, 4, 3), np.uint8), "mission": gym.spaces.Text(8)})
    with pytest.raises(LayoutError, match="mission is a Text"):
        ObservationLayout(space)


@pytest.mark.parametrize("mask, message", [
    (np.ones(5, bool), r"shape \(5,\); allowed: \(4,\)"),
    (np.array([0.5, 1, 0, 0]), "dtype float64"),
    (np.zeros(4, bool), "no action is legal"),
])
def test_masks_that_do_not_fit_the_actions_are_named(mask, message):
    with pytest.raises(LayoutError, match=message):
        check_mask(mask, gym.spaces.Discrete(4))


def test_a_multi_discrete_mask_has_a_legal_value_in_each_dimension():
    space = gym.spaces.MultiDiscrete([2, 3])
    assert mask_width(space) == 5
    assert check_mask(np.array([1, 0, 0, 1, 1], np.int8), space).tolist() == [True, False, False, True, True]
    with pytest.raises(LayoutError, match="dimension 1"):
        check_mask(np.array([1, 1, 0, 0, 0]), space)
    with pytest.raises(LayoutError, match="cannot be masked"):
        check_mask(np.ones(2, bool), gym.spaces.Box(-1, 1, (2,)))


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_the_adapter_hands_agents_packed_rows_that_unpack_to_the_observation(vectorization):
    env = GymVectorEnvironment("LayoutDict-v0", 2, vectorization=vectorization)
    try:
        assert isinstance(env.observation_space, PackedSpace)
        layout = layout_of(env.observation_space)
        assert ACTION_MASK not in layout and "action_mask" not in env.reset(seed=0)
        state = env.step(torch.tensor([0, 1]))
        leaves = layout.unpack(state["observation"])
        assert state["observation"].dtype == torch.uint8 and state["observation"].shape == (2, layout.nbytes)
        assert leaves["image"].shape == (2, 4, 4, 3) and leaves["image"].flatten().unique().tolist() == [1]
        assert leaves["position"].tolist() == [[1.0, -1.0]] * 2 and leaves["room"].tolist() == [1, 1]
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["LayoutDictMask-v0", "LayoutInfoMask-v0"])
@pytest.mark.parametrize("sampler", ["serial", "parallel"])
def test_an_action_mask_from_the_observation_or_the_info_reaches_the_state(env_id, sampler):
    env = GymVectorEnvironment(f"test_layout:{env_id}", 2, sampler=sampler, workers=2)
    try:
        layout = layout_of(env.observation_space)
        assert ACTION_MASK not in layout and layout.keys == ("image", "position", "room")
        state = env.reset(seed=0)
        for _ in range(7):  # through the end of an episode and the reset step after it
            legal = state["action_mask"]
            assert legal.dtype == torch.bool and legal.shape == (2, 3) and legal.sum(1).tolist() == [1, 1]
            state = env.step(legal.int().argmax(1))  # the env raises on an illegal action
        assert len(env.completed) == 0 and env.steps == 12
    finally:
        env.close()


def test_a_plain_observation_with_a_mask_in_its_info_stays_plain():
    env = GymVectorEnvironment("LayoutMaskedBox-v0", 3)
    try:
        assert env.observation_space == gym.spaces.Box(-1, 1, (2,), np.float32)
        state = env.reset(seed=0)
        assert state["observation"].dtype == torch.float32 and state["observation"].shape == (3, 2)
        assert state["action_mask"].tolist() == [[True, False, False, False]] * 3
        state = env.step(torch.zeros(3, dtype=torch.int64))
        assert state["observation"].tolist() == [[0.1, 0.1]] * 3 or torch.allclose(state["observation"],
                                                                                  torch.full((3, 2), 0.1))
    finally:
        env.close()


@pytest.mark.parametrize("kwargs, message", [
    ({"width": 5}, r"shape \(5,\)"), ({"dtype": np.float32}, "dtype float32"), ({"legal": 0}, "no action is legal"),
])
def test_a_bad_mask_is_refused_where_the_environment_gives_it(kwargs, message):
    with pytest.raises(LayoutError, match=message):
        GymVectorEnvironment("LayoutMaskedBox-v0", 1, kwargs=kwargs).reset(seed=0)
