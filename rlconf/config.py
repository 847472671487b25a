"""Typed settings for a composed run config, and the checks that turn bad input into one clear line.

Hydra composes YAML into a DictConfig (``compose``, as ``rlconf run`` does); ``validate`` checks every group
against a dataclass schema (the top-level keys and the env, hardware, body and logger groups here; the agent's
and the model's schemas come from the registry) before anything is built. Any problem raises ``ConfigError``
whose message names the key, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rlconf import registry
from rlconf.cost import check_costs
from rlconf.errors import REDACTED, TOKEN, ConfigError, require
from rlconf.paths import config_dir, launchers_dir

# How environment copies are stepped: auto, in this process (sync), in subprocesses (async), or by the
# simulator's own vector version (native). Environment adapters read the same tuple.
VECTORIZATION_MODES = ("auto", "sync", "async", "native")
COMPILE_CHOICES = ("auto", "true", "false")  # hardware.compile (rlconf.approximation.compiled)
# Where a run's training environments step: in this process (serial), in worker processes writing to shared
# memory (parallel), or in two groups of workers, one stepping while the agent acts on the other (alternating).
SAMPLERS = ("serial", "parallel", "alternating")
RUNNERS = ("sync", "async")


@dataclass
class CheckpointSettings:
    replay: bool = False  # also save the replay buffer, so a resumed run does not start from an empty one
    keep: int = 0  # numbered checkpoints (checkpoint-<step>.pt) kept beside checkpoint.pt, the newest

    def __post_init__(self):
        require(0 <= self.keep <= 10_000, "checkpoint.keep", self.keep,
                "must be an integer from 0 (none) to 10,000: how many numbered checkpoints to keep")


# A budget no machine finishes (a trillion steps is weeks at a million steps a second) is a typo.
MAX_STEPS = 10**12
# Seeds reach numpy's legacy generator and the simulators, which take 32-bit seeds.
MAX_SEED = 2**32 - 1
INT64 = 2**63  # integers the tensors, generators and simulators can hold lie within +-INT64


def require_every(key: str, value: Any, least: int) -> None:
    """The one rule of every ``*_every`` key (``eval_every``, ``logger.scalars_every``, ...): a whole number of
    steps (or updates) from ``least`` to MAX_STEPS; more is never reached, and is a typo."""
    require(isinstance(value, int) and not isinstance(value, bool) and least <= value <= MAX_STEPS, key, value,
            f"must be an integer from {least} to {MAX_STEPS:,}")


# Control characters (a newline, a tab, an escape) in a path make a file named ``a\nb`` that no listing shows as
# typed, and break the lines of every log that names it.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def require_path(key: str, value: Any) -> None:
    """A path setting (``logdir``, ...) holds no control character."""
    found = CONTROL_CHARACTERS.search(value) if isinstance(value, str) else None
    if found is not None:
        raise ConfigError(f"{key}={value!r}: holds the control character {found.group()!r}; allowed: a path of "
                          "printable characters")


@dataclass
class InitSettings:
    run: str | None = None  # RUN_DIR[:best|last|STEP]: a fresh run starts from that checkpoint's networks
    optimizer: bool = False  # also from their optimisers' state


@dataclass
class TrialSettings:
    """The trial of an Optuna sweep a run is (rlconf.tuning), set by the sweeper: where the run reports its
    periodic evaluations, and the pruner that may stop it."""

    storage: str | None = None  # the study's journal file
    study: str | None = None
    number: int | None = None
    pruner: str | None = None
    pruner_args: dict[str, Any] | None = None


@dataclass
class RunSettings:
    seed: int = 0
    steps: int = 100_000  # environment-step budget
    test_episodes: int = 100  # greedy episodes of the final test
    eval_every: int = 10_000  # environment steps between periodic evaluations (0: none)
    eval_episodes: int = 10
    checkpoint_every: int = 50_000  # environment steps between checkpoints (and one at the end)
    logdir: str = "runs"
    quiet: bool = False
    verbose: bool = False  # also log losses and schedules
    plugins: list[str] = field(default_factory=list)  # modules to import (they may register components)
    checkpoint: CheckpointSettings = field(default_factory=CheckpointSettings)
    resume: str | None = None  # a run directory to continue from its checkpoint (with -m: a sweep directory)
    rerun: str | None = None  # a run directory whose recorded config this new run repeats (provenance.py)
    init: InitSettings = field(default_factory=InitSettings)  # a warm start (rlconf.experiments.warmstart)
    trial: TrialSettings = field(default_factory=TrialSettings)  # a run of an Optuna sweep (rlconf.tuning)

    def __post_init__(self):
        require(0 < self.steps <= MAX_STEPS, "steps", self.steps,
                f"must be a positive integer of at most {MAX_STEPS:,} (environment steps)")
        require(0 <= self.seed <= MAX_SEED, "seed", self.seed, f"must be an integer from 0 to {MAX_SEED:,}")
        for key in ("test_episodes", "eval_episodes"):
            require(getattr(self, key) >= 0, key, getattr(self, key), "must be a non-negative integer")
        for key in ("eval_every", "checkpoint_every"):
            require_every(key, getattr(self, key), 0)
        require(self.eval_episodes >= 1 or not self.eval_every, "eval_episodes", self.eval_episodes,
                f"eval_every={self.eval_every} evaluates every {self.eval_every:,} steps, in at least 1 episode; "
                "allowed: eval_episodes=1 or more, or eval_every=0 (no periodic evaluations)")
        for key in ("logdir", "resume", "rerun"):
            require_path(key, getattr(self, key))
        require_path("init.run", self.init.run)
        for module in self.plugins:
            problem = registry.plugin_problem(module)
            require(problem is None, "plugins", self.plugins, str(problem))


@dataclass
class EnvSettings:
    name: str = "???"  # the config's own name, e.g. classic/cartpole
    family: str = "classic"
    id: str = "???"  # the simulator's id, e.g. CartPole-v1
    kwargs: dict[str, Any] = field(default_factory=dict)
    max_episode_steps: int | None = None

    def __post_init__(self):
        require(self.family in registry.names("environment"), "env.family", self.family,
                f"allowed: {', '.join(registry.names('environment'))}")
        require(self.max_episode_steps is None or self.max_episode_steps > 0, "env.max_episode_steps",
                self.max_episode_steps, "must be a positive integer or null")
        check_env_kwargs(self.kwargs)


# Counts among env.kwargs that must be at least 1: PettingZoo's max_cycles=0 ends every game after a turn each,
# and a frame skip of 0 steps no frame.
KWARG_COUNTS = ("max_cycles", "frame_skip")


def check_env_kwargs(value: Any, key: str = "env.kwargs") -> None:
    """Every number in env.kwargs, however deep (``means=[0,nan]``), is finite and fits 64 bits: an env's
    parameters are as much the user's input as an agent's (a nan mean gives nan regret, silently), though what
    each means is the simulator's business. The counts of KWARG_COUNTS are at least 1."""
    if isinstance(value, dict):
        for name, item in value.items():
            check_env_kwargs(item, f"{key}.{name}")
            if name in KWARG_COUNTS and isinstance(item, (int, float)) and not isinstance(item, bool):
                require(item >= 1, f"{key}.{name}", item, "must be at least 1")
        return
    items = value if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if isinstance(item, (list, tuple, dict)):
            check_env_kwargs(item, key)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ConfigError(f"{key}={value}: must hold finite numbers only")
        elif isinstance(item, int) and not -INT64 <= item < INT64:
            raise ConfigError(f"{key}={value}: out of range; integers must lie within +-2^63")


@dataclass
class HardwareSettings:
    device: str = "cpu"
    n_envs: int = 1  # parallel training environments
    torch_threads: int = 1
    vectorization: str = "auto"  # auto, sync, async (subprocesses) or native (gymnasium's vector version)
    sampler: str = "serial"  # serial, parallel (cpus_per_run worker processes) or alternating (two groups)
    # Data-parallel learners (rlconf.distributed): processes that each step n_envs copies of their own and
    # average every gradient; steps is their total. On Slurm, tasks of one job spread over ``nodes`` nodes.
    learners: int = 1
    nodes: int = 1
    # Off-policy agents: act and learn in one process (sync), or in two at once (async: rlconf.experiments.runner),
    # the acting one's weights refreshed every sync_every optimiser steps.
    runner: str = "sync"
    sync_every: int = 10
    eval_envs: int = 16  # parallel environments for evaluation
    # How runs share a machine (read by the launchers): each run gets gpus_per_run GPUs of its own (Slurm
    # allocates them; local_gpus hands each run a distinct set), runs_per_gpu runs share one GPU when
    # gpus_per_run is 1 (local_gpus), and cpus_per_run cores (Slurm's cpus-per-task; local launchers pin each
    # run to that many cores of its own when the machine has them).
    gpus_per_run: int = 0
    runs_per_gpu: int = 1
    cpus_per_run: int = 1
    # torch.compile the networks (rlconf.approximation.compiled): auto, true or false. auto compiles long
    # CUDA runs (with CUDA graphs) and leaves CPU runs eager.
    compile: str = "auto"

    def __post_init__(self):
        self.compile = str(self.compile).lower()  # YAML and the command line read true/false as booleans
        require(self.compile in COMPILE_CHOICES, "hardware.compile", self.compile,
                f"allowed: {', '.join(COMPILE_CHOICES)}")
        require(self.n_envs >= 1, "hardware.n_envs", self.n_envs, "must be at least 1")
        require(self.gpus_per_run >= 0, "hardware.gpus_per_run", self.gpus_per_run, "must be 0 or more")
        require(self.runs_per_gpu >= 1, "hardware.runs_per_gpu", self.runs_per_gpu, "must be at least 1")
        require(self.runs_per_gpu == 1 or self.gpus_per_run == 1, "hardware.runs_per_gpu", self.runs_per_gpu,
                "runs share a GPU only with hardware.gpus_per_run=1")
        require(self.cpus_per_run >= 1, "hardware.cpus_per_run", self.cpus_per_run, "must be at least 1")
        require(not self.device.startswith("cuda") or self.gpus_per_run >= 1, "hardware.gpus_per_run",
                self.gpus_per_run, f"hardware.device={self.device} needs at least 1")
        require(self.torch_threads >= 1, "hardware.torch_threads", self.torch_threads, "must be at least 1")
        require(self.eval_envs >= 1, "hardware.eval_envs", self.eval_envs, "must be at least 1")
        require(self.vectorization in VECTORIZATION_MODES, "hardware.vectorization", self.vectorization,
                f"allowed: {', '.join(VECTORIZATION_MODES)}")
        require(self.sampler in SAMPLERS, "hardware.sampler", self.sampler, f"allowed: {', '.join(SAMPLERS)}")
        require(self.sampler != "alternating" or self.n_envs >= 2, "hardware.n_envs", self.n_envs,
                "hardware.sampler=alternating steps the copies in two groups: allowed: 2 or more")
        require(self.learners >= 1, "hardware.learners", self.learners, "must be at least 1")
        require(self.runner in RUNNERS, "hardware.runner", self.runner, f"allowed: {', '.join(RUNNERS)}")
        require_every("hardware.sync_every", self.sync_every, 1)
        require(self.runner == "sync" or self.learners == 1, "hardware.runner", self.runner,
                "the async runner is one learner's; allowed: hardware.runner=sync with hardware.learners > 1")
        require(self.nodes >= 1, "hardware.nodes", self.nodes, "must be at least 1")
        require(self.learners % self.nodes == 0, "hardware.nodes", self.nodes,
                f"the {self.learners} learner(s) must divide evenly among the nodes; allowed: a divisor of "
                f"hardware.learners")
        require(self.device == "cpu" or self.device.startswith(("cuda", "mps")), "hardware.device",
                self.device, "allowed: cpu, cuda, cuda:N, mps")


# What each process a run starts costs, to bound how many this machine can hold: a Python process that has
# imported torch holds about 240 MB (measured: a learner); and processes per core, since more than one per core
# only time-share, while a few let a small machine try a parallel setting.
PROCESS_BYTES = 256 * 2**20
PROCESSES_PER_CPU = 4


def machine_processes() -> tuple[int, str]:
    """How many processes of a run this machine holds (at least 1), and the machine in words, for messages."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not reported here: cores alone
        memory = PROCESS_BYTES * PROCESSES_PER_CPU * cpus
    limit = max(1, min(PROCESSES_PER_CPU * cpus, memory // PROCESS_BYTES))
    return limit, f"{cpus} core(s) and {memory / 2**30:.0f} GiB, {PROCESS_BYTES // 2**20} MiB a process"


def check_process_counts(hardware: HardwareSettings) -> None:
    """Every count of processes a run starts on this machine, bounded by what the machine holds
    (``machine_processes``): its learners (``hardware.learners`` / ``hardware.nodes`` on each machine), each
    learner's sampler workers (``hardware.cpus_per_run``, one per copy at most), its environments in
    subprocesses (``hardware.n_envs`` with ``hardware.vectorization=async``) and async runner. A ConfigError
    naming the key, its value and the allowed range, before anything starts. Checked where the run starts, not
    in validate: a Slurm login node is not the machine its jobs run on (as ``run.check_device``)."""
    limit, machine = machine_processes()
    holds = f"this machine holds {limit} processes of a run ({machine})"
    workers = min(hardware.cpus_per_run, hardware.n_envs) if hardware.sampler != "serial" else 0
    subprocesses = hardware.n_envs if hardware.sampler == "serial" and hardware.vectorization == "async" else 0
    require(workers < limit, "hardware.cpus_per_run", hardware.cpus_per_run,
            f"hardware.sampler={hardware.sampler} starts a worker process per core; {holds}; allowed: 1 to "
            f"{max(1, limit - 1)}")
    require(subprocesses < limit, "hardware.n_envs", hardware.n_envs,
            f"hardware.vectorization=async starts a process per copy; {holds}; allowed: 1 to {max(1, limit - 1)} "
            "(or hardware.vectorization=auto, which steps them in the run's process)")
    per_learner = 1 + workers + subprocesses + (hardware.runner == "async")
    most = max(1, limit // per_learner) * hardware.nodes
    more = f", and {per_learner - 1} more each (sampler, environments, runner)" if per_learner > 1 else ""
    require(hardware.learners <= most, "hardware.learners", hardware.learners, f"a process each{more} "
            f"({hardware.learners // hardware.nodes} learner(s) on each of hardware.nodes={hardware.nodes}); "
            f"{holds}; allowed: 1 to {most}")


# The velocity components of vector observations, by simulator id: what body=mask_velocity hides unless
# body.masked names others. Classic control from gymnasium's observation tables; MuJoCo's observations are the
# joint positions (without the root's x), then the velocities.
VELOCITY_COMPONENTS: dict[str, tuple[int, ...]] = {
    "CartPole-v0": (1, 3), "CartPole-v1": (1, 3),  # cart velocity, pole angular velocity
    "Pendulum-v1": (2,),  # angular velocity
    "MountainCar-v0": (1,), "MountainCarContinuous-v0": (1,),  # the car's velocity
    "Acrobot-v1": (4, 5),  # both joints' angular velocities
    "LunarLander-v3": (2, 3, 5), "LunarLanderContinuous-v3": (2, 3, 5),  # vx, vy, angular velocity
    "HalfCheetah-v5": tuple(range(8, 17)), "Hopper-v5": tuple(range(5, 11)), "Walker2d-v5": tuple(range(8, 17)),
}


@dataclass
class BodySettings:
    """The chosen body and its settings; a body takes those named in its constructor (bodies.body_options)."""

    name: str = "none"
    frame_stack: int = 4  # frames the agent sees at once (atari)
    clip_rewards: bool = True  # the agent learns from sign(reward) (atari)
    episodic_lives: bool = True  # in training, a lost life ends the agent's episode (atari)
    time_feature_scale: float = 0.001  # the feature is t * this, t the steps into the episode (time_feature)
    masked: list[int] | None = None  # the observation components hidden (mask_velocity); null: the velocities
    # Any body: running mean/std normalisation of the env's observations, saved in checkpoints (bodies.normalize)
    normalize_observations: bool = False
    # Any body: rewards / running std of the discounted return, statistics in checkpoints (bodies.normalize)
    normalize_rewards: bool = False

    def __post_init__(self):
        require(self.name in registry.names("body"), "body.name", self.name,
                f"allowed: {', '.join(registry.names('body'))}")
        require(self.frame_stack >= 1, "body.frame_stack", self.frame_stack, "must be at least 1")
        require(self.time_feature_scale > 0, "body.time_feature_scale", self.time_feature_scale, "must be positive")


@dataclass
class LoggerSettings:
    """The logger group: CSV always, plus every backend named as a key (``logger=[csv,wandb]`` composes
    ``logger.csv`` and ``logger.wandb``), each with its own options."""

    debug_every: int = 100  # with verbose=true, log losses every this many updates
    scalars_every: int = 1000  # environment steps between perf/ (and, verbose, schedule/) scalars
    pulls_every: int = 1  # bandits: pulls of each bandit per row of pulls.csv (and bandit/ scalars)
    video_every: int = 0  # environment steps between videos of a greedy episode (0: none)
    video_length: int = 1000  # frames a video keeps at most (an episode's first ones)
    backends: dict[str, Any] = field(default_factory=dict)  # backend name -> its Config, "csv" first


def check_logger(node: Any) -> LoggerSettings:
    """The logger group: its own keys, then one key per backend, each checked against the backend's Config."""
    node = OmegaConf.create(node) if not isinstance(node, DictConfig) else node
    names = registry.names("logger")
    counts = {"debug_every": 1, "scalars_every": 1, "pulls_every": 1, "video_every": 0, "video_length": 1}  # minima
    own = {k: whole(node[k]) for k in counts if k in node}
    for key in node:
        if key not in own and key not in names:
            allowed = [*(f"logger.{k}" for k in counts), *(f"logger.{n}" for n in names)]
            raise ConfigError(registry.unknown_message("key", f"logger.{key}", allowed))
    settings = LoggerSettings(**own)
    for key, least in counts.items():
        value = getattr(settings, key)
        if key.endswith("_every"):  # the rule of every *_every key
            require_every(f"logger.{key}", value, least)
        require(isinstance(value, int) and not isinstance(value, bool) and least <= value < INT64, f"logger.{key}",
                value, f"must be an integer of at least {least}")
    if settings.video_every and not all(importlib.util.find_spec(name) for name in ("imageio_ffmpeg", "PIL")):
        raise ConfigError(f"logger.video_every={settings.video_every} needs moviepy's ffmpeg and Pillow to write "
                          "videos: pip install 'rlconf[video]'")
    for name in ["csv", *(k for k in node if k in names and k != "csv")]:
        backend = registry.get("logger", name)
        options = node.get(name)
        require(options is None or isinstance(options, DictConfig), f"logger.{name}", options,
                "expected the backend's options (a mapping)")
        if getattr(backend, "requires", None) and importlib.util.find_spec(backend.requires) is None:
            raise ConfigError(f"logger={name} needs the missing package {backend.requires!r}: "
                              f"pip install 'rlconf[{backend.requires}]'")
        settings.backends[name] = check(backend.Config, options or {}, f"logger.{name}.")
    return settings


# Config keys whose values are secrets: never written to the run directory or sent to a logger.
SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|credential)", re.IGNORECASE)
# ``api_key=VALUE`` (and its kin) inside a longer string: the VALUE goes.
SECRET_ASSIGNMENT = re.compile(r"((?:api[_-]?key|token|secret|password|passwd|credential)\w*\s*[=:]\s*)"
                               r"[^\s,;&'\"\])}]+", re.IGNORECASE)


def redact(value: Any) -> Any:
    """A copy of a plain config (dicts, lists, ``key=value`` override strings) with the value of every key
    named like a secret replaced by ``***``; also any value equal to a secret from the environment
    (WANDB_API_KEY and its kin), wherever it was interpolated, any token of a known format (``TOKEN``: ghp_...,
    sk-..., never a path component that merely looks random, such as a file named by its MD5), and the value of
    an ``api_key=...`` written inside a longer string."""
    secrets = {v for k, v in os.environ.items() if SECRET_KEY.search(k) and len(v) >= 8}
    return _redact(value, secrets)


def _redact(value: Any, secrets: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: REDACTED if SECRET_KEY.search(str(k)) and v is not None else _redact(v, secrets)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact(v, secrets) for v in value)
    if isinstance(value, str):
        key, eq, _ = value.partition("=")
        if eq and SECRET_KEY.search(key.split(".")[-1]):  # an override: key=value
            return f"{key}={REDACTED}"
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        value = SECRET_ASSIGNMENT.sub(lambda m: m.group(1) + REDACTED, value)
        value = TOKEN.sub(REDACTED, value)
    return value


@dataclass
class Settings:
    """Everything a run needs, checked and typed."""

    run: RunSettings
    agent_name: str
    agent: Any  # the agent's own Config dataclass
    env: EnvSettings
    approximation: dict[str, Any]
    body: BodySettings
    hardware: HardwareSettings
    logger: LoggerSettings
    agent_target: str | None = None  # the agent's import path, where the config gives one (agent._target_)

    @property
    def agent_class(self) -> Any:
        """The agent's class, imported when first asked for (it imports torch; checking a config does not)."""
        if self.agent_target:
            return registry.import_path(self.agent_target)
        return registry.get("agent", self.agent_name)


GROUP_SCHEMAS = {"env": EnvSettings, "hardware": HardwareSettings, "body": BodySettings}
TOP_LEVEL_GROUPS = ("family", "agent", "env", "approximation", "body", "hardware", "logger")


def check(schema: type, node: Any, prefix: str = "", see: str = "", known: set[str] | None = None) -> Any:
    """``node`` (a DictConfig or dict) as an instance of the dataclass ``schema``, or a ConfigError. An unknown
    key's message names the keys it may mean among ``known`` (every key of the config) and ``see``, a command
    that shows them all."""
    node = OmegaConf.create(node) if not isinstance(node, DictConfig) else node
    allowed = [f.name for f in dataclasses.fields(schema)]
    for key in node:
        if key not in allowed:
            raise ConfigError(registry.unknown_message("key", f"{prefix}{key}", [prefix + a for a in allowed], see,
                                                       known))
    try:
        node = OmegaConf.to_container(node, resolve=True)
    except OmegaConfBaseException:  # an interpolation that does not resolve here: the merge below says which
        pass
    else:
        node = whole_numbers(schema, node)
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema), node)
        settings = OmegaConf.to_object(merged)
    except ConfigError:
        raise
    except OmegaConfBaseException as error:
        key = f"{prefix}{error.full_key}" if getattr(error, "full_key", None) else prefix.rstrip(".")
        value = getattr(error, "value", None)
        expected = _expected_type(schema, str(error.full_key or ""))
        raise ConfigError(f"{key}={value}: {expected}") from None
    check_finite_numbers(settings, prefix)
    return settings


def whole_numbers(schema: type, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with each float that is a whole number (``steps=1e5``, ``100000.0``) under a key ``schema``
    types as an integer (``int``, ``int | None``, ``list[int]``, nested settings too) made that integer: the
    command line reads 1e5 as a float. 1.5 stays a float, which the schema refuses as before."""
    hints = typing.get_type_hints(schema)
    values = dict(values)
    for f in dataclasses.fields(schema):
        if f.name not in values:
            continue
        kind, value = hints.get(f.name), values[f.name]
        if _integer_type(kind):
            values[f.name] = whole(value)
        elif typing.get_origin(kind) is list and _integer_type(typing.get_args(kind)[0]) and isinstance(value, list):
            values[f.name] = [whole(item) for item in value]
        elif dataclasses.is_dataclass(kind) and isinstance(value, dict):
            values[f.name] = whole_numbers(kind, value)
    return values


def typed_value(settings: Settings, key: str) -> Any:
    """The checked value of the config key ``key`` (dotted: ``steps``, ``agent.batch_size``) in ``settings``;
    None where it has none."""
    parts = key.split(".")
    node: Any = getattr(settings, parts[0], None) if parts[0] in TOP_LEVEL_GROUPS else settings.run
    for part in parts[1:] if parts[0] in TOP_LEVEL_GROUPS else parts:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, LoggerSettings) and part in node.backends:
            node = node.backends[part]
        else:
            node = getattr(node, part, None)
    return node


def whole(value: Any) -> Any:
    """A float that is a whole number as that int (1e5 -> 100000); anything else as it is."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _integer_type(kind: Any) -> bool:
    return kind is int or (typing.get_origin(kind) in (typing.Union, types.UnionType)
                           and int in typing.get_args(kind) and set(typing.get_args(kind)) <= {int, type(None)})


def config_keys(node: Any, prefix: str = "") -> set[str]:
    """Every key of a composed config, dotted (``hardware.n_envs``), without resolving anything."""
    keys = set()
    for key in node.keys() if isinstance(node, DictConfig) else ():
        dotted = f"{prefix}{key}"
        keys.add(dotted)
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            keys |= config_keys(child, dotted + ".")
    return keys


def check_finite_numbers(settings: Any, prefix: str = "") -> None:
    """Refuse nan and inf in a settings dataclass (nested settings and lists included): YAML and the command
    line accept ``inf`` and ``nan`` as floats, and a learning rate of inf trains nothing but NaN weights.
    Integers beyond 64 bits are refused too: no tensor, generator or simulator takes them.
    Free-form mappings (an env's kwargs) are the simulator's business and are not looked into."""
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        values = value if isinstance(value, list) else [value]
        if dataclasses.is_dataclass(value):
            check_finite_numbers(value, f"{prefix}{f.name}.")
        for item in values:
            if isinstance(item, float) and not math.isfinite(item):
                raise ConfigError(f"{prefix}{f.name}={value}: must be a finite number")
            if isinstance(item, int) and not -INT64 <= item < INT64:
                raise ConfigError(f"{prefix}{f.name}={value}: out of range; integers must lie within +-2^63")


def _expected_type(schema: type, key: str) -> str:
    """The declared type of ``key`` (dotted, into nested settings) for the error message."""
    kind: Any = schema
    for name in key.split("."):
        fields = {f.name: f for f in dataclasses.fields(kind)} if dataclasses.is_dataclass(kind) else {}
        field_ = fields.get(name.split("[")[0])
        if field_ is None:
            return "expected a valid value"
        kind = field_.default_factory if dataclasses.is_dataclass(field_.default_factory) else field_.type
    return f"expected {kind}"


def check_pairing(env: EnvSettings, body: BodySettings, model_schema: type, model: str) -> None:
    """The env's observations fit the network chosen for them, and its games have the lives the body counts
    (said before anything is built, instead of a shape error or a KeyError mid-run). What each component
    declares is read from the registry, importing none of the built-in ones."""
    if getattr(model_schema, "images_only", False) and not registry.declared("environment", env.family,
                                                                            "image_observations", False):
        allowed = [n for n in registry.names("model") if not getattr(registry.model_schema(n), "images_only", False)]
        raise ConfigError(f"approximation.model={model}: a network for image observations (frames); env={env.name} "
                          f"has vector observations; allowed: {', '.join(allowed)}")
    options = registry.declared("body", body.name, "options")
    if options is None:  # a plugin's body: the options its constructor takes
        from rlconf.bodies import body_options

        options = body_options(registry.get("body", body.name), {"episodic_lives": True})
    if body.episodic_lives and "episodic_lives" in options and not registry.declared(
            "environment", env.family, "lives", False):
        raise ConfigError(f"body={body.name}: its episodic lives need a game with lives (Atari); env={env.name} has "
                          "none: add body.episodic_lives=false, or choose body=none")


def check_memory(agent_name: str, agent: Any, recurrent: str, declared: str | None = None) -> None:
    """An agent takes a recurrent core (``approximation.recurrent``) only if it declares it can (``recurrent``:
    never, optional, required, or ignored by one that builds no network); a multi-agent run's players are its
    agents (agent.base, agent.players). ``declared``: what an agent named by ``_target_`` declares (None: ask
    the registry)."""
    players = [agent.base, *agent.players.values()] if hasattr(agent, "base") else [agent_name]
    for name in players:
        support = declared if declared is not None and name == agent_name else registry.declared(
            "agent", name, "recurrent", "never")
        if recurrent != "none" and support == "never":
            able = [n for n in registry.names("agent")
                    if registry.declared("agent", n, "recurrent", "never") in ("optional", "required")]
            raise ConfigError(f"approximation.recurrent={recurrent}: agent={name} has no memory; allowed with "
                              f"{', '.join(able)} (or approximation.recurrent=none)")
        if recurrent == "none" and support == "required":
            raise ConfigError(f"agent={name} learns with memory: approximation.recurrent=none; allowed: lstm, gru")


def with_masked_components(body: BodySettings, env: EnvSettings) -> BodySettings:
    """``body.masked`` resolved: for body=mask_velocity without a list, the env's velocities, or one line
    naming what to write when the env is not in VELOCITY_COMPONENTS."""
    if body.name != "mask_velocity":
        return body
    if registry.declared("environment", env.family, "image_observations", False):
        raise ConfigError(f"body=mask_velocity: hides components of vector observations; env={env.name} has frames "
                          "(memory on Atari: body=atari body.frame_stack=1)")
    if body.masked is not None:
        return body
    if env.id not in VELOCITY_COMPONENTS:
        raise ConfigError(f"body=mask_velocity: which components of {env.id}'s observations are velocities is not "
                          "known; name them, e.g. body.masked=[1,3] (known: classic control, HalfCheetah, Hopper, "
                          "Walker2d)")
    return dataclasses.replace(body, masked=list(VELOCITY_COMPONENTS[env.id]))


def check_interpolations(cfg: DictConfig) -> None:
    """Every interpolation of ``cfg`` resolves (``${oc.env:VAR}``, ``${key}``), or a ConfigError naming the key,
    what was written and why it does not resolve."""
    try:
        OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as error:
        key = str(getattr(error, "full_key", "") or "")
        written = _written(cfg, key)
        reason = " ".join(str(error).splitlines()[0].split())
        raise ConfigError(f"{key}={written}: does not resolve ({reason})") from None


def _written(cfg: DictConfig, key: str) -> str:
    """The value of ``key`` as written (an interpolation unresolved), for messages."""
    node: Any = OmegaConf.to_container(cfg, resolve=False)
    for part in key.split(".") if key else []:
        node = node.get(part) if isinstance(node, dict) else None
    return str(node)


def validate(cfg: DictConfig) -> Settings:
    """Check a composed config from top to bottom; the first problem raises ConfigError."""
    check_interpolations(cfg)
    known = config_keys(cfg)
    picks = (OmegaConf.select(cfg, f"{group}.name", default=None) or "..." for group in ("agent", "env"))
    see = "rlconf run agent={} env={} --cfg job".format(*picks)
    top = {k: v for k, v in cfg.items() if k not in TOP_LEVEL_GROUPS}
    run = check(RunSettings, OmegaConf.create(top), see=see, known=known)
    try:
        registry.load_plugins(run.plugins)
    except ImportError as error:  # a misspelt module or one off the path: the user's input, not a crash
        raise ConfigError(f"plugins={run.plugins}: {error} (is its folder on PYTHONPATH?)") from None
    groups = {name: check(schema, cfg.get(name) or {}, f"{name}.", see, known)
              for name, schema in GROUP_SCHEMAS.items()}
    groups["logger"] = check_logger(cfg.get("logger") or {})

    agent_node = OmegaConf.to_container(cfg.agent, resolve=True)
    agent_name = agent_node.pop("name", None)
    target = agent_node.pop("_target_", None)
    not_an_agent = ("not an agent class (one with a Config dataclass and from_config; see rlconf list "
                    "components)")
    if target:
        try:
            agent_class = registry.import_path(target)
        except (ImportError, AttributeError, ValueError) as error:  # ValueError: an empty module name
            raise ConfigError(f"agent._target_={target}: cannot import it: {error}") from None
        if not (isinstance(agent_class, type) and hasattr(agent_class, "from_config")):
            raise ConfigError(f"agent._target_={target}: {not_an_agent}")
        config_class = getattr(agent_class, "Config", None)
        agent_name = agent_name or agent_class.__name__.lower()
    else:
        require(agent_name is not None, "agent", None, "the agent config needs a 'name' (or a '_target_')")
        try:  # a built-in agent's Config is read without importing the agent (and torch)
            config_class = registry.agent_config(agent_name)
        except registry.UnknownComponent as error:
            raise ConfigError(f"agent.name: {error}") from None
    if not dataclasses.is_dataclass(config_class):
        where = f"agent._target_={target}" if target else f"agent={agent_name}"
        raise ConfigError(f"{where}: {not_an_agent}")
    agent = check(config_class, agent_node, "agent.", see, known)

    approximation = OmegaConf.to_container(cfg.get("approximation") or {}, resolve=True)
    model = approximation.get("model", "mlp")
    try:
        model_schema = registry.model_schema(model)
    except registry.UnknownComponent as error:
        raise ConfigError(f"approximation.model: {error}") from None
    check_pairing(groups["env"], groups["body"], model_schema, model)
    groups["body"] = with_masked_components(groups["body"], groups["env"])
    approximation = dataclasses.asdict(check(model_schema, approximation, "approximation."))
    check_memory(agent_name, agent, approximation.get("recurrent", "none"),
                 getattr(agent_class, "recurrent", "never") if target else None)
    groups["env"] = named_for_its_id(groups["env"])
    settings = Settings(run=run, agent_name=agent_name, agent=agent, approximation=approximation,
                        agent_target=target, **groups)
    check_costs(settings)  # what the settings would cost this machine, before anything is built
    return settings


def named_for_its_id(env: EnvSettings) -> EnvSettings:
    """``env`` named after the simulator it runs. ``env=classic/cartpole env.id=Acrobot-v1`` trains Acrobot: its
    run directory, summary.json's ``env`` and the plots that group runs by it must not say cartpole, so where
    ``env.id`` differs from the id of the shipped config ``env.name`` names, the name becomes
    ``<family>/<id>`` (``classic/Acrobot-v1``: directory ``dqn_classic-Acrobot-v1_...``). A name given with
    the id (``env.name=classic/my_acrobot``) names no shipped config and is kept."""
    if not re.fullmatch(r"[\w-]+(/[\w-]+)*", env.name):
        return env
    path = config_dir() / "env" / f"{env.name}.yaml"
    if not path.is_file():
        return env
    import yaml

    try:
        shipped = ((yaml.safe_load(path.read_text()) or {}).get("env") or {}).get("id")
    except (OSError, yaml.YAMLError, AttributeError):  # unreadable, or not a mapping: nothing to say
        return env
    if shipped is None or shipped == env.id:
        return env
    return dataclasses.replace(env, name=f"{env.family}/{env.id}")


# -- composing a run's config: the same YAML groups ``rlconf run`` reads ----------------------------------
def searchpath(extra: list[str]) -> list[Path]:
    """Config folders besides the primary one: the shipped launchers, then the user's own."""
    return [launchers_dir(), *(Path(d).resolve() for d in extra)]


def searchpath_override(extra: list[str]) -> str:
    """The Hydra override that puts ``searchpath(extra)`` on the search path of a composition."""
    return f"hydra.searchpath=[{','.join('file://' + str(d) for d in searchpath(extra))}]"


def compose(overrides: list[str], config_dirs: list[str], hydra_config: bool = False) -> DictConfig:
    """The config ``rlconf run`` composes from ``overrides``, the user's ``config_dirs`` on the search path;
    ``hydra_config``: with its ``hydra`` node (what the launcher's checks read)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        return hydra_compose(config_name="config", overrides=[*overrides, searchpath_override(config_dirs)],
                             return_hydra_config=hydra_config)
