"""MASAC and ISAC: SAC (rlconf.agents.sac) for each group of a team, with centralised or independent critics.

Each agent acts with a squashed Gaussian on its own view (a network the group's agents share, told apart by a
one-hot of their index with ``agent.agent_id``, or one per agent), so execution stays decentralised. MASAC's twin
critics are centralised, as MADDPG's (Lowe et al. 2017) and BenchMARL's MASAC: Q(s, a_1..a_n) reads the global
state (environments without one: every agent's observation, concatenated) and every agent's action; ISAC's read
the agent's own view and action. Each group has one temperature alpha, tuned towards an entropy of
``entropy_target`` per agent (default -dim(A)). Every update, on ``batch_size`` whole frames from replay, trains in
one backward pass

- the critics on ``(Q_j(x_i, a) - y_i)^2``, ``y_i = r_i + gamma * mask'_i * (min_j Q_j,target(x'_i, a') -
  alpha log pi(a'_i|o'_i))`` with a' drawn from every agent's policy on the next frame: each agent's own reward
  and its own end (``mask'_i`` is 0 once its episode ended; with ``bootstrap_time_limits`` false a time limit ends
  it too);
- the actor on ``alpha log pi(ã_i|o_i) - min_j Q_j(x_i, ã)``, with every agent's action ã resampled from the
  policy (reparameterised: the gradient flows through all of them, the critics' weights held);
- log alpha on ``-log alpha (log pi(ã_i|o_i) + entropy_target)``.

Agents that do not act in a frame (finished before their game) count in no loss of theirs. Each network is
clipped to its own ``clip_grad`` norm, as BenchMARL's optimisers are. Replay and the cadence are the team
off-policy base's (rlconf.agents._team_off_policy).
"""

from __future__ import annotations

from typing import Any

import torch

from rlconf.agents._off_policy import optimizer
from rlconf.agents._team import TeamBuildContext
from rlconf.agents._team_off_policy import GroupActorCritic, TeamActorCriticTestAgent, TeamOffPolicy, acted_mean
from rlconf.agents.sac import log_temperature, tuned_temperature
from rlconf.agents.specs.team_actor_critic import ISACConfig, MASACConfig
from rlconf.approximation import Approximation, reinforce_together
from rlconf.core import AgentGroup
from rlconf.optim import Clock
from rlconf.policies import SoftDeterministicPolicy


class GroupSAC(GroupActorCritic):
    """One group's squashed Gaussian actor, twin critics and temperature (see the module's docstring)."""

    def __init__(self, agent: str, config: MASACConfig, context: TeamBuildContext, name: str, group: AgentGroup,
                 seed: int, clock: Clock):
        super().__init__(agent, config, context, name, group, seed, clock)
        # Means and log standard deviations of each agent's Gaussian, one of each per action dimension.
        self.actor = self.actor_networks(context, 2 * self.bounds.dim)
        trained = optimizer(self.actor, config.lr_pi, config, context.approximation)
        self.policy = SoftDeterministicPolicy(self.actor, **trained, bounds=self.bounds, generator=self.generator,
                                              clip_grad=config.clip_grad, logger=self.logger)
        self.q_1, self.q_2 = self.critic(context, "q_1"), self.critic(context, "q_2")
        self.temperature, self.entropy_target = tuned_temperature(config, self.bounds.dim, context.device,
                                                                  self.logger, context.approximation)

    def _act(self, own: torch.Tensor) -> torch.Tensor:
        return self.policy.no_grad(own)[0]

    def greedy(self, own: torch.Tensor) -> torch.Tensor:
        return self.policy.greedy(own)

    def exported(self, network: torch.nn.Module):
        squash = self.policy.squash
        return lambda observations: squash(network(observations).chunk(2, dim=-1)[0])

    def update(self) -> None:
        batch, (own, state, acts), (next_own, next_state, _) = self.replay.frames(self.config.batch_size)
        actions = batch.action.view(*acts.shape, -1)
        log_alpha = self.temperature()
        alpha = log_alpha.detach().exp()  # a constant in the critics' and the actor's losses
        with torch.no_grad():
            next_actions, next_log_probs = self.policy.no_grad(next_own)
            inputs = self.critic_inputs(next_own, next_state, next_actions)
            next_values = torch.min(self.q_1.target(*inputs), self.q_2.target(*inputs))
            targets = self.bootstrap(batch, next_values - alpha * next_log_probs)
        inputs = self.critic_inputs(own, state, actions)
        q_losses = [(q, acted_mean((q(*inputs) - targets).square(), acts)) for q in (self.q_1, self.q_2)]

        new_actions, log_probs = self.policy(own)
        inputs = self.critic_inputs(own, state, new_actions)
        values = torch.min(self.q_1.frozen(*inputs), self.q_2.frozen(*inputs))
        losses = [*q_losses, (self.policy, acted_mean(alpha * log_probs - values, acts))]
        if self.config.temperature is None:
            # d/d(log alpha) = -(log pi + target): alpha rises while the entropy -log pi is below the target.
            losses.append((self.temperature,
                           acted_mean(-log_alpha * (log_probs.detach() + self.entropy_target), acts)))
        reinforce_together(*losses, jointly=False)
        log_temperature(self.policy, alpha, log_probs)

    def approximations(self) -> dict[str, Approximation]:
        return {"q_1": self.q_1, "q_2": self.q_2, "policy": self.policy, "temperature": self.temperature}

    def generators(self) -> dict[str, Any]:
        return {"policy": self.policy}  # its generator also draws the warm-up's actions


class MASAC(TeamOffPolicy):
    """MASAC (or ISAC) for every group of a team: ``groups[name]`` is the group's learner, all on one clock."""

    Config = MASACConfig

    @classmethod
    def from_config(cls, config: MASACConfig, context: TeamBuildContext) -> MASAC:
        clock = Clock()
        return cls.of_groups(config, context, clock, lambda own, name, group, seed: GroupSAC(
            cls.__name__.lower(), own, context, name, group, seed, clock))

    def test_agent(self) -> TeamActorCriticTestAgent:
        return TeamActorCriticTestAgent(self.groups)


class ISAC(MASAC):
    Config = ISACConfig
