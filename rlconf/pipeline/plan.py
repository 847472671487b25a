"""The plan step: how the checked runs are launched. The launcher's and the sweeper's settings (checked with
the first composition, since an Optuna sweep's search space adds values to check), a new sweep's directory,
and the hand-over to Hydra, which composes again and runs (or sweeps) each job (``run_job``)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlconf.errors import ConfigError, RlconfError, reported
from rlconf.paths import config_dir
from rlconf.pipeline.groups import group_options, search_dirs
from rlconf.pipeline.overrides import hydra_quoted, last_value, override_prefixes, parse, saved_overrides

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from rlconf.settings import Settings


def sweep_values(hydra_cfg: DictConfig, swept: list[str], sampled: list[str], typed: set[str],
                 settings: Settings) -> dict[str, tuple[str, list[str]]]:
    """A sweep's launcher and sweeper checked; returns the values besides those typed (``typed``: their keys)
    that the check composes: an Optuna sweep's every searched key at its ends and choices, a named sweep's
    grid (``hydra.sweeper.params``, checked like one typed on the command line)."""
    from rlconf.tuning import is_optuna_sweeper

    check_launcher(hydra_cfg)
    if is_optuna_sweeper(hydra_cfg.hydra.sweeper):
        return optuna_sweeps(hydra_cfg, swept, settings)
    if sampled:
        raise ConfigError(f"{sampled[0]}: an interval is sampled by Optuna, not enumerated: use an Optuna sweep "
                          "(sweep=optuna_dqn, or hydra/sweeper=rlconf_optuna; pip install 'rlconf[optuna]'), or "
                          "list values with choice(...)")
    return {name: values for name, values in config_sweeps(hydra_cfg).items() if name not in typed}


def config_sweeps(hydra_cfg: DictConfig) -> dict[str, tuple[str, list[str]]]:
    """The grid of Hydra's basic sweeper given in a config (``hydra.sweeper.params``), as key -> values.
    (Optuna's search space is checked by ``optuna_sweeps``.)"""
    sweeper = hydra_cfg.hydra.sweeper
    if "BasicSweeper" not in str(sweeper.get("_target_", "")) or not sweeper.get("params"):
        return {}
    lines = [f"{name}={value}" for name, value in sweeper.params.items()]
    try:
        parsed = parse(lines)
    except ConfigError as error:
        raise ConfigError(f"hydra.sweeper.params: {str(error).removeprefix('cannot parse overrides: ')}") from None
    return {o.get_key_element(): (override_prefixes()[o.type], list(o.sweep_string_iterator())
                                  if o.is_sweep_override() else [o.get_value_element_as_str()]) for o in parsed}


def optuna_sweeps(hydra_cfg: DictConfig, swept: list[str], settings: Settings) -> dict[str, tuple[str, list[str]]]:
    """The Optuna sweeper's settings checked (rlconf.tuning.sweeper.check_settings) with the search space of its
    params and the command line's sweeps (``swept``); returns each searched key with the values its draws lie
    among or between, which the caller composes."""
    from omegaconf import OmegaConf

    choice = hydra_cfg.hydra.runtime.choices.get("sweep")
    sweep = f"sweep={choice}" if choice else "hydra/sweeper=rlconf_optuna"
    try:
        import optuna  # noqa: F401 (an optional extra: missing, or an install that does not import)
    except ImportError as error:
        raise ConfigError(f"{sweep} is an Optuna sweep and optuna cannot be imported ({error}): pip install "
                          "'rlconf[optuna]'") from None
    if not hydra_cfg.hydra.launcher.get("wait", True):
        raise ConfigError(f"hydra.launcher.wait=false: {sweep} asks for trials by the results of those before; "
                          "allowed: hydra.launcher.wait=true")
    from rlconf.tuning.sweeper import check_settings

    run = {"steps": settings.run.steps, "eval_every": settings.run.eval_every,
           "test_episodes": settings.run.test_episodes, "learners": settings.hardware.learners}
    space = check_settings(OmegaConf.to_container(hydra_cfg.hydra.sweeper, resolve=True), swept, run)
    return {name: (d.prefix, d.examples()) for name, d in space.dimensions.items()}


def check_launcher(hydra_cfg: DictConfig) -> None:
    """rlconf's launchers' settings (and, for local_gpus, that there are GPUs), before anything is launched."""
    from omegaconf import OmegaConf

    from rlconf.launch.launcher_config import LOCAL_TARGET, SLURM_TARGET, check
    from rlconf.launch.slots import visible_gpus

    target = str(hydra_cfg.hydra.launcher.get("_target_", ""))
    try:
        params = OmegaConf.to_container(hydra_cfg.hydra.launcher, resolve=True)
        check(target, params)
    except RlconfError:
        raise
    except Exception as error:  # an interpolation that does not resolve
        raise ConfigError(f"hydra.launcher: {' '.join(str(error).split())}") from None
    if target == LOCAL_TARGET and params.get("gpus") == "auto" and not visible_gpus():
        raise ConfigError("launcher=local_gpus: no GPU is visible here (CUDA_VISIBLE_DEVICES, nvidia-smi); "
                          "name them with hydra.launcher.gpus=[0,1,...] or use launcher=local")
    if target == SLURM_TARGET and importlib.util.find_spec("submitit") is None:
        raise ConfigError("launcher=slurm needs submitit: pip install 'rlconf[slurm]'")
    if target == SLURM_TARGET and shutil.which("sbatch") is None:
        raise ConfigError("launcher=slurm: sbatch is not on PATH (submit from a Slurm login node)")


def with_sweep_dir(overrides: list[str], typed: list[str], logdir: str) -> tuple[list[str], Path | None]:
    """A new sweep's directory, made here (``rundir.make_sweep_dir``: atomic, unique) and given to Hydra as
    ``hydra.sweep.dir``, rather than Hydra's ``sweep_${now:...}``, which two sweeps started in the same second
    would share; returned with the overrides. A resumed sweep (``-m resume=SWEEP``) keeps its own directory
    and the names of its runs (``resume.keep_run_names``); None is returned for it."""
    from rlconf.experiments.rundir.directory import make_sweep_dir
    from rlconf.experiments.rundir.resume import keep_run_names
    from rlconf.files import write_failure

    resume = last_value(typed, "resume")
    try:
        if resume and resume != "null":
            keep_run_names(Path(resume), saved_overrides(resume, True), typed)
            return overrides, None
        made = make_sweep_dir(logdir).resolve()
    except OSError as error:
        raise ConfigError(write_failure(error)) from None
    return [*overrides, f"hydra.sweep.dir={hydra_quoted(str(made))}"], made


def drop_if_empty(folder: Path | None) -> None:
    """A sweep directory made for a sweep that stopped before it began (nothing half-made is left)."""
    try:
        if folder is not None and not any(folder.iterdir()):
            folder.rmdir()
    except OSError:  # gone, or written meanwhile: left as it is
        pass


def _defer_keys_of_swept_groups(overrides: list[str], groups: set[str]) -> list[str]:
    """Hydra composes a sweep's base config without the groups being swept, so ``agent.lr=...`` beside
    ``agent=dqn,ppo`` would fail there. As a sweep of one value (``choice(...)``) it is applied per job."""
    parsed = parse(overrides)
    swept = {o.get_key_element() for o in parsed if o.is_sweep_override() and o.get_key_element() in groups}
    deferred = []
    for override in parsed:
        name = override.get_key_element()
        if not override.is_sweep_override() and name.split(".")[0] in swept and "." in name:
            prefix = override_prefixes()[override.type]
            deferred.append(f"{prefix}{name}=choice({override.get_value_element_as_str()})")
        else:
            deferred.append(override.input_line)
    return deferred


def run_job(cfg: DictConfig) -> dict[str, Any]:
    """One job of ``launch``, in the process Hydra (or a launcher) runs it in: the run, with any RlconfError
    said in one line with its exit status (a divergence, a full disk: status.json, error.txt; the last
    checkpoint kept). Returns the summary to a sweeper: Optuna's objective is its test_return_mean."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from rlconf.experiments.console.progress import announce

    announce(cfg)  # a first line before torch is imported: seconds, not a blank screen
    from rlconf.experiments.run import run

    hydra_cfg = HydraConfig.get()
    parent = hydra_cfg.sweep.dir if hydra_cfg.mode == RunMode.MULTIRUN else None
    with reported():
        return run(cfg, parent_dir=parent, overrides=list(hydra_cfg.overrides.task))


def launch(overrides: list[str], config_dirs: list[str], multirun: bool, cfg_mode: str | None,
           task: Callable[[DictConfig], Any] = run_job) -> int:
    """Hand the checked overrides to Hydra, which composes again and runs (or sweeps) the job: ``task``, which
    calls ``run_job`` (Hydra names the job, ``hydra.job.name``, after the module that defines ``task``)."""
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
    hydra_main = hydra.main(config_path=str(config_dir()), config_name="config", version_base=None)(task)
    saved = sys.argv
    sys.argv = argv
    try:
        hydra_main()
    finally:
        sys.argv = saved
    return 0
