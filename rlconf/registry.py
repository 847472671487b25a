"""The registry: the one table from names to components.

Configs name components (``agent.name: dqn``, ``env.family: classic``, ``approximation.model: mlp``); the
registry turns a name into the class that builds it. Built-in entries are import paths, so reading the
table (``rlconf list``) imports no torch. A user's own components join with the ``register`` decorator, from
a module named in the ``plugins`` config key or from a package that declares an ``rlconf.plugins`` entry point.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

KINDS = ("agent", "environment", "model", "body", "logger", "buffer", "approximation", "policy")

# kind -> name -> (import path "module:attribute", one-line description)
_BUILTIN: dict[str, dict[str, tuple[str, str]]] = {
    "agent": {
        "dqn": ("rlconf.agents.dqn:DQN", "Deep Q-Network: replay, target network, epsilon-greedy"),
        "ddqn": ("rlconf.agents.ddqn:DDQN", "Double DQN: online net picks, target net values; prioritized replay"),
        "c51": ("rlconf.agents.c51:C51", "distributional DQN: 51-atom categorical returns, projected targets"),
        "rainbow": ("rlconf.agents.c51:Rainbow", "C51 + prioritized + 3-step replay + dueling noisy networks"),
        "vqn": ("rlconf.agents.vqn:VQN", "vanilla Q-learning over parallel envs: no replay, no target"),
        "vsarsa": ("rlconf.agents.vqn:VSarsa", "SARSA over parallel envs: on-policy TD(0), no replay"),
        "vpg": ("rlconf.agents.vpg:VPG", "REINFORCE with a value baseline: complete episodes, parallel envs"),
        "vac": ("rlconf.agents.vac:VAC", "vanilla actor-critic: one-step TD advantages every step, parallel envs"),
        "a2c": ("rlconf.agents.a2c:A2C", "Advantage Actor-Critic: n-step returns, entropy bonus, parallel envs"),
        "ppo": ("rlconf.agents.ppo:PPO", "Proximal Policy Optimisation: clipped surrogate, GAE, parallel envs"),
        "ddpg": ("rlconf.agents.ddpg:DDPG", "Deep Deterministic Policy Gradient: continuous actions, Gaussian noise"),
        "td3": ("rlconf.agents.td3:TD3", "DDPG + twin critics, target policy smoothing, delayed policy updates"),
        "sac": ("rlconf.agents.sac:SAC", "Soft Actor-Critic: squashed Gaussian, twin critics, tuned temperature"),
        "random": ("rlconf.agents.random_agent:RandomAgent",
                   "uniformly random (legal) actions: a baseline, and the opponent of multi-agent tests"),
        "independent": ("rlconf.agents.independent:IndependentMultiagent",
                        "multi-agent (PettingZoo): one agent per player (agent.base), or shared for self-play"),
        "epsilon_greedy": ("rlconf.agents.multi_armed:EpsilonGreedy",
                           "multi-armed bandit: the best mean so far, a random arm with probability epsilon"),
        "ucb": ("rlconf.agents.multi_armed:UCB", "multi-armed bandit: UCB1, the mean plus an optimism bonus"),
        "bayesian_ucb": ("rlconf.agents.multi_armed:BayesianUCB",
                         "multi-armed bandit: an upper quantile of each arm's posterior (Beta or Gaussian)"),
        "thompson": ("rlconf.agents.multi_armed:Thompson",
                     "multi-armed bandit: Thompson sampling from Beta-Bernoulli or Gaussian posteriors"),
        "gradient_bandit": ("rlconf.agents.multi_armed:GradientBandit",
                            "multi-armed bandit: softmax over learned preferences, reward baseline"),
        "linear_posterior": ("rlconf.agents.linear_bandit:LinearPosterior",
                             "contextual bandit: Bayesian linear regression per arm, Thompson sampling"),
        "linucb": ("rlconf.agents.linear_bandit:LinUCB",
                   "contextual bandit: ridge regression per arm, upper confidence bound"),
        "neural_greedy": ("rlconf.agents.neural_bandit:NeuralGreedy",
                          "contextual bandit: a network predicts each arm's reward, epsilon-greedy"),
        "neural_linear": ("rlconf.agents.neural_bandit:NeuralLinear",
                          "contextual bandit: Bayesian linear regression on a network's last features"),
        "bootstrap_neural": ("rlconf.agents.neural_bandit:BootstrapNeural",
                             "contextual bandit: an ensemble of networks on bootstrapped data, one drawn per pull"),
        "noise_sampling": ("rlconf.agents.neural_bandit:NoiseSampling",
                           "contextual bandit: greedy under a network with noise added to its weights"),
        "q_learning": ("rlconf.agents.tabular:QLearning", "tabular Q-learning, epsilon-greedy"),
        "sarsa_lambda": ("rlconf.agents.tabular:SarsaLambda", "tabular SARSA(lambda) with eligibility traces"),
        "dyna_q": ("rlconf.agents.tabular:DynaQ",
                   "tabular Dyna-Q: Q-learning plus planning steps from a learned model"),
    },
    "environment": {
        "classic": ("rlconf.environments.gym:GymVectorEnvironment", "gymnasium environments, vectorised"),
        "atari": ("rlconf.environments.atari:AtariEnvironment", "Atari 2600 games (ale-py), DeepMind preprocessing"),
        "continuous": ("rlconf.environments.gym:GymVectorEnvironment",
                       "gymnasium tasks with continuous (Box) actions: Pendulum, MountainCarContinuous"),
        "mujoco": ("rlconf.environments.mujoco:MujocoEnvironment", "MuJoCo robots (gymnasium v5), vectorised"),
        "pettingzoo_classic": ("rlconf.environments.pettingzoo:MultiagentEnvironment",
                               "PettingZoo board games (tictactoe, connect four): turns, action masks"),
        "pettingzoo_atari": ("rlconf.environments.pettingzoo:MultiagentAtariEnvironment",
                             "multi-player Atari (PettingZoo, multi-agent ALE): 84x84 frames, frame skip"),
        "pettingzoo_mpe": ("rlconf.environments.pettingzoo:MultiagentEnvironment",
                           "multi-agent particle worlds (mpe2): vector observations"),
        "pettingzoo_butterfly": ("rlconf.environments.pettingzoo:MultiagentFrameEnvironment",
                                 "PettingZoo butterfly pixel games (pistonball): grey 84x84 frames"),
        "tabular": ("rlconf.environments.gym:GymVectorEnvironment",
                    "gymnasium's toy text: discrete states (FrozenLake, Taxi, CliffWalking)"),
        "bandit": ("rlconf.environments.bandit:MultiArmedBandit",
                   "multi-armed bandits (Bernoulli, Gaussian): no observation, one pull per step"),
        "contextual_bandit": ("rlconf.environments.bandit:ContextualBandit",
                              "contextual bandits (synthetic linear, a CSV of features and labels)"),
    },
    "model": {
        "mlp": ("rlconf.nn.builders:MLPSettings", "fully connected layers on the flattened observation"),
        "nature_cnn": ("rlconf.nn.builders:NatureCNNSettings",
                       "Nature DQN convolutions on [C, H, W] frames (dueling, noisy heads as options)"),
    },
    "body": {
        "none": ("rlconf.bodies.body:Body", "pass-through: the agent sees the environment's states"),
        "atari": ("rlconf.bodies.atari:DeepmindAtariBody", "frame stack, reward clipping, episodic lives"),
        "time_feature": ("rlconf.bodies.time_feature:TimeFeature",
                         "appends t * scale (steps into the episode) to the observation (MuJoCo)"),
    },
    "logger": {
        "csv": ("rlconf.logging.csv:CSVLogger", "episodes.csv, returns100.csv, evaluations.csv (always on)"),
        "tensorboard": ("rlconf.logging.tensorboard:TensorBoardLogger", "TensorBoard event files"),
        "wandb": ("rlconf.logging.wandb:WandbLogger",
                  "Weights & Biases: one run per run, a group per sweep, offline without a key"),
    },
    "buffer": {
        "replay": ("rlconf.memory.replay:ReplayBuffer", "uniform replay on preallocated tensors"),
        "gae": ("rlconf.memory.advantage:GeneralizedAdvantageBuffer", "on-policy rollouts with GAE"),
        "episodes": ("rlconf.memory.episodes:CompleteEpisodeBuffer", "complete episodes with their returns (VPG)"),
    },
    "approximation": {
        "q": ("rlconf.approximation.approximation:QNetwork", "action values Q(s, a)"),
        "v": ("rlconf.approximation.approximation:VNetwork", "state values V(s)"),
        "features": ("rlconf.approximation.approximation:FeatureNetwork", "shared features for several heads"),
        "q_continuous": ("rlconf.approximation.q_continuous:QContinuous",
                         "action values Q(s, a) of continuous actions: observation and action in"),
    },
    "policy": {
        "greedy": ("rlconf.policies.greedy:ParallelGreedyPolicy", "epsilon-greedy over Q (schedulable)"),
        "softmax": ("rlconf.policies.softmax:SoftmaxPolicy", "categorical distribution over logits"),
        "gaussian": ("rlconf.policies.gaussian:GaussianPolicy",
                     "diagonal Gaussian over Box actions in [-1, 1]: mean network, learned log std"),
        "deterministic": ("rlconf.policies.deterministic:DeterministicPolicy",
                          "DDPG/TD3: the network's output, tanh-squashed into the action Box"),
        "soft_deterministic": ("rlconf.policies.soft_deterministic:SoftDeterministicPolicy",
                               "SAC: reparameterised tanh-squashed Gaussian with log-prob correction"),
    },
}
# How ``rlconf list agent`` groups the agents: by what they play and how they learn. A plugin's agent joins
# the group its ``register(..., group=...)`` names, else "other".
AGENT_GROUPS: dict[str, tuple[str, ...]] = {
    "deep RL, value-based": ("dqn", "ddqn", "c51", "rainbow", "vqn", "vsarsa"),
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
    table = {name: text for name, (_, text) in _BUILTIN.get(kind, {}).items()}
    table.update({name: text for name, (_, text) in _USER[kind].items()})
    return sorted(table.items())


def get(kind: str, name: str) -> Any:
    """The component registered as ``name``; import errors of optional extras propagate to the caller."""
    if name in _USER[kind]:
        return _USER[kind][name][0]
    if name in _BUILTIN.get(kind, {}):
        return import_path(_BUILTIN[kind][name][0])
    raise UnknownComponent(unknown_message(kind, name, names(kind)))


def import_path(path: str) -> Any:
    """``package.module:attribute`` (or ``package.module.attribute``) to the object it names."""
    module, _, attribute = path.partition(":") if ":" in path else path.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


def unknown_message(what: str, value: str, allowed: list[str]) -> str:
    nearest = difflib.get_close_matches(value, allowed, n=1, cutoff=0.5)
    hint = f" (did you mean {nearest[0]!r}?)" if nearest else ""
    return f"unknown {what} {value!r}{hint}; available: {', '.join(allowed)}"


def load_plugins(modules: list[str] | tuple[str, ...] = ()) -> None:
    """Import the modules named in the config and, once, every ``rlconf.plugins`` entry point."""
    global _loaded_entry_points
    if not _loaded_entry_points:
        _loaded_entry_points = True
        for point in entry_points(group="rlconf.plugins"):
            point.load()
    for module in modules:
        importlib.import_module(module)
