"""Where the shipped YAML config tree lives: inside the installed package, or at the top of a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def config_dir() -> Path:
    installed = _PACKAGE / "configs"  # a wheel ships configs/ as rlconf/configs
    return installed if installed.is_dir() else _PACKAGE.parent / "configs"
