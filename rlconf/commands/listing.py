"""``rlconf list``: each config group's options with the line that describes each (``rlconf list GROUP``: one
group), the agents grouped by what they play and how they learn, the optimisers and learning-rate schedules
under the approximation group, and ``rlconf list components``: what the registry holds, plugins included.
Nothing here imports torch: the answer comes at once."""

from __future__ import annotations

from rlconf import registry
from rlconf.errors import UsageError
from rlconf.optim.choice import described
from rlconf.pipeline.groups import HIDDEN_GROUPS, group_options, search_dirs


def list_options(args: list[str], config_dirs: list[str]) -> int:
    """``rlconf list [GROUP | components]``, printed."""
    groups = {g: o for g, o in group_options(search_dirs(config_dirs)).items() if g not in HIDDEN_GROUPS}
    if args and args[0] == "components":
        return list_components()
    if args:
        name = args[0]
        if name not in groups:
            raise UsageError(registry.unknown_message("group", name, sorted(groups) + ["components"]))
        groups = {name: groups[name]}
    for group, options in sorted(groups.items()):
        print(f"{group}:")
        width = max(len(o) for o in options)
        if group == "agent":  # many kinds of agent: grouped by what they play and how they learn
            _print_agents(options, width)
            continue
        _print_rows(sorted(options.items()), "  ", width)
        if group == "approximation":  # the group's keys that choose how its networks are optimised
            for key, rows in described().items():
                print(f"  {key}=")
                _print_rows(rows, "    ")
    return 0


def _print_rows(rows: list[tuple[str, str]], indent: str, width: int | None = None) -> None:
    """A name and its description a line, the descriptions aligned (at ``width``, or the longest name's)."""
    width = max((len(name) for name, _ in rows), default=0) if width is None else width
    for name, text in rows:
        print(f"{indent}{name:<{width}}  {text}")


def _print_agents(options: dict[str, str], width: int) -> None:
    headings = list(registry.AGENT_GROUPS)
    by_group: dict[str, list[str]] = {}
    for option in sorted(options):
        by_group.setdefault(registry.agent_group(option), []).append(option)
    for heading in sorted(by_group, key=lambda h: (headings.index(h) if h in headings else len(headings), h)):
        print(f"  {heading}:")
        members = registry.AGENT_GROUPS.get(heading, ())
        for option in sorted(by_group[heading], key=lambda o: (members.index(o) if o in members else len(members), o)):
            print(f"    {option:<{width}}  {options[option]}")


def list_components() -> int:
    """``rlconf list components``: every registered component of each kind, with its description."""
    registry.load_plugins()
    for kind in registry.KINDS:
        print(f"{kind}:")
        _print_rows(registry.describe(kind), "  ")
    for key, rows in described().items():
        print(f"{key.rpartition('.')[2]}:")
        _print_rows(rows, "  ")
    return 0
