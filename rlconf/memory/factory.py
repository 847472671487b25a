"""``replay_buffer``: the replay an agent's config asks for, built from the kinds beside this module.

Uniform (``replay.ReplayBuffer``) or prioritized (``prioritized.PrioritizedReplayBuffer``, built on the uniform
one), wrapped for n-step returns where asked, checked to fit in memory before anything is allocated. It lives
apart from the kinds it chooses between so that each of them imports only the one below it.
"""

from __future__ import annotations

import gymnasium as gym
import torch

from rlconf.memory.prioritized import PrioritizedReplayBuffer
from rlconf.memory.replay import NStepReplayBuffer, ReplayBuffer, check_fits


def replay_buffer(capacity: int, n_envs: int, space, dtype: torch.dtype, *, device, seed: int,
                  prioritized: bool = False, alpha: float = 0.5, beta=0.5, epsilon: float = 1e-5,
                  n_steps: int = 1, discount_factor: float = 0.99, action_space: gym.Space | None = None):
    """The replay an agent's config asks for. Stacked uint8 frames (k, H, W) are stored deduplicated.

    Actions are indices (int64) unless ``action_space`` is a Box: then float32 vectors of its shape."""
    frame_stack = space.shape[0] if dtype == torch.uint8 and len(space.shape) == 3 else 1
    continuous = isinstance(action_space, gym.spaces.Box)
    check_fits(capacity, space, dtype, frame_stack, action_space, device)
    common = dict(device=device, generator=torch.Generator().manual_seed(seed), frame_stack=frame_stack,
                  action_shape=tuple(action_space.shape) if continuous else (),
                  action_dtype=torch.float32 if continuous else torch.int64)
    if prioritized:
        buffer = PrioritizedReplayBuffer(capacity, n_envs, space.shape, dtype, alpha=alpha, beta=beta,
                                         epsilon=epsilon, seed=seed, **common)
    else:
        buffer = ReplayBuffer(capacity, n_envs, space.shape, dtype, **common)
    return NStepReplayBuffer(n_steps, discount_factor, buffer) if n_steps > 1 else buffer
