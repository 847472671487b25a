"""The house's floors: rlconf's modules import one another in one direction only, and no file grows past 500 lines.

The import graph is read from the source with ``ast`` (nothing is imported): every ``import`` and ``from ...
import`` of every module under rlconf/, at module level and inside functions alike (an import moved into a
function to dodge a circle is still the same dependency), relative imports resolved; ``from pkg import name``
counts as importing the submodule ``pkg.name`` where there is one, else ``pkg`` itself.

``LAYERS`` is the one place the floors are written down, from the ground up. A module belongs to the floor of the
longest name in the table that it is, or lies below (``rlconf`` itself names only its ``__init__.py``). A module
may import its own floor and those beneath it, never one above; and no group of modules may import each other
round in a circle, on one floor or across them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rlconf"
ROOT = "rlconf"

# From the ground up: (floor, the modules and packages on it).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ground", ("rlconf.errors", "rlconf.paths", "rlconf.version", "rlconf.files", "rlconf.process", "rlconf.lazy",
                "rlconf.text")),
    ("registry", ("rlconf.registry",)),
    ("schema", ("rlconf.schema", "rlconf.settings", "rlconf.cost")),
    ("core", ("rlconf.core", "rlconf.distributed")),
    ("parts", ("rlconf.nn", "rlconf.optim", "rlconf.policies", "rlconf.memory", "rlconf.approximation")),
    ("components", ("rlconf.agents", "rlconf.bodies", "rlconf.environments")),
    ("logging", ("rlconf.logging",)),
    # Hydra composition and the cross-group checks: what a run is built from, so below the build.
    ("composition", ("rlconf.config",)),
    ("run directory", ("rlconf.experiments.rundir",)),
    # An Optuna sweep's study and trials live in its sweep directory; a run reports to its trial from below the
    # launchers (experiments.run), so tuning sits on the run directory and under everything that runs.
    ("tuning", ("rlconf.tuning",)),
    ("console", ("rlconf.experiments.console",)),
    ("build", ("rlconf.experiments.build",)),
    ("loop", ("rlconf.experiments.loop",)),
    ("run", ("rlconf.experiments.run",)),
    ("playback", ("rlconf.experiments.playback",)),
    ("experiments", ("rlconf.experiments",)),  # the package's own names, re-exported from its floors below
    ("launch", ("rlconf.launch",)),
    ("analysis", ("rlconf.analysis",)),
    # compose -> check -> plan: what the command line and the API check and prepare before a run or sweep starts.
    ("pipeline", ("rlconf.pipeline",)),
    ("api", ("rlconf.api",)),
    # ``rlconf`` itself (its __init__.py, which re-exports the API) is on this floor; its modules are not.
    ("command line", ("rlconf.cli", "rlconf.commands", "rlconf.__main__", ROOT)),
)

MAX_LINES = 500


def modules() -> dict[str, Path]:
    """Every module of rlconf by its dotted name (a package by its own name, for its ``__init__.py``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if path.name == "__init__.py" else parts)] = path
    return found


def imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The rlconf modules that ``module`` imports, with the line of each import."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            target = _owner(name, known)
            if target is not None and target != module:
                yield target, node.lineno


def _owner(name: str, known: dict[str, Path]) -> str | None:
    """The module of rlconf that ``name`` is or lies in (``rlconf.core.State`` lies in ``rlconf.core``)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def graph() -> dict[str, dict[str, int]]:
    """importer -> {imported module: the line of its first import}."""
    known = modules()
    edges: dict[str, dict[str, int]] = {module: {} for module in known}
    for module, path in known.items():
        for target, line in imported(module, path, known):
            edges[module].setdefault(target, line)
    return edges


def floor(module: str) -> int:
    """The index in LAYERS of the floor ``module`` is on (its longest listed name); a KeyError if none."""
    best, index = "", None
    for level, (_, names) in enumerate(LAYERS):
        for name in names:
            inside = module == name or (name != ROOT and module.startswith(name + "."))
            if inside and len(name) > len(best):
                best, index = name, level
    if index is None:
        raise KeyError(module)
    return index


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Each group of modules that import each other round (a strongly connected component of more than one
    module, Tarjan's algorithm), as one circle through it: ``a -> b -> c -> a`` (the group may hold more circles,
    through more of its modules: ``groups``)."""
    return [_round(group, edges) for group in groups(edges)]


def groups(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The modules of each circle or knot of circles, sorted (Tarjan's strongly connected components)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(edges.get(module, {})):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(edges):
        if module not in order:
            visit(module)
    return found


def _round(group: list[str], edges: dict[str, dict[str, int]]) -> list[str]:
    """A circle through ``group``'s first module, found breadth first within the group: [a, b, ..., a]."""
    start, members = group[0], set(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for target in sorted(edges[module]):
                if target == start:
                    path = [module]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target in members and target not in came_from:
                    came_from[target] = module
                    following.append(target)
        frontier = following
    return [*group, start]  # not reached: a strongly connected group has a circle through each member


def test_every_module_is_on_a_floor():
    unplaced = []
    for module in modules():
        try:
            floor(module)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, f"modules on no floor of LAYERS (add them to tests/test_layers.py): {unplaced}"


def test_no_import_circle():
    edges = graph()
    found = [" -> ".join(circle) + "  (" + ", ".join(
        f"{_file(a)}:{edges[a][b]}" for a, b in zip(circle, circle[1:], strict=False)) + ")"
        + (f"; knotted with it: {', '.join(sorted(set(group) - set(circle)))}" if set(group) - set(circle) else "")
        for group, circle in zip(groups(edges), circles(edges), strict=True)]
    assert not found, "import circles:\n" + "\n".join(found)


# Every module of the packages whose specs the registry imports by name, each imported first in a fresh rlconf:
# those imports are made at run time (importlib), so the graph above cannot see a circle they close.
IMPORT_EACH_FIRST = """
import importlib, pkgutil, sys
import rlconf.agents, rlconf.environments
names = sorted({m.name for pkg in (rlconf.agents, rlconf.environments)
                for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")})
for name in names:
    for loaded in [m for m in sys.modules if m == "rlconf" or m.startswith("rlconf.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ImportError as error:
        print(f"{name}: {error}")
print(f"imported {len(names)} modules")
"""


def test_every_agent_and_environment_module_imports_on_its_own():
    """``from rlconf.agents.ppo import PPO`` as a script's first line: the module's spec registers itself, and
    registering must not import the other spec modules while this one is half-imported."""
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH_FIRST], capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("imported ") and int(lines[-1].split()[1]) > 50, done.stdout
    assert lines[:-1] == [], "modules that fail to import first:\n" + "\n".join(lines[:-1])


def test_no_import_runs_upward():
    upward = []
    for module, targets in graph().items():
        for target, line in sorted(targets.items()):
            if floor(target) > floor(module):
                upward.append(f"{_file(module)}:{line}: {module} ({LAYERS[floor(module)][0]}) imports {target} "
                              f"({LAYERS[floor(target)][0]}, a higher floor)")
    assert not upward, "imports from a lower floor to a higher one:\n" + "\n".join(upward)


def test_no_file_over_500_lines():
    long = {str(path.relative_to(PACKAGE.parent)): len(path.read_text().splitlines())
            for path in modules().values()}
    over = {name: lines for name, lines in sorted(long.items()) if lines > MAX_LINES}
    assert not over, f"files in rlconf/ over {MAX_LINES} lines: {over}"


@pytest.mark.parametrize(("edges", "expected"), [
    ({"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}}, [["a", "b", "c", "a"]]),
    ({"a": {"b": 1}, "b": {}, "c": {"b": 1}}, []),
    ({"a": {"b": 1}, "b": {"a": 1, "c": 1}, "c": {"d": 1}, "d": {"c": 1}}, [["a", "b", "a"], ["c", "d", "c"]]),
])
def test_circles_are_found_and_named(edges, expected):
    """The checker itself: a circle is named through its modules; a one-way chain is none."""
    assert sorted(circles(edges)) == expected


def test_every_kind_of_import_is_read(tmp_path):
    """The reader itself: relative imports resolved, ``from pkg import submodule`` as the submodule, a name as
    its module, and an import inside a function as much as one at the top."""
    source = ("from . import sibling\nfrom ..top import thing\nimport pkg.other as other\n\n\n"
              "def later():\n    from pkg.sub.sibling import name\n")
    (tmp_path / "mod.py").write_text(source)
    known = dict.fromkeys(["pkg", "pkg.top", "pkg.other", "pkg.sub", "pkg.sub.mod", "pkg.sub.sibling"], Path())
    found = sorted(imported("pkg.sub.mod", tmp_path / "mod.py", known))
    assert found == [("pkg.other", 3), ("pkg.sub.sibling", 1), ("pkg.sub.sibling", 7), ("pkg.top", 2)]


def _file(module: str) -> str:
    return str(modules()[module].relative_to(PACKAGE.parent))
