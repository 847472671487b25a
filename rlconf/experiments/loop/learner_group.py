"""The learners of a data-parallel run seen by the experiment loop as one environment (``hardware.learners``).

Each learner steps its own ``n_envs`` copies with its own agent, whose optimiser steps are collectives of all
learners (``rlconf.distributed``). The loop on every learner runs the same iterations: one ``agent.act`` and one
``env.step`` each. What the loop decides from (the steps taken, the episodes that ended, a stop signal) is
shared every ``every`` iterations, in one all-gather, so that every learner takes the same decisions at the same
iteration: evaluate (the first learner, the others wait for it), checkpoint (all of them: the first writes
every learner's state into the one checkpoint.pt), stop, or finish the budget.

``LearnerGroupEnvironment`` wraps a learner's environment: ``steps`` is the group's total at the last exchange, and
``completed`` the episodes every learner ended since the one before (on the first learner, which logs them;
empty on the others). Copies of learner ``r`` are seeded after those of the learners before it.
"""

from __future__ import annotations

from typing import Any

from rlconf import distributed

# Steps between two exchanges, over all learners and their copies: the budget, evaluations and checkpoints are
# reached within this many steps.
STEPS_PER_EXCHANGE = 256


class LearnerGroupEnvironment:
    """A learner's environment as the loop sees the group's (see the module's docstring)."""

    def __init__(self, env, learners: int, rank: int):
        self.env = env
        self.learners = learners
        self.rank = rank
        self.every = max(1, STEPS_PER_EXCHANGE // (env.n_envs * learners))
        self.stop_request: Any = None  # the loop's (stopping.stop_requests), set when training starts
        self.stop: int | None = None  # the signal the learners agreed to stop on, at the last exchange
        self.completed: list = []
        self._total = 0  # the group's steps at the last exchange
        self._counted = 0  # this learner's steps counted in it
        self._pending: list = []  # this learner's episodes since the last exchange
        self._iterations = 0

    def __getattr__(self, name: str):  # spaces, n_envs, frames_per_step, close ... are the learner's env's
        return getattr(self.env, name)

    @property
    def steps(self) -> int:
        return self._total

    @steps.setter
    def steps(self, value: int) -> None:  # a resumed run starts from its checkpoint's total
        self._total = value
        self._counted = self.env.steps

    def reset(self, seed: int | None = None):
        return self.env.reset(seed=None if seed is None else seed + self.rank * self.env.n_envs)

    def step(self, actions):
        state = self.env.step(actions)
        self._pending.extend(self.env.completed)
        self.completed = []
        self._iterations += 1
        if self._iterations % self.every == 0:
            self.exchange()
        return state

    def exchange(self) -> None:
        """Share steps, episodes and stop signals: every learner learns the group's total and whether to stop;
        the first learner gets everyone's episodes."""
        signum = None if self.stop_request is None else self.stop_request.signum
        mine = (self.env.steps - self._counted, signum, self._pending)
        everyone = distributed.all_gather(mine)
        self._counted = self.env.steps
        self._pending = []
        self._total += sum(steps for steps, _, _ in everyone)
        signals = [s for _, s, _ in everyone if s is not None]
        self.stop = signals[0] if signals else None
        self.completed = [episode for _, _, episodes in everyone for episode in episodes] if self.rank == 0 else []


def learner_group_weights(state: Any, path: str = "") -> dict[str, Any]:
    """The weights in an agent's state dict (every tensor below a ``model`` key), by their path: what must be
    the same on every learner."""
    found: dict[str, Any] = {}
    if isinstance(state, dict):
        for key, value in state.items():
            inner = f"{path}.{key}" if path else str(key)
            if key == "model" and isinstance(value, dict):
                found.update({f"{inner}.{name}": tensor for name, tensor in value.items()
                              if hasattr(tensor, "is_floating_point") and tensor.is_floating_point()})
            else:
                found.update(learner_group_weights(value, inner))
    return found
