"""MAPPO and IPPO: PPO for teams, each group of agents learning with PPO on its agents' lanes.

IPPO (de Witt et al. 2020, "Is Independent Learning All You Need in the StarCraft Multi-Agent Challenge?") is
PPO for every agent on its own observation. MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in
Cooperative Multi-Agent Games") gives each agent's critic the global state instead: centralised training, and
still decentralised execution, since the actor reads only the agent's own view. Both are rlconf's PPO
(rlconf.agents.ppo) itself, run on lanes (rlconf.agents._team): each agent of each copy is a lane of one rollout,
with its own rewards, its own GAE advantages cut where its episode ends, and the clipped surrogate over
minibatches of every lane's steps. With ``agent.share_parameters`` (the default, as both papers) a group's agents
share one actor and one critic, told apart by a one-hot of their index (``agent.agent_id``); without, each agent
has a PPO of its own. Groups never share: each is a learner (or a learner per agent) of its own.

A team's rollout is ``n_steps`` steps of every copy: ``n_steps x n_envs`` frames, each holding every agent's step.
``agent.batch_size`` counts frames too, as BenchMARL's minibatches do: a shared learner's minibatch holds the
``batch_size x agents`` lanes' steps of ``batch_size`` whole frames, and MAPPO's shared critic, where it reads no
agent index, computes one value a frame (rlconf.nn.layers.OncePerFrame), as BenchMARL's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import gymnasium as gym
import torch

from rlconf.agents._agent import Buildable, BuildContext, Learner, NotExportable, PolicyGraph
from rlconf.agents._team import GroupsTestAgent, Lanes, TeamBuildContext, lanes_act
from rlconf.agents.ppo import PPO
from rlconf.agents.specs.team_ppo import IPPOConfig, MAPPOConfig, TeamPPOConfig
from rlconf.core import TeamState
from rlconf.optim import LinearScheduler


class TeamPPO(Learner, Buildable):
    """PPO for each group of a team (see the module's docstring): ``learners[group]`` holds the group's PPO, or
    one per agent."""

    Config = TeamPPOConfig

    def __init__(self, lanes: dict[str, Lanes], learners: dict[str, list[PPO]]):
        self.lanes = lanes
        self.learners = learners

    @classmethod
    def from_config(cls, config: TeamPPOConfig, context: TeamBuildContext) -> TeamPPO:
        lanes, learners = {}, {}
        for g, (name, group) in enumerate(context.groups.items()):
            own = config.for_group(name)  # agent.groups.<name>'s values where it has any
            critic = "global_state" if own.centralised_critic else "observation"
            lanes[name] = view = Lanes(group, own.share_parameters, own.agent_id, critic)
            each = replace(own, batch_size=own.batch_size * view.lanes_per_copy)  # frames -> lanes' steps
            learners[name] = [PPO.from_config(each, BuildContext(
                observation_space=view.observation_space, action_space=group.action_space,
                n_envs=context.n_envs * view.lanes_per_copy, device=context.device,
                # the clock of a learner counts its lanes' steps: its schedules span the run in those
                total_steps=max(1, context.total_steps * view.lanes_per_copy), approximation=context.approximation,
                logger=context.logger_of(name if view.shared else f"{name}/{a}"),
                seed=context.seed_of(g, a), critic_inputs=view.critic_inputs, frame_lanes=view.lanes_per_copy,
                same_critic_inputs=view.same_critic_inputs(own.centralised_critic))) for a in range(view.learners)]
        return cls(lanes, learners)

    def act(self, team: TeamState) -> dict[str, torch.Tensor]:
        return lanes_act(self.lanes, self.learners, team)

    def test_agent(self) -> TeamTestAgent:
        return TeamTestAgent(self.lanes, {name: [learner.test_agent() for learner in learners]
                                          for name, learners in self.learners.items()})

    def state_dict(self) -> dict:
        return {name: {str(i): learner.state_dict() for i, learner in enumerate(learners)}
                for name, learners in self.learners.items()}

    def load_state_dict(self, state: dict) -> None:
        for name, learners in self.learners.items():
            for i, learner in enumerate(learners):
                learner.load_state_dict(state[name][str(i)])

    def schedules(self) -> dict[str, LinearScheduler]:
        return {f"{name}/{i}/{key}" if len(learners) > 1 else f"{name}/{key}": schedule
                for name, learners in self.learners.items() for i, learner in enumerate(learners)
                for key, schedule in learner.schedules().items()}


class MAPPO(TeamPPO):
    Config = MAPPOConfig


class IPPO(TeamPPO):
    Config = IPPOConfig


class TeamTestAgent(GroupsTestAgent):
    """Every group's greedy actions, each learner's test agent acting on its lanes."""

    def __init__(self, lanes: dict[str, Lanes], agents: dict[str, list[Any]]):
        self.lanes = lanes
        self.agents = agents

    def act(self, team: TeamState) -> dict[str, torch.Tensor]:
        return lanes_act(self.lanes, self.agents, team)

    def group_graph(self, name: str) -> tuple[PolicyGraph, gym.Space]:
        """Group ``name``'s greedy policy as a graph of its actor's inputs (each agent's view, then its one-hot
        index where the group's networks read one), and the space of those inputs (``rlconf export --group``)."""
        view, agent = self.lanes[name], self.shared(self.agents[name], name, "a policy")
        if agent.carried is not None:
            raise NotExportable(f"group {name}'s policy is recurrent: a team's recurrent policies are not exported")
        policy, critic_inputs = agent.policy, view.critic_inputs

        def act(observations: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
            # The lane's critic inputs follow the actor's; the actor never reads them (Part), so zeros stand in.
            lanes = torch.cat([observations, observations.new_zeros(observations.shape[0], critic_inputs)], dim=-1)
            return policy.env_actions(policy.greedy(lanes, mask=mask))

        return view.fed_ids(PolicyGraph(act, {"policy": policy.model})), view.actor_space
