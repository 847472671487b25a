"""MADDPG and IDDPG: DDPG (rlconf.agents.ddpg) for each group of a team, with centralised or independent critics.

MADDPG (Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive Environments"): each agent
acts with a deterministic policy on its own view (a network the group's agents share, told apart by a one-hot of
their index with ``agent.agent_id``, or one per agent), so execution stays decentralised, and learns from a
centralised critic Q(s, a_1..a_n) on the global state (environments without one: every agent's observation,
concatenated) and every agent's action. IDDPG's critic reads the agent's own view and action. Exploration adds
Gaussian noise of ``noise`` half-widths of the Box, decaying linearly to ``noise_final`` over
``noise_decay_steps`` frames (BenchMARL's, from 0.8 to 0.01). Every update, on ``batch_size`` whole frames from
replay, trains in one backward pass

- the critic on ``(Q(x_i, a) - y_i)^2``, ``y_i = r_i + gamma * mask'_i * Q_target(x'_i, a')`` with a' every
  agent's action by the target policy (``target_policy``, the paper's) or by the policy itself (BenchMARL's): each
  agent's own reward and its own end (``mask'_i`` is 0 once its episode ended; with ``bootstrap_time_limits``
  false a time limit ends it too);
- the actor on ``-Q(x_i, π(o_1), .., π(o_n))``, every agent's action by the current policy, as BenchMARL's (the
  paper takes the other agents' actions from replay); the critic's weights held.

Agents that do not act in a frame (finished before their game) count in no loss of theirs. Each network is
clipped to its own ``clip_grad`` norm, as BenchMARL's optimisers are. Replay and the cadence are the team
off-policy base's (rlconf.agents._team_off_policy).
"""

from __future__ import annotations

from typing import Any

import torch

from rlconf.agents._off_policy import gaussian, optimizer
from rlconf.agents._team import TeamBuildContext, group_schedule
from rlconf.agents._team_off_policy import GroupActorCritic, TeamActorCriticTestAgent, TeamOffPolicy, acted_mean
from rlconf.agents.specs.team_actor_critic import IDDPGConfig, MADDPGConfig
from rlconf.approximation import Approximation, PolyakTarget, reinforce_together
from rlconf.core import AgentGroup
from rlconf.optim import Clock, schedule
from rlconf.policies import DeterministicPolicy


class GroupDDPG(GroupActorCritic):
    """One group's deterministic actor and critic (see the module's docstring)."""

    def __init__(self, agent: str, config: MADDPGConfig, context: TeamBuildContext, name: str, group: AgentGroup,
                 seed: int, clock: Clock, noise: Any):
        super().__init__(agent, config, context, name, group, seed, clock)
        self.noise = noise  # a float, or the clock's schedule
        self.actor = self.actor_networks(context, self.bounds.dim)
        target = PolyakTarget(config.polyak_rate) if config.target_policy else None
        trained = optimizer(self.actor, config.lr_pi, config, context.approximation)
        self.policy = DeterministicPolicy(self.actor, **trained, bounds=self.bounds,
                                          target=target, clip_grad=config.clip_grad, logger=self.logger)
        self.q = self.critic(context, "q")

    def _act(self, own: torch.Tensor) -> torch.Tensor:
        actions = self.policy.no_grad(own)
        noise = gaussian(actions, float(self.noise), self.generator)
        return self.bounds.clip(actions + self.bounds.half_range * noise)

    def greedy(self, own: torch.Tensor) -> torch.Tensor:
        return self.policy.eval(own)

    def exported(self, network: torch.nn.Module):
        squash = self.policy.model[1]  # the policy's TanhActionBound
        return lambda observations: squash(network(observations))

    def update(self) -> None:
        batch, (own, state, acts), (next_own, next_state, _) = self.replay.frames(self.config.batch_size)
        actions = batch.action.view(*acts.shape, -1)
        with torch.no_grad():
            acting = self.policy.target if self.config.target_policy else self.policy.no_grad
            targets = self.bootstrap(batch, self.q.target(*self.critic_inputs(next_own, next_state, acting(next_own))))
        q_loss = acted_mean((self.q(*self.critic_inputs(own, state, actions)) - targets).square(), acts)
        policy_loss = acted_mean(-self.q.frozen(*self.critic_inputs(own, state, self.policy(own))), acts)
        reinforce_together((self.q, q_loss), (self.policy, policy_loss), jointly=False)

    def approximations(self) -> dict[str, Approximation]:
        return {"q": self.q, "policy": self.policy}

    def generators(self) -> dict[str, Any]:
        return {"generator": self.generator}  # the warm-up's and the noise's


class MADDPG(TeamOffPolicy):
    """MADDPG (or IDDPG) for every group of a team: ``groups[name]`` is the group's learner, all on one clock."""

    Config = MADDPGConfig

    @classmethod
    def from_config(cls, config: MADDPGConfig, context: TeamBuildContext) -> MADDPG:
        clock = Clock()
        noise = schedule(config.noise, config.noise_final, config.noise_decay_steps, clock, "noise")
        return cls.of_groups(config, context, clock, lambda own, name, group, seed: GroupDDPG(
            cls.__name__.lower(), own, context, name, group, seed, clock,
            group_schedule(noise, config, own, "noise", clock, name)))

    def test_agent(self) -> TeamActorCriticTestAgent:
        return TeamActorCriticTestAgent(self.groups)


class IDDPG(MADDPG):
    Config = IDDPGConfig
