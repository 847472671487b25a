"""Evaluation of a test agent over a fixed number of episodes."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator

import numpy as np
import torch

from rlconf.core import rng


def evaluate(test_agent, env, episodes: int, seed: int | None = None,
             report: Callable[[int, int], None] | None = None, kept: list | None = None) -> list[float]:
    """Returns of exactly ``episodes`` episodes of ``test_agent`` in the vector environment ``env``.

    ``report(done, stalled)``, if given, is called before the first step and after every step with the
    episodes counted so far and how many of them the environment cut short for want of rewards
    (``Episode.stalled``: Atari's tests); it is cheap to call and must stay so (a progress bar, a status file).
    ``kept``, if given, receives the episodes counted, whole (a team's: each group's return too).

    Each of the environment's copies is given a fixed quota of episodes up front. Counting the first
    episodes to finish instead would favour short episodes, and bias the mean.

    With a ``seed``, an evaluation is a function of the agent's weights and the seed alone: the environment
    is reset with it, and a test agent that draws random numbers (an evaluation epsilon) draws them from
    torch's, numpy's and Python's global generators, seeded with it here and restored afterwards (training
    goes on with its own streams). The final test of a run and ``rlconf eval`` of its checkpoint agree.
    """
    if episodes == 0:
        return []
    n = env.n_envs
    quota = np.full(n, episodes // n)
    quota[: episodes % n] += 1
    returns: list[float] = []
    stalled = 0
    with seeded(seed):
        state = env.reset(seed=seed)
        with torch.inference_mode():
            while (quota > 0).any():
                if report is not None:
                    report(len(returns), stalled)
                state = env.step(test_agent.act(state))
                for episode in env.completed:
                    if quota[episode.env_index] > 0:
                        quota[episode.env_index] -= 1
                        returns.append(episode.returns)
                        stalled += episode.stalled
                        if kept is not None:
                            kept.append(episode)
    if report is not None:
        report(len(returns), stalled)
    return returns


@contextlib.contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """The global generators seeded with ``seed`` inside, as they were outside (``None``: untouched)."""
    if seed is None:
        yield
        return
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    numpy_state, python_state = np.random.get_state(), random.getstate()
    with torch.random.fork_rng(devices=devices):
        rng.seed_everything(seed)
        try:
            yield
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)
