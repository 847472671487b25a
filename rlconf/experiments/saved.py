"""A run directory's own files, read as data and nothing more.

People download and share run directories to evaluate, watch, resume or fine-tune them, so what such a
directory holds is untrusted input. ``rlconf eval``, ``watch``, ``run resume=DIR`` (and ``-m resume=SWEEP``),
``plot`` and ``status`` read its YAML only through this module, which:

- parses with YAML's safe loader: tags such as ``!!python/object`` are refused, nothing is constructed;
- refuses interpolations (``${oc.env:SECRET}``, ``${anything}``): rlconf writes resolved configs, so an
  interpolation in a run's file was put there by hand, and resolving it could read the environment or call
  a resolver;
- refuses ``_target_`` keys (Hydra and the registry would import and call what they name) and, in a run's
  overrides, Hydra's own settings (``hydra.callbacks...`` would be instantiated by Hydra);
- imports nothing: a run's ``plugins`` (and an agent's ``_target_``) are imported only when the user names
  those modules again on the command line (``check_plugins``).

Every refusal is one ``ConfigError`` line naming the file, the key and what is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rlconf.errors import ConfigError

# Hydra settings a sweep's multirun.yaml may carry back into ``-m resume=SWEEP``: the launcher's and the
# sweeper's parameters (partition, time limit, trials), never a ``_target_`` among them.
SWEEP_HYDRA_KEYS = ("hydra.launcher.", "hydra.sweeper.")
INTERPOLATION = "${"


def load_yaml(path: Path) -> Any:
    """The plain data (dicts, lists, strings, numbers) of a YAML file, or a ConfigError in one line."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read ({type(error).__name__})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or type(error).__name__
        tags = "; rlconf reads a run's files as plain data (no tags)" if isinstance(
            error, yaml.constructor.ConstructorError) else ""
        raise ConfigError(f"{path}: not valid YAML{where} ({' '.join(str(problem).split())}){tags}") from None


def read_config(path: Path, importable: list[str] | None = None, how: str = "") -> dict[str, Any]:
    """A run's config.yaml: a mapping of plain values, with no interpolation and no ``hydra`` key.

    ``importable``: the modules the user named on the command line, when the caller will build what the
    config describes; a ``_target_`` (an agent given by import path) must then lie in one of them, and ``how``
    says how to name one. None: the caller only compares the values, and imports nothing."""
    data = load_yaml(path)
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: not a run's config (rlconf writes a mapping of its keys there)")
    if "hydra" in data:
        raise ConfigError(f"{path}: holds a hydra key; a run's config.yaml never does, and Hydra's settings are "
                          "not taken from a run directory")
    _refuse_code(data, path, "", importable, how)
    env_id = str((data.get("env") or {}).get("id", "")) if isinstance(data.get("env"), dict) else ""
    if importable is not None and ":" in env_id and not _within(env_id.partition(":")[0], importable):
        module = env_id.partition(":")[0]  # gymnasium imports the module of a "module:Env-v0" id
        raise ConfigError(f"{path}: env.id={env_id} imports {module}; rlconf imports a run's code only when you "
                          f"name its module: add {how.format(module)}")
    return data


def read_overrides(path: Path, hydra_keys: tuple[str, ...] = ()) -> list[str]:
    """A run's overrides.yaml (or a sweep's saved overrides): a list of ``key=value`` strings without
    interpolations or ``_target_``; Hydra's own settings only under ``hydra_keys`` prefixes."""
    data = load_yaml(path)
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(line, str) for line in data):
        raise ConfigError(f"{path}: not a list of overrides (key=value lines)")
    return check_overrides(data, path, hydra_keys)


def check_overrides(lines: list[str], path: Path, hydra_keys: tuple[str, ...] = ()) -> list[str]:
    """``lines`` unchanged, or a ConfigError for the first one a run directory may not carry."""
    for line in lines:
        key, _, value = line.partition("=")
        key = key.lstrip("+~")
        if key.split(".")[0].split("/")[0] == "hydra" and not key.startswith(hydra_keys):
            allowed = f"only {', '.join(k + '*' for k in hydra_keys)}" if hydra_keys else "none"
            raise ConfigError(f"{path}: {key} is a Hydra setting; a run directory's files may not set "
                              f"Hydra's settings (allowed: {allowed})")
        if "_target_" in key.split("."):
            raise ConfigError(f"{path}: {key} names code to import; a run directory's files may not")
        if INTERPOLATION in value:
            raise ConfigError(f"{path}: {key}={value} is an interpolation; rlconf does not resolve "
                              "interpolations from a run directory (give the value itself)")
    return lines


def check_plugins(saved: Any, given: list[str] | None, what: str, how: str) -> None:
    """A ConfigError in one line unless the user named every plugin the run was launched with (``saved``)
    on the command line (``given``). ``what``: the run; ``how``: how to name them, e.g. ``--plugins a,b``."""
    saved = saved if isinstance(saved, list) else [saved] if saved else []
    missing = [str(p) for p in saved if p not in (given or [])]
    if missing:
        raise ConfigError(f"{what} was launched with plugins={','.join(map(str, saved))}; rlconf imports a run's "
                          f"plugins only when you name them: add {how.format(','.join(map(str, saved)))}")


def _refuse_code(node: Any, path: Path, prefix: str, importable: list[str] | None, how: str) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "_target_" and importable is not None and not _within(str(value), importable):
                module = str(value).rpartition(".")[0] or str(value)
                raise ConfigError(f"{path}: {prefix}_target_={value} imports {module}; rlconf imports a run's code "
                                  f"only when you name its module: add {how.format(module)}")
            _refuse_code(value, path, f"{prefix}{key}.", importable, how)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _refuse_code(value, path, f"{prefix.rstrip('.')}[{i}].", importable, how)
    elif isinstance(node, str) and INTERPOLATION in node:
        raise ConfigError(f"{path}: {prefix.rstrip('.')}={node} is an interpolation; rlconf does not resolve "
                          "interpolations from a run directory (give the value itself)")


def _within(target: str, modules: list[str]) -> bool:
    """Whether the import path ``target`` lies in one of ``modules`` (or a submodule of one)."""
    return any(target == m or target.startswith(m + ".") for m in modules)
