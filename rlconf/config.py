"""Typed settings for a composed run config, and the checks that turn bad input into one clear line.

Hydra composes YAML into a DictConfig (``compose``, as ``rlconf run`` does); ``validate`` checks every group
against a dataclass schema (the top-level keys and the env, hardware, body and logger groups here; the agent's
and the model's schemas come from the registry) before anything is built. Any problem raises ``ConfigError``
whose message names the key, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rlconf import registry
from rlconf.core import EnvKind
from rlconf.cost import check_costs
from rlconf.environments.registered import check_env, require_env_id
from rlconf.errors import ConfigError, require
from rlconf.optim.choice import OPTIMIZATION_KEYS, OptimizationConfig, check_with_agent
from rlconf.paths import config_dir, searchpath
from rlconf.schema import check, config_keys
from rlconf.settings import (
    GROUP_SCHEMAS,
    TOP_LEVEL_GROUPS,
    VELOCITY_COMPONENTS,
    BodySettings,
    EnvSettings,
    RunSettings,
    Settings,
    check_logger,
)


def check_pairing(env: EnvSettings, body: BodySettings, model_schema: type, model: str) -> None:
    """The env's observations fit the network chosen for them, and its games have the lives the body counts
    (said before anything is built, instead of a shape error or a KeyError mid-run). What each component
    declares is read from the registry (the env family's spec, the model's and body's entries), importing none
    of the built-in ones."""
    images = registry.env_spec(env.family).image_observations
    if registry.declared("model", model, "images_only", False) and not images:
        allowed = [n for n in registry.names("model") if not registry.declared("model", n, "images_only", False)]
        raise ConfigError(f"approximation.model={model}: a network for image observations (frames); env={env.name} "
                          f"has vector observations; allowed: {', '.join(allowed)}")
    options = registry.declared("body", body.name, "options")
    if options is None:  # a plugin's body: the options its constructor takes
        from rlconf.bodies import body_options

        options = body_options(registry.get("body", body.name), {"episodic_lives": True})
    if body.episodic_lives and "episodic_lives" in options and not registry.env_spec(env.family).lives:
        raise ConfigError(f"body={body.name}: its episodic lives need a game with lives (Atari); env={env.name} has "
                          "none: add body.episodic_lives=false, or choose body=none")


def check_memory(agent_name: str, agent: Any, recurrent: str, spec: Any) -> None:
    """An agent takes a recurrent core (``approximation.recurrent``) only if its spec declares it can
    (``recurrent``: never, optional, required, or ignored by one that builds no network); a multi-agent run's
    players are its agents (agent.base, agent.players). ``spec``: the run's agent's ``AgentSpec``."""
    players = [agent.base, *agent.players.values()] if spec.plays.multiagent else [agent_name]
    for name in players:
        support = (spec if name == agent_name else registry.agent_spec(name)).recurrent
        if recurrent != "none" and support == "never":
            able = [n for n in registry.names("agent") if registry.agent_spec(n).recurrent in ("optional", "required")]
            raise ConfigError(f"approximation.recurrent={recurrent}: agent={name} has no memory; allowed with "
                              f"{', '.join(able)} (or approximation.recurrent=none)")
        if recurrent == "none" and support == "required":
            raise ConfigError(f"agent={name} learns with memory: approximation.recurrent=none; allowed: lstm, gru")


def with_masked_components(body: BodySettings, env: EnvSettings) -> BodySettings:
    """``body.masked`` resolved: for body=mask_velocity without a list, the env's velocities, or one line
    naming what to write when the env is not in VELOCITY_COMPONENTS."""
    if body.name != "mask_velocity":
        return body
    if registry.env_spec(env.family).image_observations:
        raise ConfigError(f"body=mask_velocity: hides components of vector observations; env={env.name} has frames "
                          "(memory on Atari: body=atari body.frame_stack=1)")
    if body.masked is not None:
        return body
    if env.id not in VELOCITY_COMPONENTS:
        raise ConfigError(f"body=mask_velocity: which components of {env.id}'s observations are velocities is not "
                          "known; name them, e.g. body.masked=[1,3] (known: classic control, HalfCheetah, Hopper, "
                          "Walker2d)")
    return dataclasses.replace(body, masked=list(VELOCITY_COMPONENTS[env.id]))


def check_interpolations(cfg: DictConfig) -> None:
    """Every interpolation of ``cfg`` resolves (``${oc.env:VAR}``, ``${key}``), or a ConfigError naming the key,
    what was written and why it does not resolve."""
    try:
        OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as error:
        key = str(getattr(error, "full_key", "") or "")
        written = _written(cfg, key)
        reason = " ".join(str(error).splitlines()[0].split())
        raise ConfigError(f"{key}={written}: does not resolve ({reason})") from None


def _written(cfg: DictConfig, key: str) -> str:
    """The value of ``key`` as written (an interpolation unresolved), for messages."""
    node: Any = OmegaConf.to_container(cfg, resolve=False)
    for part in key.split(".") if key else []:
        node = node.get(part) if isinstance(node, dict) else None
    return str(node)


# Groups whose files set keys anywhere in the config (their first line: ``# @package _global_``). A file of one
# written without that line has its settings put under the group's name, where they would be refused as an
# unknown key that does not say why.
GLOBAL_GROUPS = ("launcher", "experiment", "sweep", "preset")


def check_global_groups(top: dict[str, Any]) -> None:
    """A ConfigError for a file of a global group that lacks its package line."""
    for group in GLOBAL_GROUPS:
        if group in top:
            article = "an" if group[0] in "aeiou" else "a"
            raise ConfigError(f"{article} {group}= file put its settings under '{group}:': its first line must be "
                              f"'# @package _global_', as every shipped {group} file's is")


def validate(cfg: DictConfig) -> Settings:
    """Check a composed config from top to bottom; the first problem raises ConfigError."""
    check_interpolations(cfg)
    known = config_keys(cfg)
    picks = (OmegaConf.select(cfg, f"{group}.name", default=None) or "..." for group in ("agent", "env"))
    see = "rlconf run agent={} env={} --cfg job".format(*picks)
    top = {k: v for k, v in cfg.items() if k not in TOP_LEVEL_GROUPS}
    check_global_groups(top)
    run = check(RunSettings, OmegaConf.create(top), see=see, known=known)
    try:
        registry.load_plugins(run.plugins)
    except ImportError as error:  # a misspelt module or one off the path: the user's input, not a crash
        raise ConfigError(f"plugins={run.plugins}: {error} (is its folder on PYTHONPATH?)") from None
    require_env_id(cfg)
    groups = {name: check(schema, cfg.get(name) or {}, f"{name}.", see, known)
              for name, schema in GROUP_SCHEMAS.items()}
    groups["logger"] = check_logger(cfg.get("logger") or {})
    check_env(groups["env"], run.plugins)  # its gymnasium id and wrappers, the plugins imported: nothing built

    agent_node = OmegaConf.to_container(cfg.agent, resolve=True)
    agent_name = agent_node.pop("name", None)
    target = agent_node.pop("_target_", None)
    spec = agent_spec(agent_name, target, run.plugins)
    agent_name = agent_name or target.replace(":", ".").rpartition(".")[2].lower()
    agent = check(spec.config, agent_node, "agent.", see, known)

    approximation = OmegaConf.to_container(cfg.get("approximation") or {}, resolve=True)
    optimization = {key: approximation.pop(key) for key in OPTIMIZATION_KEYS if key in approximation}
    optimization = {key: value for key, value in optimization.items() if value is not None}  # null: the default
    optimization = check(OptimizationConfig, optimization, "approximation.", see, known)
    check_with_agent(optimization, agent, agent_name)
    model = approximation.get("model", "mlp")
    try:
        model_schema = registry.model_schema(model)
    except registry.UnknownComponent as error:
        raise ConfigError(f"approximation.model: {error}") from None
    check_pairing(groups["env"], groups["body"], model_schema, model)
    groups["body"] = with_masked_components(groups["body"], groups["env"])
    approximation = dataclasses.asdict(check(model_schema, approximation, "approximation."))
    approximation.update(dataclasses.asdict(optimization))  # the network's keys, then the optimiser's
    check_memory(agent_name, agent, approximation.get("recurrent", "none"), spec)
    groups["env"] = named_for_its_id(groups["env"])
    settings = Settings(run=run, agent_name=agent_name, agent=agent, approximation=approximation,
                        agent_target=target, **groups)
    check_hardware(settings)
    check_costs(settings)  # what the settings would cost this machine, before anything is built
    return settings


def agent_spec(name: str | None, target: str | None, plugins: list[str] | None = None) -> Any:
    """The spec of the agent a config names: by ``name`` (``agent=dqn``), or by its class (``agent._target_``),
    whose module registers it as it is imported, as every plugin module does. A name or class the registry does
    not know is one line (with no ``plugins`` given, one that says how an agent of one's own is found)."""
    require(name is not None or bool(target), "agent", None, "the agent config needs a 'name' (or a '_target_')")
    if not target:
        try:
            return registry.agent_spec(name)
        except registry.UnknownComponent as error:
            # A config that names an agent nobody registered: most often an agent of one's own, whose module
            # registers it only when plugins=[...] imports it.
            # The registry's first part keeps its suggestion of a near name (a typo is as likely).
            unknown = str(error).split(";")[0]
            raise ConfigError(f"agent.name: {unknown}: an agent of your own is registered when its module is "
                              "imported: add plugins=[MODULE] (its folder on PYTHONPATH); the built-in ones: "
                              "rlconf list agent" if not plugins else f"agent.name: {error}") from None
    try:
        return registry.agent_spec(name, target)
    except (ImportError, ValueError) as error:  # ValueError: an empty module name
        raise ConfigError(f"agent._target_={target}: cannot import it: {error}") from None
    except registry.UnknownComponent:
        raise ConfigError(f"agent._target_={target}: not an agent class (no AgentSpec names it: register one, "
                          "rlconf.register(AgentSpec(...)); see rlconf list components)") from None


def named_for_its_id(env: EnvSettings) -> EnvSettings:
    """``env`` named after the simulator it runs. ``env=classic/cartpole env.id=Acrobot-v1`` trains Acrobot: its
    run directory, summary.json's ``env`` and the plots that group runs by it must not say cartpole, so where
    ``env.id`` differs from the id of the shipped config ``env.name`` names, the name becomes
    ``<family>/<id>`` (``classic/Acrobot-v1``: directory ``dqn_classic-Acrobot-v1_...``). A name given with
    the id (``env.name=classic/my_acrobot``) names no shipped config and is kept."""
    if not re.fullmatch(r"[\w-]+(/[\w-]+)*", env.name):
        return env
    path = config_dir() / "env" / f"{env.name}.yaml"
    if not path.is_file():
        return env
    import yaml

    try:
        shipped = ((yaml.safe_load(path.read_text()) or {}).get("env") or {}).get("id")
    except (OSError, yaml.YAMLError, AttributeError):  # unreadable, or not a mapping: nothing to say
        return env
    if shipped is None or shipped == env.id:
        return env
    # A config that leaves the id to the command line (env=gym: id ???) names the run after itself: gym/<id>.
    return dataclasses.replace(env, name=f"{env.name if shipped == '???' else env.family}/{env.id}")


# -- composing a run's config: the same YAML groups ``rlconf run`` reads ----------------------------------
def searchpath_override(extra: list[str]) -> str:
    """The Hydra override that puts ``searchpath(extra)`` on the search path of a composition."""
    return f"hydra.searchpath=[{','.join('file://' + str(d) for d in searchpath(extra))}]"


def compose(overrides: list[str], config_dirs: list[str], hydra_config: bool = False) -> DictConfig:
    """The config ``rlconf run`` composes from ``overrides``, the user's ``config_dirs`` on the search path;
    ``hydra_config``: with its ``hydra`` node (what the launcher's checks read)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(config_dir()), version_base=None):
        return hydra_compose(config_name="config", overrides=[*overrides, searchpath_override(config_dirs)],
                             return_hydra_config=hydra_config)


# What the hardware choices ask of the agent and the environment (hardware.learners, hardware.runner,
# hardware.sampler, logger.video_every): read from their specs, so checked with everything else, before any
# process starts or any directory is made.


def check_hardware(settings: Settings) -> None:
    """Refuse, in one line, a hardware choice that the run's agent or environment cannot take."""
    check_learners(settings)
    check_runner(settings)
    check_sampler(settings)
    check_videos(settings)
    check_team_body(settings)


def _env_kind(settings: Settings) -> EnvKind:
    return registry.env_spec(settings.env.family).kind


def require_capability(settings: Settings, capability: str, choice: str, why: str, instead: str) -> None:
    """Refuse ``choice`` in one line unless the run's agent's spec declares ``capability`` (``data_parallel``,
    ``runs_async``, ``alternates``: a field of every AgentSpec): why it cannot, and what can instead (the
    agents that declare it)."""
    if getattr(settings.agent_spec, capability):
        return
    able = sorted(name for name, spec in registry.specs("agent").items() if getattr(spec, capability))
    raise ConfigError(f"{choice}: agent={settings.agent_name} {why}; allowed: {instead}, or agent={', '.join(able)}")


def check_learners(settings: Settings) -> None:
    """Refuse, in one line and before any learner starts, several learners (``hardware.learners``) for what
    they cannot train together: every learner must make its optimiser steps at the same moments."""
    learners = settings.hardware.learners
    if learners == 1:
        return
    if settings.run.episodes is not None:
        raise ConfigError(f"episodes={settings.run.episodes}: hardware.learners={learners} step together by steps, "
                          "each counting only its own episodes; allowed: episodes=null (the steps budget alone), or "
                          "hardware.learners=1")
    if _env_kind(settings) is not EnvKind.SINGLE_AGENT:
        raise ConfigError(f"hardware.learners={learners}: {_env_kind(settings).value} environments "
                          f"(env={settings.env.name}) are played by one process; allowed: hardware.learners=1")
    require_capability(settings, "data_parallel", f"hardware.learners={learners}",
                       "decides when to update from what its data holds, so learners would not step together",
                       "hardware.learners=1")
    recurrent = settings.approximation.get("recurrent", "none") != "none"
    if recurrent and not settings.agent_spec.data_parallel_recurrent:
        raise ConfigError(f"hardware.learners={learners}: agent={settings.agent_name} with a recurrent core skips "
                          "minibatches that hold no transition, so learners would not step together; allowed: "
                          "hardware.learners=1, or approximation.recurrent=none")


def check_runner(settings: Settings) -> None:
    """Refuse, in one line, the async runner (``hardware.runner=async``) for what it cannot split into an acting
    and a learning process."""
    if settings.hardware.runner == "sync":
        return
    require_capability(settings, "runs_async", "hardware.runner=async", "acts and learns in one process",
                       "hardware.runner=sync")
    refusal = settings.agent_spec.async_refusal(settings.agent)  # what this config of it cannot split
    if refusal is not None:
        raise ConfigError(f"hardware.runner=async: {refusal}")
    if settings.body.normalize_observations:
        raise ConfigError("hardware.runner=async: body.normalize_observations=true: the statistics are learned where "
                          "observations are seen, in the acting process, and evaluations run in the learning one; "
                          "allowed: body.normalize_observations=false")


def check_sampler(settings: Settings) -> None:
    """Refuse, in one line, the alternating sampler for an agent that acts on all its environments at once."""
    if settings.hardware.sampler != "alternating":
        return
    require_capability(settings, "alternates", "hardware.sampler=alternating", "acts on all its environments at once",
                       "hardware.sampler=serial or parallel")
    if settings.hardware.learners > 1:
        raise ConfigError(f"hardware.sampler=alternating: hardware.learners={settings.hardware.learners} count their "
                          "steps one step of all their environments at a time; allowed: hardware.sampler=parallel")


def check_team_body(settings: Settings) -> None:
    """Refuse, in one line, a body for a team: its agents read their groups' states as the environment gives
    them (no body wraps a team agent), so a body or its normalisation would silently do nothing."""
    if _env_kind(settings) is not EnvKind.TEAM:
        return
    body = settings.body
    chosen = [f"body={body.name}"] if body.name != "none" else []
    chosen += [f"body.{key}=true" for key in ("normalize_observations", "normalize_rewards") if getattr(body, key)]
    if chosen:
        raise ConfigError(f"{', '.join(chosen)}: env={settings.env.name} is a team environment, whose agents read "
                          "their groups' states as it gives them; allowed: body=none, without normalisation")


def check_videos(settings: Settings) -> None:
    """Refuse, in one line, videos (``logger.video_every``) of what has no single greedy episode to film."""
    kind = _env_kind(settings)
    if settings.logger.video_every and kind is not EnvKind.SINGLE_AGENT:
        raise ConfigError(f"logger.video_every={settings.logger.video_every}: env={settings.env.name} is a "
                          f"{kind.value} environment; videos are of single-agent episodes; allowed: "
                          "logger.video_every=0")
