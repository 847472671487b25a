"""The variational neural bandit (``agent=variational``): a Bayesian network trained by Bayes by backprop
(Blundell et al. 2015, "Weight Uncertainty in Neural Networks"), acting by Thompson sampling.

Every weight and bias w of the bandit's network (the approximation group's mlp, as the other neural bandits')
has a Gaussian posterior q(w) = N(mu, sigma^2), sigma = softplus(rho) so that any rho gives a positive std;
mu starts at the network's usual initial weights, sigma at ``init_std``. The prior is N(0, ``prior_std``^2) on
every one, and a reward is Gaussian around the network's prediction of the pulled arm with std ``noise_std``
(GenRL's BayesianNNBanditModel's likelihood). Training minimises the negative ELBO divided by the N pulls
stored so far, estimated on minibatches of B with one reparameterised weight sample w = mu + sigma * eps per
network and step:

    loss = mean over the minibatch of -log N(r; f_w(x)[a], noise_std^2)  +  KL(q || prior) / N

which is Blundell et al.'s minibatch weighting with the KL spread evenly over the N / B minibatches, and
GenRL's and Riquelme et al.'s (2018) scaling too. The KL of two Gaussians is taken in closed form, not by
sampling. The rounds (``update_every``, ``gradient_steps``, ``batch_size``, the learning-rate decay, gradient
clipping, dropout) are NeuralBandit's. Each pull draws one weight sample from the posterior per bandit and
pulls the arm its network rates best (Thompson sampling); the test agent uses the posterior means.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.functional import softplus

from rlconf.agents._bandit import argmax_random_ties
from rlconf.agents.neural_bandit import NeuralBandit
from rlconf.agents.specs.neural_bandit import VariationalConfig


class Variational(NeuralBandit):
    """The networks' weights are the posterior means; ``rho`` (one per weight and bias) their spreads."""

    Config = VariationalConfig
    name = "variational"

    def add_parameters(self) -> None:
        start = math.log(math.expm1(self.config.init_std))  # softplus(start) = init_std
        self.rho = nn.ParameterList([nn.Parameter(torch.full_like(p.detach(), start))
                                     for p in self.networks.parameter_list()])

    def trained_parameters(self):
        return [*super().trained_parameters(), *self.rho]

    def sample(self) -> list[torch.Tensor]:
        """One draw of each network's weights, as offsets from the means: sigma * eps, eps ~ N(0, 1)."""
        return [softplus(rho) * torch.randn(rho.shape, generator=self.generator, device=self.device)
                for rho in self.rho]

    def kl(self) -> torch.Tensor:
        """KL(q || prior) of each network's weights, (m,): sum of log(p / s) + (s^2 + mu^2) / (2 p^2) - 1/2."""
        prior = self.config.prior_std
        total = torch.zeros(self.networks.members, device=self.device)
        for mu, rho in zip(self.networks.parameter_list(), self.rho, strict=True):
            std = softplus(rho)
            terms = math.log(prior) - torch.log(std) + (std**2 + mu**2) / (2 * prior**2) - 0.5
            total = total + terms.flatten(1).sum(1)
        return total

    def loss(self, contexts, arms, rewards):
        outputs = self.networks(contexts, self.sample(), dropout=self.config.dropout_p, generator=self.generator)
        sigma = self.config.noise_std
        nll = 0.5 * ((self.pulled(outputs, arms) - rewards) / sigma) ** 2 + math.log(sigma * math.sqrt(2 * math.pi))
        return (nll.mean(dim=1) + self.kl() / self.store.size).sum()

    def choose(self, contexts):
        with torch.no_grad():
            noise = self.sample()
        return argmax_random_ties(self.predict(contexts, noise, acting=True)[:, 0], self.rng)

    def state_dict(self) -> dict:
        return super().state_dict() | {"rho": [rho.detach().clone() for rho in self.rho]}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        with torch.no_grad():
            for rho, saved in zip(self.rho, state["rho"], strict=True):
                rho.copy_(saved)
