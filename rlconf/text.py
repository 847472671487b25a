"""Counts in what rlconf prints, with the noun in the number it takes: ``counted(1, "episode")`` is "1 episode",
``counted(1200, "step")`` "1,200 steps", ``counted(0, "run")`` "0 runs"."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` (with thousands separators) and ``noun``, or its ``plural`` (default: ``noun`` + "s") unless n is 1."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
