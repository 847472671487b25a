"""Greedy evaluation of a test agent over a fixed number of episodes."""

from __future__ import annotations

import numpy as np
import torch


def evaluate(test_agent, env, episodes: int, seed: int | None = None) -> list[float]:
    """Returns of exactly ``episodes`` episodes of ``test_agent`` in the vector environment ``env``.

    Each of the environment's copies is given a fixed quota of episodes up front. Counting the first
    episodes to finish instead would favour short episodes, and bias the mean.
    """
    if episodes == 0:
        return []
    n = env.n_envs
    quota = np.full(n, episodes // n)
    quota[: episodes % n] += 1
    returns: list[float] = []
    state = env.reset(seed=seed)
    with torch.inference_mode():
        while (quota > 0).any():
            state = env.step(test_agent.act(state))
            for episode in env.completed:
                if quota[episode.env_index] > 0:
                    quota[episode.env_index] -= 1
                    returns.append(episode.returns)
    return returns
