"""Double DQN (van Hasselt et al. 2016): the online network picks the next action, the target network
values it, which removes most of Q-learning's overestimation. Everything else is DQN's, including
prioritized and n-step replay (the loss is importance-weighted, so prioritized replay works)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rlconf.agents.dqn import DQN, DQNConfig


@dataclass
class DDQNConfig(DQNConfig):
    replay: str = "prioritized"


class DDQN(DQN):
    Config = DDQNConfig
    targets_per_burst = False  # the online network's choice changes with every update

    def _td_targets(self, batch) -> torch.Tensor:
        next_actions = self.q.no_grad(batch.next_observation).argmax(-1, keepdim=True)
        next_values = self.q.target(batch.next_observation).gather(1, next_actions).squeeze(1)
        return self._bootstrap(batch, next_values)
