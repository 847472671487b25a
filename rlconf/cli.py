"""The ``rlconf`` command: thin subcommands over the library. ``run`` checks its overrides and launches them
(``rlconf.pipeline``: compose -> check -> plan); ``list`` shows the options; ``status`` tells how the runs of a
sweep are doing; ``plot`` draws their learning curves; ``eval``, ``watch`` and ``export`` play a trained run
again (``rlconf.commands``).

This module parses the arguments; every error the user reads is an ``rlconf.errors.RlconfError``, mapped to
its one line and exit status in one place (``main``, by ``errors.reported``): bad input is one line on stderr
with exit status 2, before anything is written. What it imports is torch-free: ``rlconf list`` answers at once.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlconf.commands import runs
from rlconf.commands.check_env import USAGE as CHECK_ENV_USAGE
from rlconf.commands.check_env import check_env_command
from rlconf.commands.help import (
    EVAL_HELP,
    EVAL_USAGE,
    EXPORT_HELP,
    EXPORT_USAGE,
    HYDRA_NOTE,
    LIST_HELP,
    STATUS_HELP,
    STATUS_USAGE,
    USAGE,
    WATCH_HELP,
    WATCH_USAGE,
    run_help,
)
from rlconf.commands.listing import list_options
from rlconf.errors import UsageError, reported
from rlconf.pipeline import applied_preset, check_run, drop_if_empty, launch, run_job, with_sweep_dir
from rlconf.registry import plugin_problem, unknown_message
from rlconf.version import __version__

if TYPE_CHECKING:
    from omegaconf import DictConfig

CFG_MODES = ("job", "hydra", "all")


# -- the subcommands --------------------------------------------------------------------------------------
def cmd_run(args: list[str]) -> int:
    """``rlconf run``: check the overrides (every value of a sweep), then hand them to Hydra, or print the
    composed config (``--cfg``)."""
    if "-h" in args or "--help" in args:
        print(run_help(_take_config_dirs(args)))
        return 0
    multirun = any(a in ("-m", "--multirun") for a in args)
    config_dirs = _take_config_dirs(args)
    if "--hydra-help" in args:
        print(HYDRA_NOTE)
        return launch(["--hydra-help"], config_dirs, multirun=False, cfg_mode=None, task=job)
    cfg_mode = _take_option(args, "--cfg")
    if cfg_mode not in (None, *CFG_MODES):  # else Hydra's argparse prints its whole usage, many lines
        raise UsageError(f"--cfg {cfg_mode}: allowed: {', '.join(CFG_MODES)}")
    typed = [a for a in args if a not in ("-m", "--multirun")]
    for arg in typed:
        if arg.startswith("-"):
            raise UsageError(f"unknown option {arg!r}; allowed: -m/--multirun, --cfg, --config-dir, --hydra-help, "
                             "--help")
    if multirun and cfg_mode:  # Hydra refuses the pair with a traceback
        raise UsageError(f"--cfg {cfg_mode} prints one run's config: leave out -m and give each swept key one value")
    checked = check_run(typed, config_dirs, multirun)
    if cfg_mode:  # a YAML comment, so what --cfg prints still parses
        print(f"# preset: {applied_preset(checked.choices, config_dirs)}", flush=True)
    elif multirun:  # everything checked: only now is anything made on disk
        overrides, made = with_sweep_dir(checked.overrides, typed, checked.settings.run.logdir)
        try:
            return launch(overrides, config_dirs, multirun, cfg_mode, task=job)
        finally:
            drop_if_empty(made)
    return launch(checked.overrides, config_dirs, multirun, cfg_mode, task=job)


def job(cfg: DictConfig) -> dict[str, Any]:
    """A job of ``rlconf run``, which Hydra names after this module (``hydra.job.name: cli``)."""
    return run_job(cfg)


def cmd_list(args: list[str]) -> int:
    """``rlconf list [GROUP | components]``."""
    return list_options(args, _take_config_dirs(args))


def cmd_status(args: list[str]) -> int:
    """``rlconf status DIR [--lines N]``."""
    lines = _take_option(args, "--lines")
    if len(args) != 1 or args[0].startswith("-"):
        raise UsageError(STATUS_USAGE)
    if lines is not None and (not lines.isdigit() or int(lines) < 1):
        raise UsageError(f"--lines {lines}: must be a positive integer")
    return runs.status(args[0], int(lines or 5))


def cmd_plot(args: list[str]) -> int:
    """``rlconf plot RUNS_DIR ...``: its options are parsed by rlconf.analysis.command."""
    return runs.plot(args)


def cmd_eval(args: list[str]) -> int:
    """The test agent of a trained run, played again from its checkpoint; without options its final test."""
    episodes, seed, device, plugins, which = (_take_option(args, name) for name in (
        "--episodes", "--seed", "--device", "--plugins", "--checkpoint"))
    run_dir = _run_dir_argument(args, EVAL_USAGE)
    episodes, seed = runs.parse_episodes(episodes), runs.parse_seed(seed)
    return runs.evaluate(run_dir, episodes, seed, device, _modules(plugins), which or "last")


def cmd_watch(args: list[str]) -> int:
    """The test agent of a trained run playing, in a window or into a video."""
    episodes, video, fps, seed, device, plugins, which = (_take_option(args, name) for name in (
        "--episodes", "--video", "--fps", "--seed", "--device", "--plugins", "--checkpoint"))
    run_dir = _run_dir_argument(args, WATCH_USAGE)
    episodes, seed = runs.parse_episodes(episodes) or 1, runs.parse_seed(seed)
    return runs.watch(run_dir, episodes, video, runs.parse_fps(fps), seed, device, _modules(plugins), which or "last")


def cmd_export(args: list[str]) -> int:
    """A trained run's greedy policy as a TorchScript module or an ONNX graph."""
    fmt, out, plugins, which, group = (_take_option(args, name) for name in ("--format", "--out", "--plugins",
                                                                                "--checkpoint", "--group"))
    run_dir = _run_dir_argument(args, EXPORT_USAGE)
    if fmt is None:
        raise UsageError(f"--format is required (torchscript or onnx); {EXPORT_USAGE}")
    return runs.export(run_dir, fmt, out, which or "last", _modules(plugins), group)


def cmd_check_env(args: list[str]) -> int:
    """``rlconf check-env ID | module:Class [--plugins M,...]``: what rlconf will make of an environment."""
    plugins = _modules(_take_option(args, "--plugins"))
    for arg in [a for a in args if a.startswith("plugins=")]:  # as a run names them: plugins=[a,b]
        args.remove(arg)
        plugins += _modules(arg.split("=", 1)[1].strip("[]"))
    if len(args) != 1 or args[0].startswith("-"):
        raise UsageError(CHECK_ENV_USAGE)
    return check_env_command(args[0], plugins)


# A subcommand's help, printed for -h or --help anywhere in its arguments (run and plot parse their own).
HELP = {"list": LIST_HELP, "status": STATUS_HELP, "eval": EVAL_HELP, "watch": WATCH_HELP, "export": EXPORT_HELP,
        "check-env": CHECK_ENV_USAGE}
COMMANDS = {"run": cmd_run, "list": cmd_list, "status": cmd_status, "plot": cmd_plot, "eval": cmd_eval,
            "watch": cmd_watch, "export": cmd_export, "check-env": cmd_check_env}


# -- options and arguments ---------------------------------------------------------------------------------
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


def _run_dir_argument(args: list[str], usage: str) -> str:
    for arg in args:
        if arg.startswith("-"):
            raise UsageError(f"unknown option {arg!r}; {usage}")
    if len(args) != 1:
        raise UsageError(usage)
    return runs.trained_run(args[0])


def _modules(value: str | None) -> list[str]:
    """``--plugins a,b``: module names, each a dotted Python identifier."""
    modules = [m.strip() for m in (value or "").split(",") if m.strip()]
    for module in modules:
        if plugin_problem(module) is not None:  # the rule of plugins=[...] (rlconf.settings.RunSettings)
            raise UsageError(f"--plugins {value}: {plugin_problem(module)}")
    return modules


# -- the command ---------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``rlconf ARGS``: the subcommand's exit status; an RlconfError is its one line and its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        with reported():
            return _dispatch(args)
    except KeyboardInterrupt:  # a second Ctrl-C, or one in a launcher that has stopped its runs
        print("rlconf: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `rlconf list | head`: the reader has gone, which is no error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush stays quiet
        return 0


def _dispatch(args: list[str]) -> int:
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if args[0] == "--version":
        print(f"rlconf {__version__}")
        return 0
    command = COMMANDS.get(args[0])
    if command is None:
        raise UsageError(unknown_message("command", args[0], sorted(COMMANDS)))
    if args[0] in HELP and ("-h" in args or "--help" in args):
        print(HELP[args[0]])
        return 0
    if command is cmd_run:  # what the user typed, for the run's provenance (a sweep's jobs inherit it)
        os.environ["RLCONF_COMMAND"] = shlex.join(["rlconf", *args])
    return command(args[1:])


if __name__ == "__main__":
    sys.exit(main())
