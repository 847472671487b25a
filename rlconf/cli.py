"""The ``rlconf`` command: ``run`` composes a config with Hydra and trains; ``list`` shows the options;
``status`` tells how the runs of a sweep are doing; ``plot`` draws their learning curves and compares agents.

Bad input never reaches Hydra's launch: overrides are checked first (group options, keys, types,
values), and any problem is one line on stderr with exit status 2, before anything is written.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rlconf.paths import config_dir

if TYPE_CHECKING:  # the config module is imported where a command needs it
    from rlconf.settings import Settings

RUN_USAGE = "usage: rlconf run [-m] [--cfg {job,hydra,all}] [--config-dir DIR] [--hydra-help] key=value ..."
USAGE = f"""{RUN_USAGE}
       rlconf list [GROUP | components]
       rlconf status DIR [--lines N]   (a run, a sweep, or a folder of them)
       rlconf eval RUN_DIR [--episodes N] [--seed S] [--device D] [--plugins M,...]
       rlconf watch RUN_DIR [--episodes N] [--video OUT.mp4] [--fps F] [--seed S] [--device D] [--plugins M,...]
       rlconf export RUN_DIR --format torchscript|onnx [--out FILE] [--checkpoint best|last|STEP]
       rlconf plot RUNS_DIR [--out FILE.png] [--aggregate] [--metric M] ... (rlconf plot --help)

Compose a run from config groups and train it:
  rlconf run agent=dqn env=classic/cartpole
  rlconf run agent=ppo env=classic/cartpole seed=3 steps=50000 logger=tensorboard
  rlconf run -m agent=dqn,ppo env=classic/cartpole seed=0,1,2
  rlconf run -m agent=dqn,ddqn env=classic/cartpole seed='range(5)' launcher=slurm
Continue a stopped run, or a sweep (finished runs are skipped):
  rlconf run resume=runs/<run dir>          rlconf run -m resume=runs/<sweep dir>
Evaluate a trained run's test agent again (eval.json), or watch it play (a window, or a video):
  rlconf eval runs/<run dir> --episodes 20  rlconf watch runs/<run dir> --video run.mp4
Export its greedy policy to act without rlconf (TorchScript, or ONNX for onnxruntime):
  rlconf export runs/<run dir> --format onnx
Plot learning curves across seeds; compare agents (IQM, bootstrap CIs, performance profiles):
  rlconf plot runs/<sweep dir> --aggregate  (writes plot.png and CSVs of its numbers there)

options:
  -m, --multirun        sweep over comma-separated values (Hydra's multirun)
  --cfg {{job,hydra,all}} print the composed config instead of running
  --config-dir DIR      add a folder of your own config groups (may repeat)
  -h, --help            this help (rlconf run --help: the config groups and the keys)
"""
RUN_HELP = f"""{RUN_USAGE}

Compose a run from config groups (GROUP=OPTION) and keys (key=value), check it, and train it:
  rlconf run agent=dqn env=classic/cartpole
  rlconf run agent=ppo env=classic/cartpole seed=3 steps=50000 logger=[csv,tensorboard]
  rlconf run agent=dqn env=atari/pong agent.lr=1e-4 hardware=gpu
  rlconf run -m agent=dqn,ppo env=classic/cartpole seed=0,1,2     (a sweep: a run per combination)
  rlconf run experiment=atari_pong_ppo                             (a whole setting by name: rlconf list experiment)
  rlconf run resume=runs/<run dir>                                 (go on from a stopped run's checkpoint)
  rlconf run rerun=runs/<run dir>                                  (a new run of a run's recorded config)

options:
  -m, --multirun        sweep over comma-separated values (Hydra's multirun)
  --cfg {{job,hydra,all}} print the composed config instead of running (job: every key of the run)
  --config-dir DIR      add a folder of your own config groups (may repeat)
  --hydra-help          Hydra's own help, and which of its flags rlconf run takes
  -h, --help            this help
"""
HYDRA_NOTE = """rlconf run is a Hydra application: it takes Hydra's overrides (key=value, +key=value, GROUP=OPTION,
sweeps such as seed=0,1,2 or range(5)) and, of the flags below, -m/--multirun, --cfg and --config-dir (which
may repeat); see the composed config with --cfg job (or hydra, all) where Hydra would use --info or --resolve.
Hydra's .hydra/ folder is not written: a run directory's config.yaml holds the resolved config, overrides.yaml
the overrides it was launched with, and a sweep directory's multirun.yaml Hydra's config of the sweep.
Hydra's own help follows.
"""

HIDDEN_GROUPS = {"family", "hydra"}  # set by the chosen env, and Hydra's own: never listed
IMPLICIT_GROUPS = {"preset"}  # chosen by the agent and the env's family: listed, but not offered as a choice
EXAMPLE = "agent=dqn env=classic/cartpole"  # a pair that runs anywhere in seconds, for messages
REQUIRED_GROUPS = ("agent", "env")
CFG_MODES = ("job", "hydra", "all")


def _override_prefixes() -> dict:
    from hydra.core.override_parser.types import OverrideType

    return {OverrideType.CHANGE: "", OverrideType.ADD: "+", OverrideType.FORCE_ADD: "++", OverrideType.DEL: "~"}


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2."""


def fail(message: str) -> None:
    from rlconf.errors import error_line

    print(error_line(message), file=sys.stderr)  # a token pasted into a value is not repeated
    raise SystemExit(2)


# -- config groups on disk ------------------------------------------------------------------------------
def search_dirs(extra: list[str]) -> list[Path]:
    from rlconf.config import searchpath  # the config module is imported where a command needs it

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
    """The file's first comment, with the lines its sentence was wrapped onto: a line that ends in a word
    continues on the next comment line when that starts in lower case (a usage example, a second sentence
    in capitals, or a note after a closing bracket starts something else)."""
    text = ""
    for part in _first_comment(path):
        if not text:
            text = part
        elif text[-1:].isalpha() and part[:1].islower():
            text = f"{text} {part}"
        else:
            break
    return text


def _first_sentence(path: Path) -> str:
    """The first sentence of the file's first comment, however many lines it was wrapped onto."""
    import re

    text = " ".join(_first_comment(path))
    end = re.search(r"\.\s+(?=[A-Z])", text)
    return text[: end.start() + 1] if end else text


# -- rlconf list ----------------------------------------------------------------------------------------
def cmd_list(args: list[str]) -> int:
    config_dirs = _take_config_dirs(args)
    groups = {g: o for g, o in group_options(search_dirs(config_dirs)).items() if g not in HIDDEN_GROUPS}
    if args and args[0] == "components":
        return _list_components()
    if args:
        name = args[0]
        if name not in groups:
            from rlconf.registry import unknown_message

            raise UsageError(unknown_message("group", name, sorted(groups) + ["components"]))
        groups = {name: groups[name]}
    for group, options in sorted(groups.items()):
        print(f"{group}:")
        width = max(len(o) for o in options)
        if group == "agent":  # many kinds of agent: grouped by what they play and how they learn
            _print_agents(options, width)
            continue
        for option, text in sorted(options.items()):
            print(f"  {option:<{width}}  {text}")
    return 0


def _print_agents(options: dict[str, str], width: int) -> None:
    from rlconf.registry import AGENT_GROUPS, agent_group

    headings = list(AGENT_GROUPS)
    by_group: dict[str, list[str]] = {}
    for option in sorted(options):
        by_group.setdefault(agent_group(option), []).append(option)
    for heading in sorted(by_group, key=lambda h: (headings.index(h) if h in headings else len(headings), h)):
        print(f"  {heading}:")
        members = AGENT_GROUPS.get(heading, ())
        for option in sorted(by_group[heading], key=lambda o: (members.index(o) if o in members else len(members), o)):
            print(f"    {option:<{width}}  {options[option]}")


def _list_components() -> int:
    from rlconf import registry

    registry.load_plugins()
    for kind in registry.KINDS:
        print(f"{kind}:")
        entries = registry.describe(kind)
        width = max((len(n) for n, _ in entries), default=0)
        for name, text in entries:
            print(f"  {name:<{width}}  {text}")
    return 0


# -- rlconf run -----------------------------------------------------------------------------------------
def cmd_run(args: list[str]) -> int:
    if "-h" in args or "--help" in args:
        print(run_help(_take_config_dirs(args)))
        return 0
    multirun = any(a in ("-m", "--multirun") for a in args)
    config_dirs = _take_config_dirs(args)
    if "--hydra-help" in args:
        print(HYDRA_NOTE)
        return launch(["--hydra-help"], config_dirs, multirun=False, cfg_mode=None)
    cfg_mode = _take_option(args, "--cfg")
    if cfg_mode not in (None, *CFG_MODES):  # else Hydra's argparse prints its whole usage, many lines
        raise UsageError(f"--cfg {cfg_mode}: allowed: {', '.join(CFG_MODES)}")
    overrides = [a for a in args if a not in ("-m", "--multirun")]
    for arg in overrides:
        if arg.startswith("-"):
            raise UsageError(f"unknown option {arg!r}; allowed: -m/--multirun, --cfg, --config-dir, --hydra-help, "
                             "--help")
    if multirun and cfg_mode:  # Hydra refuses the pair with a traceback
        raise UsageError(f"--cfg {cfg_mode} prints one run's config: leave out -m and give each swept key one value")
    typed = overrides
    overrides, settings = checked_run(typed, config_dirs, multirun)
    if cfg_mode:  # a YAML comment, so what --cfg prints still parses
        print(f"# preset: {applied_preset(overrides, config_dirs)}", flush=True)
    elif multirun:  # everything checked: only now is anything made on disk
        overrides, made = with_sweep_dir(overrides, typed, settings.run.logdir)
        try:
            return launch(overrides, config_dirs, multirun, cfg_mode)
        finally:
            _drop_if_empty(made)
    return launch(overrides, config_dirs, multirun, cfg_mode)


def _drop_if_empty(folder: Path | None) -> None:
    """A sweep directory made for a sweep that stopped before it began (nothing half-made is left)."""
    try:
        if folder is not None and not any(folder.iterdir()):
            folder.rmdir()
    except OSError:  # gone, or written meanwhile: left as it is
        pass


def with_sweep_dir(overrides: list[str], typed: list[str], logdir: str) -> tuple[list[str], Path | None]:
    """A new sweep's directory, made here (``rundir.make_sweep_dir``: atomic, unique) and given to Hydra as
    ``hydra.sweep.dir``, rather than Hydra's ``sweep_${now:...}``, which two sweeps started in the same second
    would share; returned with the overrides. A resumed sweep (``-m resume=SWEEP``) keeps its own directory
    and the names of its runs (``resume.keep_run_names``); None is returned for it."""
    from rlconf.errors import ConfigError
    from rlconf.experiments.rundir.directory import make_sweep_dir, write_failure
    from rlconf.experiments.rundir.resume import keep_run_names

    resume = _last_value(typed, "resume")
    try:
        if resume and resume != "null":
            keep_run_names(Path(resume), _saved_overrides(resume, True), typed)
            return overrides, None
        made = make_sweep_dir(logdir).resolve()
    except ConfigError as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(write_failure(error)) from None
    return [*overrides, f"hydra.sweep.dir={hydra_quoted(str(made))}"], made


def hydra_quoted(value: str) -> str:
    """``value`` as one Hydra override value, whatever it holds (a comma would make a path a sweep)."""
    import re

    if re.fullmatch(r"[\w./+@:-]+", value):
        return value
    # Hydra's quoted values escape a quote, and the backslashes just before a quote or the closing one.
    value = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", value)
    return "'" + re.sub(r"(\\+)$", lambda m: m.group(1) * 2, value) + "'"


def applied_preset(overrides: list[str], config_dirs: list[str]) -> str:
    """Which presets the defaults list applied, chosen silently: the family's (``${family}/${agent}``) and a
    task's (``${family}/${body}/${agent}``), each with its file: ``classic/ppo (configs/preset/classic/ppo.yaml)
    + classic/mask_velocity/ppo (...)``, or ``none`` where the run has none."""
    from rlconf.config import compose

    choices = compose(overrides, config_dirs, hydra_config=True).hydra.runtime.choices
    applied = []
    for choice in (choices.get("preset"), choices.get("preset@_global_")):
        for root in search_dirs(config_dirs):
            path = root / "preset" / f"{choice}.yaml"
            if choice and path.is_file():
                shown = path.relative_to(config_dir().parent) if root == config_dir() else path
                applied.append(f"{choice} ({shown})")
                break
    return " + ".join(applied) or "none"


def run_help(config_dirs: list[str]) -> str:
    """``rlconf run --help``: the usage, each config group with how many options it has (and a few of them),
    and the top-level keys with their defaults and what they do, read from configs/config.yaml."""
    from rlconf.registry import choices

    groups = {g: o for g, o in group_options(search_dirs(config_dirs)).items()
              if g not in HIDDEN_GROUPS | IMPLICIT_GROUPS}
    width = max(map(len, groups))
    lines = [RUN_HELP, "config groups (GROUP=OPTION; rlconf list GROUP shows every option and what it is):"]
    for group, options in sorted(groups.items(), key=lambda item: (item[0] not in REQUIRED_GROUPS, item[0])):
        shown = choices(sorted(options), "option", room=110 - width).removeprefix("available: ")
        lines.append(f"  {group:<{width}}  {shown}")
    keys = top_level_keys()
    lines += ["", "keys (key=value) and their defaults; an env's family and the agent's preset may set others (a "
              "run's own: --cfg job):"]
    width = max(len(f"{key}={default}") for key, default, _ in keys)
    lines += [f"  {f'{key}={default}':<{width}}  {text}".rstrip() for key, default, text in keys]
    lines.append(f"  {'GROUP.KEY=VALUE':<{width}}  a key of a group's option: agent.lr=1e-4, hardware.n_envs=8")
    return "\n".join(lines)


def top_level_keys() -> list[tuple[str, str, str]]:
    """The keys of configs/config.yaml outside the config groups, as ``(key, default, description)``: its
    values and the comment written beside each (nested keys dotted: ``checkpoint.replay``)."""
    import re

    import yaml

    text = (config_dir() / "config.yaml").read_text()
    values = yaml.safe_load(text)
    keys, parent = [], ""
    for line in text.splitlines():
        match = re.match(r"^( *)([A-Za-z_]\w*):([^#]*)(?:#\s*(.*))?$", line)
        if not match:
            continue
        indent, key, value, comment = match.groups()
        if not indent:
            parent = "" if value.strip() else key
            if parent:
                continue
        elif not parent or parent in ("defaults", "hydra"):
            continue
        dotted = f"{parent}.{key}" if indent else key
        default = values[parent][key] if indent else values[key]
        keys.append((dotted, _yaml_value(default), (comment or "").strip().rstrip(";")))
    return keys


def _yaml_value(value) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return "[" + ",".join(map(_yaml_value, value)) + "]" if isinstance(value, list) else str(value)


# Hydra settings that rlconf's own keys and groups replace: typed, they would be ignored or break a sweep.
REPLACED_HYDRA = {
    "hydra.run.dir": "rlconf puts each run in a folder of its own under logdir: give logdir=DIR",
    "hydra.sweep.dir": "rlconf puts each sweep under logdir: give logdir=DIR (-m resume=SWEEP_DIR continues one)",
    "hydra/launcher": "rlconf chooses Hydra's launcher with its launcher group: launcher=NAME (rlconf list launcher)",
}


def check_typed(overrides: list[str]) -> None:
    """What Hydra's parser would refuse with a traceback, or accept and ignore, said in one line first."""
    for override in overrides:
        key = _key(override)
        if not key:
            raise UsageError(f"{override}: an override needs a key: key=value (e.g. seed=3)")
        if override.startswith("~"):
            raise UsageError(f"{override}: rlconf does not delete config keys (a run's config.yaml must be complete); "
                             "set a value instead (key=value), or choose another option of a group")
        if key in REPLACED_HYDRA:
            raise UsageError(f"{override}: {REPLACED_HYDRA[key]}")
        odd = next((c for c in override if not c.isascii() or not c.isprintable()), None)
        if odd is not None and not _quoted_value(override):
            key_part, _, value = _escaped(override).partition("=")
            raise UsageError(f"{_escaped(override)}: {odd!r} is not allowed unquoted in an override; quote the "
                             f"value: {key_part}='{value}'")


def _escaped(text: str) -> str:
    """``text`` with its control characters escaped (a newline as ``\\n``): an error stays one line."""
    from rlconf.schema import CONTROL_CHARACTERS

    return CONTROL_CHARACTERS.sub(lambda m: repr(m.group())[1:-1], text)


def _quoted_value(override: str) -> bool:
    key, eq, value = override.partition("=")
    return bool(eq) and key.isascii() and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\""


def _key(override: str) -> str:
    return override.lstrip("+~").split("=", 1)[0]


def run_overrides(overrides: list[str], config_dirs: list[str], multirun: bool) -> list[str]:
    """What ``rlconf run`` (and ``rlconf.compose``) compose from the overrides typed: checked, ``init=RUN`` as
    ``init.run=RUN``, a ``rerun=``'s or ``resume=``'s saved overrides first, every value composed and validated."""
    return checked_run(overrides, config_dirs, multirun)[0]


def checked_run(overrides: list[str], config_dirs: list[str], multirun: bool) -> tuple[list[str], Settings]:
    """``run_overrides``, and the settings checked (of a sweep: its first job's)."""
    check_typed(overrides)
    overrides = [f"init.run={o.split('=', 1)[1]}" if _key(o) == "init" else o for o in overrides]
    overrides = with_resume(with_rerun(overrides, multirun), multirun)
    return precheck(overrides, config_dirs, multirun)


def with_resume(overrides: list[str], multirun: bool) -> list[str]:
    """``resume=DIR``: the overrides DIR was launched with, then those given beside ``resume`` (which replace
    any of the same key). A sweep directory (with -m) becomes the sweep's directory (``hydra.sweep.dir``),
    where each run resumes or, finished, is skipped.

    DIR's files are data (rlconf.experiments.rundir.saved): no Hydra setting but a sweep's launcher and sweeper
    parameters, no interpolation, no ``_target_``, and its plugins only when they are given here too."""
    from rlconf.errors import ConfigError
    from rlconf.experiments.rundir.resume import check_same_choice, resume_changes
    from rlconf.experiments.rundir.saved import check_sweep_summaries

    resume = [o for o in overrides if _key(o) == "resume"]
    value = resume[-1].split("=", 1)[1] if resume else ""
    if not value or value == "null":
        return overrides
    try:
        saved = _saved_overrides(value, multirun)
        if not multirun:  # before composing: the saved agent's keys would otherwise be named as unknown
            for group in ("agent", "env"):
                check_same_choice(value, group, _last_value(saved, group), _last_value(overrides, group))
        else:  # every run continues in place: nothing given may change what the runs compute
            resume_changes(value, saved, overrides)
            check_sweep_summaries(Path(value))  # the launcher reads them where an error is no longer one line
        _check_saved_plugins(saved, overrides, f"resume={value}")
    except ConfigError as error:
        raise UsageError(str(error)) from None
    given = {_key(o) for o in overrides}
    merged = [o for o in saved if _key(o) not in given | {"resume", "hydra.sweep.dir"}] + overrides
    if multirun:  # the jobs resume by their directories in the sweep directory, not by a resume key
        merged = [o for o in merged if _key(o) != "resume"] + [
            f"hydra.sweep.dir={hydra_quoted(str(Path(value).resolve()))}"]
    return merged


def with_rerun(overrides: list[str], multirun: bool) -> list[str]:
    """``rerun=DIR``: the overrides DIR was launched with (without its sweep's grid and launcher), then the keys
    given beside ``rerun``, which may only say where and how visibly the new run executes. After composing, the
    run puts DIR's recorded values back wherever today's presets differ (provenance.as_recorded)."""
    from rlconf.errors import ConfigError
    from rlconf.experiments.rundir.provenance import check_rerun_overrides

    value = _last_value(overrides, "rerun")
    if not value or value == "null":
        return overrides
    try:
        if multirun:
            raise ConfigError(f"rerun={value} repeats one run: leave out -m (-m resume=SWEEP_DIR continues a sweep)")
        saved = _saved_overrides(value, False, key="rerun")
        check_rerun_overrides(value, [o for o in overrides if _key(o) != "rerun"])
        _check_saved_plugins(saved, overrides, f"rerun={value}")
    except ConfigError as error:
        raise UsageError(str(error)) from None
    given = {_key(o) for o in overrides}
    # How visibly the first run ran is not part of what it computed: today's command line says.
    return [o for o in saved if _key(o) not in given | {"resume", "rerun", "quiet", "verbose"}] + overrides


def _check_saved_plugins(saved: list[str], overrides: list[str], what: str) -> None:
    """The plugins a run directory was launched with must be named again: its files never import code."""
    from rlconf.experiments.rundir.saved import check_plugins

    saved_plugins = _last_value(saved, "plugins")
    if saved_plugins is not None:
        given = _last_value(overrides, "plugins")
        check_plugins(_group_choices(saved_plugins), None if given is None else _group_choices(given), what,
                      "plugins=[{}]")


def _saved_overrides(value: str, multirun: bool, key: str = "resume") -> list[str]:
    """The overrides a run (or, with -m, a sweep) directory was launched with, checked as untrusted data."""
    from rlconf.experiments.rundir.resume import check_resume_dir, check_resume_sweep_dir
    from rlconf.experiments.rundir.saved import SWEEP_HYDRA_KEYS, check_overrides, load_yaml, read_overrides

    if not multirun:  # a run of a sweep resumed alone: without the sweep's named grid, launcher and trial
        from rlconf.experiments.rundir.directory import within

        lines = read_overrides(check_resume_dir(value, key) / "overrides.yaml")
        return [o for o in lines if not within(_key(o), ("sweep", "launcher", "trial"))]
    # The sweep's own overrides and its hydra.* ones (launcher settings, n_trials, ...).
    path = check_resume_sweep_dir(value) / "multirun.yaml"
    saved = load_yaml(path)
    overrides = (((saved or {}).get("hydra") or {}).get("overrides") or {}) if isinstance(saved, dict) else {}
    task, hydra = overrides.get("task") or [], overrides.get("hydra") or []
    if not isinstance(task, list) or not isinstance(hydra, list) or not all(
            isinstance(o, str) for o in (*task, *hydra)):
        raise UsageError(f"{path}: not a sweep's multirun.yaml (no list of overrides under hydra.overrides)")
    hydra = [o for o in hydra if _key(o) not in ("hydra.sweep.dir", "hydra.searchpath", "hydra.mode")]
    return check_overrides(task, path) + check_overrides(hydra, path, SWEEP_HYDRA_KEYS)


def _last_value(overrides: list[str], key: str) -> str | None:
    """The value the last override of ``key`` gives it, or None."""
    values = [o.split("=", 1)[1] for o in overrides if _key(o) == key and "=" in o]
    return values[-1] if values else None


def _take_all(args: list[str], name: str) -> list[str]:
    """Remove every ``name VALUE`` and ``name=VALUE`` from ``args``; return the values in order."""
    values = []
    i = 0
    while i < len(args):
        if args[i] == name:
            if i + 1 >= len(args):
                raise UsageError(f"{name} needs a value")
            values.append(args[i + 1])
            del args[i : i + 2]
        elif args[i].startswith(name + "="):
            values.append(args.pop(i).split("=", 1)[1])
        else:
            i += 1
    return values


def _take_option(args: list[str], name: str) -> str | None:
    values = _take_all(args, name)
    return values[-1] if values else None


def _take_config_dirs(args: list[str]) -> list[str]:
    dirs = _take_all(args, "--config-dir")
    for d in dirs:
        if not Path(d).is_dir():
            raise UsageError(f"--config-dir {d}: no such directory")
    return dirs


def precheck(overrides: list[str], config_dirs: list[str], multirun: bool) -> tuple[list[str], Settings]:
    """Compose and validate every value a sweep will use, so bad input fails before anything runs. Returns the
    overrides to launch with: as given, but for whole numbers written as floats (``whole_numbers``), and the
    settings of the first job."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from rlconf.tuning import is_optuna_sweeper

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception as error:  # Hydra's parser errors are multi-line; keep the first line
        raise UsageError(f"cannot parse overrides: {str(error).splitlines()[0]}") from None

    groups = group_options(search_dirs(config_dirs))
    choices: dict[str, list[str]] = {}
    fixed: list[str] = []  # overrides that are not sweeps, exactly as typed (with any +, ++ or ~)
    sweeps: dict[str, tuple[str, list[str]]] = {}  # key -> (prefix, values)
    sampled: list[str] = []  # interval sweeps: drawn by a sweeper as it goes (Optuna), checked at their start
    for override in parsed:
        key = override.get_key_element()
        if _is_interval(override):
            sampled.append(override.input_line)
            values = [str(override.value().start)]
        else:
            values = list(override.sweep_string_iterator()) if override.is_sweep_override() else [
                override.get_value_element_as_str()]
        if override.is_sweep_override() and not multirun:
            raise UsageError(f"{override.input_line} is a sweep: add -m to run one job per value")
        if override.is_sweep_override() and key.startswith("hydra."):
            raise UsageError(f"{override.input_line}: Hydra's own settings cannot be swept; to give a sweep as "
                             f"a value, quote it: {key}='{override.input_line.split('=', 1)[1]}'")
        choices[key] = values
        if override.is_sweep_override():
            sweeps[key] = (_override_prefixes()[override.type], values)
        else:
            fixed.append(override.input_line)
        # Hidden groups too: an optional one (preset) would otherwise skip a misspelt choice silently.
        if key in groups:
            for value in (c for v in values for c in _group_choices(v)):
                if value not in groups[key]:
                    from rlconf.registry import unknown_message

                    see = "" if key in HIDDEN_GROUPS else f"rlconf list {key}"
                    raise UsageError(unknown_message(key, value, sorted(groups[key]), see))
    for group in REQUIRED_GROUPS:
        if group not in choices and choices.get("experiment", ["null"]) == ["null"]:  # an experiment names both
            from rlconf.registry import MESSAGE_LIMIT
            from rlconf.registry import choices as available

            head = f"missing {group}: choose one with {group}=NAME (e.g. rlconf run {EXAMPLE})"
            options = available(sorted(groups.get(group, {})), group, f"rlconf list {group}",
                                room=MESSAGE_LIMIT - len(head) - 2, sample=False)
            raise UsageError(f"{head}; {options}")
    if "sweep" in choices and choices["sweep"] != ["null"] and not multirun:
        raise UsageError(f"sweep={','.join(choices['sweep'])} is a sweep: add -m to run one job per value")

    # Every value of every sweep is composed once, the other sweeps at their first value: linear, not
    # the whole product, and still every value is checked.
    base = {key: f"{prefix}{key}={values[0]}" for key, (prefix, values) in sweeps.items()}
    hydra_cfg, settings = check_composition([*fixed, *base.values()], config_dirs)
    if multirun:
        check_launcher(hydra_cfg)
        if is_optuna_sweeper(hydra_cfg.hydra.sweeper):  # every searched key composed at its ends and choices
            extra = optuna_sweeps(hydra_cfg, [o.input_line for o in parsed if o.is_sweep_override()], settings)
        elif sampled:
            raise UsageError(f"{sampled[0]}: an interval is sampled by Optuna, not enumerated: use an Optuna sweep "
                             "(sweep=optuna_dqn, or hydra/sweeper=rlconf_optuna; pip install 'rlconf[optuna]'), or "
                             "list values with choice(...)")
        else:  # a named sweep's grid (hydra.sweeper.params) is checked like one typed on the command line
            extra = {k: v for k, v in config_sweeps(hydra_cfg).items() if k not in sweeps}
        if extra:
            sweeps.update(extra)
            base = {key: f"{prefix}{key}={values[0]}" for key, (prefix, values) in sweeps.items()}
            check_composition([*fixed, *base.values()], config_dirs)
    for key, (prefix, values) in sweeps.items():
        for value in values[1:]:
            check_composition([*fixed, *{**base, key: f"{prefix}{key}={value}"}.values()], config_dirs)
    return whole_numbers(parsed, settings), settings


def whole_numbers(parsed: list, settings) -> list[str]:
    """The overrides as typed, but where an integer key is given a whole number as a float (``steps=1e5``,
    ``seed=1e1,2e1``): there Hydra is given the integer (``steps=100000``), so that the run's config.yaml, the
    launchers (``${hardware.gpus_per_run}``) and the sweepers see what the check made of it."""
    from hydra.core.override_parser.types import ChoiceSweep

    from rlconf.schema import whole
    from rlconf.settings import typed_value

    lines = []
    for override in parsed:
        key, value, line = override.get_key_element(), override.value(), override.input_line
        typed = typed_value(settings, key) if not key.startswith("hydra") else None
        prefix = _override_prefixes()[override.type]
        if isinstance(typed, int) and not isinstance(typed, bool):
            if isinstance(value, float) and value.is_integer():
                line = f"{prefix}{key}={int(value)}"
            elif isinstance(value, ChoiceSweep) and all(type(v) in (int, float) for v in value.list) and not (
                    value.tags or value.shuffle):
                values = ",".join(str(whole(v)) for v in value.list)
                line = f"{prefix}{key}={values if value.simple_form else f'choice({values})'}"
        elif (isinstance(typed, list) and typed and all(type(v) is int for v in typed) and isinstance(value, list)
              and all(type(v) in (int, float) for v in value)):  # approximation.hidden=[64.0,64]
            line = f"{prefix}{key}=[{','.join(str(whole(v)) for v in value)}]"
        lines.append(line)
    return lines


def _is_interval(override) -> bool:
    """``interval(a, b)`` (or ``tag(log, interval(a, b))``): a range to sample, which cannot be enumerated."""
    from hydra.core.override_parser.types import IntervalSweep

    return override.is_sweep_override() and isinstance(override.value(), IntervalSweep)


def _group_choices(value: str) -> list[str]:
    """The options a group override names: one (``logger=wandb``) or a list (``logger=[csv,wandb]``)."""
    if value.startswith("[") and value.endswith("]"):
        return [v.strip().strip("'\"") for v in value[1:-1].split(",") if v.strip()]
    return [value]


def config_sweeps(hydra_cfg) -> dict[str, tuple[str, list[str]]]:
    """The grid of Hydra's basic sweeper given in a config (``hydra.sweeper.params``), as key -> values.
    (Optuna's search space is checked by ``optuna_sweeps``.)"""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    sweeper = hydra_cfg.hydra.sweeper
    if "BasicSweeper" not in str(sweeper.get("_target_", "")) or not sweeper.get("params"):
        return {}
    lines = [f"{key}={value}" for key, value in sweeper.params.items()]
    try:
        parsed = OverridesParser.create().parse_overrides(lines)
    except Exception as error:
        raise UsageError(f"hydra.sweeper.params: {str(error).splitlines()[0]}") from None
    return {o.get_key_element(): (_override_prefixes()[o.type], list(o.sweep_string_iterator())
                                  if o.is_sweep_override() else [o.get_value_element_as_str()]) for o in parsed}


def optuna_sweeps(hydra_cfg, swept: list[str], settings) -> dict[str, tuple[str, list[str]]]:
    """The Optuna sweeper's settings checked (rlconf.tuning.sweeper.check_settings) with the search space of its
    params and the command line's sweeps (``swept``); returns each searched key with the values its draws lie
    among or between, which the caller composes."""
    from omegaconf import OmegaConf

    from rlconf.tuning import TuningError

    choice = hydra_cfg.hydra.runtime.choices.get("sweep")
    sweep = f"sweep={choice}" if choice else "hydra/sweeper=rlconf_optuna"
    try:
        import optuna  # noqa: F401 (an optional extra: missing, or an install that does not import)
    except ImportError as error:
        raise UsageError(f"{sweep} is an Optuna sweep and optuna cannot be imported ({error}): pip install "
                         "'rlconf[optuna]'") from None
    if not hydra_cfg.hydra.launcher.get("wait", True):
        raise UsageError(f"hydra.launcher.wait=false: {sweep} asks for trials by the results of those before; "
                         "allowed: hydra.launcher.wait=true")
    from rlconf.tuning.sweeper import check_settings

    run = {"steps": settings.run.steps, "eval_every": settings.run.eval_every,
           "test_episodes": settings.run.test_episodes, "learners": settings.hardware.learners}
    try:
        space = check_settings(OmegaConf.to_container(hydra_cfg.hydra.sweeper, resolve=True), swept, run)
    except TuningError as error:
        raise UsageError(str(error)) from None
    return {key: (d.prefix, d.examples()) for key, d in space.dimensions.items()}


def check_launcher(hydra_cfg) -> None:
    """rlconf's launchers' settings (and, for local_gpus, that there are GPUs), before anything is launched."""
    from omegaconf import OmegaConf

    from rlconf.launch.settings import LOCAL_TARGET, SLURM_TARGET, LauncherError, check
    from rlconf.launch.slots import visible_gpus

    target = str(hydra_cfg.hydra.launcher.get("_target_", ""))
    try:
        params = OmegaConf.to_container(hydra_cfg.hydra.launcher, resolve=True)
        check(target, params)
    except LauncherError as error:
        raise UsageError(str(error)) from None
    except Exception as error:  # an interpolation that does not resolve
        raise UsageError(f"hydra.launcher: {' '.join(str(error).split())}") from None
    if target == LOCAL_TARGET and params.get("gpus") == "auto" and not visible_gpus():
        raise UsageError("launcher=local_gpus: no GPU is visible here (CUDA_VISIBLE_DEVICES, nvidia-smi); "
                         "name them with hydra.launcher.gpus=[0,1,...] or use launcher=local")
    if target == SLURM_TARGET:
        import importlib.util
        import shutil

        if importlib.util.find_spec("submitit") is None:
            raise UsageError("launcher=slurm needs submitit: pip install 'rlconf[slurm]'")
        if shutil.which("sbatch") is None:
            raise UsageError("launcher=slurm: sbatch is not on PATH (submit from a Slurm login node)")


def check_composition(overrides: list[str], config_dirs: list[str]):
    """Compose and validate; returns the composed config with its ``hydra`` node (for the launcher's checks)
    and the checked settings."""
    from omegaconf import OmegaConf, open_dict

    from rlconf.config import compose, validate
    from rlconf.errors import ConfigError
    from rlconf.experiments.rundir.resume import check_resumable
    from rlconf.launch.settings import SLURM_TARGET
    from rlconf.settings import check_process_counts

    try:
        cfg = compose(overrides, config_dirs, hydra_config=True)
    except Exception as error:
        raise UsageError(_hydra_message(error, overrides, config_dirs)) from None
    job = cfg.copy()
    with open_dict(job):
        del job["hydra"]
    try:
        settings = validate(job)
        if str(cfg.hydra.launcher.get("_target_", "")) != SLURM_TARGET:  # a run of this machine
            check_process_counts(settings.hardware)
        if settings.run.resume and "hydra.sweep.dir" not in {_key(o) for o in overrides}:
            from rlconf.experiments.rundir.resume import check_resume_dir

            check_resumable(check_resume_dir(settings.run.resume), OmegaConf.to_container(job, resolve=True))
    except ConfigError as error:
        raise UsageError(str(error)) from None
    return cfg, settings


def _hydra_message(error: Exception, overrides: list[str], config_dirs: list[str]) -> str:
    """Hydra's composition errors, reduced to one line that names the key."""
    text = " ".join(str(error).split())
    if "not in struct" in text or "Could not override" in text:
        key = text.split("'")[1] if "'" in text else text
        return _unknown_key_message(key, overrides, config_dirs)
    if text.startswith("Error merging override") and error.__cause__ is not None:  # say why: the type
        return f"{text.removeprefix('Error merging override ')}: {str(error.__cause__).splitlines()[0]}"
    # Hydra appends its search path and a hint about HYDRA_FULL_ERROR: noise on a one-line error.
    return text.split(". Set the environment variable")[0].split(" Config search path:")[0]


def _unknown_key_message(key: str, overrides: list[str], config_dirs: list[str]) -> str:
    """Name the keys that do exist where ``key`` was asked for (composed without the bad override)."""
    from omegaconf import DictConfig, OmegaConf

    from rlconf.config import compose
    from rlconf.registry import unknown_message
    from rlconf.schema import config_keys

    parent = key.rpartition(".")[0]
    others = [o for o in overrides if o.lstrip("+~").split("=")[0] != key]
    try:
        composed = compose(others, config_dirs, hydra_config=key.startswith("hydra."))
        node = OmegaConf.select(composed, parent) if parent else composed
    except Exception:
        node = None
    picks = " ".join(f"{group}={value}" for group in ("experiment", *REQUIRED_GROUPS)
                     if (value := _last_value(others, group)))
    see = f"rlconf run {picks or 'agent=... env=...'} --cfg {'hydra' if key.startswith('hydra.') else 'job'}"
    if not isinstance(node, DictConfig):
        return f"unknown key {key!r}; see the composed config with: {see}"
    return unknown_message("key", key, [f"{parent}.{k}" if parent else str(k) for k in node], see,
                           config_keys(composed))


def _defer_keys_of_swept_groups(overrides: list[str], groups: set[str]) -> list[str]:
    """Hydra composes a sweep's base config without the groups being swept, so ``agent.lr=...`` beside
    ``agent=dqn,ppo`` would fail there. As a sweep of one value (``choice(...)``) it is applied per job."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    swept = {o.get_key_element() for o in parsed if o.is_sweep_override() and o.get_key_element() in groups}
    deferred = []
    for override in parsed:
        key = override.get_key_element()
        if not override.is_sweep_override() and key.split(".")[0] in swept and "." in key:
            prefix = _override_prefixes()[override.type]
            deferred.append(f"{prefix}{key}=choice({override.get_value_element_as_str()})")
        else:
            deferred.append(override.input_line)
    return deferred


def launch(overrides: list[str], config_dirs: list[str], multirun: bool, cfg_mode: str | None) -> int:
    """Hand the checked overrides to Hydra, which composes again and runs (or sweeps) the job."""
    import hydra

    from rlconf.config import searchpath_override

    if multirun:
        overrides = _defer_keys_of_swept_groups(overrides, set(group_options(search_dirs(config_dirs))))
    # The searchpath as an override rather than Hydra's --config-dir, which takes only one folder.
    argv = ["rlconf", *overrides, searchpath_override(config_dirs)]
    if multirun:
        argv.append("--multirun")
    if cfg_mode:
        argv += ["--cfg", cfg_mode]

    @hydra.main(config_path=str(config_dir()), config_name="config", version_base=None)
    def task(cfg) -> dict:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        from rlconf.experiments.console.progress import announce

        announce(cfg)  # a first line before torch is imported: seconds, not a blank screen
        from rlconf.errors import ConfigError, error_line
        from rlconf.experiments.loop.experiment import RunFailed
        from rlconf.experiments.run import run

        hydra_cfg = HydraConfig.get()
        parent = hydra_cfg.sweep.dir if hydra_cfg.mode == RunMode.MULTIRUN else None
        try:
            summary = run(cfg, parent_dir=parent, overrides=list(hydra_cfg.overrides.task))
        except ConfigError as error:
            fail(str(error))
        except RunFailed as error:  # a divergence, a full disk (status.json, error.txt): the last checkpoint kept
            print(error_line(str(error)), file=sys.stderr)
            raise SystemExit(error.exit_status) from None
        return summary  # to a sweeper: Optuna's objective is its test_return_mean, or its state pruned

    saved = sys.argv
    sys.argv = argv
    try:
        task()
    finally:
        sys.argv = saved
    return 0


# -- rlconf status --------------------------------------------------------------------------------------
def cmd_status(args: list[str]) -> int:
    lines = _take_option(args, "--lines")
    if len(args) != 1 or args[0].startswith("-"):
        raise UsageError("usage: rlconf status DIR [--lines N]")
    if lines is not None and (not lines.isdigit() or int(lines) < 1):
        raise UsageError(f"--lines {lines}: must be a positive integer")
    from rlconf.launch.status import StatusError, print_status

    try:
        return print_status(Path(args[0]), int(lines or 5))
    except StatusError as error:
        raise UsageError(str(error)) from None


# -- rlconf plot ----------------------------------------------------------------------------------------
def cmd_plot(args: list[str]) -> int:
    """Learning curves of the runs below a folder, and with --aggregate the statistics comparing agents."""
    from rlconf.analysis.command import plot
    from rlconf.analysis.runs import AnalysisError

    try:
        return plot(args)
    except AnalysisError as error:
        raise UsageError(str(error)) from None


# -- rlconf eval, rlconf watch ---------------------------------------------------------------------------
EVAL_USAGE = ("usage: rlconf eval RUN_DIR [--checkpoint best|last|STEP] [--episodes N] [--seed S] [--device D] "
              "[--plugins M,...]")
WATCH_USAGE = ("usage: rlconf watch RUN_DIR [--checkpoint best|last|STEP] [--episodes N] [--video OUT.mp4] [--fps F] "
               "[--seed S] [--device D] [--plugins M,...]")
CHECKPOINT_HELP = """  --checkpoint C  which weights: last (checkpoint.pt, the default), best (best.pt: the best
                  periodic evaluation's) or a step kept with checkpoint.keep=N (checkpoint-STEP.pt)"""
PLUGINS_HELP = """  --plugins M,... import these modules first: a run that was launched with plugins=[...] (or an agent
                given by import path) needs them named again; nothing from RUN_DIR is imported otherwise"""
EVAL_HELP = f"""{EVAL_USAGE}

Play a trained run's test agent again: the env, agent and body built from RUN_DIR/config.yaml, the weights
from RUN_DIR/checkpoint.pt. Prints mean ± std and writes RUN_DIR/eval.json. Without options it repeats the
run's final test, and reproduces summary.json's test return exactly. Another checkpoint's result goes to
RUN_DIR/eval-best.json or eval-STEP.json.
{CHECKPOINT_HELP}
  --episodes N  episodes to play (default: the run's test_episodes)
  --seed S      the episodes' seed (default: the final test's, the run's seed + 1000003)
  --device D    compute on D (cpu, cuda:0, ...) rather than on the run's hardware.device
{PLUGINS_HELP}"""
WATCH_HELP = f"""{WATCH_USAGE}

Watch a trained run's test agent play: in a window (needs a display), or into a video file.
{CHECKPOINT_HELP}
  --episodes N     episodes to play (default: 1)
  --video OUT.mp4  write one video of every episode (needs moviepy: pip install 'rlconf[video]')
  --fps F          frames per second (default: real time)
  --seed S         the episodes' seed (default: the run's final test's)
  --device D       compute on D rather than on the run's hardware.device
{PLUGINS_HELP}"""


def cmd_eval(args: list[str]) -> int:
    """The test agent of a trained run, played again from its checkpoint; without options its final test."""
    if "-h" in args or "--help" in args:
        print(EVAL_HELP)
        return 0
    episodes, seed, device, plugins, which = (_take_option(args, name) for name in (
        "--episodes", "--seed", "--device", "--plugins", "--checkpoint"))
    run_dir = _run_dir_argument(args, EVAL_USAGE)
    episodes, seed = _episodes(episodes), _seed(seed)
    from rlconf.errors import ConfigError, error_line
    from rlconf.experiments.playback.play import PlaybackError, eval_line, evaluate_run, write_eval
    from rlconf.experiments.rundir.directory import write_failure

    try:
        result = evaluate_run(run_dir, episodes, seed, device, _modules(plugins), which or "last")
    except (ConfigError, PlaybackError) as error:
        raise UsageError(str(error)) from None
    print(eval_line(result), flush=True)  # first: the episodes were played whether or not eval.json can be kept
    try:
        write_eval(result)
    except OSError as error:
        print(error_line(f"{write_failure(error)}; the result above was not kept"), file=sys.stderr)
        return 1
    return 0


def cmd_watch(args: list[str]) -> int:
    """The test agent of a trained run playing, in a window or into a video."""
    if "-h" in args or "--help" in args:
        print(WATCH_HELP)
        return 0
    episodes, video, fps, seed, device, plugins, which = (_take_option(args, name) for name in (
        "--episodes", "--video", "--fps", "--seed", "--device", "--plugins", "--checkpoint"))
    run_dir = _run_dir_argument(args, WATCH_USAGE)
    episodes, seed = _episodes(episodes) or 1, _seed(seed)
    from rlconf.errors import ConfigError
    from rlconf.experiments.playback.play import PlaybackError, watch_line, watch_run

    try:
        result = watch_run(run_dir, episodes, video, _fps(fps), seed, device, _modules(plugins), which or "last")
    except (ConfigError, PlaybackError) as error:
        raise UsageError(str(error)) from None
    print(watch_line(result, episodes))
    return 0


EXPORT_USAGE = ("usage: rlconf export RUN_DIR --format torchscript|onnx [--out FILE] [--checkpoint best|last|STEP] "
                "[--plugins M,...]")
EXPORT_HELP = f"""{EXPORT_USAGE}

Write a trained run's greedy test policy as one file that acts without rlconf: a TorchScript module
(torch.jit.load) or an ONNX graph (onnxruntime; needs pip install 'rlconf[export]'). It maps a batch of
observations to a batch of actions: the body's observation normalisation and masking, the networks, the
greedy choice, the clip to a continuous action space. What a body keeps per environment (Atari's frame
stack, a time feature) is the caller's to do: the command says how, and so does FILE.json, beside the file,
with the input and output shapes and dtypes. The file is checked against the policy before it is kept.
  --format F      torchscript or onnx
  --out FILE      where to write (default: RUN_DIR/policy.pt or policy.onnx; policy-best.onnx for --checkpoint best)
{CHECKPOINT_HELP}
{PLUGINS_HELP}"""


def cmd_export(args: list[str]) -> int:
    """A trained run's greedy policy as a TorchScript module or an ONNX graph."""
    if "-h" in args or "--help" in args:
        print(EXPORT_HELP)
        return 0
    fmt, out, plugins, which = (_take_option(args, name) for name in ("--format", "--out", "--plugins",
                                                                         "--checkpoint"))
    run_dir = _run_dir_argument(args, EXPORT_USAGE)
    if fmt is None:
        raise UsageError(f"--format is required (torchscript or onnx); {EXPORT_USAGE}")
    from rlconf.errors import ConfigError
    from rlconf.experiments.playback.export import export_run
    from rlconf.experiments.playback.play import PlaybackError
    from rlconf.experiments.rundir.directory import write_failure

    try:
        exported = export_run(run_dir, fmt, out, which or "last", _modules(plugins))
    except (ConfigError, PlaybackError) as error:
        raise UsageError(str(error)) from None
    except OSError as error:  # a full disk, a read-only folder: nothing half-written is left (atomic writes)
        raise UsageError(write_failure(error)) from None
    print(export_line(exported))
    return 0


def export_line(exported: dict) -> str:
    def shape(part: dict) -> str:
        return f"{part['dtype']} [{', '.join(map(str, part['shape']))}]"

    feeding = "".join(f"; feed it: {how}" for how in exported["feeding"])
    return (f"{exported['agent']} {exported['env']} at step {exported['checkpoint_step']:,}: {exported['format']} "
            f"policy, observation {shape(exported['input'])} -> action {shape(exported['output'])}, the same "
            f"actions as the policy on {exported['checked_observations']} observations -> {exported['file']}"
            f"{feeding}")


def _run_dir_argument(args: list[str], usage: str) -> str:
    for arg in args:
        if arg.startswith("-"):
            raise UsageError(f"unknown option {arg!r}; {usage}")
    if len(args) != 1:
        raise UsageError(usage)
    from rlconf.experiments.rundir.directory import check_trained_run

    try:
        check_trained_run(args[0])  # before torch is imported: a mistyped path is answered at once
    except ValueError as error:
        raise UsageError(str(error)) from None
    return args[0]


def _modules(value: str | None) -> list[str]:
    """``--plugins a,b``: module names, each a dotted Python identifier."""
    from rlconf.registry import plugin_problem

    modules = [m.strip() for m in (value or "").split(",") if m.strip()]
    for module in modules:
        if plugin_problem(module) is not None:  # the rule of plugins=[...] (rlconf.settings.RunSettings)
            raise UsageError(f"--plugins {value}: {plugin_problem(module)}")
    return modules


def _fps(value: str | None) -> float | None:
    try:
        fps = None if value is None else float(value)
    except ValueError:
        fps = 0.0
    if fps is not None and not 0 < fps <= 1000:
        raise UsageError(f"--fps {value}: must be frames per second, a number above 0")
    return fps


def _count(value: str | None, name: str, minimum: int = 1, maximum: int | None = None) -> int | None:
    """An option's integer value (None when not given): a bad one is the user's input, one line."""
    if value is None:
        return None
    if not value.isascii() or not value.isdigit() or int(value) < minimum:
        raise UsageError(f"{name} {value}: must be an integer >= {minimum}")
    if maximum is not None and int(value) > maximum:
        raise UsageError(f"{name} {value}: must be an integer from {minimum} to {maximum:,}")
    return int(value)


def _seed(value: str | None) -> int | None:
    """``--seed S``: the range of the ``seed=`` key (rlconf.schema.MAX_SEED), which numpy and the simulators take."""
    from rlconf.schema import MAX_SEED

    return _count(value, "--seed", minimum=0, maximum=MAX_SEED)


def _episodes(value: str | None) -> int | None:
    """``--episodes N``: at least 1, and no more than this machine can keep the results of (rlconf.cost)."""
    from rlconf.cost import episodes_cost, refuse_unless_fits
    from rlconf.errors import ConfigError

    episodes = _count(value, "--episodes")
    try:
        if episodes is not None:
            refuse_unless_fits(episodes_cost("--episodes", episodes))
    except ConfigError as error:
        raise UsageError(str(error)) from None
    return episodes


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    commands = {"run": cmd_run, "list": cmd_list, "status": cmd_status, "plot": cmd_plot, "eval": cmd_eval,
                "watch": cmd_watch, "export": cmd_export}
    command = commands.get(args[0]) if args else None
    try:
        if not args or args[0] in ("-h", "--help"):
            print(USAGE)
            return 0
        if args[0] == "--version":
            from rlconf import __version__

            print(f"rlconf {__version__}")
            return 0
        if command is None:
            from rlconf.registry import unknown_message

            raise UsageError(unknown_message("command", args[0], sorted(commands)))
        if command is cmd_run:  # what the user typed, for the run's provenance (a sweep's jobs inherit it)
            os.environ["RLCONF_COMMAND"] = shlex.join(["rlconf", *args])
        return command(args[1:])
    except UsageError as error:
        fail(str(error))
    except KeyboardInterrupt:  # a second Ctrl-C, or one in a launcher that has stopped its runs
        print("rlconf: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `rlconf list | head`: the reader has gone, which is no error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush stays quiet
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
