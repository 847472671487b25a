"""One benchmark trial, run in a fresh process by bench.py: ``python benchmarks/trial.py KIND ... --out FILE``.

A process per trial keeps trials from sharing state (torch's thread pools and allocator, imported modules,
warm caches), so the order in which they run cannot change their numbers. Each trial writes one JSON object.
rlconf's training trials are not here: bench.py runs them through ``rlconf run``, the real platform path.

Kinds:
    sb3-train AGENT   train Stable-Baselines3 on rlconf's preset, then test it greedily
    env-rlconf N      raw env steps/s with random actions, vectorised as rlconf's adapter does
    env-sb3 N         the same through SB3's DummyVecEnv (what SB3's learn() steps)
    collect-rlconf AGENT   steps/s of rlconf's test agent acting in its env: inference only, no learning
    collect-sb3 AGENT      the same with SB3's model.predict on its own vector env
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

# Pin threads before anything builds a model: both libraries get exactly one core's worth of torch.
torch.set_num_threads(1)

from presets import SB3_KWARGS, load_settings  # noqa: E402  (after the thread pin, on purpose)

REPEATS = 3  # timed windows per measurement; the median resists a single noisy window
CHECK_EVERY = 32  # calls between clock reads, so reading the clock costs well under 1% of a window


def sb3_algorithm(agent: str):
    import stable_baselines3

    return {"dqn": stable_baselines3.DQN, "ppo": stable_baselines3.PPO}[agent]


def sb3_model(agent: str, steps: int | None, seed: int):
    """An untrained SB3 model with rlconf's preset hyperparameters, on an SB3 vector env of the preset's size."""
    from stable_baselines3.common.env_util import make_vec_env

    settings = load_settings(agent, steps)
    env = make_vec_env(settings.env.id, n_envs=settings.hardware.n_envs, seed=seed)
    kwargs = SB3_KWARGS[agent](settings)
    return sb3_algorithm(agent)("MlpPolicy", env, seed=seed, device="cpu", **kwargs), settings


def sb3_train(agent: str, steps: int, seed: int, test_episodes: int) -> dict[str, Any]:
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    model, settings = sb3_model(agent, steps, seed)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)  # timed alone, as rlconf times only its training loop
    wall = time.perf_counter() - start
    returns: list[float] = []
    if test_episodes:
        # Like rlconf's final test: greedy, up to 16 parallel envs, a fixed episode quota per env.
        test_env = make_vec_env(settings.env.id, n_envs=min(settings.hardware.eval_envs, test_episodes),
                                seed=seed + 1_000_003)
        returns, _ = evaluate_policy(model, test_env, n_eval_episodes=test_episodes, deterministic=True,
                                     return_episode_rewards=True)
    return {"steps": int(model.num_timesteps), "wall_seconds": round(wall, 3),
            "steps_per_second": round(model.num_timesteps / wall, 1), "test_returns": [float(r) for r in returns],
            "test_return_mean": float(np.mean(returns)) if returns else None}


def timed_rate(step: Callable[[], int], seconds: float) -> dict[str, Any]:
    """Median steps/s over ``REPEATS`` windows of about ``seconds`` each; ``step`` returns the steps it took.

    Windows are timed rather than counted so one setting suits a 10k and a 300k steps/s loop alike. A
    shorter untimed window first pays for lazy imports, allocator growth and other first-call costs.
    """
    window(step, seconds / 4)
    rates = [window(step, seconds) for _ in range(REPEATS)]
    return {"steps_per_second": round(statistics.median(rates), 1), "windows": [round(r, 1) for r in rates],
            "window_seconds": seconds}


def window(step: Callable[[], int], seconds: float) -> float:
    steps, start = 0, time.perf_counter()
    while True:
        for _ in range(CHECK_EVERY):
            steps += step()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps / elapsed


def env_rate(env, n_envs: int, seconds: float) -> dict[str, Any]:
    """Random actions, drawn up front so the timed loop measures the environment, not the action sampler."""
    actions = itertools.cycle(np.random.default_rng(0).integers(0, 2, size=(4096, n_envs)))

    def step() -> int:
        env.step(next(actions))
        # Every call counts n_envs steps: gymnasium's next-step resets are work the env does too, and SB3
        # resets inside the same call.
        return n_envs

    return {**timed_rate(step, seconds), "vectorisation": type(env).__name__, "n_envs": n_envs}


def env_rlconf(n_envs: int, seconds: float) -> dict[str, Any]:
    from rlconf.environments import make_vector_env

    env = make_vector_env("CartPole-v1", n_envs, {}, "auto", None)
    env.reset(seed=0)
    return env_rate(env, n_envs, seconds)


def env_sb3(n_envs: int, seconds: float) -> dict[str, Any]:
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env("CartPole-v1", n_envs=n_envs, seed=0)
    env.reset()
    return env_rate(env, n_envs, seconds)


def collect_rlconf(agent: str, seconds: float) -> dict[str, Any]:
    """rlconf's test agent acting in the platform's env, built exactly as ``rlconf run`` builds them."""
    from rlconf.experiments.run import build_agent, make_env
    from rlconf.logging import LoggerGroup

    settings = load_settings(agent)
    n_envs = settings.hardware.n_envs
    env = make_env(settings, n_envs)
    test_agent = build_agent(settings, env, LoggerGroup([])).test_agent()
    state = env.reset(seed=0)

    def step() -> int:
        nonlocal state
        before = env.steps
        state = env.step(test_agent.act(state))
        return env.steps - before  # the platform's own count: reset steps excluded

    with torch.inference_mode():  # as rlconf's evaluate() runs its test agent
        result = timed_rate(step, seconds)
    return {**result, "n_envs": n_envs}


def collect_sb3(agent: str, seconds: float) -> dict[str, Any]:
    model, _ = sb3_model(agent, None, seed=0)
    env = model.get_env()
    n_envs = env.num_envs
    observation = env.reset()

    def step() -> int:
        nonlocal observation
        actions, _ = model.predict(observation, deterministic=True)
        observation, *_ = env.step(actions)
        return n_envs

    result = timed_rate(step, seconds)
    return {**result, "n_envs": n_envs}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["sb3-train", "env-rlconf", "env-sb3", "collect-rlconf", "collect-sb3"])
    parser.add_argument("subject", help="agent (dqn, ppo) or number of envs")
    parser.add_argument("--steps", type=int, help="sb3-train: the training budget in env steps")
    parser.add_argument("--seconds", type=float, default=2.0, help="rate measurements: length of a timed window")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-episodes", type=int, default=100)
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    kinds: dict[str, Callable[[], dict[str, Any]]] = {
        "sb3-train": lambda: sb3_train(args.subject, args.steps, args.seed, args.test_episodes),
        "env-rlconf": lambda: env_rlconf(int(args.subject), args.seconds),
        "env-sb3": lambda: env_sb3(int(args.subject), args.seconds),
        "collect-rlconf": lambda: collect_rlconf(args.subject, args.seconds),
        "collect-sb3": lambda: collect_sb3(args.subject, args.seconds),
    }
    result = kinds[args.kind]()
    result["torch_threads"] = torch.get_num_threads()
    args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
