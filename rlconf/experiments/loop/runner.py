"""The asynchronous runner (``hardware.runner=async``): an off-policy agent acting in one process while it learns
in another, at the replay ratio it is configured with.

The acting process builds the run's environments and agent from the run's config, as a synchronous run would,
and steps them; its agent explores and stores into the replay but never updates (``OffPolicy.learns``). The
replay's rows and priorities are shared with the learning process (``memory.SharedReplay``), as are the weights
acting reads (``SharedWeights``): the learner copies them there every ``hardware.sync_every`` optimiser steps.

The learning process (this one) runs the experiment's bookkeeping (episodes, evaluations, checkpoints, status)
and learns: for every act of the acting process it makes the updates the synchronous agent makes after that act
(``OffPolicy.learn_as_if_acted``), never for an act not made yet. The acting process waits whenever it is more
than two bursts of updates ahead. So updates per environment step are the configured ones, within two bursts at
any moment and exactly at the end, and the two processes work at the same time: environment steps and inference
beside optimiser steps.

A checkpoint pauses the acting process at a step boundary, lets the learner catch up, and saves both: the
learner's agent (networks, optimisers, the replay) under ``agent`` and the acting agent's state (its clock,
exploration generators, body) under ``acting``; a resumed run starts each from its own.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing as mp
import queue
import signal
import time
import weakref
from typing import Any

import torch
from omegaconf import OmegaConf

from rlconf.agents import AgentWrapper
from rlconf.environments.gym import Episode
from rlconf.errors import first_line
from rlconf.experiments.loop.experiment import Experiment, ProcessLost
from rlconf.experiments.loop.stepping import lanes_of, stepping
from rlconf.memory.shared import SharedReplay, WatchedLock
from rlconf.process import die_with_parent

# The control block both processes share: [acts, steps, learner's acts, command, acting phase]
ACTS, STEPS, LEARNED, COMMAND, PHASE = range(5)
RUN, PAUSE, STOP = 0, 1, 2  # commands
STEPPING, PAUSED, FINISHED = 0, 1, 2  # phases of the acting process
LOOK_SECONDS = 0.01  # a process waiting for the other looks at least this often whether it is told something
START_SECONDS = 600.0  # the acting process builds its environments within this (Atari games, a sampler's workers)
MIN_LAG = 8  # acts the acting process may run ahead of the learner, at least


# Acting processes started and not closed yet: closed at exit, before multiprocessing's exit handler would wait for
# them (they leave only when told, or when this process has gone).
_STARTED: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for acting in list(_STARTED):
        with contextlib.suppress(Exception):
            acting.close()


def off_policy_agent(agent):
    """The agent inside its body (and normalisers)."""
    while isinstance(agent, AgentWrapper):
        agent = agent.agent
    return agent


class SharedWeights:
    """The weights acting reads (``OffPolicy.acting_approximations``), in shared memory, with a version that
    says when the learner last copied them there."""

    def __init__(self, agent):
        self.tensors = {name: {key: value.detach().clone().share_memory_() if not value.is_cuda else value.clone()
                               for key, value in approximation.model.state_dict().items()}
                        for name, approximation in agent.acting_approximations().items()}
        self.version = torch.zeros(1, dtype=torch.int64).share_memory_()
        self.lock = WatchedLock(mp.get_context("spawn").Lock())  # the learner has it watch the acting process
        self.seen = -1

    def publish(self, agent) -> None:
        """Copy the learner's weights (the learning process)."""
        with self.lock:
            for name, approximation in agent.acting_approximations().items():
                for key, value in approximation.model.state_dict().items():
                    self.tensors[name][key].copy_(value)
            self.version += 1

    def refresh(self, agent) -> None:
        """Load the weights the learner last published, if newer (the acting process)."""
        if int(self.version) == self.seen:
            return
        with self.lock:
            for name, approximation in agent.acting_approximations().items():
                approximation.model.load_state_dict(self.tensors[name])
            self.seen = int(self.version)


class Acting:
    """The learner's handle on the acting process: starting it, learning behind it, pausing it."""

    def __init__(self, config: dict, agent, n_envs: int, budget: int, sync_every: int,
                 mask_width: int | None = None):
        """``mask_width``: the width of the environment's action masks, if it has them (they are replayed)."""
        self.config = config
        self.agent = agent  # the learner's, in its body
        self.learner = off_policy_agent(agent)
        self.n_envs = n_envs
        self.budget = budget
        self.sync_every = sync_every
        self.lag = max(MIN_LAG, 2 * self.learner._train_every)  # acts the acting process may run ahead
        self.context = mp.get_context("spawn")
        # Acts made and not learned after yet (the acting process releases one per act, the learner takes one
        # per act it learns after), and room for more (taken by the acting process, given back by the learner).
        self.acted = self.context.Semaphore(0)
        self.room = self.context.Semaphore(self.lag)
        self.replay = SharedReplay.share(self.learner.replay, self.context, mask_width)
        self.learner.replay = self.replay
        self.weights = SharedWeights(self.learner)
        self.control = torch.zeros(5, dtype=torch.int64).share_memory_()
        self.messages = self.context.Queue()
        self.process: mp.process.BaseProcess | None = None
        self.state: dict | None = None  # the acting agent's state to start from (a resumed run's)
        self._published = 0

    # -- the process ----------------------------------------------------------------------------------
    def start(self, reset_seed: int, steps: int) -> None:
        """Start acting from ``steps`` (a resumed run's), its environments reset with ``reset_seed``."""
        self.control[ACTS] = self.control[LEARNED] = self.learner._calls
        self.control[STEPS] = steps
        self.control[COMMAND], self.control[PHASE] = RUN, STEPPING
        self.weights.publish(self.learner)
        self._published = self.learner.updates
        self.process = self.context.Process(
            target=_act, name="rlconf-acting", args=(
                self.config, self.replay.handles(), self.weights, self.control, self.messages, self.state,
                reset_seed, steps, self.budget, self.acted, self.room))
        self.process.start()
        # A lock the acting process holds when killed is never released: the learner's waits for it look
        # whether it lives. (The acting process ends with the learner, so it has no such wait.)
        self.replay.lock.check = self.weights.lock.check = self.check
        _STARTED.add(self)
        self._expect("ready", START_SECONDS)

    def close(self) -> None:
        if self.process is None:
            return
        self.control[COMMAND] = STOP
        self.process.join(30)
        if self.process.is_alive():  # it ignores SIGTERM (the learning process answers signals)
            self.process.kill()
            self.process.join()
        self.process = None

    @property
    def steps(self) -> int:
        return int(self.control[STEPS])

    @property
    def finished(self) -> bool:
        """The acting process has reached the budget, and the learner has caught up with it."""
        return int(self.control[PHASE]) == FINISHED and self.caught_up

    @property
    def caught_up(self) -> bool:
        return self.learner._calls >= int(self.control[ACTS])

    # -- learning behind it ---------------------------------------------------------------------------
    def learn(self, timeout: float = 0.0) -> bool:
        """Learn what the synchronous agent learns after the acting process's next act, once it has made it
        (waiting up to ``timeout`` seconds for it); publish the weights when ``sync_every`` optimiser steps have
        passed. Whether there was an act to learn after."""
        if not self.acted.acquire(timeout=timeout):
            self.check()
            return False
        self.learner.learn_as_if_acted(self.n_envs)
        self.control[LEARNED] = self.learner._calls
        self.room.release()
        if self.learner.updates - self._published >= self.sync_every:
            self.weights.publish(self.learner)
            self._published = self.learner.updates
        return True

    def check(self) -> None:
        if self.process is not None and not self.process.is_alive():
            raise ProcessLost(self._death())

    def episodes(self) -> list[tuple[int, list[Episode]]]:
        """The episodes the acting process ended since the last call: (steps then, episodes), in order."""
        found = []
        while True:
            try:
                message = self.messages.get_nowait()
            except queue.Empty:
                return found
            found.append(self._episodes(message))

    def pause(self) -> tuple[dict | None, list[tuple[int, list[Episode]]]]:
        """Stop the acting process at a step boundary and learn up to it: its agent's state, and the episodes
        it ended before it stopped. Nothing to pause before it starts: (None, [])."""
        if self.process is None:
            return self.state, []
        self.control[COMMAND] = PAUSE
        found = []
        while True:
            message = self._message(START_SECONDS)
            if message[0] == "paused":
                state = message[1]
                break
            found.append(self._episodes(message))
        while not self.caught_up:
            self.learn(LOOK_SECONDS)
        return state, found

    def proceed(self) -> None:
        if self.process is not None:
            self.control[COMMAND] = RUN

    # -- messages ---------------------------------------------------------------------------------------
    def _message(self, timeout: float) -> tuple:
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.messages.get(timeout=1.0)
            except queue.Empty:
                self.check()
                if time.monotonic() > deadline:
                    raise ProcessLost(f"the acting process gave no sign of life for {timeout:.0f} s") from None
                continue
            if message[0] == "failed":
                raise ProcessLost(f"the acting process failed: {message[1]}")
            return message

    def _expect(self, kind: str, timeout: float) -> tuple:
        message = self._message(timeout)
        if message[0] != kind:
            raise RuntimeError(f"the acting process said {message[0]!r}, not {kind!r}")
        return message

    def _episodes(self, message: tuple) -> tuple[int, list[Episode]]:
        if message[0] == "failed":
            raise ProcessLost(f"the acting process failed: {message[1]}")
        _, steps, episodes = message
        return steps, [Episode(*episode) for episode in episodes]

    def _death(self) -> str:
        try:  # its last word, if it had time to say one
            while True:
                message = self.messages.get_nowait()
                if message[0] == "failed":
                    return f"the acting process failed: {message[1]}"
        except (queue.Empty, OSError, EOFError):
            pass
        return f"the acting process died (exit code {self.process.exitcode})"


class ActingEnvironment:
    """The run's environment as the learning process sees it: its spaces and sizes (the environment itself
    steps in the acting process), the steps the acting process has taken, the episodes it ended."""

    def __init__(self, env, acting: Acting):
        self.env = env  # closed: read for its declarations only
        self.acting = acting
        self.completed: list[Episode] = []
        self._steps = 0

    def __getattr__(self, name: str):
        return getattr(self.env, name)

    @property
    def steps(self) -> int:
        return self._steps if self.acting.process is None else max(self._steps, self.acting.steps)

    @steps.setter
    def steps(self, value: int) -> None:
        self._steps = value

    def close(self) -> None:
        self.acting.close()


class AsyncExperiment(Experiment):
    """The experiment loop of the async runner: the learner learns behind the acting process and keeps the
    run's books (see the module's docstring)."""

    def __init__(self, *args: Any, acting: Acting, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.acting = acting

    def train(self) -> None:
        from rlconf.experiments.loop.stopping import stop_requests

        env, acting = self.env, self.acting
        start = self._start_training()
        with stop_requests() as stop, self._stop_on_divergence():
            if self.checkpoint_steps is None:
                self.save_checkpoint()
            acting.start(self.reset_seed(), env.steps)
            while True:
                acting.learn(LOOK_SECONDS)
                self._record(acting.episodes(), start)
                if acting.finished:
                    break
                env.steps = acting.steps
                self._keep_books(stop)
                if self.stop_reason is not None:  # a callback ended the run (loop.callbacks)
                    break
            env.steps = acting.steps
        self.end_training()
        acting.close()

    def _record(self, batches: list[tuple[int, list[Episode]]], start: float) -> None:
        """Each batch of episodes at the step the acting process ended them."""
        for steps, episodes in batches:
            self.env.steps, self.env.completed = steps, episodes
            self._record_episodes(start)
        self.env.completed = []

    def save_checkpoint(self, replay: bool | None = None) -> None:
        """With the acting process paused at a step boundary and the learner caught up with it."""
        state, episodes = self.acting.pause()
        self._acting_state = state
        try:
            if episodes:
                self._record(episodes, time.perf_counter())
            self.env.steps = max(self.env.steps, self.acting.steps)
            super().save_checkpoint(replay)
        finally:
            self.acting.proceed()

    def _loop_state(self) -> dict[str, Any]:
        return {"acting": self._acting_state}

    def _load_loop_state(self, state: dict[str, Any]) -> None:
        # A synchronous run's checkpoint (resumed with the async runner) has one agent: both start from it.
        self.acting.state = state.get("acting") or state["agent"]


# -- the acting process ------------------------------------------------------------------------------------
def _act(config: dict, replay: dict, weights: SharedWeights, control: torch.Tensor, messages, state: dict | None,
         reset_seed: int, steps: int, budget: int, acted, room) -> None:
    # The learning process answers signals and stops this one; if it is killed outright, this one goes with it
    # (at once: it may be waiting for a lock the learner held).
    die_with_parent(mp.parent_process().pid, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        _acting_loop(config, replay, weights, control, messages, state, reset_seed, steps, budget, acted, room)
    except BaseException as error:
        with contextlib.suppress(Exception):
            messages.put(("failed", first_line(error)))
        raise SystemExit(1) from None


def _release(actor, env, control: torch.Tensor, acted, released: int) -> int:
    """Tell the learner of the acts made since ``released`` (one for each, ``acted``); the acts now told of."""
    control[ACTS], control[STEPS] = actor._calls, env.steps
    for _ in range(actor._calls - released):
        acted.release()
    return actor._calls


def _acting_loop(config: dict, replay: dict, weights: SharedWeights, control: torch.Tensor, messages,
                 state: dict | None, reset_seed: int, steps: int, budget: int, acted, room) -> None:
    from rlconf.experiments.build.agent import build_agent
    from rlconf.experiments.build.environment import make_env
    from rlconf.experiments.build.setup import prepare
    from rlconf.logging import LoggerGroup

    settings = prepare(OmegaConf.create(config))
    env = make_env(settings, settings.hardware.n_envs)
    try:
        agent = build_agent(settings, env, LoggerGroup([]))
        actor = off_policy_agent(agent)
        actor.learns = False
        actor.replay = SharedReplay.attach(actor.replay, replay)
        if state is not None:
            agent.load_state_dict(state)
        weights.refresh(actor)
        env.steps = steps
        released = actor._calls  # the acts the learner has been told of
        # With the alternating sampler the groups' first acts come here, before the first step: told of at once.
        step = stepping(env, agent, lanes_of(agent, env), env.reset(seed=reset_seed), lambda: messages.put(
            ("episodes", env.steps, [(e.env_index, e.returns, e.length, e.stalled) for e in env.completed])))
        released = _release(actor, env, control, acted, released)
        messages.put(("ready",))
        learner = mp.parent_process()
        while int(control[COMMAND]) != STOP:
            if int(control[COMMAND]) == PAUSE:
                messages.put(("paused", agent.state_dict()))
                control[PHASE] = PAUSED
                while int(control[COMMAND]) == PAUSE and learner.is_alive():
                    time.sleep(LOOK_SECONDS)
                control[PHASE] = STEPPING if env.steps < budget else FINISHED
                continue
            if env.steps >= budget:
                control[PHASE] = FINISHED
                time.sleep(LOOK_SECONDS)
            elif not room.acquire(timeout=LOOK_SECONDS):  # far enough ahead: the learner catches up
                pass
            else:
                weights.refresh(actor)
                step()  # one act: of every copy, or (the alternating sampler) of each group in turn
                released = _release(actor, env, control, acted, released)
                continue
            if not learner.is_alive():  # a learner killed outright: nobody to act for
                return
    finally:
        env.close()
