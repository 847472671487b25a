"""What a run's settings will cost this machine, estimated before anything is built.

A setting that scales memory or the work of one step (``hardware.n_envs``, ``env.kwargs.arms``,
``body.frame_stack``, ``agent.batch_size``, ``agent.planning_steps``, episodes to play ...) is accepted by its
schema at any size, and a size this machine cannot hold is otherwise found out minutes later: the kernel kills
the run (leaving its directory ``running``), or one step takes hours and answers no signal. ``check_costs``
estimates every such cost from the checked settings alone (no environment, network or buffer is built, no
torch imported) and refuses, in one line, what cannot fit: the key, its value, the estimate, what the machine
has and the largest value that fits. The replay's exact size, known once the observation space is, is checked
by the same rule when the replay is built (``rlconf.memory.replay.check_fits``), still before the run
directory is made.

The estimates are rough on purpose and err low, so that nothing that fits is refused: the constants below are
measured orders of magnitude, not bounds.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from rlconf import registry
from rlconf.errors import ConfigError

FRAME_BYTES = 84 * 84  # one grey 84x84 uint8 frame: what every image family observes
# Multiply-adds of the first convolution (Nature CNN: 32 filters of 8x8 over 20x20 places) per stacked frame,
# and a CPU's rate at them (an optimistic one: the estimate errs low).
FIRST_CONVOLUTION = 32 * 8 * 8 * 20 * 20
CPU_FLOPS = 1e11
VECTOR_OBSERVATION = 64  # floats of a vector observation (CartPole 4, Humanoid 348): an order of magnitude
# An environment copy in memory (its simulator, buffers, wrappers): measured orders of magnitude.
COPY_BYTES = {"atari": 4 << 20, "pettingzoo_atari": 4 << 20, "pettingzoo_butterfly": 4 << 20, "mujoco": 1 << 20}
DEFAULT_COPY_BYTES = 16 << 10
BANDIT_BYTES = 1 << 10  # a bandit of hardware.n_envs: its pull's record, reward, context row (measured)
ARM_BYTES = 256  # an arm of one bandit: its parameter, the agent's estimates, the step's temporaries (measured)
ARM_SECONDS = 5e-8  # an arm of one bandit, every pull: the agent's index over all arms (~1.1e-7 s measured)
EPISODE_BYTES = 64  # an episode's result kept in memory until the test or evaluation ends (return, length)
PLANNING_BYTES = 48  # dyna_q: one planning update's random numbers, drawn for a step at once
PLANNING_SECONDS = 2e-6  # dyna_q: one planning update (a Python-level Q-learning update; ~2.7 us measured)
# Signals (SIGTERM, Ctrl-C) are answered between steps: a step that takes longer than this would not answer
# a scheduler's SIGTERM before its SIGKILL, and is a typo (a billion planning updates per step) anyway.
MAX_STEP_SECONDS = 2.0
# Samples (sequence steps, for a recurrent agent) in one minibatch: an update is one call into torch, which no
# signal interrupts, and its time grows with them (a small LSTM: ~16 us a sample on a CPU core, measured). The
# largest batches in use hold tens of thousands (R2D2: 64 sequences of 120 steps, 7,680; large-batch PPO:
# 65,536); a million is far beyond any, and would take minutes an update.
MAX_BATCH_SAMPLES = 10**6


@dataclass(frozen=True)
class Cost:
    """What one setting costs: ``bytes`` of memory, ``seconds`` of work per environment step. ``what`` says
    what it is in words. A cost grows about in proportion to its value, so the largest value that fits can be
    named."""

    key: str
    value: Any
    what: str
    bytes: float = 0.0
    seconds: float = 0.0
    samples: int = 0  # in one minibatch (MAX_BATCH_SAMPLES)


def available_memory() -> int:
    """Memory this process can still take without the kernel swapping or killing: MemAvailable, or the
    machine's physical memory where /proc/meminfo has none."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def size(n: float) -> str:
    """``n`` bytes in words: 512 bytes, 3.1 MiB, 309.2 TiB."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"


def refuse_unless_fits(cost: Cost, have: float | None = None, where: str = "this machine",
                       others: float = 0.0) -> None:
    """A ConfigError naming the key, its value, the estimate and what fits, unless ``cost`` fits in ``have``
    bytes of ``where`` (None: this machine's available memory) beside ``others`` bytes the run needs anyway,
    and its work per step stays under MAX_STEP_SECONDS."""
    refuse_beyond_limits(cost)  # first: the limits that hold on any machine refuse a setting the same way everywhere
    if have is None:
        _refuse_beyond_memory(cost, *_available(where), others)
    else:
        _refuse_beyond_memory(cost, have, f"{where} has {size(have)}", others)


def _available(where: str = "this machine") -> tuple[int, str]:
    """This machine's available memory, and the words that say so."""
    have = available_memory()
    return have, f"{where} has {size(have)} available"


def _refuse_beyond_memory(cost: Cost, have: float, room: str, others: float) -> None:
    """A ConfigError unless ``cost`` fits in ``have`` bytes (``room`` says whose) beside ``others``."""
    if cost.bytes and others + cost.bytes > have:
        fits = _largest_fitting(cost.value, (have - others) / cost.bytes)
        raise ConfigError(f"{_setting(cost)}: {cost.what} needs about {size(cost.bytes)} of memory, and {room}"
                          f"{fits}")


def refuse_beyond_limits(cost: Cost) -> None:
    """A ConfigError unless ``cost`` stays within the limits that do not depend on the machine: the samples of
    one update (MAX_BATCH_SAMPLES) and the work of one step (MAX_STEP_SECONDS)."""
    if cost.samples > MAX_BATCH_SAMPLES:
        fits = _largest_fitting(cost.value, MAX_BATCH_SAMPLES / cost.samples)
        raise ConfigError(f"{_setting(cost)}: {cost.what} is {cost.samples:,} samples an update, which answers no "
                          f"signal before it ends (at most {MAX_BATCH_SAMPLES:,}){fits}")
    if cost.seconds > MAX_STEP_SECONDS:
        fits = _largest_fitting(cost.value, MAX_STEP_SECONDS / cost.seconds)
        raise ConfigError(f"{_setting(cost)}: {cost.what} would take about {_duration(cost.seconds)} every "
                          f"environment step, which answers no signal before it ends (at most {MAX_STEP_SECONDS:g} "
                          f"s){fits}")


def _setting(cost: Cost) -> str:
    """The setting as the user wrote it: ``key=value``, or ``--option value`` for a command's option."""
    return f"{cost.key} {cost.value}" if cost.key.startswith("--") else f"{cost.key}={cost.value}"


def _largest_fitting(value: Any, share: float) -> str:
    """``; allowed: at most N`` for a count ``value`` whose cost grows in proportion to it, ``share`` being
    the fraction of its cost that fits."""
    if isinstance(value, bool) or not isinstance(value, int) or share <= 0:
        return ""
    return f"; allowed: at most about {max(int(value * share), 0):,}"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:,.0f} s"
    return f"{seconds / 60:,.0f} minutes" if seconds < 7200 else f"{seconds / 3600:,.0f} hours"


def episodes_cost(key: str, episodes: int) -> Cost:
    """Episodes played by a test or ``rlconf eval`` (``key``: how the user named the count): their results
    are held until the last one ends."""
    return Cost(key, episodes, f"keeping the results of {episodes:,} episodes", bytes=episodes * EPISODE_BYTES)


def check_costs(settings: Any) -> None:
    """Refuse, in one line, the first setting of ``settings`` (rlconf.settings.Settings) whose estimated cost
    does not fit this machine's available memory or MAX_STEP_SECONDS; the other settings' memory is counted
    beside it, so that settings that fit each alone but not together are refused too."""
    costs = estimate(settings)
    for cost in costs:  # a setting beyond the limits that hold everywhere is named before one this machine lacks
        refuse_beyond_limits(cost)
    total = sum(c.bytes for c in costs)
    have, room = _available()  # read once for every setting
    crowded = total > have  # then each is checked beside the others
    for cost in sorted(costs, key=lambda c: c.bytes, reverse=True):
        _refuse_beyond_memory(cost, have, room, total - cost.bytes if crowded else 0.0)


def estimate(settings: Any) -> list[Cost]:
    """The costs of ``settings`` that scale with a setting, one per setting."""
    return [cost for cost in (*_environment_costs(settings), *_agent_costs(settings), *_episode_costs(settings))
            if cost.bytes or cost.seconds or cost.samples]


def _is_bandit(family: str) -> bool:
    return family in ("bandit", "contextual_bandit")


def _images(settings: Any) -> bool:
    return registry.env_spec(settings.env.family).image_observations


def _observation_floats(settings: Any) -> int:
    """The floats of one observation as a network reads it: the stacked frames of an image family (bodies
    stack ``body.frame_stack`` of them), an order of magnitude for vectors."""
    if _images(settings):
        stack = settings.body.frame_stack if settings.body.name == "atari" else 1
        return stack * FRAME_BYTES
    return VECTOR_OBSERVATION


def _environment_costs(settings: Any) -> list[Cost]:
    env, hardware, family = settings.env, settings.hardware, settings.env.family
    if _is_bandit(family):
        arms = _arms(env.kwargs)
        features = _whole(env.kwargs.get("features"), 1) if family == "contextual_bandit" else 1
        per_arm = ARM_BYTES * features * features  # the linear agents keep a features x features matrix per arm
        bandits, arm_table = hardware.n_envs * BANDIT_BYTES, hardware.n_envs * arms * per_arm
        # Named by the larger of the two counts it grows with (a typo makes one of them huge).
        key, value = ("env.kwargs.arms", arms) if arms > hardware.n_envs and "arms" in env.kwargs else (
            "hardware.n_envs", hardware.n_envs)
        return [Cost(key, value, f"a table of {hardware.n_envs:,} bandit(s) x {arms:,} arms", bytes=bandits + arm_table,
                     seconds=hardware.n_envs * arms * features * ARM_SECONDS)]
    copy = COPY_BYTES.get(family, DEFAULT_COPY_BYTES)
    costs = [Cost("hardware.n_envs", hardware.n_envs, f"running {hardware.n_envs:,} copies of {env.id}",
                  bytes=hardware.n_envs * copy),
             Cost("hardware.eval_envs", hardware.eval_envs,
                  f"running {hardware.eval_envs:,} evaluation copies of {env.id}", bytes=hardware.eval_envs * copy)]
    if _images(settings) and settings.body.name == "atari":
        stack = settings.body.frame_stack
        copies = hardware.n_envs + hardware.eval_envs
        batch = max(_whole(_hyperparameters(settings).get("batch_size", 1), 1), 1)
        # Every copy's stacked frames, a batch of them as floats (observations and next observations), and the
        # first convolution's weights (with their gradients, Adam's moments and a target copy).
        frames = copies * stack * FRAME_BYTES + 2 * batch * stack * FRAME_BYTES * 4 + 5 * 32 * stack * 64 * 4
        # Acting convolves every copy's stack each step (on a GPU, what memory allows is the bound).
        act = hardware.n_envs * 2 * FIRST_CONVOLUTION * stack / CPU_FLOPS if hardware.device == "cpu" else 0.0
        costs.append(Cost("body.frame_stack", stack, f"stacking {stack:,} frames", bytes=frames, seconds=act))
    return costs


def _hyperparameters(settings: Any) -> dict[str, Any]:
    """The agent's checked settings by key: only those its schema has (a bandit's has no batch_size)."""
    return dataclasses.asdict(settings.agent)


def _agent_costs(settings: Any) -> list[Cost]:
    agent, hardware = _hyperparameters(settings), settings.hardware
    costs = []
    planning = _whole(agent.get("planning_steps", 0), 0)
    if planning:
        updates = planning * hardware.n_envs
        costs.append(Cost("agent.planning_steps", planning, f"planning {updates:,} updates a step",
                          bytes=planning * PLANNING_BYTES, seconds=updates * PLANNING_SECONDS))
    batch = _whole(agent.get("batch_size", 0), 0)
    if batch:
        span = _whole(agent.get("sequence_length", 1), 1) + _whole(agent.get("burn_in", 0), 0)
        costs.append(Cost("agent.batch_size", batch, _batch_words(batch, span),
                          bytes=batch * span * _sample_bytes(settings), samples=batch * span))
    rollout = _whole(agent.get("n_steps", 0), 0)
    if rollout and "replay_buffer_size" not in agent:  # an on-policy rollout, not n-step returns
        costs.append(Cost("agent.n_steps", rollout, f"a rollout of {rollout:,} steps of {hardware.n_envs:,} copies",
                          bytes=rollout * hardware.n_envs * (_observation_floats(settings) * 4 + 64)))
    return costs


def _batch_words(batch: int, span: int) -> str:
    return f"a batch of {batch:,} sequences of {span:,} steps" if span > 1 else f"a batch of {batch:,}"


def _sample_bytes(settings: Any) -> int:
    """The memory one sample of a batch takes through an update: its observations as floats (and the next
    ones), and each hidden layer's activations and their gradients."""
    approximation = settings.approximation
    hidden = approximation.get("hidden", 0)
    widths = sum(_whole(h, 0) for h in hidden) if isinstance(hidden, (list, tuple)) else _whole(hidden, 0)
    recurrent = (_whole(approximation.get("recurrent_hidden", 0), 0)
                 if approximation.get("recurrent", "none") != "none" else 0)
    return 2 * 4 * _observation_floats(settings) + 4 * 4 * widths + 12 * 4 * recurrent


def _episode_costs(settings: Any) -> list[Cost]:
    run = settings.run
    return [episodes_cost("test_episodes", run.test_episodes), episodes_cost("eval_episodes", run.eval_episodes)]


def _arms(kwargs: dict) -> int:
    """A bandit's arms: one per value given (``probabilities``, ``means``), else ``arms`` (10 by default)."""
    for key in ("probabilities", "means"):
        if isinstance(kwargs.get(key), (list, tuple)):
            return len(kwargs[key])
    return max(_whole(kwargs.get("arms", 10), 10), 1)


def _whole(value: Any, default: int) -> int:
    """An integer setting as an int; ``default`` where it is not one (null, a string the checks refuse)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default
