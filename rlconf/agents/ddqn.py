"""Double DQN (van Hasselt et al. 2016): the online network picks the next action, the target network
values it, which removes most of Q-learning's overestimation (where states carry an ``action_mask``, it
picks among the legal actions). Everything else is DQN's, including prioritized and n-step replay (the loss
is importance-weighted, so prioritized replay works)."""

from __future__ import annotations

import torch

from rlconf.agents.dqn import DQN
from rlconf.agents.hyperparameters import DDQNConfig
from rlconf.policies import legal_argmax


class DDQN(DQN):
    Config = DDQNConfig
    targets_per_burst = False  # the online network's choice changes with every update

    def td_targets(self, batch) -> torch.Tensor:
        next_actions = legal_argmax(self.q.no_grad(batch.next_observation), batch.next_action_mask).unsqueeze(1)
        next_values = self.q.target(batch.next_observation).gather(1, next_actions).squeeze(1)
        return self._bootstrap(batch, next_values)
