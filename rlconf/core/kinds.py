"""The kinds of environment: what the loop, the builder and an agent's declaration of what it plays share."""

from __future__ import annotations

from enum import Enum


class EnvKind(Enum):
    """What kind of run an environment makes: its experiment loop, and which agents can play it."""

    SINGLE_AGENT = "single-agent"  # n_envs copies of one task, one action per copy and step (gymnasium's)
    MULTI_AGENT = "multi-agent"  # one game, its players taking turns (PettingZoo's)
    BANDIT = "bandit"  # n_envs bandits, every pull a finished one-step episode
    # n_envs copies of a game whose agents all act at once, in groups (PettingZoo's parallel API, VMAS)
    TEAM = "team"
