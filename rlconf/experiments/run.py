"""From a composed config to a finished run: check, build, train, test, summarise.

Data flows one way: config -> settings (checked) -> registry builds env, agent, body -> loop -> loggers.
Nothing is written to disk until every component has been built, so bad input leaves no run directory.
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from rlconf import registry
from rlconf.agents import BuildContext, ParallelAgent, SingleEnvAgent
from rlconf.bodies import body_options
from rlconf.config import ConfigError, Settings, validate
from rlconf.experiments.experiment import Experiment, Interrupted
from rlconf.experiments.progress import ConsoleProgress
from rlconf.experiments.rundir import make_run_dir, write_json
from rlconf.logging import LoggerGroup

# Optional extras: the package an env family needs, and the extra that installs it.
EXTRAS = {"atari": "atari", "mujoco": "mujoco", "pettingzoo": "pettingzoo"}


def make_env(settings: Settings, n_envs: int):
    env_class = registry.get("environment", settings.env.family)
    try:
        return env_class(settings.env.id, n_envs, kwargs=settings.env.kwargs,
                         vectorization=settings.hardware.vectorization,
                         max_episode_steps=settings.env.max_episode_steps, device=settings.hardware.device,
                         name=settings.env.name)
    except ModuleNotFoundError as error:
        extra = EXTRAS.get(settings.env.family, settings.env.family)
        raise ConfigError(f"env={settings.env.name} needs the missing package {error.name!r}: "
                          f"pip install 'rlconf[{extra}]'") from None
    except TypeError as error:  # an env kwarg the environment does not take
        raise ConfigError(f"env.kwargs={settings.env.kwargs}: {error}") from None
    except Exception as error:  # gymnasium's errors for unknown ids
        if type(error).__module__.startswith("gymnasium"):
            raise ConfigError(f"env.id={settings.env.id}: {error}") from None
        raise


def check_device(device: str) -> None:
    """Checked when building, not in validate(): a Slurm login node may have no GPU for the job it submits."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"hardware.device={device}: no CUDA device is visible here; allowed: cpu")
    if device.startswith("mps") and not torch.backends.mps.is_available():
        raise ConfigError(f"hardware.device={device}: MPS is not available here; allowed: cpu")


def build_agent(settings: Settings, env, logger) -> ParallelAgent:
    """The agent, built for what it will see through its body, wrapped in that body."""
    body_class = registry.get("body", settings.body.name)
    options = body_options(body_class, settings.body)
    context = BuildContext(
        observation_space=body_class.transform_space(env.observation_space, **options),
        action_space=env.action_space, n_envs=settings.hardware.n_envs,
        device=torch.device(settings.hardware.device), total_steps=settings.run.steps,
        approximation=settings.approximation, logger=logger, seed=settings.run.seed)
    agent = settings.agent_class.from_config(settings.agent, context)
    if not isinstance(agent, ParallelAgent):  # an Agent written for one State
        if settings.hardware.n_envs != 1:
            raise ConfigError(f"hardware.n_envs={settings.hardware.n_envs}: agent {settings.agent_name} "
                              "acts on one state at a time; allowed: 1")
        agent = SingleEnvAgent(agent)
    return body_class(agent, **options)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def run(cfg: DictConfig, parent_dir: str | Path | None = None, overrides: list[str] | None = None) -> dict:
    """Run one experiment described by a composed config; returns the summary (also in summary.json)."""
    settings = validate(cfg)
    check_device(settings.hardware.device)
    torch.set_num_threads(settings.hardware.torch_threads)
    seed_everything(settings.run.seed)
    hardware = settings.hardware
    logger = LoggerGroup([], verbose=settings.run.verbose, debug_every=settings.logger.debug_every)
    env = make_env(settings, hardware.n_envs)
    agent = build_agent(settings, env, logger)

    run_dir = make_run_dir(parent_dir or settings.run.logdir, settings.agent_name, settings.env.name,
                           settings.run.seed)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(resolved))
    (run_dir / "overrides.yaml").write_text(OmegaConf.to_yaml(list(overrides or [])))
    logger.loggers = [registry.get("logger", "csv")(run_dir)]
    logger.loggers += [registry.get("logger", name)(run_dir) for name in settings.logger.backends if name != "csv"]

    title = f"{settings.agent_name} {settings.env.name}"
    progress = ConsoleProgress(title, settings.run.steps, quiet=settings.run.quiet)
    experiment = Experiment(
        agent, env, lambda: make_env(settings, min(hardware.eval_envs, max(settings.run.test_episodes, 1))),
        logger, run_dir, steps=settings.run.steps, seed=settings.run.seed, eval_every=settings.run.eval_every,
        eval_episodes=settings.run.eval_episodes, checkpoint_every=settings.run.checkpoint_every,
        progress=progress, checkpoint_extra={"config": resolved}, save_replay=settings.run.checkpoint.replay)
    try:
        try:
            experiment.train()
        except Interrupted as stop:
            print(f"rlconf: stopped by {stop}; checkpoint written to {run_dir / 'checkpoint.pt'}",
                  file=sys.stderr)
            raise SystemExit(128 + stop.signum) from None
        test_start = time.perf_counter()
        returns = experiment.test(settings.run.test_episodes)
        summary = _summary(settings, experiment, returns, time.perf_counter() - test_start, run_dir)
        if returns:
            logger.add_evaluation(env.steps, returns)
        write_json(run_dir / "summary.json", summary)
    finally:
        progress.stop()
        logger.close()
        experiment.close()
    progress.print(_summary_line(title, summary))
    return summary


def _summary(settings: Settings, experiment: Experiment, returns: list[float], test_seconds: float,
             run_dir: Path) -> dict[str, Any]:
    steps = experiment.env.steps
    r = np.asarray(returns, dtype=float)
    return {
        "agent": settings.agent_name,
        "env": settings.env.name,
        "env_id": settings.env.id,
        "seed": settings.run.seed,
        "steps": steps,
        "frames": steps * getattr(experiment.env, "frames_per_step", 1),
        "episodes": experiment.episodes,
        "wall_seconds": round(experiment.train_seconds, 3),
        "steps_per_second": round(steps / max(experiment.train_seconds, 1e-9), 1),
        "test_return_mean": float(r.mean()) if len(r) else None,
        "test_return_std": float(r.std()) if len(r) else None,
        "test_episodes": len(r),
        "test_seconds": round(test_seconds, 3),
        "n_envs": settings.hardware.n_envs,
        "run_dir": str(run_dir),
        "hardware": asdict(settings.hardware),
    }


def _summary_line(title: str, s: dict[str, Any]) -> str:
    test = (f"test return {s['test_return_mean']:.1f} ± {s['test_return_std']:.1f} over {s['test_episodes']} episodes"
            if s["test_episodes"] else "no test episodes")
    return (f"{title}: {s['steps']:,} steps in {s['wall_seconds']:.1f} s ({s['steps_per_second']:,.0f} steps/s), "
            f"{s['episodes']:,} episodes; {test} -> {s['run_dir']}")
