"""The errors a user reads, as one hierarchy, and the helpers that phrase them.

Every error meant for the user derives from ``RlconfError``: its message is one line and it carries the exit
status of the command that meets it (``reported`` turns it into ``rlconf: error: ...`` and that status, the one
place that does). Bad input is a ``ConfigError`` (exit status 2) or one of its kin below; a run that stopped on
a fault is ``RunFailed`` (1). A leaf module (it imports nothing from rlconf), so agents, environments and
loggers report bad input without depending on the config module.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any

# Secrets recognised by their format wherever they appear (a token pasted into a value, a path, a message):
# the prefixes services give their tokens, never a mere run of random-looking characters, which a file named
# by its MD5 or a run's hash also is. A secret without such a prefix (a wandb key: 40 hex digits) is known by
# the key it is given under (rlconf.settings.SECRET_KEY).
TOKEN = re.compile(
    r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{16,}"  # GitHub
    r"|github_pat_[A-Za-z0-9_]{22,}"  # GitHub, fine-grained
    r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab
    r"|xox[abpr]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|hf_[A-Za-z]{30,}"  # Hugging Face
    r"|AKIA[0-9A-Z]{16}"  # AWS access key ids
    r"|sk-(?:proj-|ant-)?(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,}"  # OpenAI, Anthropic
    r")(?![A-Za-z0-9])")
REDACTED = "***"


class RlconfError(Exception):
    """An error for the user: ``message`` is its one line, ``exit_status`` the command's (a class's default, or
    given to one instance)."""

    exit_status: int = 1

    def __init__(self, message: str, exit_status: int | None = None):
        super().__init__(message)
        if exit_status is not None:
            self.exit_status = exit_status

    @property
    def message(self) -> str:
        return str(self)


class ConfigError(RlconfError, ValueError):
    """Bad input: the message is one line meant for the user."""

    exit_status = 2


class UsageError(ConfigError):
    """A command used wrongly (an unknown option, a missing argument, an option's bad value)."""


class TuningError(RlconfError, ValueError):
    """A bad sweeper setting or search space: one line naming the key, the value and what is allowed."""

    exit_status = 2


class LauncherError(RlconfError, ValueError):
    """Bad launcher settings: one line naming the key, the value and what is allowed."""

    exit_status = 2


class StatusError(RlconfError, ValueError):
    """Not a directory rlconf status can read: one line."""

    exit_status = 2


class AnalysisError(RlconfError, ValueError):
    """Input ``rlconf plot`` cannot use (no such folder, no runs, an unknown name): one line."""

    exit_status = 2


class PlaybackError(RlconfError):
    """Bad input (a directory that holds no run, a damaged checkpoint, no display): one line, exit status 2."""

    exit_status = 2


class RunDirRefused(RlconfError):
    """A run directory this process cannot become the writer of: one line, exit status 2."""

    exit_status = 2


class RunFailed(RlconfError):
    """A run stopped on a fault (a divergence, a full disk) keeping its last good checkpoint, or a run of a sweep
    that did not finish. Its message is the one line the user reads: what went wrong, at which step, which
    checkpoint is intact or where the log is. ``exit_status``: the process's (1 unless given)."""


@contextlib.contextmanager
def reported() -> Iterator[None]:
    """Where a command meets an ``RlconfError``: its one line on stderr and its exit status (SystemExit)."""
    try:
        yield
    except RlconfError as error:
        print(error_line(error.message), file=sys.stderr)  # a token pasted into a value is not repeated
        raise SystemExit(error.exit_status) from None


def first_line(error: BaseException) -> str:
    """An exception as one line for a message: its type and the first line of its text (a ConfigError's text
    alone: it is written for the user already). A first line that ends in a colon only introduces what follows
    (torch's "Error(s) in loading state_dict for Sequential:", then a line per mismatching key): the next line
    joins it, so the message names the first mismatch."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    text = f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]
    return text if isinstance(error, ConfigError) else f"{type(error).__name__}: {text}"


def require(ok: bool, key: str, value: Any, allowed: str) -> None:
    """Raise a ConfigError naming ``key``, its ``value`` and what is ``allowed`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{key}={value}: {allowed}")


def without_tokens(text: str) -> str:
    """``text`` with every token of a known format (``TOKEN``) replaced by ``***``: what an error line or a
    summary repeats of the user's input must not show a secret pasted into it."""
    return TOKEN.sub(REDACTED, text)


def error_line(message: str) -> str:
    """The one line bad input or a failed run gets: ``rlconf: error: ...``, tokens redacted."""
    return f"rlconf: error: {without_tokens(message)}"
