"""Agents: one file per algorithm, each readable top to bottom; beside each, in ``specs/``, its spec: its
schema (the hyperparameters a config is checked against) and what it declares it can do (``AgentSpec``).

Each name is imported where it is first used: reading an agent's spec imports no torch.
"""

from __future__ import annotations

from rlconf.lazy import lazy_names

# name -> the module that defines it
_HOMES = {
    **dict.fromkeys(["Agent", "AgentWrapper", "BuildContext", "Checkpointed", "Learner", "ParallelAgent",
                     "NotExportable", "PolicyGraph", "ReplayLearner", "SingleEnvAgent", "TestAgent"],
                    "rlconf.agents._agent"),
    **dict.fromkeys(["Match", "Multiagent", "MultiagentBuildContext", "MultiagentTestAgent"],
                    "rlconf.agents._multiagent"),
    **dict.fromkeys(["ActorTestAgent", "OffPolicy"], "rlconf.agents._off_policy"),
    **dict.fromkeys(["PolicyGradient", "PolicyGradientTestAgent"], "rlconf.agents._policy_gradient"),
    "AgentSpec": "rlconf.agents.specs._spec",
    "Plays": "rlconf.agents.specs._plays",
    "A2C": "rlconf.agents.a2c",
    "DDPG": "rlconf.agents.ddpg",
    **dict.fromkeys(["DQN", "DQNTestAgent"], "rlconf.agents.dqn"),
    **dict.fromkeys(["IndependentMultiagent", "IndependentTestAgent"], "rlconf.agents.independent"),
    "PPO": "rlconf.agents.ppo",
    **dict.fromkeys(["RandomAgent", "RandomTestAgent"], "rlconf.agents.random_agent"),
    "SAC": "rlconf.agents.sac",
    "TD3": "rlconf.agents.td3",
    "VAC": "rlconf.agents.vac",
    "VPG": "rlconf.agents.vpg",
}
__all__ = ["A2C", "DDPG", "DQN", "PPO", "SAC", "TD3", "VAC", "VPG", "ActorTestAgent", "Agent", "AgentSpec",
           "AgentWrapper",
           "BuildContext", "Checkpointed", "DQNTestAgent", "IndependentMultiagent", "IndependentTestAgent",
           "Learner", "Match", "Multiagent", "MultiagentBuildContext", "MultiagentTestAgent", "NotExportable",
           "OffPolicy", "ParallelAgent", "Plays", "PolicyGradient", "PolicyGradientTestAgent", "PolicyGraph",
           "RandomAgent", "RandomTestAgent", "ReplayLearner", "SingleEnvAgent", "TestAgent"]


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
