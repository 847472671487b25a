"""Bad input as one line for the user: the error every component raises, and the helpers that phrase it.

A leaf module (it imports nothing from rlconf), so agents, environments and loggers report bad input
without depending on the config module.
"""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """Bad input: the message is one line meant for the user."""


def first_line(error: BaseException) -> str:
    """An exception as one line for a message: its type and the first line of its text."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def require(ok: bool, key: str, value: Any, allowed: str) -> None:
    """Raise a ConfigError naming ``key``, its ``value`` and what is ``allowed`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{key}={value}: {allowed}")
