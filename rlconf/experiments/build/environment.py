"""The run's environment, made from its family's spec (``registry.env_spec``: its adapter class, kind, test
bounds and pip extra), and the refusals that depend on its kind."""

from __future__ import annotations

from rlconf import registry
from rlconf.config import Settings
from rlconf.core import EnvKind
from rlconf.environments import Environment
from rlconf.environments.registered import wrapped_spec
from rlconf.errors import ConfigError


def make_env(settings: Settings, n_envs: int, render_mode: str | None = None, wrappers: tuple = (),
             test: bool = False) -> Environment:
    """The run's environment with ``n_envs`` copies. ``render_mode`` (``human``, ``rgb_array``) and
    ``wrappers`` (gymnasium wrappers of each copy, e.g. RecordVideo) are for watching: ``rlconf watch``.
    ``test``: the copies play tests, which families whose spec declares ``test_bounds`` (Atari) bound: see
    ``AtariEnvironment``."""
    spec = registry.env_spec(settings.env.family)
    extra = {"render_mode": render_mode, "wrappers": tuple(wrappers)} if render_mode else {}
    if test and spec.test_bounds:
        extra["test"] = True
    hardware = settings.hardware
    env_class = registry.import_path(spec.class_path)
    if not test and not render_mode and hardware.sampler != "serial":  # training copies in worker processes
        check_sampler(settings, spec.kind, env_class)
        extra |= {"sampler": hardware.sampler, "workers": hardware.cpus_per_run}
    if spec.kind in (EnvKind.BANDIT, EnvKind.TEAM):  # the arms' parameters, VMAS's worlds: from the run's seed
        extra["seed"] = settings.run.seed
    # A family that makes its copies with gym.make takes gymnasium's spec, with env.wrappers, in place of the id.
    env_id = wrapped_spec(settings.env.id, settings.env.wrappers, settings.run.plugins) if spec.wrappers else (
        settings.env.id)
    try:
        return env_class(env_id, n_envs, kwargs=settings.env.kwargs,
                         vectorization=settings.hardware.vectorization,
                         max_episode_steps=settings.env.max_episode_steps, device=settings.hardware.device,
                         name=settings.env.name, **extra)
    except ModuleNotFoundError as error:
        raise ConfigError(f"env={settings.env.name} needs the missing package {error.name!r}: "
                          f"pip install 'rlconf[{spec.extra or settings.env.family}]'") from None
    except TypeError as error:  # an env kwarg the environment does not take
        raise ConfigError(f"env.kwargs={settings.env.kwargs}: {error}") from None
    except Exception as error:  # gymnasium's errors for unknown ids
        if type(error).__module__.startswith("gymnasium"):
            raise ConfigError(f"env.id={settings.env.id}: {error}") from None
        raise


def check_sampler(settings: Settings, kind: EnvKind, env_class: type) -> None:
    """Refuse, in one line, a sampler other than serial for an environment whose copies cannot step in worker
    processes: multi-agent turn-based games and bandits; team environments that say why (``serial_only``:
    VMAS); the alternating sampler for teams (their copies step together)."""
    sampler = settings.hardware.sampler
    if kind is EnvKind.TEAM:
        reason = env_class.serial_only
        if reason is not None:
            raise ConfigError(f"hardware.sampler={sampler}: {reason} (env={settings.env.name}); allowed: serial")
        if sampler != "parallel":
            raise ConfigError(f"hardware.sampler={sampler}: a team environment's copies step together "
                              f"(env={settings.env.name}); allowed: serial, parallel")
    elif kind is not EnvKind.SINGLE_AGENT:
        raise ConfigError(f"hardware.sampler={sampler}: {kind.value} environments (env={settings.env.name}) step in "
                          "the run's process; allowed: serial")


def eval_env_count(settings: Settings, episodes: int) -> int:
    """Copies of the environment that tests (and ``rlconf eval``) play ``episodes`` episodes in (a multi-agent
    environment plays one game at a time): at most ``hardware.eval_envs``, and no more than it takes to play
    them in as few rounds (30 episodes in 16 copies take two rounds, which 15 copies play without the 2 idle
    copies of the last round: copies that have played their share step on, unseen, until all have)."""
    kind = env_kind(settings)
    if kind is EnvKind.MULTI_AGENT:
        return 1
    if kind is EnvKind.BANDIT:  # the same bandits as in training, each with its own arms and the agent's estimates
        return settings.hardware.n_envs
    episodes = max(episodes, 1)
    rounds = -(-episodes // settings.hardware.eval_envs)
    return -(-episodes // rounds)


def env_kind(settings: Settings) -> EnvKind:
    """The kind of the run's environment, as its family's spec declares it (known before it is built)."""
    return registry.env_spec(settings.env.family).kind
