"""DeepMind's Atari bodies: frame stacking, reward clipping and episodic lives, between env and agent.

The Atari environment hands over single frames, raw game scores and a ``life_lost`` flag; what the agent
makes of them is decided here, so an experiment's episode returns stay raw game scores whatever the agent
learns from. ``DeepmindAtariBody`` (``body=atari``) composes the three parts:

    env -> FrameStack -> ClipRewards -> EpisodicLives -> agent

FrameStack sits outermost so that it follows the environment's real games, in training and in tests alike.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from rlconf.agents import TestAgent
from rlconf.bodies.body import Body, refuse_structured
from rlconf.core import StateArray


class FrameStack(Body):
    """The agent sees the last ``size`` frames of each environment, stacked on the channel axis.

    Observations ``(n, C, H, W)`` become ``(n, size * C, H, W)``, oldest frame first. The first state of an
    episode (the very first state, and the state after a ``done`` state: environments reset on the next
    step) is stacked with ``size`` copies of its frame. Every stack is a new tensor, so agents may keep it.
    """

    def __init__(self, agent, size: int = 4):
        super().__init__(agent)
        self.size = size
        self._stack: torch.Tensor | None = None  # the last stack handed to the agent
        self._done: torch.Tensor | None = None  # done flags of the last state: who starts anew now

    @classmethod
    def transform_space(cls, space: gym.Space, size: int = 4) -> gym.Space:
        # The image keys of a structured observation are stacked by body=frame_stack (bodies.stack).
        refuse_structured(space, "frames (a Box observation) to stack",
                          "; stacks of its image keys: body=frame_stack")
        if not isinstance(space, gym.spaces.Box):
            raise TypeError(f"FrameStack stacks Box observations, not {space}")
        return gym.spaces.Box(np.concatenate([space.low] * size), np.concatenate([space.high] * size),
                              dtype=space.dtype)

    def process_state(self, states: StateArray) -> StateArray:
        frames = states.observation
        if self._stack is None:
            stack, starts = self._fresh(frames), torch.ones_like(states.done)
        else:
            rolled = torch.cat((self._stack[:, frames.shape[1]:], frames), dim=1)
            starts = self._done
            if frames.device.type == "cpu" and not starts.any():  # most steps: nothing to refill (on a GPU
                stack = rolled  # the any() would wait for it; the where below costs 5x the cat on a CPU)
            else:
                stack = torch.where(starts.view(-1, *[1] * (frames.dim() - 1)), self._fresh(frames), rolled)
        self._stack, self._done = stack, states.done
        # stack_start tells a deduplicating replay buffer where stacks were refilled, so it rebuilds
        # exactly these stacks from single frames (a lost life, seen as done by the agent, is not one).
        return states.update("observation", stack).update("stack_start", starts)

    def _fresh(self, frames: torch.Tensor) -> torch.Tensor:
        """Each environment's frame repeated ``size`` times: the stack an episode starts from."""
        return frames.repeat(1, self.size, *[1] * (frames.dim() - 2))

    def exported_feeding(self) -> tuple[str, Callable[[gym.Space], gym.Space]]:
        return (f"observations are the last {self.size} frames stacked on the channel axis, oldest first (an "
                f"episode's first frame repeated {self.size} times)",
                lambda space: self.transform_space(space, self.size))

    def _forget(self) -> None:
        self._stack = self._done = None


class ClipRewards(Body):
    """The agent learns from the sign of each reward (-1, 0, 1), so one learning rate fits every game."""

    def process_state(self, states: StateArray) -> StateArray:
        return states.update("reward", torch.sign(states.reward))


class EpisodicLives(Body):
    """In training, a lost life looks like the end of an episode to the agent: ``done`` and ``mask`` 0 on
    the state where ``life_lost`` is true, so values do not bootstrap across a death.

    The game goes on after a lost life (no reset), so the next state is a continuation, not a reset
    state. An agent treats it as it treats any state after a done state: the transition leaving a done
    state is not learned from (replay buffers skip it), which is exactly right here too. The test agent
    plays whole games: ``test_agent`` leaves this body out.
    """

    def process_state(self, states: StateArray) -> StateArray:
        if "life_lost" not in states:
            raise KeyError("EpisodicLives needs states with 'life_lost' (Atari environments); "
                           "set body.episodic_lives=false for other environments")
        lost = states["life_lost"]
        return states.update("done", states.done | lost).update("mask", states.mask.masked_fill(lost, 0.0))

    def test_agent(self) -> TestAgent:
        return self.agent.test_agent()


class DeepmindAtariBody(Body):
    """DeepMind's Atari preprocessing on the agent's side (``body=atari``): FrameStack, then ClipRewards
    and EpisodicLives when switched on."""

    def __init__(self, agent, frame_stack: int = 4, clip_rewards: bool = True, episodic_lives: bool = True):
        inner = EpisodicLives(agent) if episodic_lives else agent
        inner = ClipRewards(inner) if clip_rewards else inner
        super().__init__(FrameStack(inner, frame_stack))

    @classmethod
    def transform_space(cls, space: gym.Space, frame_stack: int = 4, clip_rewards: bool = True,
                        episodic_lives: bool = True) -> gym.Space:
        return FrameStack.transform_space(space, frame_stack)
