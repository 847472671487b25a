"""One benchmark trial, run in a fresh process by bench.py: ``python benchmarks/trial.py KIND ... --out FILE``.

A process per trial keeps trials from sharing state (torch's thread pools and allocator, imported modules,
warm caches), so the order in which they run cannot change their numbers. Each trial writes one JSON object.
rlconf's training trials are not here: bench.py runs them through ``rlconf run``, the real platform path.

Kinds (WORKLOAD: a name from presets.WORKLOADS, e.g. dqn-breakout):
    sb3-train WORKLOAD       train Stable-Baselines3 at rlconf's settings, then test it greedily
    limit-train WORKLOAD     the same arithmetic in plain eager PyTorch (limit.py), then a greedy test
    tianshou-train WORKLOAD  Tianshou 2.x at the same settings (peers.py, peer_tianshou.py), then a greedy test
    torchrl-train WORKLOAD   TorchRL at the same settings (peers.py, peer_torchrl.py), then a greedy test
    env-rlconf WORKLOAD N    raw env steps/s with random actions, N copies built as ``rlconf run`` builds them
    env-sb3 WORKLOAD N       the same through SB3's vector env and wrappers (what SB3's learn() steps)
    collect-rlconf WORKLOAD  steps/s of rlconf's test agent acting in its env: inference only, no learning
    collect-sb3 WORKLOAD     the same with SB3's model.predict on its own vector env
    memory WORKLOAD          bytes per transition of each library's replay buffer, at the workload's shapes
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

from presets import WORKLOADS, load_settings, recurrent, sb3_env, sb3_kwargs, sb3_policy  # noqa: E402  (after the pin)

REPEATS = 3  # timed windows per measurement; the median resists a single noisy window
CHECK_EVERY = 32  # calls between clock reads, so reading the clock costs well under 1% of a window


def sb3_algorithm(settings):
    import stable_baselines3

    if recurrent(settings):  # presets.sb3_kwargs admits PPO alone
        import sb3_contrib

        return sb3_contrib.RecurrentPPO
    algorithms = {"dqn": stable_baselines3.DQN, "ppo": stable_baselines3.PPO, "sac": stable_baselines3.SAC}
    return algorithms[settings.agent_name]


def sb3_model(name: str, steps: int | None, seed: int, device: str = "cpu"):
    """An untrained SB3 model with the workload's hyperparameters, on an SB3 vector env of the preset's size."""
    settings = load_settings(WORKLOADS[name], steps)
    env = sb3_env(settings, settings.hardware.n_envs, seed)
    algorithm = sb3_algorithm(settings)
    return algorithm(sb3_policy(settings), env, seed=seed, device=device, **sb3_kwargs(settings)), settings


def sb3_train(name: str, steps: int, seed: int, test_episodes: int, device: str = "cpu") -> dict[str, Any]:
    from stable_baselines3.common.evaluation import evaluate_policy

    model, settings = sb3_model(name, steps, seed, device)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)  # timed alone, as rlconf times only its training loop
    wall = time.perf_counter() - start
    returns: list[float] = []
    if test_episodes:
        # Like rlconf's final test: greedy, up to 16 parallel envs, a fixed episode quota per env.
        test_env = sb3_env(settings, min(settings.hardware.eval_envs, test_episodes), seed + 1_000_003)
        returns, _ = evaluate_policy(model, test_env, n_eval_episodes=test_episodes, deterministic=True,
                                     return_episode_rewards=True)
    return {"steps": int(model.num_timesteps), "wall_seconds": round(wall, 3),
            "steps_per_second": round(model.num_timesteps / wall, 1), "test_returns": [float(r) for r in returns],
            "test_return_mean": float(np.mean(returns)) if returns else None}


def limit_train(name: str, steps: int, seed: int, test_episodes: int) -> dict[str, Any]:
    import limit

    return limit.train(load_settings(WORKLOADS[name], steps), seed, test_episodes)


def peer_train(peer: str, name: str, steps: int, seed: int, test_episodes: int) -> dict[str, Any]:
    """A peer library (peers.PEERS) trained at the workload's settings by its trainer module."""
    import importlib

    from peers import peer_kwargs

    settings = load_settings(WORKLOADS[name], steps)
    trainer = importlib.import_module(f"peer_{peer}")
    return trainer.train(settings, peer_kwargs(peer, settings), seed, test_episodes)


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


def env_rate(env, n_envs: int, space, seconds: float,
             as_actions: Callable[[np.ndarray], Any] = lambda row: row) -> dict[str, Any]:
    """Random actions, drawn up front (and made what the env takes, ``as_actions``: rlconf's take tensors, as its
    agents give them) so the timed loop measures the environment, not the action sampler or a conversion."""
    rng = np.random.default_rng(0)
    if hasattr(space, "n"):
        drawn = rng.integers(0, space.n, size=(4096, n_envs))
    else:
        drawn = rng.uniform(space.low, space.high, size=(4096, n_envs, *space.shape)).astype(space.dtype)
    actions = itertools.cycle([as_actions(row) for row in drawn])

    def step() -> int:
        env.step(next(actions))
        # Every call counts n_envs steps: gymnasium's next-step resets are work the env does too, and SB3
        # resets inside the same call.
        return n_envs

    return {**timed_rate(step, seconds), "vectorisation": type(env).__name__, "n_envs": n_envs}


def env_rlconf(name: str, n_envs: int, seconds: float) -> dict[str, Any]:
    """The workload's env as ``rlconf run`` builds it, its body's preprocessing excluded (the agent's side)."""
    from rlconf.experiments.build.environment import make_env

    env = make_env(load_settings(WORKLOADS[name]), n_envs)
    env.reset(seed=0)
    vectorisation = type(getattr(env, "env", env)).__name__
    rate = env_rate(env, n_envs, env.action_space, seconds, as_actions=torch.from_numpy)
    return {**rate, "vectorisation": vectorisation}


def env_sb3(name: str, n_envs: int, seconds: float) -> dict[str, Any]:
    env = sb3_env(load_settings(WORKLOADS[name]), n_envs, seed=0)
    env.reset()
    return env_rate(env, n_envs, env.action_space, seconds)


def collect_rlconf(name: str, seconds: float) -> dict[str, Any]:
    """rlconf's test agent acting in the platform's env, built exactly as ``rlconf run`` builds them."""
    from rlconf.experiments.build.agent import build_agent
    from rlconf.experiments.build.environment import make_env
    from rlconf.logging import LoggerGroup

    settings = load_settings(WORKLOADS[name])
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


def collect_sb3(name: str, seconds: float) -> dict[str, Any]:
    model, _ = sb3_model(name, None, seed=0)
    env = model.get_env()
    n_envs = env.num_envs
    observation = env.reset()
    memory, starts = None, np.ones(n_envs, dtype=bool)  # a recurrent policy's state, and where episodes begin

    def step() -> int:
        nonlocal observation, memory, starts
        actions, memory = model.predict(observation, state=memory, episode_start=starts, deterministic=True)
        observation, _, starts, _ = env.step(actions)
        return n_envs

    result = timed_rate(step, seconds)
    return {**result, "n_envs": n_envs}


def memory(name: str) -> dict[str, Any]:
    """Bytes per stored transition: rlconf's buffer as the workload's agent builds it (frames stored once),
    SB3's ReplayBuffer at the same observation space, with and without its optimize_memory_usage."""
    from stable_baselines3.common.buffers import ReplayBuffer as SB3ReplayBuffer

    from rlconf.experiments.build.agent import build_agent
    from rlconf.experiments.build.environment import make_env
    from rlconf.logging import LoggerGroup

    settings = load_settings(WORKLOADS[name])
    agent = build_agent(settings, make_env(settings, settings.hardware.n_envs), LoggerGroup([]))
    while not hasattr(agent, "replay"):  # bodies wrap the agent that owns the replay
        agent = agent.agent
    replay = getattr(agent.replay, "buffer", agent.replay)  # an n-step view reads through to its buffer
    model, _ = sb3_model(name, None, seed=0)
    slots = 1000  # numpy allocates exactly: the bytes per slot do not depend on the capacity
    sb3 = {}
    for optimize in (False, True):
        buffer = SB3ReplayBuffer(slots, model.observation_space, model.action_space, device="cpu",
                                 optimize_memory_usage=optimize, handle_timeout_termination=not optimize)
        arrays = [v for v in vars(buffer).values() if isinstance(v, np.ndarray)]
        sb3[f"optimize_memory_usage={optimize}"] = sum(a.nbytes for a in arrays) / slots
    return {"observation_shape": list(model.observation_space.shape),
            "rlconf_bytes_per_transition": replay.bytes_per_transition, "sb3_bytes_per_transition": sb3}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["sb3-train", "limit-train", "tianshou-train", "torchrl-train", "env-rlconf",
                                         "env-sb3", "collect-rlconf", "collect-sb3", "memory"])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("n_envs", type=int, nargs="?", default=1, help="env-*: the number of environment copies")
    parser.add_argument("--steps", type=int, help="*-train: the training budget in env steps")
    parser.add_argument("--seconds", type=float, default=2.0, help="rate measurements: length of a timed window")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-episodes", type=int, default=100)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="sb3-train: where SB3 trains")
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    kinds: dict[str, Callable[[], dict[str, Any]]] = {
        "sb3-train": lambda: sb3_train(args.workload, args.steps, args.seed, args.test_episodes, args.device),
        "limit-train": lambda: limit_train(args.workload, args.steps, args.seed, args.test_episodes),
        "tianshou-train": lambda: peer_train("tianshou", args.workload, args.steps, args.seed, args.test_episodes),
        "torchrl-train": lambda: peer_train("torchrl", args.workload, args.steps, args.seed, args.test_episodes),
        "env-rlconf": lambda: env_rlconf(args.workload, args.n_envs, args.seconds),
        "env-sb3": lambda: env_sb3(args.workload, args.n_envs, args.seconds),
        "collect-rlconf": lambda: collect_rlconf(args.workload, args.seconds),
        "collect-sb3": lambda: collect_sb3(args.workload, args.seconds),
        "memory": lambda: memory(args.workload),
    }
    result = kinds[args.kind]()
    result["torch_threads"] = torch.get_num_threads()
    args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
