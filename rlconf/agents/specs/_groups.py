"""Per-group settings of the team agents: ``agent.groups.<group>.<key>`` gives one group of a team its own value
of any of its agent's settings (``+agent.groups.adversary.lr=1e-4`` on env=mpe/simple_adversary), the others
keeping the agent's. The keys the whole team shares (its update cadence, counted on one clock) are refused there
in one line, as is a group the environment does not have (checked where the groups are known: the build)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from rlconf.errors import ConfigError
from rlconf.schema import check_nested


@dataclass(kw_only=True)
class PerGroup:
    """A team agent's Config mixin: ``groups`` maps a group's name to its own values of the Config's keys."""

    groups: dict  # group name -> {key: value}
    # Settings every group shares: the team's clock counts them (update cadence, warm-up).
    TEAM_WIDE: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self):
        parent = getattr(super(), "__post_init__", None)
        if parent is not None:
            parent()
        self.groups = dict(self.groups or {})
        for name in self.groups:
            self.for_group(name)  # each group's values checked now, as they were written

    def for_group(self, name: str) -> Any:
        """The Config of group ``name``: the agent's, with the group's own values (a ConfigError, one line, for
        a key the Config lacks, a bad value, or a key the whole team shares)."""
        values = self.groups.get(name) or {}
        prefix = f"agent.groups.{name}."
        if not isinstance(values, Mapping):
            raise ConfigError(f"agent.groups.{name}={values!r}: a group's own settings, e.g. "
                              f"+agent.groups.{name}.lr=1e-4")
        shared = [key for key in values if key in (*self.TEAM_WIDE, "groups")]
        if shared:
            raise ConfigError(f"{prefix}{shared[0]}: every group of the team shares it (one clock counts it); "
                              f"allowed: agent.{shared[0]}")
        if not values:
            return self
        base = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "groups"}
        return check_nested(type(self), {**base, **dict(values), "groups": {}}, prefix)

    def check_group_names(self, groups: Iterable[str], env: str) -> None:
        """A ConfigError, one line, for a group in ``agent.groups`` that env ``env``'s ``groups`` lack."""
        known = list(groups)
        unknown = [name for name in self.groups if name not in known]
        if unknown:
            raise ConfigError(f"agent.groups.{unknown[0]}: env={env} has no group {unknown[0]!r}; allowed: "
                              f"{', '.join(known)}")
