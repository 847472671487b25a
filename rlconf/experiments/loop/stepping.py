"""One iteration of acting and stepping, the same in the training loop and in the async runner's acting process.

With every sampler but the alternating one, the agent acts on every copy and they all step. With the alternating
sampler (rlpyt's), the copies step in groups: each group in turn is waited for, acted on (by ``lanes``, the
agent's body for each group: ``bodies.Body.lane``) and sent stepping again, so that one group steps while the
agent acts on the other. After an iteration every group has acted once: an agent's step of all its copies is
complete, which is where checkpoints and the async runner's count of acts stand.
"""

from __future__ import annotations

from collections.abc import Callable

from rlconf.core import StateArray


def lanes_of(agent, env) -> list | None:
    """The agent's body for each group of the environment's copies, or None when they step together."""
    return [agent.lane(env.group_copies(g)) for g in range(env.groups)] if env.groups > 1 else None


def stepping(env, agent, lanes: list | None, state: StateArray, ended: Callable[[], None]) -> Callable[[], None]:
    """A function making one iteration from ``state`` (the environment's first states, from its reset) on:
    ``agent`` acting on every copy, or, given ``lanes``, each group in turn. ``ended`` is called whenever copies
    have ended episodes (``env.completed``)."""
    if lanes is None:
        def lockstep() -> None:
            nonlocal state
            state = env.step(agent.act(state))
            if env.completed:
                ended()

        return lockstep
    groups = [state[env.group_copies(g)] for g in range(len(lanes))]
    for g, lane in enumerate(lanes):
        env.step_async(lane.act(groups[g]), g)

    def alternate() -> None:
        for g, lane in enumerate(lanes):
            groups[g] = env.step_wait(g)
            if env.completed:
                ended()
            env.step_async(lane.act(groups[g]), g)

    return alternate
