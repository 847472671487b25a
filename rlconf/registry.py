"""The registry: the one table from names to components.

Configs name components (``agent.name: dqn``, ``env.family: classic``, ``approximation.model: mlp``); the
registry turns a name into the class that builds it. Built-in entries are import paths, so reading the
table (``rlconf list``) imports no torch. A user's own components join with the ``register`` decorator, from
a module named in the ``plugins`` config key or from a package that declares an ``rlconf.plugins`` entry point.
"""

from __future__ import annotations

import difflib
import importlib
import operator
from collections import Counter
from collections.abc import Callable, Collection
from importlib.metadata import entry_points
from typing import Any

KINDS = ("agent", "environment", "model", "body", "logger", "buffer", "approximation", "policy")

# kind -> name -> (import path "module:attribute", one-line description, what it declares). What it declares
# is what checking a config needs to know of a component without importing it (which imports torch), as the
# component itself declares it (tests/test_config.py compares them): an agent's Config (a class of
# rlconf.agents.hyperparameters), whether the agent is itself multi-agent and whether it takes a recurrent
# core (never, optional, required; ignored: it builds no network), a model's settings schema (a class of
# rlconf.nn.schemas), whether an environment family's observations are frames and its games have lives, the
# options a body's constructor takes.
_BUILTIN: dict[str, dict[str, tuple[str, str, dict[str, Any]]]] = {
    "agent": {
        "dqn": ("rlconf.agents.dqn:DQN", "Deep Q-Network: replay, target network, epsilon-greedy",
                {"config": "DQNConfig"}),
        "ddqn": ("rlconf.agents.dqn:DDQN", "Double DQN: online net picks, target net values; prioritized replay",
                 {"config": "DDQNConfig"}),
        "c51": ("rlconf.agents.c51:C51", "distributional DQN: 51-atom categorical returns, projected targets",
                {"config": "C51Config"}),
        "rainbow": ("rlconf.agents.c51:Rainbow", "C51 + prioritized + 3-step replay + dueling noisy networks",
                    {"config": "RainbowConfig"}),
        "r2d1": ("rlconf.agents.r2d1:R2D1", "R2D2 on one learner: LSTM Q, sequence replay, burn-in, value rescaling",
                 {"config": "R2D1Config", "recurrent": "required"}),
        "vqn": ("rlconf.agents.vqn:VQN", "vanilla Q-learning over parallel envs: no replay, no target",
                {"config": "VQNConfig"}),
        "vsarsa": ("rlconf.agents.vqn:VSarsa", "SARSA over parallel envs: on-policy TD(0), no replay",
                   {"config": "VQNConfig"}),
        "vpg": ("rlconf.agents.vpg:VPG", "REINFORCE with a value baseline: complete episodes, parallel envs",
                {"config": "VPGConfig"}),
        "vac": ("rlconf.agents.vac:VAC", "vanilla actor-critic: one-step TD advantages every step, parallel envs",
                {"config": "VACConfig"}),
        "a2c": ("rlconf.agents.a2c:A2C", "Advantage Actor-Critic: n-step returns, entropy bonus, parallel envs",
                {"config": "A2CConfig", "recurrent": "optional"}),
        "ppo": ("rlconf.agents.ppo:PPO", "Proximal Policy Optimisation: clipped surrogate, GAE, parallel envs",
                {"config": "PPOConfig", "recurrent": "optional"}),
        "ddpg": ("rlconf.agents.ddpg:DDPG", "Deep Deterministic Policy Gradient: continuous actions, Gaussian noise",
                 {"config": "DDPGConfig"}),
        "td3": ("rlconf.agents.td3:TD3", "DDPG + twin critics, target policy smoothing, delayed policy updates",
                {"config": "TD3Config"}),
        "sac": ("rlconf.agents.sac:SAC", "Soft Actor-Critic: squashed Gaussian, twin critics, tuned temperature",
                {"config": "SACConfig"}),
        "random": ("rlconf.agents.random_agent:RandomAgent",
                   "uniformly random (legal) actions: a baseline, and the opponent of multi-agent tests",
                   {"config": "RandomConfig", "recurrent": "ignored"}),
        "independent": ("rlconf.agents.independent:IndependentMultiagent",
                        "multi-agent (PettingZoo): one agent per player (agent.base), or shared for self-play",
                        {"config": "IndependentConfig", "plays.multiagent": True}),
        "epsilon_greedy": ("rlconf.agents.multi_armed:EpsilonGreedy",
                           "multi-armed bandit: the best mean so far, a random arm with probability epsilon",
                           {"config": "EpsilonGreedyConfig"}),
        "ucb": ("rlconf.agents.multi_armed:UCB", "multi-armed bandit: UCB1, the mean plus an optimism bonus",
                {"config": "UCBConfig"}),
        "bayesian_ucb": ("rlconf.agents.multi_armed:BayesianUCB",
                         "multi-armed bandit: an upper quantile of each arm's posterior (Beta or Gaussian)",
                         {"config": "BayesianUCBConfig"}),
        "thompson": ("rlconf.agents.multi_armed:Thompson",
                     "multi-armed bandit: Thompson sampling from Beta-Bernoulli or Gaussian posteriors",
                     {"config": "PosteriorConfig"}),
        "gradient_bandit": ("rlconf.agents.multi_armed:GradientBandit",
                            "multi-armed bandit: softmax over learned preferences, reward baseline",
                            {"config": "GradientBanditConfig"}),
        "linear_posterior": ("rlconf.agents.linear_bandit:LinearPosterior",
                             "contextual bandit: Bayesian linear regression per arm, Thompson sampling",
                             {"config": "LinearPosteriorConfig"}),
        "linucb": ("rlconf.agents.linear_bandit:LinUCB",
                   "contextual bandit: ridge regression per arm, upper confidence bound", {"config": "LinUCBConfig"}),
        "neural_greedy": ("rlconf.agents.neural_bandit:NeuralGreedy",
                          "contextual bandit: a network predicts each arm's reward, epsilon-greedy",
                          {"config": "NeuralGreedyConfig"}),
        "neural_linear": ("rlconf.agents.neural_bandit:NeuralLinear",
                          "contextual bandit: Bayesian linear regression on a network's last features",
                          {"config": "NeuralLinearConfig"}),
        "bootstrap_neural": ("rlconf.agents.neural_bandit:BootstrapNeural",
                             "contextual bandit: an ensemble of networks on bootstrapped data, one drawn per pull",
                             {"config": "BootstrapNeuralConfig"}),
        "noise_sampling": ("rlconf.agents.neural_bandit:NoiseSampling",
                           "contextual bandit: greedy under a network with noise added to its weights",
                           {"config": "NoiseSamplingConfig"}),
        "q_learning": ("rlconf.agents.tabular:QLearning", "tabular Q-learning, epsilon-greedy",
                       {"config": "QLearningConfig"}),
        "sarsa_lambda": ("rlconf.agents.tabular:SarsaLambda", "tabular SARSA(lambda) with eligibility traces",
                         {"config": "SarsaLambdaConfig"}),
        "dyna_q": ("rlconf.agents.tabular:DynaQ", "tabular Dyna-Q: Q-learning plus planning steps from a learned model",
                   {"config": "DynaQConfig"}),
    },
    "environment": {
        "classic": ("rlconf.environments.gym:GymVectorEnvironment", "gymnasium environments, vectorised", {}),
        "atari": ("rlconf.environments.atari:AtariEnvironment", "Atari 2600 games (ale-py), DeepMind preprocessing",
                  {"image_observations": True, "lives": True}),
        "continuous": ("rlconf.environments.gym:GymVectorEnvironment",
                       "gymnasium tasks with continuous (Box) actions: Pendulum, MountainCarContinuous", {}),
        "mujoco": ("rlconf.environments.mujoco:MujocoEnvironment", "MuJoCo robots (gymnasium v5), vectorised", {}),
        "pettingzoo_classic": ("rlconf.environments.pettingzoo:MultiagentEnvironment",
                               "PettingZoo board games (tictactoe, connect four): turns, action masks", {}),
        "pettingzoo_atari": ("rlconf.environments.pettingzoo:MultiagentAtariEnvironment",
                             "multi-player Atari (PettingZoo, multi-agent ALE): 84x84 frames, frame skip",
                             {"image_observations": True, "lives": True}),
        "pettingzoo_mpe": ("rlconf.environments.pettingzoo:MultiagentEnvironment",
                           "multi-agent particle worlds (mpe2): vector observations", {}),
        "pettingzoo_butterfly": ("rlconf.environments.pettingzoo:MultiagentFrameEnvironment",
                                 "PettingZoo butterfly pixel games (pistonball): grey 84x84 frames",
                                 {"image_observations": True}),
        "tabular": ("rlconf.environments.gym:GymVectorEnvironment",
                    "gymnasium's toy text: discrete states (FrozenLake, Taxi, CliffWalking)", {}),
        "bandit": ("rlconf.environments.bandit:MultiArmedBandit",
                   "multi-armed bandits (Bernoulli, Gaussian): no observation, one pull per step", {}),
        "contextual_bandit": ("rlconf.environments.bandit:ContextualBandit",
                              "contextual bandits (synthetic linear, a CSV of features and labels)", {}),
    },
    "model": {
        "mlp": ("rlconf.nn.builders:MLPSettings", "fully connected layers on the flattened observation",
                {"schema": "MLPConfig"}),
        "nature_cnn": ("rlconf.nn.builders:NatureCNNSettings",
                       "Nature DQN convolutions on [C, H, W] frames (dueling, noisy heads as options)",
                       {"schema": "NatureCNNConfig"}),
    },
    "body": {
        "none": ("rlconf.bodies.body:Body", "pass-through: the agent sees the environment's states", {"options": ()}),
        "atari": ("rlconf.bodies.atari:DeepmindAtariBody", "frame stack, reward clipping, episodic lives",
                  {"options": ("frame_stack", "clip_rewards", "episodic_lives")}),
        "time_feature": ("rlconf.bodies.time_feature:TimeFeature",
                         "appends t * scale (steps into the episode) to the observation (MuJoCo)",
                         {"options": ("time_feature_scale",)}),
        "mask_velocity": ("rlconf.bodies.mask_velocity:MaskVelocity",
                          "hides the velocities of vector observations (CartPole, Pendulum, MuJoCo): memory tasks",
                          {"options": ("masked",)}),
    },
    "logger": {
        "csv": ("rlconf.logging.csv:CSVLogger", "episodes.csv, returns100.csv, evaluations.csv (always on)", {}),
        "tensorboard": ("rlconf.logging.tensorboard:TensorBoardLogger", "TensorBoard event files", {}),
        "wandb": ("rlconf.logging.wandb:WandbLogger",
                  "Weights & Biases: one run per run, a group per sweep, offline without a key", {}),
    },
    "buffer": {
        "replay": ("rlconf.memory.replay:ReplayBuffer", "uniform replay on preallocated tensors", {}),
        "gae": ("rlconf.memory.advantage:GeneralizedAdvantageBuffer", "on-policy rollouts with GAE", {}),
        "episodes": ("rlconf.memory.episodes:CompleteEpisodeBuffer", "complete episodes with their returns (VPG)", {}),
    },
    "approximation": {
        "q": ("rlconf.approximation.approximation:QNetwork", "action values Q(s, a)", {}),
        "v": ("rlconf.approximation.approximation:VNetwork", "state values V(s)", {}),
        "features": ("rlconf.approximation.approximation:FeatureNetwork", "shared features for several heads", {}),
        "q_continuous": ("rlconf.approximation.q_continuous:QContinuous",
                         "action values Q(s, a) of continuous actions: observation and action in", {}),
    },
    "policy": {
        "greedy": ("rlconf.policies.greedy:ParallelGreedyPolicy", "epsilon-greedy over Q (schedulable)", {}),
        "softmax": ("rlconf.policies.softmax:SoftmaxPolicy", "categorical distribution over logits", {}),
        "gaussian": ("rlconf.policies.gaussian:GaussianPolicy",
                     "diagonal Gaussian over Box actions in [-1, 1]: mean network, learned log std", {}),
        "deterministic": ("rlconf.policies.deterministic:DeterministicPolicy",
                          "DDPG/TD3: the network's output, tanh-squashed into the action Box", {}),
        "soft_deterministic": ("rlconf.policies.soft_deterministic:SoftDeterministicPolicy",
                               "SAC: reparameterised tanh-squashed Gaussian with log-prob correction", {}),
    },
}
# How ``rlconf list agent`` groups the agents: by what they play and how they learn. A plugin's agent joins
# the group its ``register(..., group=...)`` names, else "other".
AGENT_GROUPS: dict[str, tuple[str, ...]] = {
    "deep RL, value-based": ("dqn", "ddqn", "c51", "rainbow", "r2d1", "vqn", "vsarsa"),
    "deep RL, policy gradient": ("vpg", "vac", "a2c", "ppo"),
    "deep RL, continuous control": ("ddpg", "td3", "sac"),
    "multi-agent": ("independent",),
    "multi-armed bandits": ("epsilon_greedy", "ucb", "bayesian_ucb", "thompson", "gradient_bandit"),
    "contextual bandits": ("linear_posterior", "linucb", "neural_greedy", "neural_linear", "bootstrap_neural",
                           "noise_sampling"),
    "tabular": ("q_learning", "sarsa_lambda", "dyna_q"),
    "baselines": ("random",),
}
_USER_GROUPS: dict[str, str] = {}
_USER: dict[str, dict[str, tuple[Any, str]]] = {kind: {} for kind in KINDS}
_loaded_entry_points = False


class UnknownComponent(LookupError):
    """A name the registry does not know; the message names the kind, the options and the nearest match."""


def register(kind: str, name: str, description: str = "", group: str = "") -> Callable[[Any], Any]:
    """Decorator adding a class to the registry: ``@register("agent", "my_dqn", "DQN with a twist")``.
    ``group``: where ``rlconf list agent`` shows an agent (e.g. "deep RL, value-based"; default "other")."""
    if kind not in KINDS:
        raise ValueError(f"unknown registry kind {kind!r}; allowed: {', '.join(KINDS)}")

    def add(obj):
        lines = (obj.__doc__ or "").strip().splitlines()
        _USER[kind][name] = (obj, description or (lines[0] if lines else ""))
        if kind == "agent" and group:
            _USER_GROUPS[name] = group
        return obj

    return add


def agent_group(name: str) -> str:
    """The heading ``rlconf list agent`` shows the agent ``name`` under."""
    if name in _USER_GROUPS:
        return _USER_GROUPS[name]
    return next((group for group, members in AGENT_GROUPS.items() if name in members), "other")


def names(kind: str) -> list[str]:
    return sorted({*_BUILTIN.get(kind, {}), *_USER[kind]})


def describe(kind: str) -> list[tuple[str, str]]:
    table = {name: text for name, (_, text, _) in _BUILTIN.get(kind, {}).items()}
    table.update({name: text for name, (_, text) in _USER[kind].items()})
    return sorted(table.items())


def get(kind: str, name: str) -> Any:
    """The component registered as ``name``; import errors of optional extras propagate to the caller."""
    if name in _USER[kind]:
        return _USER[kind][name][0]
    if name in _BUILTIN.get(kind, {}):
        return import_path(_BUILTIN[kind][name][0])
    see = "rlconf list agent" if kind == "agent" else "rlconf list components"
    raise UnknownComponent(unknown_message(kind, name, names(kind), see))


def declared(kind: str, name: str, what: str, default: Any = None) -> Any:
    """What the component ``name`` declares (``lives``, ``plays.multiagent``, ...), known without importing a
    built-in one; a plugin's is its class attribute (``what`` a dotted path of attributes)."""
    if name in _USER[kind] or name not in _BUILTIN.get(kind, {}):
        try:
            return operator.attrgetter(what)(get(kind, name))
        except AttributeError:
            return default
    return _BUILTIN[kind][name][2].get(what, default)


def agent_config(name: str) -> type:
    """The Config dataclass of the agent ``name``: a built-in one's from rlconf.agents.hyperparameters, which
    imports no torch; a plugin's is its class's ``Config`` (None where it has none)."""
    if name in _USER["agent"] or name not in _BUILTIN["agent"]:
        return getattr(get("agent", name), "Config", None)
    return import_path(f"rlconf.agents.hyperparameters:{_BUILTIN['agent'][name][2]['config']}")


def model_schema(name: str) -> type:
    """The settings dataclass the approximation group is checked against for the model ``name``: a built-in
    one's from rlconf.nn.schemas, which imports no torch; a plugin's is its class."""
    if name in _USER["model"] or name not in _BUILTIN["model"]:
        return get("model", name)
    return import_path(f"rlconf.nn.schemas:{_BUILTIN['model'][name][2]['schema']}")


def import_path(path: str) -> Any:
    """``package.module:attribute`` (or ``package.module.attribute``) to the object it names."""
    module, _, attribute = path.partition(":") if ":" in path else path.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


# What other libraries and papers call a key, and what rlconf calls it: an unknown key is answered by meaning
# (agent.gamma: did you mean 'agent.discount_factor'?) before any near spelling. A plain name is a key beside
# the one typed (agent.gamma -> agent.discount_factor), or a top-level key; a dotted name is a key of the whole
# config (n_envs -> hardware.n_envs). The first names that exist in the composed config are suggested.
KEY_ALIASES: dict[str, tuple[str, ...]] = {
    # the run (top level)
    **dict.fromkeys(("total_timesteps", "timesteps", "total_steps", "n_timesteps", "num_timesteps", "max_steps",
                     "train_steps", "budget"), ("steps",)),
    **dict.fromkeys(("random_seed", "seeds", "rng_seed", "global_seed", "seed_value"), ("seed",)),
    **dict.fromkeys(("eval_freq", "eval_frequency", "eval_interval", "evaluation_interval", "eval_every_steps"),
                    ("eval_every",)),
    **dict.fromkeys(("n_eval_episodes", "num_eval_episodes", "eval_eps"), ("eval_episodes",)),
    **dict.fromkeys(("save_freq", "save_every", "save_interval", "checkpoint_freq", "checkpoint_frequency",
                     "checkpoint_interval"), ("checkpoint_every",)),
    **dict.fromkeys(("log_dir", "logs_dir", "output_dir", "save_dir", "out_dir"), ("logdir",)),
    # where it runs (hardware group)
    **dict.fromkeys(("n_envs", "num_envs", "n_env", "num_env", "envs", "num_workers", "n_workers", "parallel_envs"),
                    ("hardware.n_envs",)),
    **dict.fromkeys(("device", "cuda"), ("hardware.device",)),
    **dict.fromkeys(("threads", "num_threads", "torch_num_threads", "n_threads"), ("hardware.torch_threads",)),
    # agents' hyperparameters
    **dict.fromkeys(("gamma", "discount", "discount_rate"), ("discount_factor",)),
    **dict.fromkeys(("learning_rate", "step_size"), ("lr", "lr_q", "lr_pi", "alpha")),
    "lr": ("lr_q", "lr_pi", "alpha"),
    **dict.fromkeys(("actor_lr", "policy_lr", "lr_actor", "pi_lr", "lr_policy"), ("lr_pi", "lr")),
    **dict.fromkeys(("critic_lr", "q_lr", "lr_critic", "qf_lr"), ("lr_q", "lr_v")),
    **dict.fromkeys(("value_lr", "vf_lr", "lr_value", "v_lr"), ("lr_v", "lr_q")),
    **dict.fromkeys(("adam_epsilon", "optimizer_eps"), ("adam_eps",)),
    **dict.fromkeys(("eps",), ("epsilon", "adam_eps")),
    **dict.fromkeys(("minibatch_size", "mini_batch_size", "batch", "train_batch_size"), ("batch_size",
                                                                                           "min_batch_size")),
    **dict.fromkeys(("buffer_size", "replay_size", "memory_size", "buffer_capacity", "replay_capacity",
                     "memory_capacity", "capacity"), ("replay_buffer_size",)),
    **dict.fromkeys(("learning_starts", "warmup_steps", "start_steps", "min_replay_size", "replay_start",
                     "warmup"), ("replay_start_size",)),
    **dict.fromkeys(("train_freq", "train_frequency", "update_freq"), ("update_frequency", "update_every")),
    "update_every": ("update_frequency",),
    **dict.fromkeys(("target_update_interval", "target_network_frequency", "target_update_freq",
                     "target_update", "target_update_period"), ("target_update_frequency",)),
    **dict.fromkeys(("tau", "polyak", "soft_update_rate", "polyak_tau"), ("target_rate", "polyak_rate")),
    **dict.fromkeys(("exploration_initial_eps", "start_e", "eps_start", "epsilon_start"), ("epsilon",)),
    **dict.fromkeys(("exploration_final_eps", "end_e", "eps_end", "epsilon_end", "epsilon_min", "final_epsilon"),
                    ("epsilon_final",)),
    **dict.fromkeys(("exploration_steps", "epsilon_decay", "eps_decay", "exploration_decay_steps"),
                    ("epsilon_decay_steps",)),
    **dict.fromkeys(("max_grad_norm", "grad_clip", "clip_grad_norm", "gradient_clip", "grad_norm_clip"),
                    ("clip_grad",)),
    **dict.fromkeys(("ent_coef", "entropy_coef", "ent_coeff", "entropy_coefficient", "entropy_weight",
                     "entropy_beta"), ("entropy_loss_scaling", "temperature_initial")),
    **dict.fromkeys(("vf_coef", "value_coef", "value_loss_coef", "vf_coeff", "value_weight"),
                    ("value_loss_scaling",)),
    **dict.fromkeys(("clip_range", "clip_coef", "clip_param", "eps_clip", "clip_epsilon", "ratio_clip"),
                    ("clip",)),
    **dict.fromkeys(("gae_lambda", "lambda", "lmbda", "gae_lam", "lambda_"), ("lam",)),
    **dict.fromkeys(("n_epochs", "update_epochs", "ppo_epochs", "num_epochs"), ("epochs",)),
    **dict.fromkeys(("num_steps", "n_rollout_steps", "rollout_length", "nsteps", "n_step", "multi_step"),
                    ("n_steps", "agent.n_steps")),
    **dict.fromkeys(("norm_adv", "normalize_advantage", "normalise_advantages", "adv_norm"),
                    ("normalize_advantages",)),
    **dict.fromkeys(("alpha", "ent_alpha", "init_alpha"), ("temperature_initial",)),
    **dict.fromkeys(("target_entropy",), ("entropy_target",)),
    **dict.fromkeys(("exploration_noise", "action_noise", "act_noise"), ("noise",)),
    **dict.fromkeys(("policy_noise", "target_policy_noise"), ("target_noise",)),
    **dict.fromkeys(("noise_clip",), ("target_noise_clip",)),
    **dict.fromkeys(("policy_frequency", "policy_freq", "actor_delay", "delay"), ("policy_delay",)),
    **dict.fromkeys(("prioritized_replay", "per", "prioritized"), ("replay",)),
    **dict.fromkeys(("per_alpha", "prioritized_replay_alpha"), ("alpha",)),
    **dict.fromkeys(("per_beta", "prioritized_replay_beta0", "prioritized_replay_beta"), ("beta",)),
    **dict.fromkeys(("n_atoms", "num_atoms"), ("atoms",)),
    **dict.fromkeys(("double", "double_dqn"), ("double_q",)),
    # networks (approximation group) and bodies
    **dict.fromkeys(("hidden_sizes", "net_arch", "hidden_layers", "layers", "hidden_dims", "hidden_size"),
                    ("hidden", "approximation.hidden")),
    **dict.fromkeys(("activation_fn", "act"), ("activation", "approximation.activation")),
    **dict.fromkeys(("n_stack", "frame_stacking", "stack_frames", "frames"), ("frame_stack", "body.frame_stack")),
}
# Characters of a one-line error's message (the line, with "rlconf: error: " and a key before it, stays under
# 300): a longer list of options is summarised (the nearest, how many, and the command that shows them all).
MESSAGE_LIMIT = 270


def unknown_message(what: str, value: str, allowed: list[str], see: str = "",
                    known: Collection[str] | None = None) -> str:
    """``unknown WHAT 'VALUE' (did you mean ...?); `` and what is allowed: every option, or where there are
    too many for one line (``MESSAGE_LIMIT``), the nearest few, how many there are and ``see``, a command that
    shows them all. A key is answered by meaning first (``KEY_ALIASES``); ``known``: every key of the composed
    config, where a dotted alias may point (None: dotted aliases are trusted)."""
    meant = aliases(value, allowed, known) if what == "key" else []
    named = meant or _nearest(value, allowed, n=1)
    message = f"unknown {what} {value!r}{_did_you_mean(named)}; available: {', '.join(allowed)}"
    if len(message) <= MESSAGE_LIMIT:
        return message
    if not meant:
        named = _nearest(value, allowed)
        family = value.rpartition("/")[0]
        members = [name for name in allowed if family and name.startswith(family + "/")]
        if not named and 0 < len(members) <= 6:  # classic/nosuch: the few classic ones
            message = f"unknown {what} {value!r}; in {family}/: {', '.join(members)}"
            return f"{message}; {len(allowed)} {what}s in all: {see}" if see else message
    head = f"unknown {what} {value!r}{_did_you_mean(named)}"
    return f"{head}; {choices(allowed, what, see, room=MESSAGE_LIMIT - len(head) - 2, sample=not named)}"


def _nearest(value: str, allowed: list[str], n: int = 3) -> list[str]:
    """The options nearest to ``value``: the nearest, and others about as near. Names in families (atari/pong,
    agent.lr) are compared by their last part, within the family typed, or in every family where none is typed
    (pong: atari/pong, pettingzoo/pong)."""
    sep = "/" if any("/" in name for name in allowed) else "."
    family = value.rpartition(sep)[0]
    candidates = [name for name in allowed if name.startswith(family + sep)] if family else allowed
    if not candidates:
        candidates, family = allowed, ""
    leaf = value.rpartition(sep)[2] if family or sep == "/" else value
    by_leaf: dict[str, list[str]] = {}
    for name in candidates:
        by_leaf.setdefault(name.rpartition(sep)[2] if family or sep == "/" else name, []).append(name)
    near = difflib.get_close_matches(leaf, list(by_leaf), n=n, cutoff=0.6)
    near = near[:1] + [name for name in near[1:] if difflib.SequenceMatcher(None, leaf, name).ratio() >= 0.7]
    return [name for match in near for name in by_leaf[match]][:n]


def _did_you_mean(names: list[str]) -> str:
    if not names:
        return ""
    quoted = [repr(name) for name in names]
    return f" (did you mean {', '.join(quoted[:-1]) + ' or ' if len(quoted) > 1 else ''}{quoted[-1]}?)"


def aliases(key: str, allowed: Collection[str], known: Collection[str] | None = None) -> list[str]:
    """The keys ``key`` may mean by ``KEY_ALIASES`` that exist, at most two."""
    parent, _, leaf = key.rpartition(".")
    found: list[str] = []
    for name in KEY_ALIASES.get(leaf, ()):
        beside = f"{parent}.{name}" if parent and "." not in name else name
        if "." not in name and beside in allowed:
            found.append(beside)
        elif name != key and (name in known if known is not None else "." in name):
            found.append(name)
    return list(dict.fromkeys(found))[:2]


def choices(allowed: list[str], what: str = "", see: str = "", room: int = MESSAGE_LIMIT, sample: bool = True) -> str:
    """What may be given, in about ``room`` characters: every option when they fit, else how many there are
    (by family, the folder of names such as atari/pong) or, with ``sample``, as many as fit, and ``see``, a
    command that shows them all."""
    every = f"available: {', '.join(allowed)}"
    if len(every) <= room:
        return every
    where = f"; see them all: {see}" if see else ""
    folders = Counter(name.split("/")[0] for name in allowed if "/" in name)
    count = f"{len(allowed)} {what + 's' if what else 'in all'}"
    if folders:
        return f"{count} in " + ", ".join(f"{folder}/ ({n})" for folder, n in sorted(folders.items())) + where
    if not sample:
        return count + where
    shown = allowed[:1]
    for name in allowed[1:]:
        if len(f"available: {', '.join([*shown, name])} and {len(allowed)} more{where}") > room:
            break
        shown.append(name)
    return f"available: {', '.join(shown)} and {len(allowed) - len(shown)} more{where}"


def plugin_problem(module: Any) -> str | None:
    """Why ``module`` cannot name a plugin module (None where it can): a dotted Python identifier, as
    ``plugins=[...]`` and ``--plugins`` take it; never a path (``../evil``) or an empty name, which
    ``importlib`` would answer with a traceback or resolve against the working directory."""
    if isinstance(module, str) and module and all(part.isidentifier() for part in module.split(".")):
        return None
    return f"{str(module)!r} is not a module name (e.g. my_agents or pkg.agents)"


def load_plugins(modules: list[str] | tuple[str, ...] = ()) -> None:
    """Import the modules named in the config and, once, every ``rlconf.plugins`` entry point."""
    global _loaded_entry_points
    if not _loaded_entry_points:
        _loaded_entry_points = True
        for point in entry_points(group="rlconf.plugins"):
            point.load()
    for module in modules:
        importlib.import_module(module)
