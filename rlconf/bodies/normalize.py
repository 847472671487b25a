"""Observation and reward normalisation.

``body.normalize_observations=true``: the agent sees each observation component shifted and scaled by the
running mean and standard deviation of everything seen in training.

``body.normalize_rewards=true``: the agent learns from rewards divided by the running standard deviation of
the discounted return (``NormalizeRewards``).

It wraps whichever body the run has, outermost, so it sees the environment's own observations (a time
feature is appended after it, unnormalised). Why a body rather than an environment wrapper: the
statistics are learned from training data like the agent's weights, so they live in the agent's checkpoint
(``state_dict``) and are restored with it; and the test agent shares them without updating them (frozen).
Off-policy agents store what they saw: observations normalised by the statistics of their time, which
settle within the first thousands of steps.

A structured observation (packed rows, rlconf.core.layout) is normalised key by key: each float vector key has
statistics of its own (``PackedStatistics``), images and discrete values pass as they are, and the agent is
handed a new row (the environment's rows are left untouched: storage may hold them).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from rlconf import distributed
from rlconf.agents import TestAgent
from rlconf.bodies.body import Body
from rlconf.core import StateArray
from rlconf.core.layout import VECTOR, Field, ObservationLayout, layout_of

CLIP = 10.0  # normalised observations are clipped to +-CLIP standard deviations (as Stable-Baselines3)
EPSILON = 1e-8  # added to the variance: a constant component becomes 0, not NaN


class RunningMeanStd:
    """Mean and variance of every component over all observations so far, updated a batch at a time with
    Chan et al.'s parallel formula (float64, so a million small updates do not drift)."""

    def __init__(self, shape: tuple[int, ...], device: torch.device | str = "cpu"):
        self.mean = torch.zeros(shape, dtype=torch.float64, device=device)
        self.var = torch.ones(shape, dtype=torch.float64, device=device)
        self.count = 0

    def update(self, batch: torch.Tensor) -> None:
        """Add ``batch`` (of this learner; with several data-parallel learners, the batches of all of them:
        their statistics stay one)."""
        batch = batch.to(torch.float64)
        n, batch_mean, batch_var = distributed.merge_moments(len(batch), batch.mean(0), batch.var(0, correction=0))
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean += delta * (n / total)
        self.var = (self.var * self.count + batch_var * n + delta.square() * (self.count * n / total)) / total
        self.count = total

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        scaled = (x - self.mean.to(x.dtype)) * torch.rsqrt(self.var + EPSILON).to(x.dtype)
        return scaled.clamp(-CLIP, CLIP)

    def state_dict(self) -> dict:
        return {"mean": self.mean.clone(), "var": self.var.clone(), "count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.mean.copy_(state["mean"])
        self.var = state["var"].to(self.var)
        self.count = state["count"]


def normalized_fields(layout: ObservationLayout) -> tuple[Field, ...]:
    """The leaves of ``layout`` that observation normalisation scales: float vectors (not images, not discrete
    values, not the action mask)."""
    return tuple(field for field in layout.inputs if field.kind == VECTOR and field.dtype.kind == "f")


class PackedStatistics:
    """``RunningMeanStd`` for each float vector key of packed rows (``normalized_fields``), with its interface:
    ``update`` and ``normalize`` take rows, ``normalize`` returns new rows whose other keys are the same bytes."""

    def __init__(self, layout: ObservationLayout, device: torch.device | str = "cpu"):
        self.layout = layout
        self.fields = normalized_fields(layout)
        self.keys = {field.key: RunningMeanStd(field.shape, device) for field in self.fields}

    @property
    def count(self) -> int:
        return next(iter(self.keys.values())).count

    def update(self, rows: torch.Tensor) -> None:
        for field in self.fields:
            self.keys[field.key].update(self.layout.view(rows, field))

    def normalize(self, rows: torch.Tensor | dict[str, torch.Tensor]) -> torch.Tensor | dict[str, torch.Tensor]:
        if isinstance(rows, dict):  # the leaves themselves (an exported graph's inputs, one per key)
            return {key: self.keys[key].normalize(value) if key in self.keys else value for key, value in rows.items()}
        scaled = rows.clone()
        for field in self.fields:
            values = self.keys[field.key].normalize(self.layout.view(rows, field))
            scaled[..., field.offset:field.offset + field.nbytes] = \
                values.reshape(*rows.shape[:-1], -1).contiguous().view(torch.uint8)
        return scaled

    def state_dict(self) -> dict:
        return {key: statistics.state_dict() for key, statistics in self.keys.items()}

    def load_state_dict(self, state: dict) -> None:
        for key, statistics in self.keys.items():
            statistics.load_state_dict(state[key])


def observation_statistics(space: gym.Space, device: torch.device | str = "cpu") -> RunningMeanStd | PackedStatistics:
    """The statistics ``NormalizeObservations`` keeps for observations of ``space``: one set for a plain Box,
    one a float vector key for packed rows."""
    layout = layout_of(space)
    return RunningMeanStd(space.shape, device) if layout is None else PackedStatistics(layout, device)


class _LearnedStatistics(Body):
    """A body whose running statistics learn in training, are read only in tests, and are part of what the
    agent has learned: they travel in its checkpoints under ``key``."""

    key = "statistics"

    def __init__(self, agent, statistics: RunningMeanStd, training: bool = True):
        super().__init__(agent)
        self.statistics = statistics
        self.training = training

    def test_agent(self) -> TestAgent:
        body = super().test_agent()
        body.training = False  # the same statistics, read only
        return body

    def state_dict(self) -> dict:
        return {**self.agent.state_dict(), self.key: self.statistics.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.statistics.load_state_dict(state[self.key])
        self.agent.load_state_dict({key: value for key, value in state.items() if key != self.key})


class NormalizeObservations(_LearnedStatistics):
    """Normalised observations for the agent; the statistics learn in training and are frozen in tests."""

    key = "observation_statistics"

    @classmethod
    def transform_space(cls, space: gym.Space, **settings) -> gym.Space:
        layout = layout_of(space)
        if layout is not None:
            if not normalized_fields(layout):
                raise TypeError(f"normalises float vector keys; the observation's keys are "
                                f"{', '.join(field.describe() for field in layout.inputs)}; allowed: "
                                f"body.normalize_observations=false")
            return _normalized_layout(layout).packed_space()
        if not (isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating)):
            raise TypeError(f"observation normalisation needs float Box observations, not {space}")
        return gym.spaces.Box(-CLIP, CLIP, space.shape, np.float32)

    def process_state(self, states: StateArray) -> StateArray:
        observation = states.observation
        if self.training:
            self.statistics.update(observation)
        return states.update("observation", self.transform_observation(observation))

    def transform_observation(self, observations: torch.Tensor) -> torch.Tensor:
        if isinstance(self.statistics, PackedStatistics):  # rows of bytes: the float keys scaled in a new row
            return self.statistics.normalize(observations)
        return self.statistics.normalize(observations.float())


def _normalized_layout(layout: ObservationLayout) -> ObservationLayout:
    """``layout`` with its normalised keys bounded by +-CLIP: the same bytes at the same offsets (they are
    float32 before and after), the space the agent's networks are told about."""
    return layout.replaced({field.key: gym.spaces.Box(-CLIP, CLIP, field.shape, np.float32)
                            for field in normalized_fields(layout)})


class NormalizeRewards(_LearnedStatistics):
    """Rewards divided by the running standard deviation of the discounted return, clipped to +-CLIP, as
    Stable-Baselines3's ``VecNormalize(norm_reward=True)`` and CleanRL's ``NormalizeReward`` scale them (the
    reward scaling of Engstrom et al. 2020, "Implementation matters in deep policy gradients").

    Each environment keeps its discounted return ``G = gamma * G + r``, reset after the end of an episode; the
    statistics learn from every ``G`` and the agent sees ``r / std(G)``. The rewards are not shifted: their
    sign, and what an episode's end is worth, are kept. Only the agent's view changes: the run's episode
    returns, evaluations and tests are the environment's own rewards. Test agents do not learn from rewards,
    so the test body neither scales nor updates anything.
    """

    key = "reward_statistics"

    def __init__(self, agent, statistics: RunningMeanStd, discount_factor: float, training: bool = True):
        super().__init__(agent, statistics, training)
        self.discount_factor = discount_factor
        self._returns: torch.Tensor | None = None  # each environment's discounted return so far
        self._reset: torch.Tensor | None = None  # which states are an episode's first (no reward of the env's)

    def process_state(self, states: StateArray) -> StateArray:
        if not self.training:
            return states
        reward = torch.as_tensor(states.reward, device=self.statistics.mean.device)
        done = torch.as_tensor(states.done, device=reward.device)
        if self._returns is None:
            self._returns = torch.zeros_like(reward, dtype=torch.float64)
            self._reset = torch.ones_like(done)
        self._returns = self._returns * self.discount_factor + reward
        if not self._reset.all():  # the step after an episode's end is the reset's, with no reward to learn
            self.statistics.update(self._returns[~self._reset])
        scaled = (reward * torch.rsqrt(self.statistics.var + EPSILON).to(reward.dtype)).clamp(-CLIP, CLIP)
        self._returns = torch.where(done, 0.0, self._returns)
        self._reset = done
        return states.update("reward", scaled)

    def _forget(self) -> None:
        self._returns = self._reset = None
