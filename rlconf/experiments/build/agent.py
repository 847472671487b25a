"""The run's agent, built for the spaces its body shows it, wrapped in that body; the refusals of hardware
choices (learners, runner, sampler) that the capabilities its spec declares decide (``AgentSpec``)."""

from __future__ import annotations

import inspect
from dataclasses import replace

import numpy as np
import torch

from rlconf import distributed, registry
from rlconf.agents import AgentSpec, BuildContext, Multiagent, MultiagentBuildContext, ParallelAgent, SingleEnvAgent
from rlconf.bodies import NormalizeObservations, NormalizeRewards, RunningMeanStd, body_options, observation_statistics
from rlconf.config import Settings
from rlconf.core import EnvKind
from rlconf.errors import ConfigError
from rlconf.experiments.build.pairing import check_observations, compatible
from rlconf.logging import ScopedLogger


def build_agent(settings: Settings, env, logger) -> ParallelAgent | Multiagent:
    """The agent, built for what it will see through its body, wrapped in that body (and, outside it, in
    reward and observation normalisation: ``body.normalize_rewards``, ``body.normalize_observations``). In a
    multi-agent environment, the multi-agent agent, whose players' agents are each built and wrapped so. An
    agent that cannot play ``env`` (``pairing.compatible``) is one line, before anything is built."""
    refusal = compatible(settings.agent_spec, env, settings.agent_name)
    if refusal is not None:
        raise ConfigError(refusal)
    if env.kind is EnvKind.MULTI_AGENT:
        return build_multiagent(settings, env, logger)
    if env.kind is EnvKind.TEAM:
        return build_team(settings, env, logger)
    check_observations(env, settings.approximation)
    learners = settings.hardware.learners
    context = BuildContext(
        observation_space=env.observation_space, action_space=env.action_space, n_envs=settings.hardware.n_envs,
        device=torch.device(settings.hardware.device), total_steps=max(1, settings.run.steps // learners),
        approximation=settings.approximation, logger=logger, seed=learner_seed(settings.run.seed),
        reward_range=env.reward_range, learners=learners)
    return embodied_agent(settings, settings.agent_spec, settings.agent, context, settings.agent_name)


def learner_seed(seed: int) -> int:
    """The seed of this learner's agent (its exploration, replay draws): the run's for the first learner (and a
    run of one), one drawn from it and the rank for the others."""
    rank = distributed.rank()
    return seed if rank == 0 else int(np.random.SeedSequence([seed, rank]).generate_state(1)[0])


def embodied_agent(settings: Settings, spec: AgentSpec, config, context: BuildContext, name: str) -> ParallelAgent:
    """The agent of ``spec`` (its class imported now) with ``config``, built for the observations of
    ``context`` as the run's body transforms them, inside its own body instance. ``name``: the agent, as error
    messages call it."""
    body_class = registry.get("body", settings.body.name)
    options = body_options(body_class, settings.body)
    env_space = space = context.observation_space
    if settings.body.normalize_observations:
        space = _transformed(NormalizeObservations, space, {}, "body.normalize_observations=true")
    context = replace(context, observation_space=_transformed(body_class, space, options, f"body={settings.body.name}"))
    agent = registry.import_path(spec.class_path).from_config(config, context)
    if not isinstance(agent, ParallelAgent):  # an Agent written for one State
        if context.n_envs != 1:
            raise ConfigError(f"hardware.n_envs={context.n_envs}: agent {name} acts on one state at a time; "
                              "allowed: 1")
        agent = SingleEnvAgent(agent)
    if "observation_space" in inspect.signature(body_class).parameters:  # a body that unpacks rows (stack.py)
        options = {**options, "observation_space": space}
    body = body_class(agent, **options)
    if settings.body.normalize_rewards:
        body = NormalizeRewards(body, RunningMeanStd((), settings.hardware.device), spec.discount(config))
    if settings.body.normalize_observations:
        body = NormalizeObservations(body, observation_statistics(env_space, settings.hardware.device))
    return body


def build_multiagent(settings: Settings, env, logger) -> Multiagent:
    """The multi-agent agent (``agent=independent``): each player's agent is built like a single-agent run's
    (``embodied_agent``), for that player's spaces, on one game (n_envs 1), with a budget of the player's share
    of the turns, a seed of its own, and a logger that names it (``loss/q/player_1``)."""
    players = list(env.agents)

    def build(player: str, spec: AgentSpec, config, shared: dict | None) -> ParallelAgent:
        index = players.index(player)
        context = BuildContext(
            observation_space=env.observation_spaces[player], action_space=env.action_spaces[player], n_envs=1,
            device=torch.device(settings.hardware.device), total_steps=max(1, settings.run.steps // len(players)),
            approximation=settings.approximation, logger=ScopedLogger(logger, player),
            seed=int(np.random.SeedSequence([settings.run.seed, index]).generate_state(1)[0]), shared=shared)
        agent = registry.import_path(spec.class_path).__name__
        return embodied_agent(settings, spec, config, context, f"{agent} of {player}")

    context = MultiagentBuildContext(players, dict(env.observation_spaces), dict(env.action_spaces), build)
    return settings.agent_class.from_config(settings.agent, context)


def build_team(settings: Settings, env, logger):
    """A team agent (``agent=mappo``...): its learners are built for the groups of ``env`` (``agent_groups``)."""
    from rlconf.agents._team import TeamBuildContext

    check_group_names = getattr(settings.agent, "check_group_names", None)  # agent.groups (a plugin's may lack it)
    if check_group_names is not None:
        check_group_names(env.agent_groups, settings.env.name)
    context = TeamBuildContext(groups=dict(env.agent_groups), n_envs=settings.hardware.n_envs,
                               device=torch.device(settings.hardware.device), total_steps=settings.run.steps,
                               approximation=settings.approximation, seed=settings.run.seed,
                               logger_of=lambda name: ScopedLogger(logger, name))  # loss/policy/<group>
    return settings.agent_class.from_config(settings.agent, context)


def _transformed(body_class, space, options: dict, choice: str):
    """The space ``body_class`` makes of ``space``; observations it cannot handle (a time feature for
    frames, normalisation of uint8) are the user's choice of body, so a ConfigError naming it."""
    try:
        return body_class.transform_space(space, **options)
    except TypeError as error:
        raise ConfigError(f"{choice}: {error}") from None
