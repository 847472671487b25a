"""The registry: the one table from names to components.

Configs name components (``agent.name: dqn``, ``env.family: classic``, ``approximation.model: mlp``); the
registry turns a name into what it is. Agents and environment families are known by their spec
(``rlconf.agents.specs.AgentSpec``, ``rlconf.environments.specs.EnvSpec``): what they are, their class as an
import path, and what they declare they can do, so checking a config (and ``rlconf list``) imports no torch.
Built-in specs and a user's follow one rule: a module registers them with ``register(spec)``; the built-in
ones are the modules of ``_SPEC_MODULES``, a user's are named in the ``plugins`` config key or declared by a
package's ``rlconf.plugins`` entry point. The other kinds (models, bodies, loggers, ...) are import paths here,
and a user's join with the ``register(kind, name)`` decorator.
"""

from __future__ import annotations

import difflib
import importlib
from collections import Counter
from collections.abc import Collection
from importlib.metadata import entry_points
from typing import Any

KINDS = ("agent", "environment", "model", "body", "logger", "buffer", "approximation", "policy", "reward")
SPEC_KINDS = ("agent", "environment")  # the kinds known by their spec, registered with register(spec)

# The modules that register the built-in specs, imported when the registry is first asked about that kind.
_SPEC_MODULES: dict[str, tuple[str, ...]] = {
    "agent": tuple(f"rlconf.agents.specs.{module}" for module in (
        "dqn", "c51", "r2d1", "vqn", "vpg", "vac", "a2c", "ppo", "ddpg", "td3", "sac", "random_agent",
        "independent", "team_ppo", "qmix", "team_actor_critic", "multi_armed", "linear_bandit", "neural_bandit",
        "tabular")),
    "environment": ("rlconf.environments.specs",),
}
# kind -> name -> (import path "module:attribute", one-line description, what it declares). What it declares
# is what checking a config needs to know of a component without importing it (which imports torch): a
# model's settings schema (a class of rlconf.nn.schemas) and whether it is a network for image observations,
# the options a body's constructor takes.
_BUILTIN: dict[str, dict[str, tuple[str, str, dict[str, Any]]]] = {
    "model": {
        "mlp": ("rlconf.nn.builders:MLPSettings", "fully connected layers on the flattened observation",
                {"schema": "MLPConfig", "images_only": False}),
        "nature_cnn": ("rlconf.nn.builders:NatureCNNSettings",
                       "convolutions (Nature DQN's, or approximation.convs) on [C, H, W] frames; dueling, noisy heads",
                       {"schema": "NatureCNNConfig", "images_only": True}),
    },
    "body": {
        "none": ("rlconf.bodies.body:Body", "pass-through: the agent sees the environment's states", {"options": ()}),
        "atari": ("rlconf.bodies.atari:DeepmindAtariBody", "frame stack, reward clipping, episodic lives",
                  {"options": ("frame_stack", "clip_rewards", "episodic_lives")}),
        "time_feature": ("rlconf.bodies.time_feature:TimeFeature",
                         "appends t * scale (steps into the episode) to the observation (MuJoCo)",
                         {"options": ("time_feature_scale",)}),
        "frame_stack": ("rlconf.bodies.stack:StackImageKeys",
                        "stacks the last frames of a Dict or Tuple observation's image keys (others: the newest)",
                        {"options": ("frame_stack", "frame_stack_keys")}),
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
    # How a data bandit's labelled row pays each arm (env.kwargs.reward; rlconf.environments.bandit_rewards)
    "reward": {
        "label": ("rlconf.environments.bandit_rewards:LabelPays", "the arm of the row's label pays 1, every other 0",
                  {}),
        "mushroom": ("rlconf.environments.bandit_rewards:MushroomRewards",
                     "eat (arm 1) an edible one +5, a poisonous one +5 or -35 at even odds; pass (arm 0) 0", {}),
    },
}
# How ``rlconf list agent`` groups the agents: by what they play and how they learn. A plugin's agent joins
# the group its spec names (``AgentSpec.group``), else "other".
AGENT_GROUPS: dict[str, tuple[str, ...]] = {
    "deep RL, value-based": ("dqn", "ddqn", "c51", "rainbow", "r2d1", "vqn", "vsarsa"),
    "deep RL, policy gradient": ("vpg", "vac", "a2c", "ppo"),
    "deep RL, continuous control": ("ddpg", "td3", "sac"),
    "multi-agent": ("independent",),
    "teams": ("mappo", "ippo", "qmix", "vdn", "maddpg", "iddpg", "masac", "isac"),
    "multi-armed bandits": ("epsilon_greedy", "ucb", "bayesian_ucb", "thompson", "gradient_bandit"),
    "contextual bandits": ("linear_posterior", "linucb", "neural_greedy", "neural_linear", "bootstrap_neural",
                           "noise_sampling", "variational"),
    "tabular": ("q_learning", "sarsa_lambda", "dyna_q"),
    "baselines": ("random", "fixed"),
}
_SPECS: dict[str, dict[str, Any]] = {kind: {} for kind in SPEC_KINDS}
_SPECS_LOADED: set[str] = set()
_USER: dict[str, dict[str, tuple[Any, str, dict[str, Any]]]] = {kind: {} for kind in KINDS}
_loaded_entry_points = False


class UnknownComponent(LookupError):
    """A name the registry does not know; the message names the kind, the options and the nearest match."""


def register(kind: Any, name: str = "", description: str = "", **declares: Any) -> Any:
    """``register(spec)``: add an agent's or an environment family's spec (``AgentSpec``, ``EnvSpec``), as
    every built-in one is added (``built_in``); it replaces a built-in one of the same name.
    ``register(kind, name, description, **declares)``: a decorator adding a class of another kind
    (``@register("logger", "mine")``); ``declares``: what checking a config reads of it (a model's
    ``images_only``)."""
    if not isinstance(kind, str):
        return _add_spec(kind)
    if kind in SPEC_KINDS:
        raise TypeError(f"an {kind} is registered by its spec: rlconf.register(AgentSpec(...)) or "
                        "rlconf.register(EnvSpec(...)) (see the README's 'Adding your own agent')")
    if kind not in KINDS:
        raise ValueError(f"unknown registry kind {kind!r}; allowed: {', '.join(KINDS)}")

    def add(obj):
        lines = (obj.__doc__ or "").strip().splitlines()
        _USER[kind][name] = (obj, description or (lines[0] if lines else ""), declares)
        return obj

    return add


def built_in(spec: Any) -> Any:
    """How a module of ``_SPEC_MODULES`` adds its specs: as ``register(spec)``, but without importing the other
    built-in spec modules first. Those import one another (team PPO's spec extends PPO's), so a module imported on
    its own (``from rlconf.agents.ppo import PPO``) would otherwise import the rest halfway through itself."""
    return _add_spec(spec, builtin=True)


def _add_spec(spec: Any, builtin: bool = False) -> Any:
    kind = getattr(type(spec), "registry_kind", None)
    if kind not in SPEC_KINDS:
        raise TypeError(f"register({spec!r}): not a spec; allowed: an AgentSpec or an EnvSpec, or "
                        "register(kind, name) as a decorator")
    if not builtin:
        _load_builtin_specs(kind)  # first, so that a user's spec replaces a built-in one of its name
    _SPECS[kind][spec.name] = spec
    return spec


def _load_builtin_specs(kind: str) -> None:
    if kind not in _SPECS_LOADED:
        _SPECS_LOADED.add(kind)
        for module in _SPEC_MODULES[kind]:
            importlib.import_module(module)


def specs(kind: str) -> dict[str, Any]:
    """Every registered spec of ``kind`` (agent, environment) by name."""
    _load_builtin_specs(kind)
    return dict(_SPECS[kind])


def agent_group(name: str) -> str:
    """The heading ``rlconf list agent`` shows the agent ``name`` under: its spec's group where a user's spec
    names one, else its place in AGENT_GROUPS, else "other"."""
    spec = _SPECS["agent"].get(name)
    if spec is not None and spec.group:
        return spec.group
    return next((group for group, members in AGENT_GROUPS.items() if name in members), "other")


def names(kind: str) -> list[str]:
    if kind in SPEC_KINDS:
        return sorted(specs(kind))
    return sorted({*_BUILTIN.get(kind, {}), *_USER[kind]})


def describe(kind: str) -> list[tuple[str, str]]:
    if kind in SPEC_KINDS:
        return sorted((name, spec.description) for name, spec in specs(kind).items())
    table = {name: text for name, (_, text, _) in _BUILTIN.get(kind, {}).items()}
    table.update({name: text for name, (_, text, _) in _USER[kind].items()})
    return sorted(table.items())


def spec(kind: str, name: str) -> Any:
    """The spec of the agent or environment family ``name``, imported without the component (nor torch)."""
    found = specs(kind).get(name)
    if found is None:
        raise UnknownComponent(_unknown(kind, name))
    return found


def agent_spec(name: str, target: str | None = None) -> Any:
    """The ``AgentSpec`` of the agent ``name``; with ``target`` (``agent._target_``, an agent's class as an
    import path), the spec registered for that class, which importing its module registers."""
    if target is None:
        return spec("agent", name)
    module, _, attribute = target.partition(":") if ":" in target else target.rpartition(".")
    importlib.import_module(module)  # a user's module registers its specs as it is imported
    for found in specs("agent").values():
        if found.class_path.replace(":", ".") == f"{module}.{attribute}":
            return found
    raise UnknownComponent(f"no AgentSpec names the class {target} (register one: rlconf.register(AgentSpec(...)))")


def env_spec(family: str) -> Any:
    """The ``EnvSpec`` of the environment family ``family``."""
    return spec("environment", family)


def get(kind: str, name: str) -> Any:
    """The component registered as ``name`` (an agent's or environment's class, imported from its spec);
    import errors of optional extras propagate to the caller."""
    if kind in SPEC_KINDS:
        return import_path(spec(kind, name).class_path)
    if name in _USER[kind]:
        return _USER[kind][name][0]
    if name in _BUILTIN.get(kind, {}):
        return import_path(_BUILTIN[kind][name][0])
    raise UnknownComponent(_unknown(kind, name))


def _unknown(kind: str, name: str) -> str:
    see = "rlconf list agent" if kind == "agent" else "rlconf list components"
    return unknown_message(kind, name, names(kind), see)


def declared(kind: str, name: str, what: str, default: Any = None) -> Any:
    """What the component ``name`` of a kind without specs declares (a model's ``images_only``, a body's
    ``options``): a built-in one's from its entry, a user's from its ``register(...)``; ``default`` where it
    declares nothing."""
    if name in _USER[kind]:
        return _USER[kind][name][2].get(what, default)
    if name in _BUILTIN.get(kind, {}):
        return _BUILTIN[kind][name][2].get(what, default)
    raise UnknownComponent(_unknown(kind, name))


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
    **dict.fromkeys(("num_steps", "n_rollout_steps", "rollout_length", "nsteps", "n_step", "multi_step",
                     "n_step_return"), ("n_steps", "agent.n_steps")),
    **dict.fromkeys(("reward_scaling", "reward_scale_factor", "scale_reward"), ("reward_scale",)),
    **dict.fromkeys(("eps_final_min", "vector_epsilon", "per_actor_epsilon", "apex_epsilon"), ("epsilon_per_copy",)),
    **dict.fromkeys(("noise_type", "action_noise_type", "ou_noise"), ("noise_process",)),
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
    by_leaf: dict[str, list[str]] = {}  # compared in lower case: agent=DQN is dqn
    for name in candidates:
        by_leaf.setdefault((name.rpartition(sep)[2] if family or sep == "/" else name).lower(), []).append(name)
    leaf = leaf.lower()
    near = difflib.get_close_matches(leaf, list(by_leaf), n=n, cutoff=0.6)
    near = near[:1] + [name for name in near[1:] if difflib.SequenceMatcher(None, leaf, name).ratio() >= 0.7]
    return [name for match in near for name in by_leaf[match]][:n]


def _did_you_mean(names: list[str]) -> str:
    if not names:
        return ""
    quoted = [repr(name) for name in names]
    return f" (did you mean {', '.join(quoted[:-1]) + ' or ' if len(quoted) > 1 else ''}{quoted[-1]}?)"


def aliases(key: str, allowed: Collection[str], known: Collection[str] | None = None) -> list[str]:
    """The keys ``key`` may mean by ``KEY_ALIASES`` that exist, at most two; for a top-level key that is none,
    the keys of that name (or of its aliases) one level down (hidden: approximation.hidden, lr: agent.lr)."""
    parent, _, leaf = key.rpartition(".")
    found: list[str] = []
    for name in KEY_ALIASES.get(leaf, ()):
        beside = f"{parent}.{name}" if parent and "." not in name else name
        if "." not in name and beside in allowed:
            found.append(beside)
        elif name != key and (name in known if known is not None else "." in name):
            found.append(name)
    if not found and not parent and known is not None:  # gamma: agent.discount_factor
        for meant in (key, *(name for name in KEY_ALIASES.get(key, ()) if "." not in name)):
            found += sorted(name for name in known if name.count(".") == 1 and name.endswith("." + meant))
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
    if folders:  # the largest folders first, as many as fit
        ranked = [f"{folder}/ ({n})" for folder, n in sorted(folders.items(), key=lambda item: (-item[1], item[0]))]
        shown = ranked[:1]
        for part in ranked[1:]:
            rest = len(ranked) - len(shown) - 1
            tail = f" and {rest} more folders" if rest else ""
            if len(f"{count} in {', '.join([*shown, part])}{tail}{where}") > room:
                break
            shown.append(part)
        rest = len(ranked) - len(shown)
        return f"{count} in {', '.join(shown)}" + (f" and {rest} more folders" if rest else "") + where
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
