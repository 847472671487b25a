"""C51 (Bellemare et al. 2017) and Rainbow (Hessel et al. 2018): distributional Q-learning.

C51 learns, for every action, a categorical distribution of the return over ``atoms`` fixed values between
``v_min`` and ``v_max``. The target is the target network's distribution for the next state and its best
action, shifted by the reward, shrunk by the discount and projected back on the support; the loss is the
cross-entropy between target and prediction. Acting is epsilon-greedy on the means.

Which next action is best: C51 takes the one with the largest mean under the target network itself. With
``double_q`` the online network chooses it and the target network's distribution of that action is the
target, as double Q-learning does (van Hasselt et al. 2016) and as Rainbow does (Hessel et al. 2018, section
"Rainbow": "the greedy action ... selected according to the online network ... evaluated using the target
network"). Either way only legal actions are chosen where states carry an ``action_mask``.

Rainbow is C51 with the other improvements on by default: double Q-learning, prioritized replay (priority =
the cross-entropy), 3-step returns, and a dueling network with noisy layers (the ``rainbow`` presets choose
it), whose noise explores so that epsilon can be 0. Replay, bursts of updates and the target network are
DQN's.
"""

from __future__ import annotations

import torch

from rlconf.agents._agent import BuildContext
from rlconf.agents._off_policy import training_settings
from rlconf.agents.dqn import DQN
from rlconf.agents.specs.c51 import C51Config, RainbowConfig
from rlconf.approximation import QDist
from rlconf.memory import Transitions
from rlconf.nn import model_settings
from rlconf.optim import Clock
from rlconf.policies import legal_argmax


class C51(DQN):
    Config = C51Config

    @classmethod
    def build_q(cls, config: C51Config, context: BuildContext, clock: Clock, n_actions: int) -> QDist:
        model = model_settings(context.approximation).q_dist(context.observation_space, n_actions, config.atoms)
        model = model.to(context.device)
        return QDist(model, n_actions=n_actions, atoms=config.atoms, v_min=config.v_min, v_max=config.v_max,
                     **training_settings(model, config, context, clock))

    @staticmethod
    def action_values(q: QDist):
        return _MeanValues(q)

    def td_targets(self, batch: Transitions) -> torch.Tensor:
        """The projected target distribution of every transition: [batch, atoms]."""
        next_probabilities = self.q.target(batch.next_observation)
        chooser = self.q.no_grad(batch.next_observation) if self.config.double_q else next_probabilities
        best = legal_argmax(self.q.expected(chooser), batch.next_action_mask)
        next_distribution = next_probabilities[torch.arange(len(best), device=best.device), best]
        return self.q.project(batch.reward, self._discount(batch) * batch.next_mask, next_distribution)

    def _losses(self, batch: Transitions, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each transition's cross-entropy between target and predicted distribution, also its priority."""
        log_probabilities = self.q.log_probs(batch.observation)
        chosen = log_probabilities[torch.arange(len(batch.action), device=batch.action.device), batch.action]
        losses = -(targets * chosen).sum(-1)
        return losses, losses.detach()


class _MeanValues:
    """A QDist seen as action values (the means of its distributions), for the greedy policies."""

    def __init__(self, q: QDist):
        self.q = q

    def no_grad(self, x: torch.Tensor) -> torch.Tensor:
        return self.q.expected(self.q.no_grad(x))

    def eval(self, x: torch.Tensor) -> torch.Tensor:
        return self.q.expected(self.q.eval(x))

    @property
    def model(self) -> torch.nn.Module:
        return self.q.model


class Rainbow(C51):
    Config = RainbowConfig
