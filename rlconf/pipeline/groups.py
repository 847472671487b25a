"""The config groups on disk: which options each group offers (from the YAML files of every config folder)
and the one-line description each file's first comment gives. ``rlconf list``, ``rlconf run --help`` and
the checks of a run's group choices read them; nothing here imports Hydra, omegaconf or torch."""

from __future__ import annotations

import re
from pathlib import Path

from rlconf.paths import config_dir, searchpath

HIDDEN_GROUPS = {"family", "hydra"}  # set by the chosen env, and Hydra's own: never listed
IMPLICIT_GROUPS = {"preset"}  # chosen by the agent and the env's family: listed, but not offered as a choice
REQUIRED_GROUPS = ("agent", "env")
EXAMPLE = "agent=dqn env=classic/cartpole"  # a pair that runs anywhere in seconds, for messages


def search_dirs(extra: list[str]) -> list[Path]:
    """The shipped config folder, the shipped launchers and the user's own folders (``--config-dir``)."""
    return [config_dir(), *searchpath(extra)]


def group_options(dirs: list[Path]) -> dict[str, dict[str, str]]:
    """group -> option -> description, from the YAML files of every config directory."""
    groups: dict[str, dict[str, str]] = {}
    for root in dirs:
        for path in sorted(root.glob("*/**/*.yaml")):
            group = path.relative_to(root).parts[0]
            option = path.relative_to(root / group).with_suffix("").as_posix()
            # A preset's first comment is a paragraph (what it is, what was measured, where its values come
            # from): its first sentence describes it in a line.
            describe = _first_sentence if group == "preset" else _description
            groups.setdefault(group, {})[option] = describe(path)
    return groups


def _first_comment(path: Path) -> list[str]:
    """The lines of the file's first comment (below any ``@package`` line), without their ``#``."""
    lines: list[str] = []
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and "@package" not in stripped:
            lines.append(stripped.lstrip("#").strip())
        elif lines or (stripped and not stripped.startswith("#")):
            break
    return lines


def _description(path: Path) -> str:
    """The file's first comment, with the lines its sentence was wrapped onto: a line that ends in a word (or a
    comma or semicolon) continues on the next comment line when that starts in lower case (a usage example, a
    second sentence in capitals, or a note after a closing bracket starts something else)."""
    text = ""
    for part in _first_comment(path):
        if not text:
            text = part
        elif (text[-1:].isalpha() or text[-1:] in ",;") and part[:1].islower():
            text = f"{text} {part}"
        else:
            break
    return text.removesuffix(":")  # a line that introduced what follows it stands alone here


def _first_sentence(path: Path) -> str:
    """The first sentence of the file's first comment, however many lines it was wrapped onto."""
    text = " ".join(_first_comment(path))
    end = re.search(r"\.\s+(?=[A-Z])", text)
    return text[: end.start() + 1] if end else text


def applied_preset(choices: dict[str, str | None], config_dirs: list[str]) -> str:
    """Which presets the defaults list applied (``choices``: a composition's ``hydra.runtime.choices``), chosen
    silently: the family's (``${family}/${agent}``) and a task's (``${family}/${body}/${agent}``), each with its
    file: ``classic/ppo (configs/preset/classic/ppo.yaml) + classic/mask_velocity/ppo (...)``, or ``none``
    where the run has none."""
    applied = []
    for choice in (choices.get("preset"), choices.get("preset@_global_")):
        for root in search_dirs(config_dirs):
            path = root / "preset" / f"{choice}.yaml"
            if choice and path.is_file():
                shown = path.relative_to(config_dir().parent) if root == config_dir() else path
                applied.append(f"{choice} ({shown})")
                break
    return " + ".join(applied) or "none"
