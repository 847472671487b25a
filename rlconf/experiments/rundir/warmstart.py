"""Warm starts: ``init=RUN_DIR[:best|last|STEP]`` begins a new run from another run's network weights.

The new run has its own directory, config and counters (step 0, fresh schedules, an empty replay); only the
networks of its agent start from the other run's checkpoint: every approximation's model and target network,
and with ``init.optimizer=true`` its optimiser state too. The body's running statistics go with the networks
(``body.normalize_observations``, ``normalize_rewards``): the weights learned from inputs scaled by them, so
both runs must keep them, or neither. The checkpoint is read as tensors and plain data
(``weights_only``), like every file of a run directory; nothing of the other run's config is used. A network
that does not fit (another architecture, another observation or action space) is refused in one line naming
the layer and both shapes, before the run directory is made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rlconf.errors import ConfigError, first_line
from rlconf.experiments.rundir.checkpoint import checkpoint_path, load_checkpoint
from rlconf.experiments.rundir.directory import check_trained_run

WHICH = ("best", "last")


def source(value: str) -> tuple[Path, str]:
    """``RUN_DIR[:best|last|STEP]`` as (run directory, which checkpoint); a one-line ConfigError when it names
    no checkpoint."""
    folder, colon, which = value.rpartition(":")
    if not colon or not (which in WHICH or which.isdigit()):
        folder, which = value, "last"
    try:
        return check_trained_run(folder), which
    except ValueError as error:
        raise ConfigError(f"init={value}: {error}") from None


def warm_start(agent, value: str, optimizer: bool) -> list[str]:
    """Load the networks of the checkpoint ``value`` names into ``agent`` (and their optimisers' state with
    ``optimizer``); returns the networks' names. A ConfigError in one line when they do not fit."""
    folder, which = source(value)
    try:
        path = checkpoint_path(folder, which)
        their_agent = load_checkpoint(path, map_location="cpu")["agent"]
    except ValueError as error:
        raise ConfigError(f"init={value}: {error}") from None
    theirs = networks(their_agent)
    live = agent.state_dict()
    carry_statistics(their_agent, live, value)
    mine = networks(live)
    for name, state in mine.items():
        if name not in theirs:
            raise ConfigError(f"init={value}: that run's agent has no network {name!r} (it has: "
                              f"{', '.join(theirs) or 'none'}); a warm start needs the same networks")
        for part in ("model", "target"):
            state[part] = fitted(theirs[name][part], state[part], f"{name}.{part}", value)
        if optimizer:
            if "optimizer" not in theirs[name]:
                raise ConfigError(f"init={value}: {name} has no optimiser state there; leave out init.optimizer")
            if "optimizer" in state and _kind(theirs[name]["optimizer"]) != _kind(state["optimizer"]):
                raise ConfigError(f"init={value}: {name} was trained by another optimiser there "
                                  "(approximation.optimizer); its state fits only the same one: choose it, or leave "
                                  "out init.optimizer")
            state["optimizer"] = theirs[name]["optimizer"]
    try:
        agent.load_state_dict(live)
    except (ValueError, KeyError, RuntimeError) as error:  # an optimiser of other parameter groups
        raise ConfigError(f"init={value}: {first_line(error)}") from None
    return list(mine)


def _kind(optimizer_state: dict[str, Any]) -> tuple:
    """What tells one optimiser's state from another's: its settings' names (RMSprop's alpha, SGD's nesterov,
    the Nature RMSProp's decay) and whether its weight decay is decoupled (AdamW's, beside Adam's same names)."""
    groups = optimizer_state.get("param_groups") or [{}]
    return frozenset(groups[0]) - {"params", "initial_lr"}, groups[0].get("decoupled_weight_decay")


STATISTICS = {"observation_statistics": "body.normalize_observations", "reward_statistics": "body.normalize_rewards"}


def carry_statistics(theirs: dict[str, Any], mine: dict[str, Any], value: str) -> None:
    """The bodies' running statistics of ``theirs`` into ``mine`` (agent states, players' nested); a one-line
    ConfigError when one run keeps statistics the other does not."""
    for key, setting in STATISTICS.items():
        if (key in theirs) != (key in mine):
            there, here = ("true", "false") if key in theirs else ("false", "true")
            raise ConfigError(f"init={value}: that run has {setting}={there}, this one {setting}={here}: its networks "
                              "learned from inputs scaled otherwise; a warm start needs the same setting")
        if key in mine:  # the tensors checked for shape; the count too (it weighs what comes next)
            mine[key] = {**fitted(theirs[key], mine[key], key, value), "count": theirs[key]["count"]}
    for key, state in mine.items():
        if key not in STATISTICS and isinstance(state, dict) and isinstance(theirs.get(key), dict):
            carry_statistics(theirs[key], state, value)


def networks(agent_state: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """The approximations' states inside an agent's state, by their path (``q``, ``actor``, ``learners.0.q``):
    the dictionaries that hold a ``model`` and a ``target``."""
    found: dict[str, dict[str, Any]] = {}
    for key, value in agent_state.items():
        if not isinstance(value, dict):
            continue
        if "model" in value and "target" in value:
            found[f"{prefix}{key}"] = value
        else:
            found.update(networks(value, f"{prefix}{key}."))
    return found


def fitted(theirs: Any, mine: Any, name: str, value: str) -> Any:
    """``mine`` with every tensor taken from ``theirs``, where the layers have the same names and shapes (counters
    and other plain values stay this run's: a fresh start); else a ConfigError naming the layer."""
    if isinstance(mine, dict):
        if not isinstance(theirs, dict):
            raise ConfigError(f"init={value}: {name} is not a network there: the networks do not fit")
        for layer in mine.keys() ^ theirs.keys():
            where = "there" if layer in theirs else "here"
            raise ConfigError(f"init={value}: {name} has layer {layer} only {where}: the networks do not fit")
        return {key: fitted(theirs[key], mine[key], f"{name}.{key}", value) for key in mine}
    if isinstance(mine, torch.Tensor):
        if not isinstance(theirs, torch.Tensor) or tuple(theirs.shape) != tuple(mine.shape):
            shape = list(theirs.shape) if isinstance(theirs, torch.Tensor) else type(theirs).__name__
            raise ConfigError(f"init={value}: layer {name} is {shape} there and {list(mine.shape)} here: "
                              "the networks do not fit")
        return theirs
    return mine
