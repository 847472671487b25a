"""The documentation site (mkdocs.yml, docs/): its quick start works as written, its nav names pages that exist,
and its generated reference covers every config key and command.

Links and anchors between pages are mkdocs' to check (``mkdocs build --strict``, a step of .ci/run); these tests
are the parts a build cannot judge: whether the commands a reader copies run.
"""

from __future__ import annotations

import functools
import json
import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import cli_env

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CI = ROOT / ".ci" / "run"
GENERATED = {"reference/commands.md", "reference/config.md"}  # written at build time by docs/reference/generate.py


# -- the quick start ------------------------------------------------------------------------------------------
def quick_start_lines(page: Path) -> list[str]:
    """The shell lines of the ```bash blocks in the page's "Quick start" section (up to its next heading of the
    same level or above): a line ending in a backslash runs on, a ``$ `` prompt, comments and blank lines go."""
    text = page.read_text()
    start = re.search(r"^(#+) Quick start\s*$", text, re.MULTILINE)
    assert start, f"{page.relative_to(ROOT)} has no 'Quick start' section"
    end = re.search(rf"^#{{1,{len(start[1])}}} ", text[start.end():], re.MULTILINE)
    section = text[start.end(): start.end() + end.start() if end else len(text)]
    lines = []
    for block in re.findall(r"^```(?:bash|sh|shell|console)\s*\n(.*?)^```", section, re.MULTILINE | re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if shlex.split(line, comments=True):
                lines.append(line)
    return lines


def setup_commands(line: str) -> list[list[str]] | None:
    """A line's commands if it is a set-up line (a venv, its activation, pip, git clone, cd, pytest: every
    command of it one of those), else None: a line the reader runs to try rlconf."""
    words = shlex.split(line, comments=True)
    commands, command = [], []
    for word in [*words, "&&"]:
        if word == "&&":
            commands.append(command)
            command = []
        else:
            command.append(word)
    if all(c and (c[0] in (".", "source", "pip", "cd", "pytest") or c[:3] == ["python3", "-m", "venv"]
                  or c[:3] in (["python", "-m", "pip"], ["python3", "-m", "pip"]) or c[:2] == ["git", "clone"])
           for c in commands):
        return commands
    return None


def ci_extras() -> set[str]:
    """The extras .ci/run installs rlconf with."""
    extras = set()
    for match in re.finditer(r"-e \"?\.\[([\w,-]+)\]", CI.read_text()):
        extras |= set(match[1].split(","))
    assert extras, ".ci/run installs rlconf with no extras? (looked for -e \".[...]\")"
    return extras


def pip_extras(words: list[str]) -> set[str] | None:
    """The rlconf extras a ``pip install`` of the checkout installs (None: it installs something else)."""
    targets = [w for w in words[words.index("install") + 1:] if not w.startswith("-") and w != "constraints.txt"]
    extras: set[str] = set()
    for target in targets:
        if target == "torch":
            continue
        match = re.fullmatch(r"(?:\.|rlconf)(?:\[([\w,-]*)\])?", target)
        if not match:
            return None
        extras |= set(filter(None, (match[1] or "").split(",")))
    return extras


def setup_problem(words: list[str], extras: set[str]) -> str | None:
    """Why a set-up command is not one that .ci/run itself performs (None: it is), so that CI, which has just run
    them, vouches for it."""
    if words[:3] == ["python3", "-m", "venv"] and len(words) == 4:
        return None  # .ci/run: python3 -m venv "$VENV"
    if words[0] in (".", "source") and len(words) == 2 and words[1].endswith("/bin/activate"):
        return None  # .ci/run: source "$VENV/bin/activate"
    if words[:2] == ["git", "clone"] or words[0] == "cd":
        return None  # CI runs in a fresh clone of the repository: getting one is the reader's only extra step
    if words[0] == "pytest":
        return None if "pytest -n 2" in CI.read_text() else "pytest, which .ci/run does not run"
    if "install" in words:
        if words[words.index("install") + 1:][:2] != ["-c", "constraints.txt"]:
            return "a pip install without -c constraints.txt first (as .ci/run installs)"
        wanted = pip_extras(words)
        if wanted is None:
            return "installs something other than torch and this checkout, which .ci/run does not"
        if not wanted <= extras:
            return f"installs the extras {sorted(wanted - extras)}, which .ci/run does not"
        return None
    return "not a set-up step of .ci/run (python3 -m venv, activate, pip install -c constraints.txt ...)"


@functools.cache
def modules_of_other_extras(installed: frozenset[str]) -> frozenset[str]:
    """The top-level modules that only rlconf's extras outside ``installed`` bring: what a reader who installed
    just those extras does not have, though this test's environment (CI's: every extra) does."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    def requirements(dist: str, extras: set[str]) -> list[Requirement]:
        try:
            listed = metadata.requires(dist) or []
        except metadata.PackageNotFoundError:
            return []
        return [r for r in map(Requirement, listed)
                if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in ["", *extras])]

    have: set[str] = set()
    todo = [("rlconf", set(installed))]
    while todo:
        dist, extras = todo.pop()
        for req in requirements(dist, extras):
            name = canonicalize_name(req.name)
            if name == "rlconf":
                todo.append(("rlconf", set(req.extras)))
            elif name not in have:
                have.add(name)
                todo.append((req.name, set(req.extras)))
    everything = {e for r in map(Requirement, metadata.requires("rlconf") or []) if r.marker
                  for e in re.findall(r"extra == \"([\w-]+)\"", str(r.marker))}
    others = {canonicalize_name(r.name) for r in requirements("rlconf", everything)} - have - {"rlconf"}
    return frozenset(module for module, dists in metadata.packages_distributions().items()
                     if all(canonicalize_name(d) in others for d in dists))


# A sitecustomize for the quick start's processes: the modules of extras it did not install are not found, as
# for the reader (every finder answers None for them, so importlib.util.find_spec says None too).
BLOCKER = """import os, sys
_missing = set(filter(None, os.environ.get("RLCONF_DOCS_MISSING", "").split(",")))
class _Hiding:
    def __init__(self, finder):
        self._finder = finder
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _missing:
            return None
        find = getattr(self._finder, "find_spec", None)
        return find(name, path, target) if find else None
    def __getattr__(self, attribute):
        return getattr(self._finder, attribute)
sys.meta_path[:] = [_Hiding(finder) for finder in sys.meta_path]
"""


def check_quick_start(page: Path, work: Path) -> None:
    """Every set-up line of the page's quick start is one .ci/run performs; the other lines, in order, run as
    written in bash (``rlconf`` being ``python -m rlconf``) in the empty folder ``work``, with only the extras the
    quick start installed before them importable, and leave every run directory they start with a summary.json."""
    lines = quick_start_lines(page)
    extras, installed, script = ci_extras(), set(), []
    for line in lines:
        commands = setup_commands(line)
        if commands is None:
            script.append(line)
            continue
        for words in commands:
            problem = setup_problem(words, extras)
            assert problem is None, f"quick start: {shlex.join(words)!r}: {problem}"
            if "install" in words and not script:  # what the reader has when trying what follows
                installed |= pip_extras(words) or set()
    assert any(line.startswith("rlconf ") for line in script), f"{page.relative_to(ROOT)}: no rlconf command"
    site = work.parent / "blocker"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = cli_env([site])
    env["RLCONF_DOCS_MISSING"] = ",".join(sorted(modules_of_other_extras(frozenset(installed))))
    prologue = (f'set -euo pipefail\nrlconf() {{ {shlex.quote(sys.executable)} -m rlconf "$@" || '
                f'{{ status=$?; echo "quick start: rlconf $* exited $status" >&2; return $status; }}; }}\n')
    result = subprocess.run(["bash", "-c", prologue + "\n".join(script)], cwd=work, env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, (f"the quick start failed (exit {result.returncode}), run as:\n"
                                    + "\n".join(script) + f"\n{result.stderr[-3000:]}")
    runs = [d for d in (work / "runs").glob("*") if d.is_dir()] if (work / "runs").is_dir() else []
    started = sum(line.startswith("rlconf run ") for line in script)
    assert runs or not started, "the quick start's rlconf run made no run directory under runs/"
    for run in runs:
        assert (run / "summary.json").is_file(), f"quick start: {run.name} has no summary.json"


@pytest.mark.slow  # its first command trains DQN on CartPole for the preset's 50k steps, its last 10k more
def test_quick_start_runs_as_written_and_solves_cartpole(tmp_path: Path) -> None:
    """docs/index.md's quick start: what a new user copies first (the CI machine has just run its set-up). Its
    run is also the learning test of DQN's default command (tests/test_learning.py has the other agents'): trained
    for the preset's 50k steps and resumed to 60k, the agent's final greedy test over 100 episodes solves
    CartPole-v1 (>= 475)."""
    work = tmp_path / "work"
    work.mkdir()
    check_quick_start(DOCS / "index.md", work)
    (run,) = (work / "runs").glob("dqn_classic-cartpole_*")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 60_000 and summary["test_episodes"] == 100, summary
    assert summary["test_return_mean"] >= 475, summary


def test_quick_start_reader_refuses_what_ci_does_not_do(tmp_path: Path) -> None:
    """The checks above are real: a set-up step CI skips, or an extra it does not install, is refused; a
    command of an extra the quick start did not install fails as it would for the reader."""
    extras = ci_extras()
    assert setup_problem(shlex.split('pip install -c constraints.txt -e ".[dev,atari]"'), extras) is None
    assert "constraints" in setup_problem(shlex.split('pip install -e ".[dev]"'), extras)
    assert "extras" in setup_problem(shlex.split('pip install -c constraints.txt -e ".[no_such]"'), extras)
    assert setup_commands("conda create -n rl") is None
    page = tmp_path / "page.md"
    page.write_text("# Home\n\n## Quick start\n\n```bash\npython3 -m venv .venv && . .venv/bin/activate\n"
                    "pip install -c constraints.txt \\\n  torch  # first\n$ rlconf list agent\n```\n\n"
                    "## Next\n\n```bash\nrlconf run agent=dqn\n```\n")
    assert [shlex.split(line, comments=True) for line in quick_start_lines(page)] == [
        ["python3", "-m", "venv", ".venv", "&&", ".", ".venv/bin/activate"],
        ["pip", "install", "-c", "constraints.txt", "torch"], ["rlconf", "list", "agent"]]
    missing = modules_of_other_extras(frozenset())
    assert {"matplotlib", "optuna"} <= missing and "torch" not in missing and "gymnasium" not in missing
    assert "matplotlib" not in modules_of_other_extras(frozenset({"plot"}))
    page.write_text("## Quick start\n\n```bash\npip install -c constraints.txt -e .\n"
                    "rlconf list agent\npython -c 'import matplotlib'\n```\n")
    (tmp_path / "work").mkdir()
    with pytest.raises(AssertionError, match="No module named 'matplotlib'"):
        check_quick_start(page, tmp_path / "work")


# -- the site's pages -----------------------------------------------------------------------------------------
class _AnyTagLoader(yaml.SafeLoader):
    """mkdocs.yml may carry tags for mkdocs itself (!!python/name:..., !ENV): read as plain values here."""


_AnyTagLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav] if nav.endswith(".md") else []
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return []


def test_every_nav_page_exists() -> None:
    """A page named in mkdocs.yml's nav that is neither in docs/ nor generated: one readable line (mkdocs
    --strict refuses it too, among its other warnings)."""
    try:
        config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_AnyTagLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as error:
        pytest.fail(f"mkdocs.yml is not valid YAML (a nav title with a colon needs quotes): {error}")
    pages = nav_pages(config["nav"])
    assert pages
    missing = [p for p in pages if not (DOCS / p).is_file() and p not in GENERATED]
    assert not missing, f"mkdocs.yml's nav names pages that docs/ lacks: {', '.join(missing)}"


# -- the generated reference ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def generator() -> dict:
    """docs/reference/generate.py's functions (run as a file, as mkdocs-gen-files does, but without its main)."""
    return runpy.run_path(str(DOCS / "reference" / "generate.py"), run_name="generate")


def test_config_reference_has_every_option_and_key(generator: dict) -> None:
    page = generator["config_page"]()
    for key in ("agent.gradient_steps", "hardware.n_envs", "checkpoint.replay", "stop.reward",
                "hydra.launcher.partition", "env.kwargs.repeat_action_probability"):
        assert f"`{key}`" in page, key
    for root in (ROOT / "configs", ROOT / "launchers"):
        for path in root.glob("*/**/*.yaml"):
            option = path.relative_to(root).with_suffix("").as_posix()
            assert f"### {option}\n" in page or f"`{option}`" in page, f"{option} is not in the config reference"


def test_config_reader_keeps_comments(generator: dict, tmp_path: Path) -> None:
    """The line reader: a comment beside a key, its continuation lines, a comment block above a key, nested
    keys dotted, block lists, and a ``#`` inside quotes kept in the value."""
    path = tmp_path / "x.yaml"
    path.write_text("# @package _global_\n# What it is.\n# Second line.\ndefaults:\n  - override /body: atari  # b\n"
                    "agent:\n  lr: 1.0e-3        # the rate ...\n                    # ... of learning\n"
                    "  # above the key\n  tag: 'a # b'\n  hidden:\n    - 64\n    - 64\n")
    config = generator["read_config"](path)
    assert config.package == "_global_" and config.header == ["What it is.", "Second line."]
    assert config.defaults == ["`override /body: atari`: b"]
    keys = {k.path: k for k in config.keys}
    assert keys["agent.lr"].value == "1.0e-3" and keys["agent.lr"].comments == ["the rate ...", "... of learning"]
    assert keys["agent.tag"].value == "'a # b'" and keys["agent.tag"].comments == ["above the key"]
    assert keys["agent.hidden"].items == ["64", "64"]


def test_command_reference_is_the_cli_help(generator: dict) -> None:
    page = generator["commands_page"]()
    for command, _ in generator["COMMANDS"]:
        assert f"## `{command}`" in page
    assert "rlconf: error" not in page
    assert "GROUP.KEY=VALUE" in page  # rlconf run --help's table of keys, read from configs/config.yaml
