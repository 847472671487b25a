"""Agents: one file per algorithm, each readable top to bottom."""

from rlconf.agents._agent import Agent, AgentWrapper, BuildContext, ParallelAgent, SingleEnvAgent, TestAgent
from rlconf.agents.dqn import DQN, DQNTestAgent
from rlconf.agents.ppo import PPO, PPOTestAgent

__all__ = ["DQN", "PPO", "Agent", "AgentWrapper", "BuildContext", "DQNTestAgent", "PPOTestAgent", "ParallelAgent",
           "SingleEnvAgent", "TestAgent"]
