"""Tianshou 2.x trained at a workload's settings (peers.tianshou_kwargs), as its examples train: run by trial.py
(``tianshou-train WORKLOAD``) in a process of its own.

Built as Tianshou's own examples build each workload (examples/discrete/discrete_dqn.py, examples/atari/
atari_ppo.py, examples/mujoco/mujoco_sac.py and mujoco_ppo.py at v2.0.1): ``Net``/``DQNet`` models, a
``DiscreteQLearningPolicy``/``DiscreteActorPolicy``/``SACPolicy``, the algorithm class, ``Collector`` over a
``DummyVectorEnv`` (in-process stepping, as SB3's DummyVecEnv: a subprocess env would take cores the other
libraries do not get), a random warm-up collected before training as the off-policy examples do, and
``algorithm.run_training`` with trainer params, no logger, no progress bars and no test collector inside the
timed loop. Schedules the examples express through ``training_fn`` and an LR scheduler factory: epsilon (DQN),
the clip range (PPO; rlconf anneals it), the learning rate in env steps as rlconf's.
"""

from __future__ import annotations

import os
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from peers import orthogonal
from torch import nn

from rlconf.settings import Settings


def _linear(start: float, end: float, fraction: float) -> float:
    return start + (end - start) * min(1.0, max(0.0, fraction))


def _activation(name: str) -> type[nn.Module]:
    return {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU, "silu": nn.SiLU}[name]


def make_env(env: dict[str, Any]) -> gym.Env:
    """One env: gymnasium's, or ALE's game through Tianshou's wrap_deepmind at rlconf's settings."""
    if env["family"] != "atari":
        return gym.make(env["id"])
    import ale_py
    from tianshou.env.atari import atari_wrapper

    gym.register_envs(ale_py)
    # Tianshou 2.0.1's WarpFrame and FrameStack declare their spaces' dtype as get_space_dtype's ``np.integer``,
    # which numpy 2 refuses as a dtype, so its wrap_deepmind fails on this numpy: the frames' own dtype instead.
    atari_wrapper.get_space_dtype = lambda space: space.dtype.type
    if env["noop_max"] != 30 or env["frame_skip"] != 4:  # wrap_deepmind's own values
        raise ValueError(f"Tianshou's wrap_deepmind has 30 no-ops and a skip of 4, not {env['noop_max']} and "
                         f"{env['frame_skip']}")
    return atari_wrapper.wrap_deepmind(gym.make(env["id"], **env["ale"]), episode_life=env["episodic_lives"],
                                       clip_rewards=env["clip_rewards"], frame_stack=env["frame_stack"], scale=False)


def vector_env(env: dict[str, Any], n: int, seed: int):
    from tianshou.env import DummyVectorEnv

    envs = DummyVectorEnv([lambda: make_env(env) for _ in range(n)])
    envs.seed(seed)
    return envs


class LinearLR:
    """Tianshou's LR scheduler factory for rlconf's schedule: linear in env steps from ``lr`` to ``lr_final``
    over the run, stepped once per ``update()`` call (a gradient step off-policy, a rollout's epochs on-policy),
    which advances ``steps_per_update`` env steps; the first call's env steps are ``offset``."""

    def __new__(cls, lr: float, lr_final: float, steps: int, steps_per_update: float, offset: float = 0.0):
        from tianshou.algorithm.optim import LRSchedulerFactory
        from torch.optim.lr_scheduler import LambdaLR

        class Factory(LRSchedulerFactory):
            def create_scheduler(self, optim: torch.optim.Optimizer):
                return LambdaLR(optim, lambda k: _linear(1.0, lr_final / lr, (offset + k * steps_per_update) / steps))

        return Factory()


def adam(lr: float, eps: float, schedule=None):
    from tianshou.algorithm.optim import AdamOptimizerFactory

    factory = AdamOptimizerFactory(lr=lr, eps=eps)
    return factory.with_lr_scheduler_factory(schedule) if schedule is not None else factory


def trunk(network: dict[str, Any], space: gym.Space, actions: int = 0, concat: bool = False):
    """The body of a model: Tianshou's ``Net`` (an MLP; with ``actions`` outputs, or the actions concatenated to
    its input), or its Nature ``DQNet``'s features on frames scaled to [0, 1]."""
    from tianshou.utils.net.common import Net

    if network["kind"] == "mlp":
        return Net(state_shape=space.shape, action_shape=actions, hidden_sizes=network["hidden"],
                   activation=_activation(network["activation"]), concat=concat)
    from tianshou.env.atari.atari_network import DQNet, ScaledObsInputActionReprNet

    if network["convs"] != [[32, 8, 4], [64, 4, 2], [64, 3, 1]]:
        raise ValueError(f"Tianshou's DQNet has Nature's convolutions, not {network['convs']}")
    c, h, w = space.shape  # the Atari PPO example's trunk: Nature's convolutions, then the hidden units
    return ScaledObsInputActionReprNet(DQNet(c=c, h=h, w=w, action_shape=0, features_only=True,
                                             output_dim_added_layer=network["hidden"]))


def test(algorithm, env: dict[str, Any], episodes: int, seed: int) -> list[float]:
    """Tianshou's test collector: the policy outside a training step acts deterministically."""
    from tianshou.data import Collector

    if not episodes:
        return []
    envs = vector_env(env, min(env["test_envs"], episodes), seed)
    stats = Collector(algorithm, envs).collect(n_episode=episodes, reset_before_collect=True)
    return [float(r) for r in stats.returns]


def _dqn(kw: dict[str, Any], space: gym.Space, n_actions: int, action_space: gym.Space):
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy

    policy = DiscreteQLearningPolicy(model=trunk(kw["network"], space, n_actions), action_space=action_space,
                                     eps_training=kw["schedule"]["epsilon"][0], eps_inference=0.0)
    t = kw["trainer"]
    # one update() per gradient step, each 1 / (updates per env step) env steps further on
    schedule = LinearLR(*kw["schedule"]["lr"], kw["schedule"]["steps"],
                        1 / t["update_step_num_gradient_steps_per_sample"], kw["warmup"])
    algorithm = DQN(policy=policy, optim=adam(kw["schedule"]["lr"][0], kw["adam_eps"], schedule), **kw["algorithm"])
    start, end, decay = kw["schedule"]["epsilon"]

    def training_fn(epoch: int, env_step: int) -> None:  # the examples' epsilon schedule, in env steps
        policy.set_eps_training(_linear(start, end, (kw["warmup"] + env_step) / decay))

    return algorithm, training_fn


def _sac(kw: dict[str, Any], space: gym.Space, action_space: gym.Space):
    from tianshou.algorithm import SAC
    from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic

    actor = ContinuousActorProbabilistic(preprocess_net=trunk(kw["network"], space), action_shape=action_space.shape,
                                         unbounded=True, conditioned_sigma=True)
    critics = [ContinuousCritic(preprocess_net=trunk(kw["network"], space, action_space.shape, concat=True))
               for _ in range(2)]
    target = kw["alpha"]["target_entropy"]
    alpha = AutoAlpha(-float(np.prod(action_space.shape)) if target is None else target, kw["alpha"]["log_alpha"],
                      adam(kw["lr"]["alpha"], kw["adam_eps"]))
    algorithm = SAC(policy=SACPolicy(actor=actor, action_space=action_space),
                    policy_optim=adam(kw["lr"]["actor"], kw["adam_eps"]), critic=critics[0],
                    critic_optim=adam(kw["lr"]["critic"], kw["adam_eps"]), critic2=critics[1],
                    critic2_optim=adam(kw["lr"]["critic"], kw["adam_eps"]), alpha=alpha, **kw["algorithm"])
    return algorithm, None


def _ppo(kw: dict[str, Any], space: gym.Space, n_actions: int, action_space: gym.Space):
    from tianshou.algorithm import PPO
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

    network = kw["network"]
    shared = network["kind"] == "nature_cnn"  # rlconf shares the CNN, never an MLP (presets.py checks)
    body = trunk(network, space)
    actor = DiscreteActor(preprocess_net=body, action_shape=n_actions, softmax_output=False)
    critic = DiscreteCritic(preprocess_net=body if shared else trunk(network, space))
    if network["ortho_init"]:
        orthogonal([actor, critic], {actor.last: 0.01, critic.last: 1.0})
    t, schedule = kw["trainer"], kw["schedule"]
    lr = LinearLR(*schedule["lr"], schedule["steps"], t["collection_step_num_env_steps"],
                  t["collection_step_num_env_steps"])
    algorithm = PPO(policy=DiscreteActorPolicy(actor=actor, action_space=action_space, deterministic_eval=True),
                    critic=critic, optim=adam(schedule["lr"][0], kw["adam_eps"], lr), **kw["algorithm"])
    (clip, clip_final), steps = schedule["clip"], schedule["steps"]

    def training_fn(epoch: int, env_step: int) -> None:  # rlconf anneals the clip range with the steps
        algorithm.eps_clip = _linear(clip, clip_final, (env_step + t["collection_step_num_env_steps"]) / steps)

    return algorithm, training_fn


def train(settings: Settings, kw: dict[str, Any], seed: int, test_episodes: int) -> dict[str, Any]:
    """Train Tianshou at the workload's arguments (``kw``: peers.tianshou_kwargs), then test it greedily."""
    from tianshou.data import Collector, ReplayBuffer, VectorReplayBuffer
    from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams

    os.environ["TQDM_DISABLE"] = "1"  # show_progress=False leaves the trainer's update bars on; tqdm reads this
    torch.manual_seed(seed)
    np.random.seed(seed)
    env, agent = kw["env"], kw["agent"]
    envs = vector_env(env, env["n_envs"], seed)
    probe = make_env(env)
    space, action_space = probe.observation_space, probe.action_space
    n_actions = int(getattr(action_space, "n", 0))
    if agent == "ppo":
        algorithm, training_fn = _ppo(kw, space, n_actions, action_space)
        buffer = VectorReplayBuffer(kw["trainer"]["collection_step_num_env_steps"], env["n_envs"])
    else:
        algorithm, training_fn = (_dqn(kw, space, n_actions, action_space) if agent == "dqn"
                                  else _sac(kw, space, action_space))
        buffer = (VectorReplayBuffer(kw["buffer_size"], env["n_envs"]) if env["n_envs"] > 1
                  else ReplayBuffer(kw["buffer_size"]))
    collector = Collector(algorithm, envs, buffer, exploration_noise=True)
    start = time.perf_counter()
    collector.reset()
    if agent != "ppo":  # the off-policy examples' warm-up: random actions into the replay, then train
        collector.collect(n_step=kw["warmup"], random=True)
    params = OnPolicyTrainerParams if agent == "ppo" else OffPolicyTrainerParams
    result = algorithm.run_training(params(training_collector=collector, training_fn=training_fn, test_collector=None,
                                           logger=None, verbose=False, show_progress=False, **kw["trainer"]))
    wall = time.perf_counter() - start
    steps = (kw["warmup"] if agent != "ppo" else 0) + int(result.train_step)
    returns = test(algorithm, env, test_episodes, seed + 1_000_003)
    return {"steps": steps, "wall_seconds": round(wall, 3), "steps_per_second": round(steps / wall, 1),
            "test_returns": returns, "test_return_mean": float(np.mean(returns)) if returns else None,
            "departures": kw.get("departures", [])}
