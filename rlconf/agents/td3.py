"""TD3 (Fujimoto et al. 2018): DDPG with three fixes for the critic's overestimation.

- Twin critics: both regress on the same target, built from the smaller of their two target values.
- Target policy smoothing: the target action is the target policy's plus clipped Gaussian noise, so the
  target averages Q over a small neighbourhood instead of trusting one sharp peak.
- Delayed policy updates: the policy and all targets move once every ``policy_delay`` critic updates.

Acting, replay and the update cadence are DDPG's (ddpg.py, _off_policy.py); only the networks and the
update differ.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from rlconf.agents._agent import BuildContext
from rlconf.agents._off_policy import action_bounds, critic, gaussian, generator, off_policy_replay
from rlconf.agents.ddpg import DDPG, deterministic_policy
from rlconf.agents.specs.td3 import TD3Config
from rlconf.approximation import QContinuous, reinforce_together
from rlconf.memory import ReplayBuffer, Transitions
from rlconf.optim import Clock
from rlconf.policies import DeterministicPolicy


class TD3(DDPG):
    Config = TD3Config

    def __init__(self, q_1: QContinuous, q_2: QContinuous, policy: DeterministicPolicy, replay: ReplayBuffer,
                 clock: Clock, config: TD3Config, n_envs: int, generator: torch.Generator):
        super().__init__(q_1, policy, replay, clock, config, n_envs, generator)  # DDPG's critic: the first twin
        self.q_1, self.q_2 = q_1, q_2
        self._updates = 0

    # DDPG's critic is the first twin here: DDPG's state with its "q" saved as "q_1".
    def state_dict(self) -> dict:
        state = super().state_dict()
        state["q_1"] = state.pop("q")
        return state | {"q_2": self.q_2.state_dict(), "updates": self._updates}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state | {"q": state["q_1"]})
        self.q_2.load_state_dict(state["q_2"])
        self._updates = state["updates"]

    @classmethod
    def from_config(cls, config: TD3Config, context: BuildContext) -> TD3:
        bounds = action_bounds(context, "td3")
        policy = deterministic_policy(config, context, bounds)
        # The critics' targets move with the policy's, every policy_delay-th critic update.
        q_1, q_2 = (critic(config, context, bounds, name, every=config.policy_delay) for name in ("q_1", "q_2"))
        return cls(q_1, q_2, policy, off_policy_replay(config, context), Clock(), config, context.n_envs,
                   generator(context))

    def _update(self, batch: Transitions) -> None:
        self._updates += 1
        targets = self.td_targets(batch)
        q_losses = ((self.q_1, F.mse_loss(self.q_1(batch.observation, batch.action), targets)),
                    (self.q_2, F.mse_loss(self.q_2(batch.observation, batch.action), targets)))
        if self._updates % self.config.policy_delay:
            reinforce_together(*q_losses)
            return
        # The policy follows the first critic alone, as in the paper.
        policy_loss = -self.q_1.frozen(batch.observation, self.policy(batch.observation)).mean()
        reinforce_together(*q_losses, (self.policy, policy_loss))

    def td_targets(self, batch: Transitions) -> torch.Tensor:
        """r + gamma * mask' * min_i Q_i,target(s', a'), a' the smoothed target action."""
        next_observation = batch.next_observation
        actions = self.policy.target(next_observation)
        noise = gaussian(actions, self.config.target_noise, self.generator)
        noise = noise.clamp(-self.config.target_noise_clip, self.config.target_noise_clip)
        actions = self.bounds.clip(actions + self.bounds.half_range * noise)
        return self._bootstrap(batch, torch.min(self.q_1.target(next_observation, actions),
                                                self.q_2.target(next_observation, actions)))

