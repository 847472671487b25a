"""MAPPO and IPPO (rlconf.agents.team_ppo): their schema and what they declare."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._groups import PerGroup
from rlconf.agents.specs._plays import TEAM_STOCHASTIC
from rlconf.agents.specs._spec import AgentSpec
from rlconf.agents.specs.ppo import PPOConfig


@dataclass(kw_only=True)  # fields without defaults after PPO's: the defaults come with each agent's YAML
class TeamPPOConfig(PerGroup, PPOConfig):
    """PPO's hyperparameters, for each group's learner, and how a team learns: ``centralised_critic`` (MAPPO's
    critic reads the global state; IPPO's the agent's own view), ``share_parameters`` (a group's agents share
    one actor and one critic), ``agent_id`` (shared networks see a one-hot of the agent's index) and ``groups`` (a
    group's own values of any of these)."""

    centralised_critic: bool
    share_parameters: bool
    agent_id: bool


@dataclass
@agent_defaults("mappo")
class MAPPOConfig(TeamPPOConfig):
    pass


@dataclass
@agent_defaults("ippo")
class IPPOConfig(TeamPPOConfig):
    pass


for name, config, description in (
    ("mappo", MAPPOConfig, "MAPPO: PPO for each group of a team, centralised critic on the global state"),
    ("ippo", IPPOConfig, "IPPO: PPO for each group of a team, each agent's critic on its own observation"),
):
    registry.built_in(AgentSpec(name, f"rlconf.agents.team_ppo:{name.upper()}", config, description,
                                plays=TEAM_STOCHASTIC,
                                recurrent="optional"))  # approximation.recurrent=gru: MAPPO's recurrent variant
