"""The settings of rlconf's launchers, as typed Hydra configs (``hydra/launcher`` options), and their checks.

``launchers/launcher/*.yaml`` pick one of these and fill in what the hardware group says about each run
(``${hardware.gpus_per_run}``, ...); a site's cluster profile is one more YAML file in a ``launcher/``
folder of its own (see launchers/README.md). Hydra checks the types; ``check`` the values, with one line
naming the key, as everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlconf.errors import LauncherError

LOCAL_TARGET = "hydra_plugins.rlconf_launch.LocalLauncher"
SLURM_TARGET = "hydra_plugins.rlconf_launch.SlurmLauncher"
BASIC_TARGET = "hydra_plugins.rlconf_launch.BasicLauncher"


@dataclass
class BasicLauncherConf:
    """Runs one after another inside the rlconf process (``rlconf.launch.basic``): nothing to set."""

    _target_: str = BASIC_TARGET


@dataclass
class LocalLauncherConf:
    """Runs in fresh processes on this machine, as many at once as there are slots."""

    _target_: str = LOCAL_TARGET
    # GPUs to divide among runs: null (leave CUDA_VISIBLE_DEVICES alone), auto (those this machine shows),
    # or a list of indices. Each run sees only its own: gpus_per_run of them, shared by runs_per_gpu runs.
    gpus: Any = None
    gpus_per_run: int = 0
    runs_per_gpu: int = 1
    cpus_per_run: int = 1
    learners: int = 1  # data-parallel learners a run: its slot has learners x gpus_per_run GPUs and x cpus
    parallel: int | None = 1  # at most this many runs at once (null: one per slot)
    pin_cpus: bool = True  # give each run cpus_per_run cores of its own when the machine has enough


@dataclass
class SlurmLauncherConf:
    """The runs of a sweep as one Slurm job array, submitted through submitit."""

    _target_: str = SLURM_TARGET
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: int = 60  # minutes per job; a run that needs longer is requeued and resumes
    gpus: int = 0  # per learner (sbatch --gpus-per-node: this times the learners on a node)
    cpus: int = 1  # per learner (sbatch --cpus-per-task)
    tasks: int = 1  # the run's learners: tasks of one job (sbatch --ntasks-per-node: tasks / nodes) ...
    nodes: int = 1  # ... on this many nodes (sbatch --nodes)
    mem: str | None = None  # per job, as sbatch takes it: 16G, 4000M
    constraint: str | None = None
    array_parallelism: int = 256  # jobs of the array running at once
    sbatch: list[str] = field(default_factory=list)  # extra sbatch options: ["--mail-type=END", "--exclusive"]
    setup: list[str] = field(default_factory=list)  # shell lines run before the job: module load, source a venv
    signal_delay_s: int = 120  # the warning signal (USR2) comes this long before the time limit
    job_name: str = "rlconf"
    folder: str = "${hydra.sweep.dir}/.slurm"  # submitit's job scripts, pickles and logs
    python: str | None = None  # the interpreter on the compute nodes (default: this one)
    wait: bool = True  # wait for the jobs (sweepers such as Optuna need their results); false: submit and exit
    poll_seconds: float = 5.0


LOCAL_KEYS = {f for f in LocalLauncherConf.__dataclass_fields__ if f != "_target_"}
SLURM_KEYS = {f for f in SlurmLauncherConf.__dataclass_fields__ if f != "_target_"}


def _require(ok: bool, key: str, value: Any, allowed: str) -> None:
    if not ok:
        raise LauncherError(f"hydra.launcher.{key}={value}: {allowed}")


def check(target: str, params: dict[str, Any]) -> None:
    """Check the (resolved) settings of one of rlconf's launchers."""
    if target == LOCAL_TARGET:
        gpus = params.get("gpus")
        _require(gpus is None or gpus == "auto" or isinstance(gpus, list) and all(
            isinstance(g, int) and g >= 0 for g in gpus), "gpus", gpus, "allowed: null, auto, or a list of GPU indices")
        _require(params.get("parallel") is None or params["parallel"] >= 1, "parallel", params.get("parallel"),
                 "must be at least 1, or null")
        for key in ("runs_per_gpu", "cpus_per_run"):
            _require(params[key] >= 1, key, params[key], "must be at least 1")
        _require(params["gpus_per_run"] >= 0, "gpus_per_run", params["gpus_per_run"], "must be 0 or more")
        if gpus is not None and params["gpus_per_run"] < 1:  # interpolated from the hardware group
            raise LauncherError(f"hardware.gpus_per_run={params['gpus_per_run']}: launcher=local_gpus gives each "
                                "run GPUs of its own, at least 1 (hardware=gpu or hardware=gpus)")
        if isinstance(gpus, list):
            _require(len(gpus) >= params["gpus_per_run"], "gpus", gpus,
                     f"fewer GPUs than hardware.gpus_per_run={params['gpus_per_run']}")
        _check_runs_at_once(params)
    elif target == SLURM_TARGET:
        for key in ("time", "cpus", "array_parallelism", "signal_delay_s", "tasks", "nodes"):
            _require(params[key] >= 1, key, params[key], "must be at least 1")
        _require(params["gpus"] >= 0, "gpus", params["gpus"], "must be 0 or more")
        _require(params["poll_seconds"] > 0, "poll_seconds", params["poll_seconds"], "must be positive")
        for line in params["sbatch"]:
            _require(str(line).startswith("--"), "sbatch", line, "each item is a long sbatch option, e.g. --exclusive")


def _check_runs_at_once(params: dict[str, Any]) -> None:
    """The runs a local launcher starts at once (``parallel``, or ``runs_per_gpu`` on each GPU), each of
    ``learners`` processes, bounded by the processes this machine holds (``config.machine_processes``)."""
    from rlconf.settings import machine_processes

    limit, machine = machine_processes()
    learners = max(1, int(params.get("learners") or 1))
    most = max(1, limit // learners)
    holds = f"runs at once, {learners} learner process(es) each; this machine holds {limit} processes ({machine})"
    _require(params.get("parallel") is None or params["parallel"] <= most, "parallel", params.get("parallel"),
             f"{holds}; allowed: 1 to {most}, or null")
    _require(params["runs_per_gpu"] <= most, "runs_per_gpu", params["runs_per_gpu"], f"{holds}; allowed: 1 to {most}")


def sbatch_parameters(options: list[str]) -> dict[str, Any]:
    """``["--mail-type=END", "--exclusive"]`` as submitit's additional_parameters ({"mail-type": "END", ...})."""
    parameters: dict[str, Any] = {}
    for option in options:
        key, _, value = option[2:].partition("=")
        parameters[key] = value if _ else True
    return parameters
