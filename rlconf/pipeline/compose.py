"""The compose step for one run from Python (``rlconf.compose``): the overrides checked as ``rlconf run`` checks
them (``check.check_run``), composed and validated, and recorded with the config they made, which
``rlconf.train`` writes to the run's overrides.yaml so that ``resume=`` composes the same run again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlconf.pipeline.check import check_run

if TYPE_CHECKING:
    from omegaconf import DictConfig

_OVERRIDES = "_rlconf_overrides"  # an attribute of the DictConfig object, not a key: its YAML is the run's config


def compose_run(overrides: list[str], config_dirs: list[str]) -> DictConfig:
    """The config ``rlconf run OVERRIDES`` would train, checked: a ConfigError names a bad key or value."""
    from rlconf.config import compose, validate

    checked = check_run(overrides, config_dirs, multirun=False)
    cfg = compose(checked.overrides, config_dirs)
    validate(cfg)
    # Recorded on the object itself: a copy (or a config made otherwise) has none, as it may differ.
    object.__setattr__(cfg, _OVERRIDES, tuple(checked.overrides))
    return cfg


def recorded_overrides(cfg: DictConfig) -> list[str]:
    """The overrides ``compose_run`` made ``cfg`` from (none for a config made otherwise, or a copy)."""
    return list(vars(cfg).get(_OVERRIDES, ()))
