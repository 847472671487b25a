"""Bad input as one line for the user: the error every component raises, and the helpers that phrase it.

A leaf module (it imports nothing from rlconf), so agents, environments and loggers report bad input
without depending on the config module.
"""

from __future__ import annotations

import re
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


class ConfigError(ValueError):
    """Bad input: the message is one line meant for the user."""


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
