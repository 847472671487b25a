"""The typed settings of a run: the top-level keys and the env, hardware, body and logger groups, each a
dataclass that checks its own values; the choices the adapters read (vectorisation, sampler, runner); and
the redaction of secrets from anything rlconf writes or prints."""

from __future__ import annotations

import importlib.util
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rlconf import registry
from rlconf.errors import REDACTED, TOKEN, ConfigError, require
from rlconf.schema import INT64, MAX_SEED, MAX_STEPS, check, require_every, require_path, whole

# How environment copies are stepped: auto, in this process (sync), in subprocesses (async), or by the
# simulator's own vector version (native). Environment adapters read the same tuple.
VECTORIZATION_MODES = ("auto", "sync", "async", "native")
COMPILE_CHOICES = ("auto", "true", "false")  # hardware.compile (rlconf.approximation.compiled)
CPU_LINEAR_CHOICES = ("auto", "onednn", "torch")  # hardware.cpu_linear (rlconf.nn.gemm)
SQUASHES = ("clip", "tanh")  # agent.squash: how a Gaussian's sample reaches a bounded Box (rlconf.policies.gaussian)
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


# A wall-clock limit written as hours, minutes and seconds (stop.time=2h30m, 90m, 45s, 1h30m15s).
DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


def duration_seconds(value: Any) -> float | None:
    """``value`` (a positive number of seconds, or a duration such as 2h30m) in seconds; None where it is not one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if 0 < value < math.inf else None
    match = DURATION.fullmatch(str(value).strip().lower()) if isinstance(value, str) and value.strip() else None
    if match is None or not any(match.groups()):
        return None
    hours, minutes, seconds = (int(part or 0) for part in match.groups())
    total = 3600 * hours + 60 * minutes + seconds
    return float(total) if total > 0 else None


@dataclass
class StopSettings:
    """``stop.*``: end a run "done" before its budget (rlconf.experiments.loop.stopping), its reason recorded."""

    reward: float | None = None  # once a periodic evaluation's mean return reaches this
    patience: int | None = None  # after this many periodic evaluations in a row without a new best
    time: Any = None  # once it has trained this long: seconds, or a duration such as 2h30m, 90m, 45s

    def __post_init__(self):
        require(self.patience is None or (isinstance(self.patience, int) and self.patience >= 1), "stop.patience",
                self.patience, "must be an integer of at least 1 (periodic evaluations without a new best)")
        require(self.time is None or duration_seconds(self.time) is not None, "stop.time", self.time,
                "must be a positive number of seconds or a duration such as 2h30m, 90m or 45s")

    @property
    def seconds(self) -> float | None:
        return None if self.time is None else duration_seconds(self.time)


@dataclass
class RunSettings:
    seed: int = 0
    steps: int = 100_000  # environment-step budget
    # An episode budget besides: the run ends once this many training episodes (every copy's, as episodes.csv
    # counts them) have finished, or at ``steps``, whichever comes first (rlconf.experiments.loop.stopping).
    episodes: int | None = None
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
    stop: StopSettings = field(default_factory=StopSettings)  # end the run early (stop.reward, patience, time)
    callbacks: list[str] = field(default_factory=list)  # module.Class of a plugins= module, told of the events
    init: InitSettings = field(default_factory=InitSettings)  # a warm start (rlconf.experiments.rundir.warmstart)
    trial: TrialSettings = field(default_factory=TrialSettings)  # a run of an Optuna sweep (rlconf.tuning)

    def __post_init__(self):
        require(0 < self.steps <= MAX_STEPS, "steps", self.steps,
                f"must be a positive integer of at most {MAX_STEPS:,} (environment steps)")
        require(self.episodes is None or 0 < self.episodes <= MAX_STEPS, "episodes", self.episodes,
                f"must be a positive integer of at most {MAX_STEPS:,} (training episodes), or null (steps alone)")
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
        for path in self.callbacks:  # the trust rule of plugin agents: code only from modules named in plugins=
            module = str(path).rpartition(".")[0]
            require(module in self.plugins and registry.plugin_problem(path) is None, "callbacks", self.callbacks,
                    f"{path!r} is not module.Class of a module named in plugins= (plugins={self.plugins})")
        for key in ("reward", "patience"):  # both judge the periodic evaluations
            require(getattr(self.stop, key) is None or self.eval_every, f"stop.{key}", getattr(self.stop, key),
                    "judges the periodic evaluations, and eval_every=0 makes none; allowed with eval_every > 0")


@dataclass
class EnvSettings:
    name: str = "???"  # the config's own name, e.g. classic/cartpole
    family: str = "classic"
    id: str = "???"  # the simulator's id, e.g. CartPole-v1
    kwargs: dict[str, Any] = field(default_factory=dict)
    # A data file the environment reads (the UCI data bandits: env=bandit/mushroom env.path=agaricus-lepiota.data)
    path: str | None = None
    max_episode_steps: int | None = None
    # gymnasium wrappers of each copy: "module.Class" or {target: "module.Class", kwargs: {...}} (checked with
    # the plugins, by rlconf.environments.registered)
    wrappers: list[Any] = field(default_factory=list)

    def __post_init__(self):
        require(self.family in registry.names("environment"), "env.family", self.family,
                f"allowed: {', '.join(registry.names('environment'))}")
        require(self.max_episode_steps is None or self.max_episode_steps > 0, "env.max_episode_steps",
                self.max_episode_steps, "must be a positive integer or null")
        check_env_kwargs(self.kwargs)
        # env.path reaches an env only as env.kwargs.path (the data bandits' configs pass it on): refused where it
        # would be ignored (an env.kwargs.path of another value).
        require(self.path is None or self.kwargs.get("path") == self.path, "env.path", self.path,
                "allowed only with the data bandits, which read it as env.kwargs.path (env=bandit/covertype, "
                "statlog, adult, census, magic, mushroom), and not beside another env.kwargs.path")


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
    # Off-policy agents: act and learn in one process (sync), or in two at once (async: rlconf.experiments.loop.runner),
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
    # The products of linear layers on a CPU (rlconf.nn.gemm): onednn sends large layers and batches to oneDNN,
    # torch's own kernels elsewhere; torch: torch's own throughout; auto: onednn's rule where the CPU runs
    # AVX-512 (there oneDNN was about twice MKL's speed), torch's where it does not (there MKL was the faster).
    cpu_linear: str = "auto"

    def __post_init__(self):
        self.compile = str(self.compile).lower()  # YAML and the command line read true/false as booleans
        require(self.compile in COMPILE_CHOICES, "hardware.compile", self.compile,
                f"allowed: {', '.join(COMPILE_CHOICES)}")
        require(self.cpu_linear in CPU_LINEAR_CHOICES, "hardware.cpu_linear", self.cpu_linear,
                f"allowed: {', '.join(CPU_LINEAR_CHOICES)}")
        require(self.n_envs >= 1, "hardware.n_envs", self.n_envs, "must be at least 1")
        require(self.gpus_per_run >= 0, "hardware.gpus_per_run", self.gpus_per_run, "must be 0 or more")
        require(self.runs_per_gpu >= 1, "hardware.runs_per_gpu", self.runs_per_gpu, "must be at least 1")
        require(self.runs_per_gpu == 1 or self.gpus_per_run == 1, "hardware.runs_per_gpu", self.runs_per_gpu,
                "runs share a GPU only with hardware.gpus_per_run=1")
        require(self.cpus_per_run >= 1, "hardware.cpus_per_run", self.cpus_per_run, "must be at least 1")
        # hardware.device=cuda alone (on hardware=cpu, with no GPU for the run): the hardware group is what asks
        # for a GPU, and what launchers divide the GPUs by.
        require(not self.device.startswith("cuda") or self.gpus_per_run >= 1, "hardware.device", self.device,
                "a run on a GPU is chosen with hardware=gpu (device cuda, hardware.gpus_per_run=1, the GPU a "
                f"launcher gives it), not hardware.device alone (hardware.gpus_per_run={self.gpus_per_run})")
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
    frame_stack: int = 4  # frames the agent sees at once (atari, frame_stack)
    frame_stack_keys: list[str] | None = None  # the image keys stacked (frame_stack); null: every image key
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
        if backend.requires and importlib.util.find_spec(backend.requires) is None:
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
    def agent_spec(self) -> Any:
        """The agent's spec (``AgentSpec``): its schema, class path and what it declares it can do, read without
        importing it (nor torch); for ``agent._target_``, the spec registered for that class."""
        return registry.agent_spec(self.agent_name, self.agent_target)

    @property
    def agent_class(self) -> Any:
        """The agent's class, imported from its spec when first asked for (it imports torch; checking a config
        does not)."""
        return registry.import_path(self.agent_spec.class_path)


GROUP_SCHEMAS = {"env": EnvSettings, "hardware": HardwareSettings, "body": BodySettings}
TOP_LEVEL_GROUPS = ("family", "agent", "env", "approximation", "body", "hardware", "logger")


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
