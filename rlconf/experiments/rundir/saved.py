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

Crafted files must not hang or exhaust rlconf either, so every file is read within budgets: at most
``MAX_FILE_BYTES`` (rlconf.files); YAML's aliases (a "billion laughs" nests aliases of aliases, a few hundred bytes that
expand to 9^9 values) may expand the document to at most ``MAX_VALUES`` values, counted on the composed
nodes before anything is built; nesting at most ``MAX_DEPTH`` levels (JSON's and YAML's parsers recurse).
And every value a reader uses is checked against its file's schema (``SUMMARY_SCHEMA``, ``STATUS_SCHEMA``,
``PROVENANCE_SCHEMA``, ``CHECKPOINT_SCHEMA``: ``conform``), so a list where a mapping belongs, or
``steps: "abc"``, is one line too; and the sizes a checkpoint records for the logs beside it are checked against
those files (``check_recorded_sizes``) before a resume cuts them back to them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlconf.errors import ConfigError
from rlconf.files import MAX_DEPTH, load_json, read_bounded

# Hydra settings a sweep's multirun.yaml may carry back into ``-m resume=SWEEP``: the launcher's and the
# sweeper's parameters (partition, time limit, trials), never a ``_target_`` among them.
SWEEP_HYDRA_KEYS = ("hydra.launcher.", "hydra.sweeper.")
INTERPOLATION = "${"
# How many values a YAML file may expand to (rlconf's own: a few hundred); its size and depth are bounded as
# every file rlconf reads back is (rlconf.files: MAX_FILE_BYTES, MAX_DEPTH).
MAX_VALUES = 100_000
CHECKPOINT_FORMAT = 3  # 1: agent, steps, episodes (and replay); 2: adds what resuming needs; 3: tensors and
#                        plain data only (loads with torch.load(weights_only=True))
CHECKPOINT_FORMATS = range(1, CHECKPOINT_FORMAT + 1)  # those this rlconf reads (it resumes only the last)


def load_yaml(path: Path) -> Any:
    """The plain data (dicts, lists, strings, numbers) of a YAML file, or a ConfigError in one line."""
    text = read_bounded(path)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()  # composed only: an alias is a reference to its anchor's node yet
        if node is None:
            return None
        _check_expansion(node, path)
        return loader.construct_document(node)
    except RecursionError:
        raise ConfigError(f"{path}: nested more than {MAX_DEPTH} levels deep; rlconf reads at most that") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or type(error).__name__
        tags = "; rlconf reads a run's files as plain data (no tags)" if isinstance(
            error, yaml.constructor.ConstructorError) else ""
        raise ConfigError(f"{path}: not valid YAML{where} ({' '.join(str(problem).split())}){tags}") from None
    finally:
        loader.dispose()


def _check_expansion(root: yaml.Node, path: Path) -> None:
    """A ConfigError unless the document of the composed ``root`` expands to at most MAX_VALUES values,
    MAX_DEPTH levels deep, with no alias inside its own anchor (a cycle). Each node's expanded size is counted
    once (an alias reuses its anchor's node), so a billion laughs is refused after a few hundred steps."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise ConfigError(f"{path}: nested more than {MAX_DEPTH} levels deep; rlconf reads at most that")
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in open_nodes:
            raise ConfigError(f"{path}: an alias refers to the value that holds it (a cycle); rlconf writes no "
                              "aliases and reads none that loop")
        open_nodes.add(id(node))
        children = (node.value if isinstance(node, yaml.SequenceNode) else
                    [part for pair in node.value for part in pair] if isinstance(node, yaml.MappingNode) else [])
        total = 1 + sum(size(child, depth + 1) for child in children)
        open_nodes.discard(id(node))
        if total > MAX_VALUES:
            raise ConfigError(f"{path}: its aliases expand it to more than {MAX_VALUES:,} values; rlconf writes "
                              f"no aliases and reads at most {MAX_VALUES:,} values from a file")
        sizes[id(node)] = total
        return total

    size(root, 0)


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


# -- schemas: what each file's values must be ---------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    """What one key of a file may hold: values of ``kinds`` (``bool`` is not an ``int`` here) for which
    ``ok`` holds; ``allowed`` says so in the refusal."""

    kinds: tuple[type, ...]
    allowed: str
    ok: Callable[[Any], bool] = lambda value: True

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) and bool not in self.kinds:
            return False
        return isinstance(value, self.kinds) and self.ok(value)


COUNT = Field((int,), "a whole number >= 0", lambda value: value >= 0)
# A result (a return, a mean) is any number: nan is a result too (an environment's nan reward), and where one
# is shown or compared it stays a number. Counters and clocks are judged further (COUNT, SECONDS, STEP).
NUMBER = Field((int, float), "a number")
MAYBE_NUMBER = Field((int, float, type(None)), "a number or null")
SECONDS = Field((int, float), "a number of seconds >= 0", lambda value: math.isfinite(value) and value >= 0)
STEP = Field((int, float), "a step (a number >= 0, or Infinity)", lambda value: value >= 0)  # inf: never
TEXT = Field((str,), "text")
MAYBE_TEXT = Field((str, type(None)), "text or null")
JOB_ID = Field((str, int, type(None)), "a job id (text or a number) or null")
MAPPING = Field((dict,), "a mapping")
MAYBE_MAPPING = Field((dict, type(None)), "a mapping or null")
NUMBERS = Field((list, tuple), "a list of numbers", lambda value: all(NUMBER.accepts(v) for v in value))
TEXTS = Field((list, tuple), "a list of text", lambda value: all(isinstance(v, str) for v in value))
TEXT_TO_TEXT = Field((dict,), "a mapping of names to text",
                     lambda value: all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()))
MAPPINGS = Field((dict,), "a mapping of names to mappings", lambda value: all(isinstance(v, dict)
                                                                              for v in value.values()))
MAPPING_LIST = Field((list, tuple), "a list of mappings", lambda value: all(isinstance(v, dict) for v in value))

Schema = dict[str, Field]

# summary.json: what a finished (or pruned) run reports; rlconf status, plot, sweep.csv and resume read it.
SUMMARY_SCHEMA: Schema = {
    "state": TEXT, "agent": TEXT, "env": TEXT, "seed": Field((int,), "a whole number"), "steps": COUNT,
    "episodes": COUNT, "test_return_mean": MAYBE_NUMBER, "test_return_std": MAYBE_NUMBER, "test_returns": NUMBERS,
    "test_episodes": COUNT, "pruned_at_step": COUNT, "pruned_eval_return": NUMBER, "resumes": COUNT,
    "run_dir": TEXT, "wall_seconds": SECONDS, "stop_reason": TEXT}
PID = Field((int, type(None)), "a process id or null", lambda value: value is None or value >= 0)
# status.json: where a run stands (written every few seconds while it trains); rlconf status reads it.
STATUS_SCHEMA: Schema = {
    "state": TEXT, "updated": SECONDS, "host": MAYBE_TEXT, "pid": PID, "slurm_job_id": JOB_ID, "steps": COUNT,
    "total_steps": COUNT, "episodes": COUNT, "last_return": MAYBE_NUMBER, "phase": TEXT, "test_episodes": COUNT,
    "test_episodes_done": COUNT, "error": TEXT, "signal": TEXT, "resumes": COUNT, "stop_reason": TEXT}
# job.json: how a sweep's launcher queued the run (its log, its Slurm job); rlconf status reads it.
JOB_SCHEMA: Schema = {
    "log": TEXT, "slurm_job_id": JOB_ID, "launcher": TEXT, "launcher_host": MAYBE_TEXT, "launcher_pid": PID,
    "job": COUNT, "overrides": TEXTS}
# provenance.json: what made the run; rerun= compares today's code and packages with it.
PROVENANCE_SCHEMA: Schema = {
    "rlconf": TEXT, "code": MAPPINGS, "python": TEXT, "packages": TEXT_TO_TEXT, "overrides": TEXTS,
    "resumes": MAPPING_LIST}
# checkpoint.pt (and best.pt, checkpoint-STEP.pt): the loop's counters beside the agent's tensors.
CHECKPOINT_SCHEMA: Schema = {
    "format": Field((int,), f"one of the formats this rlconf reads: {', '.join(map(str, CHECKPOINT_FORMATS))}",
                    lambda value: value in CHECKPOINT_FORMATS),
    "agent": MAPPING, "steps": COUNT, "episodes": COUNT, "last_return": MAYBE_NUMBER, "best_return": MAYBE_NUMBER,
    "best_eval": MAYBE_NUMBER, "eval_return": NUMBER, "train_seconds": SECONDS, "eval_seconds": SECONDS,
    "next_eval": STEP,
    "next_checkpoint": STEP, "resumes": COUNT, "rng": MAPPING, "logger": MAPPING, "replay": MAPPING,
    "learners": MAPPING_LIST, "config": MAYBE_MAPPING}
# A logger backend's part of a checkpoint's ``logger`` (rlconf.logging: CSVLogger's, TensorBoard's, W&B's).
SIZES = Field((dict,), "a mapping of file names to sizes in bytes (whole numbers >= 0)",
              lambda value: all(isinstance(k, str) and COUNT.accepts(v) for k, v in value.items()))
LOGGER_SCHEMA: Schema = {"sizes": SIZES, "recent": NUMBERS, "step": COUNT}


def conform(data: Any, schema: Schema, where: Path | str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """``data`` unchanged when it is a mapping whose keys of ``schema`` hold what the schema allows (and
    which has every ``required`` key), else a ConfigError naming ``where``, the key, its value and what is
    allowed (``where`` may be empty: the caller names the file). Keys the schema does not name pass: a newer
    rlconf may write more."""
    prefix = f"{where}: " if where else ""
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix}holds {_kind(data)}; rlconf writes a mapping of its keys there")
    for key in required:
        if key not in data:
            raise ConfigError(f"{prefix}has no {key!r}; rlconf writes it in every such file")
    for key, field in schema.items():
        if key in data and not field.accepts(data[key]):
            raise ConfigError(f"{prefix}{key}={_shown(data[key])}; allowed: {field.allowed}")
    return data


def read_record(path: Path, schema: Schema) -> dict[str, Any] | None:
    """A JSON record of a run directory checked against its ``schema`` (``SUMMARY_SCHEMA``, ``STATUS_SCHEMA``,
    ``PROVENANCE_SCHEMA``); None when there is none, a ConfigError in one line when it is not what rlconf writes."""
    if not path.exists():
        return None
    return conform(load_json(path), schema, path)


def check_sweep_summaries(sweep_dir: Path) -> None:
    """A ConfigError in one line for the first run of a sweep directory whose summary.json is not as
    ``SUMMARY_SCHEMA`` wants it: checked before ``-m resume=SWEEP`` launches, because the launcher reads each
    run's summary (finished runs are skipped) deep inside Hydra's launch, where an error is a traceback."""
    for path in sorted(Path(sweep_dir).glob("*/summary.json")):
        read_record(path, SUMMARY_SCHEMA)


def check_recorded_sizes(logger: dict[str, Any], run_dir: Path) -> None:
    """A ConfigError in one line unless every log file a checkpoint's ``logger`` state records (each
    backend's ``sizes``: file name -> bytes) is a plain name in ``run_dir`` at least that long. A resume cuts
    each file back to its recorded size; a size beyond the file would instead extend it (a recorded 10^12
    bytes: a terabyte-long sparse file that ``rlconf plot`` then reads), and no checkpoint rlconf writes records
    more than its files hold: the logs only grow after it, or are cut back to it."""
    for backend, state in logger.items():
        conform(state, LOGGER_SCHEMA, f"logger.{backend}")
        for name, size in state.get("sizes", {}).items():
            if Path(name).name != name or name in ("", ".", ".."):
                raise ConfigError(f"logger.{backend}.sizes names {name!r}; allowed: the name of a log file "
                                  "in the run directory")
            try:
                actual = (run_dir / name).stat().st_size if (run_dir / name).exists() else 0
            except OSError:
                actual = 0
            if size > actual:
                raise ConfigError(f"it records {name} as {size:,} bytes long, but the file holds {actual:,}; a "
                                  "checkpoint never records more than its logs hold (altered?): not resumed")


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def _shown(value: Any) -> str:
    """A value as a refusal shows it: text quoted, numbers as JSON writes them, a container by its length."""
    if isinstance(value, dict | list | tuple):
        return f"<{type(value).__name__} of {len(value)}>"
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."
