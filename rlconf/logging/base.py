"""The Logger interface: what happened during a run, keyed by environment step.

The experiment sets ``logger.step`` as it goes; components (approximations, agents) call ``add_scalar``
without knowing the clock or the backends. Debug scalars (losses, schedules) are written only when the
run is ``verbose``, and then every ``debug_every``-th update, so they cost nothing otherwise.

Every backend shows the same names (the constants below, plus ``loss/<approximation>``, ``schedule/<name>``
and ``debug/<name>``), against environment steps; wandb also records the frames (steps x frame skip).

Bandit runs log pulls rather than episodes (``add_pulls``): reward, cumulative regret, the rate of best-arm
pulls and the arms' counts, as ``bandit/...`` scalars (CSV: pulls.csv).

Multi-agent runs: an episode's ``returns`` is the first player's; every player's return comes beside it
(``agent_returns``, shown as ``train/return/<player>``), and each player's agent logs through a
``ScopedLogger`` that appends ``/<player>`` to its names (``loss/q/player_1``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

TRAIN_RETURN = "train/return"
TRAIN_EPISODE_LENGTH = "train/episode_length"
EVAL_RETURN_MEAN = "eval/return_mean"
EVAL_RETURN_STD = "eval/return_std"
EVAL_RETURN_MIN = "eval/return_min"
EVAL_RETURN_MAX = "eval/return_max"
STEPS_PER_SECOND = "perf/steps_per_second"
EVAL_VIDEO = "eval/video"  # a greedy episode recorded while training (logger.video_every)
BANDIT_REWARD = "bandit/reward"
BANDIT_REGRET = "bandit/regret"
BANDIT_OPTIMAL_RATE = "bandit/optimal_arm_rate"
BANDIT_ARM_COUNT = "bandit/arm_count"  # /<arm>


@dataclass
class LoggerContext:
    """What a backend may need to know about the run it records."""

    run_dir: Path
    config: dict[str, Any] = field(default_factory=dict)  # the resolved config, secrets redacted
    name: str = ""  # the run directory's name
    sweep: str | None = None  # the sweep directory's name, for a run of a sweep
    frames_per_step: float = 1  # emulator frames per environment step (Atari: the frame skip; shared by players)
    resumed: bool = False  # continuing a run directory an earlier attempt wrote to
    quiet: bool = False
    agents: list[str] = field(default_factory=list)  # the players of a multi-agent environment, in order
    arms: int = 0  # the arms of a bandit environment (its pulls are logged, not episodes)


class Logger:
    # The package a backend needs beyond rlconf's own (and the extra that installs it), declared so the config
    # check refuses a missing one in one line before the run starts; None: nothing more.
    requires: ClassVar[str | None] = None

    @dataclass
    class Config:
        """A backend's options (``logger.<backend>.<key>``); none by default."""

    def __init__(self, verbose: bool = False, debug_every: int = 100):
        self.step = 0
        self.verbose = verbose
        self.debug_every = debug_every

    @classmethod
    def from_config(cls, config: Any, context: LoggerContext) -> Logger:
        return cls(context.run_dir)

    def wants_debug(self, count: int) -> bool:
        return self.verbose and count % self.debug_every == 0

    def add_scalar(self, name: str, value: float, step: int | None = None) -> None:
        self.add_scalars({name: value}, step)

    def add_scalars(self, values: dict[str, float], step: int | None = None) -> None:
        """Several scalars of one moment: one row for backends that keep rows (wandb)."""

    def add_episode(self, step: int, episode: int, returns: float, length: int, wall_seconds: float,
                    agent_returns: dict[str, float] | None = None) -> None:
        """One finished training episode; ``agent_returns``: every player's return (multi-agent runs)."""
        per_agent = {f"{TRAIN_RETURN}/{agent}": value for agent, value in (agent_returns or {}).items()}
        self.add_scalars({TRAIN_RETURN: returns, TRAIN_EPISODE_LENGTH: length, **per_agent}, step)

    def add_pulls(self, step: int, pulls: int, reward: float, regret: float, optimal_rate: float,
                  arm_counts: list[int]) -> None:
        """Bandits, every ``logger.pulls_every`` pulls of each bandit: the mean reward and the rate of best-arm
        pulls since the last row, the cumulative expected regret (means over the bandits) and how often each
        arm has been pulled (summed over the bandits)."""
        counts = {f"{BANDIT_ARM_COUNT}/{arm}": count for arm, count in enumerate(arm_counts)}
        self.add_scalars({BANDIT_REWARD: reward, BANDIT_REGRET: regret, BANDIT_OPTIMAL_RATE: optimal_rate,
                          **counts}, step)

    def add_evaluation(self, step: int, returns: list[float]) -> None:
        r = np.asarray(returns, dtype=float)
        self.add_scalars({EVAL_RETURN_MEAN: r.mean(), EVAL_RETURN_STD: r.std(), EVAL_RETURN_MIN: r.min(),
                          EVAL_RETURN_MAX: r.max()}, step)

    def video_payload(self, frames: np.ndarray, fps: float, path: Path) -> Any:
        """What this backend needs to show a video (``frames``: [T, H, W, 3] uint8, written to the mp4 ``path``),
        made on a thread of its own while training goes on (so: no side effects, only encoding); None: this
        backend shows no videos."""
        return None

    def add_video(self, payload: Any, step: int) -> None:
        """Show the video ``video_payload`` prepared (not None), recorded at ``step``; on the loop's thread."""

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    # -- resume --------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Where this logger stands, saved in every checkpoint (after ``flush``): what it has written so far."""
        return {}

    def load_state_dict(self, state: dict | None) -> None:
        """Continue from a checkpoint's ``state_dict``: whatever was written after it (by a run that went on
        and was then killed) is discarded, so a resumed run neither loses nor repeats a record. ``None``: the
        run starts over in a directory an earlier attempt wrote to before its first checkpoint."""


class LoggerGroup(Logger):
    """Several backends behind one Logger (CSV always, plus whatever the logger group adds)."""

    def __init__(self, loggers: list[Logger], verbose: bool = False, debug_every: int = 100):
        super().__init__(verbose, debug_every)
        self.loggers = loggers

    def add_scalars(self, values: dict[str, float], step: int | None = None) -> None:
        step = self.step if step is None else step
        for logger in self.loggers:
            logger.add_scalars(values, step)

    def add_episode(self, step, episode, returns, length, wall_seconds, agent_returns=None) -> None:
        # Single-agent runs call backends as before, so a user's backend with the older signature still works.
        extra = {} if agent_returns is None else {"agent_returns": agent_returns}
        for logger in self.loggers:
            logger.add_episode(step, episode, returns, length, wall_seconds, **extra)

    def add_pulls(self, step, pulls, reward, regret, optimal_rate, arm_counts) -> None:
        for logger in self.loggers:
            logger.add_pulls(step, pulls, reward, regret, optimal_rate, arm_counts)

    def add_evaluation(self, step, returns) -> None:
        for logger in self.loggers:
            logger.add_evaluation(step, returns)

    def video_payload(self, frames, fps, path) -> list:
        return [logger.video_payload(frames, fps, path) for logger in self.loggers]

    def add_video(self, payload: list, step: int) -> None:
        for logger, own in zip(self.loggers, payload, strict=True):
            if own is not None:
                logger.add_video(own, step)

    def flush(self) -> None:
        for logger in self.loggers:
            logger.flush()

    def close(self) -> None:
        for logger in self.loggers:
            logger.close()

    def state_dict(self) -> dict:
        for logger in self.loggers:  # the backends' own clocks are not kept up to date while logging
            logger.step = self.step
        return {type(logger).__name__: logger.state_dict() for logger in self.loggers}

    def load_state_dict(self, state: dict | None) -> None:
        for logger in self.loggers:  # a backend added since the checkpoint starts over
            logger.load_state_dict(None if state is None else state.get(type(logger).__name__))


class ScopedLogger:
    """One player's view of the run's logger: scalar names gain ``/<scope>`` (``loss/q/player_1``), so that
    several agents of one kind log side by side. Everything else is the run's logger's."""

    def __init__(self, logger: Logger, scope: str):
        self.logger = logger
        self.scope = scope

    def __getattr__(self, name: str) -> Any:
        if name in ("logger", "scope"):  # not set yet (a copy being made): no recursion into __getattr__
            raise AttributeError(name)
        return getattr(self.logger, name)

    def add_scalar(self, name: str, value: float, step: int | None = None) -> None:
        self.logger.add_scalar(f"{name}/{self.scope}", value, step)

    def add_scalars(self, values: dict[str, float], step: int | None = None) -> None:
        self.logger.add_scalars({f"{name}/{self.scope}": value for name, value in values.items()}, step)
