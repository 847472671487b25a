"""Where the shipped YAML trees live: inside the installed package, or at the top of a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _shipped(name: str) -> Path:
    installed = _PACKAGE / name  # a wheel ships configs/ and launchers/ as rlconf/configs, rlconf/launchers
    return installed if installed.is_dir() else _PACKAGE.parent / name


def config_dir() -> Path:
    """The primary config tree: config.yaml and the agent, env, body, ... groups."""
    return _shipped("configs")


def launchers_dir() -> Path:
    """The launcher group: where runs execute, kept apart from what runs."""
    return _shipped("launchers")


def searchpath(extra: list[str]) -> list[Path]:
    """Config folders besides the primary one: the shipped launchers, then the user's own (``--config-dir``)."""
    return [launchers_dir(), *(Path(d).resolve() for d in extra)]
