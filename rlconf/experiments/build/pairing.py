"""Which agents can play which environments: every refusal of an agent and environment pairing, one place.

An environment declares its kind (``Environment.kind``), an agent's spec what it plays (``AgentSpec.plays``:
kinds of environment and of action space, and whether it reads Dict and Tuple observations); ``compatible``
compares the two before anything is built.
"""

from __future__ import annotations

from rlconf.agents import AgentSpec, Plays
from rlconf.core import EnvKind
from rlconf.environments.base import Environment


def compatible(spec: AgentSpec, env: Environment, agent: str) -> str | None:
    """None when the agent of ``spec`` (``agent``, as the config names it) can play ``env``; else the one line
    saying why not, and what is allowed."""
    declared = spec.plays
    if env.kind not in declared.kinds:
        return _kind_refusal(declared, env, agent)
    if env.kind is EnvKind.TEAM:  # each group's agents act in their group's space
        return next((_team_actions_refusal(declared, env, agent, name, group.action_space)
                     for name, group in env.agent_groups.items() if declared.refuses_actions(group.action_space)),
                    None)
    if env.kind is not EnvKind.MULTI_AGENT and declared.refuses_actions(env.action_space):
        return declared.actions_refusal(agent, env.action_space)
    if env.kind is not EnvKind.MULTI_AGENT and declared.refuses_observations(env.observation_space):
        return declared.observations_refusal(agent, env.observation_space)
    return None  # a multi-agent game's players' spaces are each player's agent's to check as it is built


def check_observations(env: Environment, approximation: dict) -> None:
    """A ConfigError, one line, for ``approximation.encoders`` that name keys the env's observations lack, or
    that cannot read theirs (``rlconf.nn.encoders.check_encoders``): the env's space is first known here."""
    from rlconf.nn.encoders import check_encoders  # torch: imported here, so that rlconf check-env reads a plain
    # environment's pairings without it

    check_encoders(env.observation_space, approximation)


def _team_actions_refusal(declared: Plays, env: Environment, agent: str, group: str, space) -> str:
    """The one line refusing a team agent the action space of ``group``: where the env can switch between
    discrete and continuous actions (``action_kind_option``, VMAS's), that switch is the fix."""
    option = env.action_kind_option
    if option is None:
        return f"{declared.actions_refusal(agent, space)} (group {group} of env={env.name})"
    switch = "true" if "box" in declared.actions else "false"
    return f"{declared.actions_needed(agent, space)} (group {group} of env={env.name}); allowed: {option}={switch}"


def _kind_refusal(declared: Plays, env: Environment, agent: str) -> str:
    if env.kind is EnvKind.TEAM:
        return (f"agent={agent}: env={env.name} is a team of agents acting at once; allowed: a team agent, "
                "agent=mappo or agent=ippo (rlconf list agent)")
    if EnvKind.TEAM in declared.kinds:
        return (f"agent={agent}: trains teams of agents acting at once, not env={env.name}; allowed: "
                "env=vmas/<scenario> or env=mpe/<task> (rlconf list env)")
    if env.kind is EnvKind.MULTI_AGENT:
        return (f"agent={agent}: env={env.name} is a multi-agent env; train one {agent} per player with "
                f"agent=independent agent.base={agent}")
    if declared.multiagent:
        return (f"agent={agent}: plays multi-agent environments, not env={env.name}; "
                "allowed: env=pettingzoo/<game> (rlconf list env)")
    if env.kind is EnvKind.BANDIT:
        return (f"agent={agent}: learns from episodes of many steps; env={env.name} is a bandit (one pull per "
                "episode); allowed: a bandit agent (rlconf list agent) or agent=random")
    return f"agent={agent}: plays bandits, not env={env.name}; allowed: env=bandit/<problem> (rlconf list env)"
