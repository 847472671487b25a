"""Agents: one file per algorithm, each readable top to bottom."""

from rlconf.agents._agent import (
    Agent,
    AgentWrapper,
    BuildContext,
    ParallelAgent,
    ReplayLearner,
    SingleEnvAgent,
    TestAgent,
)
from rlconf.agents._multiagent import Match, Multiagent, MultiagentBuildContext, MultiagentTestAgent
from rlconf.agents._policy_gradient import PolicyGradient, PolicyGradientTestAgent
from rlconf.agents.a2c import A2C
from rlconf.agents.ddpg import DDPG, DDPGTestAgent
from rlconf.agents.dqn import DQN, DQNTestAgent
from rlconf.agents.independent import IndependentMultiagent, IndependentTestAgent
from rlconf.agents.ppo import PPO
from rlconf.agents.random_agent import RandomAgent, RandomTestAgent
from rlconf.agents.sac import SAC, SACTestAgent
from rlconf.agents.td3 import TD3
from rlconf.agents.vac import VAC
from rlconf.agents.vpg import VPG

__all__ = ["A2C", "DDPG", "DQN", "PPO", "SAC", "TD3", "VAC", "VPG", "Agent", "AgentWrapper", "BuildContext",
           "DDPGTestAgent", "DQNTestAgent", "IndependentMultiagent", "IndependentTestAgent", "Match", "Multiagent",
           "MultiagentBuildContext", "MultiagentTestAgent", "ParallelAgent", "PolicyGradient",
           "PolicyGradientTestAgent", "RandomAgent", "RandomTestAgent", "ReplayLearner", "SACTestAgent",
           "SingleEnvAgent", "TestAgent"]
