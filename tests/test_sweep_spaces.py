"""Every shipped sweep (configs/sweep/*.yaml) composed against the preset of every env family it applies to, at
the corners of its search space (each searched key's ends, each of its choices): every corner is a config
rlconf accepts, and no corner changes how many gradient updates a trial makes per environment step by more than
``UPDATE_RATIO_BOUND`` against the preset's own. A sweep that searched the update schedule on its own (DQN's
update_frequency over 1..16 while CartPole's preset keeps gradient_steps 128: 16 updates a step, 32 times the
preset's 0.5) would measure which trial had the most compute, not which hyperparameters are better. Composed
only: nothing trains."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf, open_dict

pytest.importorskip("optuna", reason="needs the optuna extra: pip install 'rlconf[optuna]'")

from rlconf.config import compose, validate  # noqa: E402
from rlconf.paths import config_dir  # noqa: E402
from rlconf.tuning.space import search_space  # noqa: E402

# The stated range: a corner's updates per environment step lie within this factor of the preset's, either way.
# Off-policy sweeps keep the preset's update schedule (the factor is 1); PPO's minibatch size and epochs are the
# heart of what a PPO tuner searches (RL Zoo's space), and their corners move the updates per step at most 16x.
UPDATE_RATIO_BOUND = 16.0

# One env of each family whose preset of the sweep's agent exists (configs/preset/<family>/<agent>.yaml).
FAMILY_ENVS = {"classic": "classic/cartpole", "atari": "atari/pong", "highway": "highway/highway_fast",
               "minigrid": "minigrid/doorkey_5x5", "box2d": "box2d/lunar_lander", "continuous": "classic/pendulum",
               "mujoco": "mujoco/half_cheetah"}
CONTINUOUS_ENVS = {"box2d": "box2d/lunar_lander_continuous"}  # SAC and TD3 need Box actions
SWEEP_AGENTS = {"optuna_dqn": "dqn", "optuna_ppo": "ppo", "optuna_sac": "sac", "optuna_td3": "td3", "seeds": "dqn"}


def off_policy_updates(agent: Any, hardware: Any) -> float:
    """Minibatch updates per environment step: a burst of gradient_steps every update_frequency steps."""
    return agent.gradient_steps / agent.update_frequency


def ppo_updates(agent: Any, hardware: Any) -> float:
    """Minibatch updates per environment step: epochs over a rollout of n_steps x n_envs in minibatches of
    batch_size (rlconf.agents.ppo: the last minibatch may be short)."""
    rollout = agent.n_steps * hardware.n_envs
    return agent.epochs * math.ceil(rollout / agent.batch_size) / rollout


UPDATES: dict[str, Callable[[Any, Any], float]] = {
    "dqn": off_policy_updates, "sac": off_policy_updates, "td3": off_policy_updates, "ppo": ppo_updates}
UPDATE_KEYS = {"dqn": ("update_frequency", "gradient_steps"), "sac": ("update_frequency", "gradient_steps"),
               "td3": ("update_frequency", "gradient_steps"), "ppo": ("n_steps", "batch_size", "epochs")}


def shipped_sweeps() -> list[str]:
    return sorted(path.stem for path in (config_dir() / "sweep").glob("*.yaml"))


def pairs() -> list[tuple[str, str, str]]:
    """(sweep, agent, env) for every shipped sweep and every family with a preset of its agent."""
    found = []
    for sweep in shipped_sweeps():
        agent = SWEEP_AGENTS.get(sweep)  # a new sweep must say which agent it tunes (the test above)
        for family in sorted(FAMILY_ENVS) if agent else ():
            if (config_dir() / "preset" / family / f"{agent}.yaml").exists():
                found.append((sweep, agent, CONTINUOUS_ENVS.get(family, FAMILY_ENVS[family])
                              if agent in ("sac", "td3") else FAMILY_ENVS[family]))
    return found


def corners(cfg: DictConfig, agent: str) -> list[dict[str, str]]:
    """The overrides of the corners: every combination of the update keys' lowest and highest values (they act
    together), then each other searched key's ends and choices, several keys at a time (each value composed at
    least once: a corner of one key does not depend on another's)."""
    params = OmegaConf.to_container(cfg.hydra.sweeper.params, resolve=False) or {}
    values = {key: d.examples() for key, d in search_space(params, []).dimensions.items()}
    joint = [key for key in values if key.removeprefix("agent.") in UPDATE_KEYS.get(agent, ())]
    ends = {key: sorted({min(values[key], key=float), max(values[key], key=float)}) for key in joint}
    found = [dict(zip(joint, combination, strict=True)) for combination in itertools.product(*ends.values())]
    others = {key: texts for key, texts in values.items() if key not in joint}
    widest = max((len(texts) for texts in others.values()), default=0)
    found += [{key: texts[i % len(texts)] for key, texts in others.items()} for i in range(widest)]
    return found


def with_values(cfg: DictConfig, corner: dict[str, str]) -> DictConfig:
    job = cfg.copy()
    with open_dict(job):
        del job["hydra"]
        for key, text in corner.items():
            OmegaConf.update(job, key, _value(text), force_add=True)
    return job


def _value(text: str):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    (override,) = OverridesParser.create().parse_overrides([f"x={text}"])
    return override.value()


def test_every_shipped_sweep_names_the_agent_it_tunes():
    assert set(shipped_sweeps()) <= set(SWEEP_AGENTS), "add the new sweep's agent to SWEEP_AGENTS"


@pytest.mark.parametrize(("sweep", "agent", "env"), pairs(), ids=lambda p: str(p))
def test_each_corner_of_a_shipped_sweep_keeps_the_presets_updates_per_step(sweep, agent, env):
    cfg = compose([f"agent={agent}", f"env={env}", f"sweep={sweep}"], [], hydra_config=True)
    base = validate(with_values(cfg, {}))
    preset = UPDATES[agent](base.agent, base.hardware)
    for corner in corners(cfg, agent):
        settings = validate(with_values(cfg, corner))  # every corner is a config rlconf accepts
        ratio = UPDATES[agent](settings.agent, settings.hardware) / preset
        assert 1 / UPDATE_RATIO_BOUND <= ratio <= UPDATE_RATIO_BOUND, (
            f"{sweep} on {env}: {corner} makes {ratio:.3g}x the preset's updates per step")
