"""TorchRL trained at a workload's settings (peers.torchrl_kwargs), as its sota-implementations train: run by
trial.py (``torchrl-train WORKLOAD``) in a process of its own.

Built as TorchRL 0.11's own scripts build each workload (sota-implementations/dqn/dqn_cartpole.py,
ppo/ppo_atari.py, sac/sac.py): ``GymEnv`` with its transforms, a ``Collector`` (random frames first for
the off-policy agents), a ``TensorDictReplayBuffer`` over a ``LazyTensorStorage``, the loss modules (``DQNLoss``
with ``HardUpdate``, ``ClipPPOLoss`` with ``GAE`` recomputed every epoch, ``SACLoss`` with ``SoftUpdate``) and the
scripts' hand-written update loops (learning rate and clip range annealed by hand, gradients clipped). Three
choices differ from the scripts, so that every library does the same work on one core: env copies step
in-process (``SerialEnv``, as SB3's DummyVecEnv; the Atari script's ``ParallelEnv`` workers would use cores the
other libraries do not get), PPO's advantages are computed once a rollout as every other library computes them
(the scripts recompute them before each epoch), and Atari frames are grey-scaled and resized by gymnasium's
``AtariPreprocessing`` (max-pooled over the skipped frames, as DeepMind's) and scaled to [0, 1] by
``ToTensorImage`` as rlconf's (the script resizes with torchvision, not installed here, repeats frames without the
max-pool and adds a running ``VecNorm``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from peers import orthogonal
from torch import nn

from rlconf.settings import Settings


def _linear(start: float, end: float, fraction: float) -> float:
    return start + (end - start) * min(1.0, max(0.0, fraction))


def _activation(name: str) -> type[nn.Module]:
    return {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU, "silu": nn.SiLU}[name]


def base_env(env: dict[str, Any], categorical: bool, test: bool = False):
    """One env with the scripts' transforms: episode returns; on Atari ALE's game at rlconf's settings with the
    DeepMind preprocessing, the PPO Atari script's transforms after the frames are grey and resized."""
    from torchrl.envs import Compose, DoubleToFloat, GymEnv, RewardSum, StepCounter, TransformedEnv

    if env["family"] != "atari":  # float64 observations (MuJoCo's) become float32, as the SAC script's
        return TransformedEnv(GymEnv(env["id"], categorical_action_encoding=categorical),
                              Compose(RewardSum(), DoubleToFloat()))
    import ale_py
    import gymnasium
    from gymnasium.wrappers import AtariPreprocessing
    from torchrl.envs import CatFrames, EndOfLifeTransform, GymWrapper, SignTransform, ToTensorImage

    gymnasium.register_envs(ale_py)
    # Grey 84x84 frames by gymnasium's AtariPreprocessing (OpenCV, as SB3's AtariWrapper): TorchRL's Resize, the
    # script's, needs torchvision, which the benchmark does not install.
    game = AtariPreprocessing(gymnasium.make(env["id"], **env["ale"]), noop_max=env["noop_max"],
                              frame_skip=env["frame_skip"], screen_size=84, grayscale_newaxis=True)
    transformed = TransformedEnv(GymWrapper(game, categorical_action_encoding=True))
    if env["episodic_lives"] and not test:
        transformed.append_transform(EndOfLifeTransform())
    transformed.append_transform(ToTensorImage(in_keys=["observation"], out_keys=["pixels"]))
    transformed.append_transform(CatFrames(N=env["frame_stack"], dim=-3, in_keys=["pixels"]))
    transformed.append_transform(RewardSum())
    transformed.append_transform(StepCounter())
    if env["clip_rewards"] and not test:
        transformed.append_transform(SignTransform(in_keys=["reward"]))
    transformed.append_transform(DoubleToFloat())
    return transformed


def make_env(env: dict[str, Any], n: int, categorical: bool, seed: int):
    from torchrl.envs import SerialEnv

    made = (base_env(env, categorical) if n == 1
            else SerialEnv(n, lambda: base_env(env, categorical)))
    made.set_seed(seed)
    return made


def mlp(network: dict[str, Any], n_in: int, n_out: int):
    from torchrl.modules import MLP

    return MLP(in_features=n_in, out_features=n_out, num_cells=network["hidden"],
               activation_class=_activation(network["activation"]))


def clip(parameters, max_norm: float | None) -> None:
    if max_norm is not None:
        nn.utils.clip_grad_norm_(parameters, max_norm)


def test(policy, env: dict[str, Any], episodes: int, seed: int, categorical: bool) -> list[float]:
    """The scripts' eval_model: whole episodes of the deterministic policy, one after another."""
    from torchrl.envs import ExplorationType, set_exploration_type

    if not episodes:
        return []
    test_env = base_env(env, categorical, test=True)
    test_env.set_seed(seed)
    returns = []
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        for _ in range(episodes):
            rollout = test_env.rollout(10_000_000, policy, break_when_any_done=True, auto_reset=True)
            returns.append(float(rollout["next", "reward"].sum()))
    return returns


def _dqn(kw: dict[str, Any], seed: int) -> tuple[Any, Any, Any]:
    from tensordict.nn import TensorDictSequential
    from torchrl.collectors import Collector
    from torchrl.data import Composite, LazyTensorStorage, TensorDictReplayBuffer
    from torchrl.modules import EGreedyModule, QValueActor
    from torchrl.objectives import DQNLoss, HardUpdate

    if kw["network"]["kind"] != "mlp":
        raise ValueError("the benchmark's TorchRL DQN builds an MLP (its CartPole script)")
    env = make_env(kw["env"], kw["env"]["n_envs"], False, seed)
    action_spec = env.full_action_spec_unbatched["action"]
    n_in = env.observation_spec_unbatched["observation"].shape[-1]
    model = QValueActor(module=mlp(kw["network"], n_in, action_spec.space.n), spec=Composite(action=action_spec),
                        in_keys=["observation"])
    greedy = EGreedyModule(spec=model.spec, **kw["greedy"])
    loss = DQNLoss(value_network=model, **kw["loss"])
    loss.make_value_estimator(gamma=kw["gamma"])
    target = HardUpdate(loss, **kw["hard_update"])
    o = kw["optim"]
    optimizer = torch.optim.Adam(loss.parameters(), lr=o["lr"], eps=o["eps"])
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(kw["buffer"]["buffer_size"]),
                                    batch_size=kw["buffer"]["batch_size"])
    collector = Collector(env, TensorDictSequential(model, greedy), device="cpu", max_frames_per_traj=-1,
                                  **kw["collector"])
    steps = kw["collector"]["total_frames"]
    collected = 0
    for data in collector:
        data = data.reshape(-1)
        buffer.extend(data)
        collected += data.numel()
        greedy.step(data.numel())
        if collected >= kw["collector"]["init_random_frames"]:
            for group in optimizer.param_groups:  # rlconf's schedule, linear in env steps
                group["lr"] = _linear(o["lr"], o["lr_final"], collected / steps)
            for _ in range(kw["num_updates"]):
                value = loss(buffer.sample())["loss"]
                optimizer.zero_grad()
                value.backward()
                clip(loss.parameters(), o["max_grad_norm"])
                optimizer.step()
                target.step()
        collector.update_policy_weights_()
    collector.shutdown()
    return model, collected, False


def _ppo(kw: dict[str, Any], seed: int) -> tuple[Any, Any, Any]:
    from tensordict.nn import TensorDictModule
    from torchrl.collectors import Collector
    from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
    from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
    from torchrl.modules import ConvNet, ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value.advantages import GAE

    env_kw, network = kw["env"], kw["network"]
    atari = env_kw["family"] == "atari"
    env = make_env(env_kw, env_kw["n_envs"], True, seed)
    n_actions = env.full_action_spec_unbatched["action"].space.n
    key = "pixels" if atari else "observation"
    if atari:  # the Atari script's shared trunk: ConvNet, then 512 units, the heads on its features
        convs = network["convs"]
        trunk = nn.Sequential(ConvNet(num_cells=[c[0] for c in convs], kernel_sizes=[c[1] for c in convs],
                                      strides=[c[2] for c in convs], activation_class=nn.ReLU),
                              nn.LazyLinear(network["hidden"]), nn.ReLU())
        trunk(torch.zeros(1, *env.observation_spec_unbatched["pixels"].shape))
        policy_net, value_net = nn.Sequential(trunk, nn.Linear(network["hidden"], n_actions)), \
            nn.Sequential(trunk, nn.Linear(network["hidden"], 1))
    else:
        n_in = env.observation_spec_unbatched["observation"].shape[-1]
        policy_net, value_net = mlp(network, n_in, n_actions), mlp(network, n_in, 1)
        trunk = None
    if network["ortho_init"]:
        orthogonal([policy_net, value_net], {policy_net[-1]: 0.01, value_net[-1]: 1.0})
    actor = ProbabilisticActor(TensorDictModule(policy_net, in_keys=[key], out_keys=["logits"]), in_keys=["logits"],
                               spec=env.full_action_spec_unbatched, distribution_class=torch.distributions.Categorical,
                               return_log_prob=True)
    critic = ValueOperator(value_net, in_keys=[key])
    loss = ClipPPOLoss(actor_network=actor, critic_network=critic, **kw["loss"])
    gae = GAE(value_network=critic, **kw["gae"])
    if atari and env_kw["episodic_lives"]:  # as the Atari script: a lost life ends the learner's episode
        gae.set_keys(done="end-of-life", terminated="end-of-life")
        loss.set_keys(done="end-of-life", terminated="end-of-life")
    o = kw["optim"]
    optimizer = torch.optim.Adam(loss.parameters(), lr=o["lr"], eps=o["eps"])
    rollout = kw["collector"]["frames_per_batch"]
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(rollout), sampler=SamplerWithoutReplacement(),
                                    batch_size=kw["mini_batch_size"])
    collector = Collector(env, actor, device="cpu", max_frames_per_traj=-1, **kw["collector"])
    steps, collected = kw["collector"]["total_frames"], 0
    clip_start = float(loss.clip_epsilon)
    for data in collector:
        collected += data.numel()
        fraction = collected / steps  # rlconf anneals both with the env steps, from the first rollout's end
        for group in optimizer.param_groups:
            group["lr"] = _linear(o["lr"], o["lr_final"], fraction)
        loss.clip_epsilon.copy_(torch.tensor(_linear(clip_start, o["clip_final"], fraction)))
        with torch.no_grad():  # once a rollout, as rlconf, SB3 and Tianshou (the scripts recompute it each epoch)
            data = gae(data)
        for _ in range(kw["ppo_epochs"]):
            buffer.extend(data.reshape(-1))
            for batch in buffer:
                losses = loss(batch)
                optimizer.zero_grad(set_to_none=True)
                (losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]).backward()
                clip(loss.parameters(), o["max_grad_norm"])
                optimizer.step()
        collector.update_policy_weights_()
    collector.shutdown()
    return actor, collected, True


def _sac(kw: dict[str, Any], seed: int) -> tuple[Any, Any, Any]:
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torchrl.collectors import Collector
    from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
    from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator
    from torchrl.objectives import SACLoss, SoftUpdate

    env = make_env(kw["env"], kw["env"]["n_envs"], False, seed)
    action_spec = env.full_action_spec_unbatched["action"]
    n_in, n_act = env.observation_spec_unbatched["observation"].shape[-1], action_spec.shape[-1]
    actor = ProbabilisticActor(
        TensorDictModule(nn.Sequential(mlp(kw["network"], n_in, 2 * n_act), NormalParamExtractor()),
                         in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"], spec=action_spec, distribution_class=TanhNormal,
        distribution_kwargs={"low": action_spec.space.low, "high": action_spec.space.high, "tanh_loc": False})
    qvalue = ValueOperator(mlp(kw["network"], n_in + n_act, 1), in_keys=["action", "observation"])
    loss = SACLoss(actor_network=actor, qvalue_network=qvalue, **kw["loss"])
    loss.make_value_estimator(gamma=kw["gamma"])
    target = SoftUpdate(loss, **kw["soft_update"])
    o = kw["optim"]
    optimizers = [torch.optim.Adam(list(loss.actor_network_params.flatten_keys().values()), lr=o["lr_actor"],
                                   eps=o["eps"]),
                  torch.optim.Adam(list(loss.qvalue_network_params.flatten_keys().values()), lr=o["lr_critic"],
                                   eps=o["eps"]),
                  torch.optim.Adam([loss.log_alpha], lr=o["lr_alpha"], eps=o["eps"])]
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(kw["buffer"]["buffer_size"]),
                                    batch_size=kw["buffer"]["batch_size"])
    collector = Collector(env, actor, device="cpu", max_frames_per_traj=-1, **kw["collector"])
    collected = 0
    for data in collector:
        data = data.reshape(-1)
        buffer.extend(data)
        collected += data.numel()
        if collected < kw["collector"]["init_random_frames"]:
            continue
        for _ in range(kw["num_updates"]):
            losses = loss(buffer.sample())
            for optimizer in optimizers:
                optimizer.zero_grad()
            (losses["loss_actor"] + losses["loss_qvalue"] + losses["loss_alpha"]).backward()
            for optimizer in optimizers:
                optimizer.step()
            target.step()
        collector.update_policy_weights_()
    collector.shutdown()
    return actor, collected, False


AGENTS = {"dqn": _dqn, "ppo": _ppo, "sac": _sac}


def train(settings: Settings, kw: dict[str, Any], seed: int, test_episodes: int) -> dict[str, Any]:
    """Train TorchRL at the workload's arguments (``kw``: peers.torchrl_kwargs), then test it greedily."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    start = time.perf_counter()
    policy, steps, categorical = AGENTS[kw["agent"]](kw, seed)
    wall = time.perf_counter() - start
    returns = test(policy, kw["env"], test_episodes, seed + 1_000_003, categorical)
    return {"steps": int(steps), "wall_seconds": round(wall, 3), "steps_per_second": round(steps / wall, 1),
            "test_returns": returns, "test_return_mean": float(np.mean(returns)) if returns else None}
