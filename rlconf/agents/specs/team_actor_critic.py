"""MADDPG and IDDPG, MASAC and ISAC (rlconf.agents.maddpg, rlconf.agents.masac): their schema and what they
declare."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._groups import PerGroup
from rlconf.agents.specs._off_policy import refuse_single_agent_options
from rlconf.agents.specs._plays import TEAM_CONTINUOUS
from rlconf.agents.specs._spec import AgentSpec
from rlconf.agents.specs.ddpg import DDPGConfig
from rlconf.agents.specs.sac import SACConfig
from rlconf.errors import require


@dataclass(kw_only=True)  # fields without defaults beside DDPG's and SAC's: each agent's YAML gives them
class TeamActorCritic(PerGroup):
    """How a team learns with an off-policy actor-critic: ``centralised_critic`` (the critics read the global
    state and every agent's action; else the agent's own view and action), ``share_parameters`` (a group's agents
    share their networks), ``agent_id`` (shared networks see a one-hot of the agent's index), ``clip_grad`` and
    ``bootstrap_time_limits``; ``groups``: a group's own values of any of its settings but the team's cadence."""

    centralised_critic: bool
    share_parameters: bool
    agent_id: bool
    clip_grad: float
    bootstrap_time_limits: bool
    TEAM_WIDE = ("replay_start_size", "update_frequency", "gradient_steps")

    def __post_init__(self):
        super().__post_init__()  # the groups', then DDPG's or SAC's checks, after this class in the MRO
        refuse_single_agent_options(self)
        require(self.clip_grad >= 0, "agent.clip_grad", self.clip_grad, "must be non-negative (0: no clipping)")


@dataclass
@agent_defaults("maddpg")
class MADDPGConfig(TeamActorCritic, DDPGConfig):
    noise_final: float | None
    noise_decay_steps: int
    target_policy: bool

    def __post_init__(self):
        super().__post_init__()
        require(self.noise_final is None or self.noise_final >= 0, "agent.noise_final", self.noise_final,
                "must be non-negative, or null (constant noise)")
        require(self.noise_decay_steps >= 1, "agent.noise_decay_steps", self.noise_decay_steps, "must be at least 1")


@dataclass
@agent_defaults("iddpg")
class IDDPGConfig(MADDPGConfig):
    pass


@dataclass
@agent_defaults("masac")
class MASACConfig(TeamActorCritic, SACConfig):
    pass


@dataclass
@agent_defaults("isac")
class ISACConfig(MASACConfig):
    pass


for name, module, config, description in (
    ("maddpg", "maddpg", MADDPGConfig, "MADDPG: DDPG for each group of a team, centralised critic on the state "
                                       "and every agent's action"),
    ("iddpg", "maddpg", IDDPGConfig, "IDDPG: DDPG for each group of a team, each agent's critic on its own view"),
    ("masac", "masac", MASACConfig, "MASAC: SAC for each group of a team, centralised twin critics on the state "
                                    "and every agent's action"),
    ("isac", "masac", ISACConfig, "ISAC: SAC for each group of a team, each agent's critics on its own view"),
):
    registry.built_in(AgentSpec(name, f"rlconf.agents.{module}:{name.upper()}", config, description,
                                plays=TEAM_CONTINUOUS))
