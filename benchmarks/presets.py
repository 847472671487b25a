"""The benchmark's workloads: rlconf's presets, read at run time and translated into Stable-Baselines3 terms.

The benchmark never restates a hyperparameter: it composes the same config ``rlconf run`` would (a workload
only adds the overrides the comparison asks for), and maps each value to its SB3 name in one function per
algorithm, the environment and its preprocessing in another. A preset change is therefore benchmarked on
both sides at once, and a setting SB3 cannot express fails loudly instead of comparing different things.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from rlconf.config import compose, validate
from rlconf.settings import Settings

ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU,
                                           "silu": nn.SiLU}


@dataclass(frozen=True)
class Linear:
    """An SB3 schedule: SB3 calls it with the progress remaining (1 at the start, 0 at the end).

    A class rather than a lambda so the results file can say what the schedule was.
    """

    start: float
    end: float

    def __call__(self, progress_remaining: float) -> float:
        return self.end + progress_remaining * (self.start - self.end)

    def __repr__(self) -> str:
        return f"linear({self.start:g} -> {self.end:g})"


@dataclass(frozen=True)
class Workload:
    """One comparison: ``rlconf run agent=AGENT env=ENV *OVERRIDES`` and SB3 at the same settings."""

    name: str
    agent: str
    env: str
    overrides: tuple[str, ...] = ()
    sb3: bool = True  # False: SB3 has no such algorithm; rlconf's rate is reported alone
    test_episodes: int | None = None  # None: the benchmark's default; Atari's 20k-step agents are not tested
    label: str = ""  # what the report's title adds to the agent's name, where the overrides make it another agent

    def command_overrides(self, steps: int | None = None) -> list[str]:
        """The overrides of ``rlconf run``, a changed budget last so it wins."""
        return [f"agent={self.agent}", f"env={self.env}", *self.overrides,
                *([f"steps={steps}"] if steps is not None else [])]


# The Atari workloads of the value-based issue: 20k agent steps (80k frames), learning from step 5k, one
# update of batch 32 every 4 steps (the Atari presets' own batch and period), a 100k replay as rl-zoo's.
ATARI_DQN = ("steps=20000", "agent.replay_start_size=5000", "agent.replay_buffer_size=100000")
# DQN's Atari preset is Tianshou's (10 envs, 3-step double-Q targets, squared error, unscaled frames), which
# SB3's DQN cannot express: the workload keeps the settings it was first measured with, one env and SB3's
# one-step Huber targets on frames in [0, 1].
ATARI_DQN_AS_SB3 = (*ATARI_DQN, "hardware.n_envs=1", "agent.update_frequency=4", "agent.n_steps=1",
                    "agent.loss=huber", "agent.double_q=false", "approximation.scale_frames=true",
                    "agent.target_update_frequency=1000", "agent.epsilon_decay_steps=250000",
                    "agent.epsilon_final=0.01")
WORKLOADS = {w.name: w for w in (
    Workload("dqn-cartpole", "dqn", "classic/cartpole"),
    Workload("ppo-cartpole", "ppo", "classic/cartpole"),
    Workload("dqn-breakout", "dqn", "atari/breakout", ATARI_DQN_AS_SB3, test_episodes=0),
    Workload("rainbow-breakout", "rainbow", "atari/breakout", ATARI_DQN, sb3=False, test_episodes=0),
    # The continuous-control issue's: SAC at its MuJoCo preset (256x256, batch 256, one update a step) from
    # step 1k, without the time feature SB3 does not add; PPO's Atari preset on 8 envs.
    Workload("sac-halfcheetah", "sac", "mujoco/half_cheetah", ("steps=10000", "agent.replay_start_size=1000",
                                                               "body=none"), test_episodes=0),
    Workload("ppo-breakout", "ppo", "atari/breakout", ("steps=20000",), test_episodes=0),
    # The memory issue's: PPO with an LSTM against SB3-contrib's RecurrentPPO on CartPole without velocities
    # (a third of the experiment's budget) and on Breakout (PPO's Atari preset with a core of 128, CleanRL's
    # ppo_atari_lstm); R2D1 on Breakout beside DQN's workload above, with its warm-up but 3,000 steps of updates
    # (each update trains 32 sequences of 120 frames: two orders of magnitude more compute a step than DQN's).
    # The masked-CartPole workload at the Zoo's rollouts (32 steps, whole chunks, 20 epochs): the preset's segments
    # of 32 in rollouts of 128 have no SB3-contrib twin (sb3_recurrent_ppo_kwargs refuses them).
    Workload("ppo-lstm-cartpole-masked", "ppo", "classic/cartpole",
             ("body=mask_velocity", "approximation.recurrent=lstm", "agent.n_steps=32", "agent.sequence_length=null",
              "agent.epochs=20", "steps=100000")),
    Workload("ppo-lstm-breakout", "ppo", "atari/breakout",
             ("approximation.recurrent=lstm", "approximation.recurrent_hidden=128", "steps=20000"), test_episodes=0),
    Workload("r2d1-breakout", "r2d1", "atari/breakout", ("steps=8000", "agent.replay_start_size=5000"), sb3=False,
             test_episodes=0),
    # Data-Efficient Rainbow's shape (issue 37): the Atari 100k experiment itself (configs/experiment/
    # atari100k_der.yaml: one env, one update of batch 32 a step, 20-step prioritized distributional double Q,
    # the two-convolution dueling noisy network), its first 10k steps: 1,600 of warm-up, then 8,400 updates.
    Workload("der-breakout", "rainbow", "atari/breakout", ("experiment=atari100k_der", "steps=10000"), sb3=False,
             test_episodes=0, label=" (DER, Atari 100k's settings)"),
)}


@dataclass(frozen=True)
class Scaling:
    """rlconf against itself: one workload run several ways (samplers, runners, learners), side by side in one
    run. The first variant is the baseline each is compared with; ``variants``: label -> extra overrides."""

    name: str
    workload: Workload
    variants: tuple[tuple[str, tuple[str, ...]], ...]
    note: str = ""  # what is held equal, for the report


TWO_CORES = ("hardware.cpus_per_run=2",)  # the workers of a sampler: one per core of this machine
SAMPLERS = (("serial", ()), ("parallel", ("hardware.sampler=parallel", *TWO_CORES)),
            ("alternating", ("hardware.sampler=alternating", *TWO_CORES)))
RUNNERS = (("sync", ()), ("async", ("hardware.runner=async",)))
SCALING = {s.name: s for s in (
    Scaling("ppo-breakout-8", Workload("ppo-breakout", "ppo", "atari/breakout", ("steps=20000",)), SAMPLERS),
    Scaling("ppo-breakout-16", Workload("ppo-breakout-16", "ppo", "atari/breakout",
                                        ("steps=20000", "hardware.n_envs=16")), SAMPLERS),
    # CleanRL's 8 x 256 layout of the preset's 2048-step rollouts (the preset steps one env)
    Scaling("ppo-halfcheetah-8", Workload("ppo-halfcheetah", "ppo", "mujoco/half_cheetah",
                                          ("steps=20000", "hardware.n_envs=8", "agent.n_steps=256")), SAMPLERS),
    Scaling("dqn-breakout-async", WORKLOADS["dqn-breakout"], RUNNERS),
    Scaling("sac-halfcheetah-async", Workload("sac-halfcheetah", "sac", "mujoco/half_cheetah",
                                              ("steps=10000", "agent.replay_start_size=1000")), RUNNERS),
    Scaling("ppo-breakout-learners", Workload("ppo-breakout", "ppo", "atari/breakout", ("steps=20000",)),
            (("1 learner x 8 envs", ()),
             ("2 learners x 4 envs", ("hardware.learners=2", "hardware.n_envs=4", "agent.batch_size=128"))),
            note="the same 8 environments and rollouts of 8 x 128 steps, and the same 16 updates of 256 samples "
                 "each (2 x 128: each learner's minibatch, gradients averaged)"),
)}


def load_settings(workload: Workload, steps: int | None = None) -> Settings:
    """The validated config of the workload's ``rlconf run`` (at ``steps`` if given), preset included."""
    return validate(compose(workload.command_overrides(steps), []))


def _schedule(start: float, end: float | None) -> float | Linear:
    return start if end is None else Linear(start, end)


def _max_grad_norm(clip_grad: float) -> float:
    # rlconf's 0 means "no clipping"; SB3 always clips, so an infinite norm is its way to say the same.
    return clip_grad if clip_grad > 0 else math.inf


def _unsupported(key: str, value: Any, why: str) -> ValueError:
    return ValueError(f"{key}={value}: no Stable-Baselines3 equivalent ({why}); the comparison would not be matched")


def recurrent(settings: Settings) -> bool:
    return settings.approximation.get("recurrent", "none") != "none"


def sb3_policy(settings: Settings) -> str:
    """SB3's policy class for rlconf's model: its CnnPolicy is the Nature CNN, its MlpPolicy an MLP; with a
    recurrent core, SB3-contrib's CnnLstmPolicy and MlpLstmPolicy."""
    model = settings.approximation
    if recurrent(settings):
        if model["recurrent"] != "lstm":
            raise _unsupported("approximation.recurrent", model["recurrent"], "SB3-contrib's cores are LSTMs")
        return {"nature_cnn": "CnnLstmPolicy", "mlp": "MlpLstmPolicy"}[model["model"]]
    if model["model"] == "nature_cnn":
        for key in ("dueling", "noisy"):
            if model[key]:
                raise _unsupported(f"approximation.{key}", True, "SB3's CnnPolicy has a plain Q head")
        if model["hidden"] != 512:
            raise _unsupported("approximation.hidden", model["hidden"], "SB3's NatureCNN has 512 features")
        if not model["scale_frames"]:
            raise _unsupported("approximation.scale_frames", False, "SB3's CnnPolicy scales frames to [0, 1]")
        return "CnnPolicy"
    if model["model"] == "mlp":
        return "MlpPolicy"
    raise _unsupported("approximation.model", model["model"], "SB3 builds an MLP or the Nature CNN")


def _net_arch(settings: Settings, actor_critic: bool = False) -> dict[str, Any]:
    """policy_kwargs.net_arch and activation for an MLP; nothing for the CNN, whose layout is SB3's own.

    SB3 2.x gives actor-critic MLPs a network each and shares the CNN's features: rlconf's ``shared`` must agree.
    """
    model = settings.approximation
    cnn = model["model"] != "mlp"
    if actor_critic and model["shared"] != cnn:
        raise _unsupported("approximation.shared", model["shared"],
                           "SB3 shares the CNN's features between policy and value, never an MLP's")
    if cnn:
        return {}
    hidden = list(model["hidden"])
    return {"net_arch": {"pi": hidden, "vf": hidden} if actor_critic else hidden,
            "activation_fn": ACTIVATIONS[model["activation"]]}


def sb3_env(settings: Settings, n_envs: int, seed: int):
    """The SB3 vector env of rlconf's env and body: gymnasium's for classic control; for Atari, SB3's
    AtariWrapper over the same ALE game (frame skip, noop and fire reset, 84x84 grey, life loss and reward
    clipping as rlconf's atari body) and VecFrameStack for the body's frame stack."""
    from stable_baselines3.common.env_util import make_atari_env, make_vec_env
    from stable_baselines3.common.vec_env import VecFrameStack

    if settings.env.family in ("classic", "continuous", "mujoco"):
        masked = settings.body.masked if settings.body.name == "mask_velocity" else None
        return make_vec_env(settings.env.id, n_envs=n_envs, seed=seed,
                            wrapper_class=None if masked is None else MaskedComponents,
                            wrapper_kwargs=None if masked is None else {"masked": masked})
    if settings.env.family != "atari":
        raise _unsupported("env.family", settings.env.family, "the benchmark maps gymnasium and atari envs")
    import ale_py

    gymnasium.register_envs(ale_py)
    game, body = settings.env.kwargs, settings.body
    env = make_atari_env(
        settings.env.id, n_envs=n_envs, seed=seed,
        env_kwargs={"frameskip": 1, "repeat_action_probability": game["repeat_action_probability"],
                    "full_action_space": game["full_action_space"],
                    "max_num_frames_per_episode": game["max_num_frames_per_episode"]},
        wrapper_kwargs={"noop_max": game["noop_max"], "frame_skip": game["frame_skip"], "screen_size": 84,
                        "terminal_on_life_loss": body.episodic_lives, "clip_reward": body.clip_rewards})
    return VecFrameStack(env, body.frame_stack)


class MaskedComponents(gymnasium.ObservationWrapper):
    """rlconf's body=mask_velocity for SB3's envs: the same components of the observations dropped."""

    def __init__(self, env: gymnasium.Env, masked: list[int]):
        super().__init__(env)
        self.kept = [i for i in range(env.observation_space.shape[0]) if i not in masked]
        space = env.observation_space
        self.observation_space = gymnasium.spaces.Box(space.low[self.kept], space.high[self.kept], dtype=space.dtype)

    def observation(self, observation):
        return observation[self.kept]


def sb3_dqn_kwargs(settings: Settings) -> dict[str, Any]:
    """rlconf's DQN settings as keyword arguments of ``stable_baselines3.DQN``."""
    a, n_envs = settings.agent, settings.hardware.n_envs
    if a.replay != "uniform" or a.n_steps != 1:
        raise _unsupported("agent.replay", f"{a.replay} with n_steps {a.n_steps}",
                           "SB3's DQN replays uniformly, one step")
    if a.loss != "huber":
        raise _unsupported("agent.loss", a.loss, "SB3's DQN always uses the Huber loss")
    if a.double_q:
        raise _unsupported("agent.double_q", True, "SB3's DQN bootstraps from the target network's max")
    if a.target == "trivial":
        raise _unsupported("agent.target", a.target, "SB3's DQN always has a target network")
    polyak = a.target == "polyak"
    return {
        "learning_rate": _schedule(a.lr, a.lr_final),
        "buffer_size": a.replay_buffer_size,
        "learning_starts": a.replay_start_size,
        "batch_size": a.batch_size,
        "gamma": a.discount_factor,
        # rlconf counts its periods in environment steps and acts on all envs at once; SB3's train_freq counts
        # calls to the vector env (its target interval already divides by n_envs itself).
        "train_freq": max(1, a.update_frequency // n_envs),
        "gradient_steps": a.gradient_steps,
        "tau": a.target_rate if polyak else 1.0,
        "target_update_interval": n_envs if polyak else a.target_update_frequency,
        # SB3 decays epsilon over a fraction of the run; rlconf over a number of steps.
        "exploration_fraction": a.epsilon_decay_steps / settings.run.steps,
        "exploration_initial_eps": a.epsilon,
        "exploration_final_eps": a.epsilon_final,
        "max_grad_norm": _max_grad_norm(a.clip_grad),
        "policy_kwargs": {**_net_arch(settings), "optimizer_kwargs": {"eps": a.adam_eps}},
    }


def sb3_ppo_kwargs(settings: Settings) -> dict[str, Any]:
    """rlconf's PPO settings as keyword arguments of ``stable_baselines3.PPO``."""
    a, model = settings.agent, settings.approximation
    return {
        "n_steps": a.n_steps,
        "batch_size": a.batch_size,
        "n_epochs": a.epochs,
        "gamma": a.discount_factor,
        "gae_lambda": a.lam,
        "learning_rate": _schedule(a.lr, a.lr_final),
        "clip_range": _schedule(a.clip, a.clip_final),
        "ent_coef": a.entropy_loss_scaling,
        "vf_coef": a.value_loss_scaling,
        "max_grad_norm": _max_grad_norm(a.clip_grad),
        "normalize_advantage": a.normalize_advantages,
        "policy_kwargs": {
            **_net_arch(settings, actor_critic=True),
            "ortho_init": model["ortho_init"],
            "optimizer_kwargs": {"eps": a.adam_eps},
        },
    }


def sb3_recurrent_ppo_kwargs(settings: Settings) -> dict[str, Any]:
    """rlconf's PPO with an LSTM core as keyword arguments of ``sb3_contrib.RecurrentPPO``. rlconf's MLP trunk is
    hidden layers, then the core, then the heads; SB3-contrib's is a features extractor, the core, then net_arch:
    the hidden layers become the features extractor (``MLPFeatures``) and net_arch stays empty. Unshared, the
    actor and the critic each have an extractor and a core, as rlconf's side-by-side trunks."""
    kwargs, model = sb3_ppo_kwargs(settings), settings.approximation
    if settings.agent.sequence_length is not None:
        raise _unsupported("agent.sequence_length", settings.agent.sequence_length,
                           "SB3-contrib's RecurrentPPO minibatches whole chunks, not fixed segments")
    shared = model["shared"]
    policy = {"ortho_init": model["ortho_init"], "optimizer_kwargs": kwargs["policy_kwargs"]["optimizer_kwargs"],
              "lstm_hidden_size": model["recurrent_hidden"], "n_lstm_layers": 1, "shared_lstm": shared,
              "enable_critic_lstm": not shared}
    if model["model"] == "mlp":
        policy |= {"net_arch": [], "features_extractor_class": MLPFeatures, "share_features_extractor": shared,
                   "features_extractor_kwargs": {"hidden": list(model["hidden"]),
                                                 "activation": ACTIVATIONS[model["activation"]]}}
    elif not shared:
        raise _unsupported("approximation.shared", False, "SB3-contrib's CnnLstmPolicy shares the CNN")
    return kwargs | {"policy_kwargs": policy}


class MLPFeatures(BaseFeaturesExtractor):
    """An SB3 features extractor of fully connected layers: rlconf's hidden layers before the core."""

    def __init__(self, observation_space: gymnasium.spaces.Box, hidden: list[int], activation: type[nn.Module]):
        width = int(observation_space.shape[0])
        super().__init__(observation_space, hidden[-1] if hidden else width)
        layers: list[nn.Module] = []
        for size in hidden:
            layers += [nn.Linear(width, size), activation()]
            width = size
        self.layers = nn.Sequential(*layers)

    def forward(self, observations):
        return self.layers(observations)


def sb3_sac_kwargs(settings: Settings) -> dict[str, Any]:
    """rlconf's SAC settings as keyword arguments of ``stable_baselines3.SAC``."""
    a = settings.agent
    if not a.lr_q == a.lr_pi == a.lr_temperature:
        raise _unsupported("agent.lr_q/lr_pi/lr_temperature", f"{a.lr_q}/{a.lr_pi}/{a.lr_temperature}",
                           "SB3's SAC has one learning rate")
    if settings.body.name != "none":
        raise _unsupported("body", settings.body.name, "SB3's SAC sees the env's own observations")
    return {
        "learning_rate": a.lr_q,
        "buffer_size": a.replay_buffer_size,
        # Both act uniformly at random until then, and rlconf's update_frequency counts env steps.
        "learning_starts": a.replay_start_size,
        "batch_size": a.batch_size,
        "tau": a.polyak_rate,
        "gamma": a.discount_factor,
        "train_freq": max(1, a.update_frequency // settings.hardware.n_envs),
        "gradient_steps": a.gradient_steps,
        "ent_coef": f"auto_{a.temperature_initial}",
        "target_entropy": "auto" if a.entropy_target is None else a.entropy_target,
        "policy_kwargs": {**_net_arch(settings), "optimizer_kwargs": {"eps": a.adam_eps}},
    }


SB3_KWARGS = {"dqn": sb3_dqn_kwargs, "ppo": sb3_ppo_kwargs, "sac": sb3_sac_kwargs}


def sb3_kwargs(settings: Settings) -> dict[str, Any]:
    """The keyword arguments of SB3's (or SB3-contrib's) algorithm for the workload's settings."""
    if recurrent(settings):
        if settings.agent_name != "ppo":
            raise _unsupported("agent", settings.agent_name, "SB3-contrib's recurrent algorithm is PPO")
        return sb3_recurrent_ppo_kwargs(settings)
    return SB3_KWARGS[settings.agent_name](settings)


def describe(kwargs: dict[str, Any]) -> dict[str, Any]:
    """SB3 arguments as JSON-friendly values (classes and schedules by name) for the results file."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list | int | float | str | bool) or value is None:
            return value if not (isinstance(value, float) and math.isinf(value)) else "inf"
        return getattr(value, "__name__", repr(value))

    return plain(kwargs)
