"""Neural contextual bandit agents: a network predicts every arm's reward from the context.

All four (and ``variational``, Bayes by backprop: rlconf.agents.variational_bandit) share one protocol
(``NeuralBandit``): every pull joins a growing store of (context, arm, reward), and every ``update_every``
pulls the networks take ``gradient_steps`` Adam steps on minibatches of ``batch_size`` drawn from the store
(with replacement), the loss (``loss``) the squared error of the pulled arm's output. The learning rate is
``lr / (1 + lr_decay t)``, t the steps since the round began (``lr_reset``) or since the first round;
``clip_grad`` bounds each network's gradient norm; ``dropout_p`` drops hidden units in training, and with
``eval_with_dropout`` in the forward passes that choose training pulls too (GenRL's options; test agents
never drop). They differ in how they explore:

- ``neural_greedy``: the arm of the largest prediction, a uniformly random one with probability ``epsilon``;
- ``neural_linear``: Thompson sampling with the linear posterior (rlconf.agents.linear_bandit) on the
  network's last hidden features, refitted on the whole store with the new features after each round;
- ``bootstrap_neural``: ``ensemble`` networks, each trained on its own view of the data (every pull joins
  each one's with probability ``add_probability``); each pull follows one network drawn at random;
- ``noise_sampling``: the arm of the largest prediction of the network with Gaussian noise of std
  ``noise_std`` added to every weight, drawn afresh every pull or every round; with ``noise_target`` the std
  adapts after each round so that the noisy predictions stay as far from the clean ones as an
  epsilon-greedy policy's would (Plappert et al. 2018; GenRL's noise sampling agent).

Every bandit of ``hardware.n_envs`` is its own problem with networks of its own: the ``n x ensemble``
networks are the approximation group's model (``approximation.hidden``, ``approximation.activation``: a
fully connected one), their weights stacked so that one batched matrix product serves all of them.
Test agents pull the arm of the best clean prediction (the ensemble's mean, the posterior mean), ties to
the first, drawing nothing from the agent's generators.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from rlconf.agents._agent import BuildContext, arrays_state, load_arrays
from rlconf.agents._bandit import BanditAgent, argmax_random_ties
from rlconf.agents.linear_bandit import RidgeStatistics, thompson_scores
from rlconf.agents.specs.neural_bandit import (
    BootstrapNeuralConfig,
    NeuralConfig,
    NeuralGreedyConfig,
    NeuralLinearConfig,
    NoiseSamplingConfig,
)
from rlconf.approximation import make_optimizer
from rlconf.errors import ConfigError, require
from rlconf.nn.builders import model_settings
from rlconf.nn.layers import Linear, Linear0
from rlconf.optim import Clock


# -- networks ---------------------------------------------------------------------------------------------
class StackedNetworks(nn.Module):
    """``m`` networks of the same fully connected architecture with their weights stacked:
    ``forward(x [m, B, in]) -> [m, B, out]``, each network on its own rows. ``features`` stops before the
    last linear layer (the last hidden features). ``noise``, a list like ``parameters()``, is added to the
    weights for that pass (noise sampling)."""

    def __init__(self, networks: list[nn.Module], model: str = "mlp"):
        super().__init__()
        self.weights = nn.ParameterList()  # (m, in, out) each
        self.biases = nn.ParameterList()  # (m, out) each
        self.plan: list[Any] = []  # an int: that linear layer; a module: applied as it is (activations)
        for index, module in enumerate(_layers(networks[0])):
            if type(module) in (nn.Linear, Linear, Linear0):
                layers = [_layers(network)[index] for network in networks]
                self.weights.append(nn.Parameter(torch.stack([layer.weight.detach().T for layer in layers])))
                self.biases.append(nn.Parameter(torch.stack([_bias(layer) for layer in layers])))
                self.plan.append(len(self.weights) - 1)
            elif next(module.parameters(), None) is None:
                self.plan.append(module)
            else:
                raise ConfigError(f"approximation.model={model}: neural bandit agents need fully connected networks "
                                  f"(linear layers and activations), not {type(module).__name__}; allowed: mlp")
        require(len(self.weights) >= 2, "approximation.hidden", "[]",
                "neural bandit agents need at least one hidden layer")
        self.members = len(networks)

    def forward(self, x: torch.Tensor, noise: list[torch.Tensor] | None = None, features: bool = False,
                dropout: float = 0.0, generator: torch.Generator | None = None) -> torch.Tensor:
        """``dropout``: the probability of zeroing each hidden unit (the input of every linear layer but the
        first, as GenRL's models drop after each hidden activation), drawn from ``generator``."""
        last = len(self.weights) - 1
        for step in self.plan:
            if isinstance(step, int):
                if features and step == last:
                    return x
                if dropout > 0 and step > 0:
                    keep = torch.rand(x.shape, generator=generator, device=x.device) >= dropout
                    x = x * keep / (1.0 - dropout)
                weight, bias = self.weights[step], self.biases[step]
                if noise is not None:
                    weight, bias = weight + noise[2 * step], bias + noise[2 * step + 1]
                x = torch.baddbmm(bias.unsqueeze(1), x, weight)
            else:
                x = step(x)
        return x

    def features(self, x: torch.Tensor, dropout: float = 0.0, generator: torch.Generator | None = None) -> torch.Tensor:
        """The last hidden layer's output, [m, B, width]."""
        return self.forward(x, features=True, dropout=dropout, generator=generator)

    def parameter_list(self) -> list[torch.Tensor]:
        """Weights and biases in the order ``noise`` takes them."""
        return [p for pair in zip(self.weights, self.biases, strict=True) for p in pair]


def _layers(network: nn.Module) -> list[nn.Module]:
    """The modules a Sequential runs, nested Sequentials unrolled."""
    if isinstance(network, nn.Sequential):
        return [layer for module in network for layer in _layers(module)]
    return [network]


def _bias(layer: nn.Linear) -> torch.Tensor:
    return layer.bias.detach() if layer.bias is not None else torch.zeros(layer.out_features)


# -- the store --------------------------------------------------------------------------------------------
class Store:
    """Every pull of every bandit so far, (n, N, ...), in tensors that double when full. ``views`` (n, k, N)
    says which of a bandit's k networks each pull trains (bootstrap); all of them for the other agents."""

    def __init__(self, n: int, features: int, views: int, device: torch.device, capacity: int = 1024):
        self.n, self.features, self.views, self.device = n, features, views, device
        self.size = 0
        self.contexts = torch.zeros(n, capacity, features, device=device)
        self.arms = torch.zeros(n, capacity, dtype=torch.long, device=device)
        self.rewards = torch.zeros(n, capacity, device=device)
        self.included = torch.ones(n, views, capacity, dtype=torch.bool, device=device)

    def add(self, contexts: torch.Tensor, arms: torch.Tensor, rewards: torch.Tensor,
            included: torch.Tensor | None = None) -> None:
        if self.size == self.contexts.shape[1]:
            self._resize(2 * self.size)
        self.contexts[:, self.size] = contexts
        self.arms[:, self.size] = arms
        self.rewards[:, self.size] = rewards
        self.included[:, :, self.size] = True if included is None else included
        self.size += 1

    def _resize(self, capacity: int) -> None:
        def grown(t: torch.Tensor, fill: Any) -> torch.Tensor:
            shape = list(t.shape)
            dim = 2 if t is self.included else 1
            shape[dim] = capacity
            new = torch.full(shape, fill, dtype=t.dtype, device=t.device)
            new.narrow(dim, 0, min(self.size, capacity)).copy_(t.narrow(dim, 0, min(self.size, capacity)))
            return new

        self.contexts, self.arms = grown(self.contexts, 0.0), grown(self.arms, 0)
        self.rewards, self.included = grown(self.rewards, 0.0), grown(self.included, True)

    def sample(self, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        """A minibatch for each of the n x views networks, drawn with replacement from that network's pulls:
        contexts (m, B, d), arms (m, B), rewards (m, B), m = n * views."""
        if self.views == 1:  # every pull trains the bandit's one network
            rows = torch.randint(self.size, (self.n, batch_size), generator=generator, device=self.device)
        else:
            weights = self.included[:, :, :self.size].reshape(self.n * self.views, self.size).float()
            weights[weights.sum(1) == 0] = 1.0  # a network whose view is still empty trains on everything
            rows = torch.multinomial(weights, batch_size, replacement=True, generator=generator)  # (m, B)
        bandit = torch.arange(self.n, device=self.device).repeat_interleave(self.views)[:, None]
        return self.contexts[bandit, rows], self.arms[bandit, rows], self.rewards[bandit, rows]

    def state_dict(self) -> dict:
        return {"contexts": self.contexts[:, :self.size].clone(), "arms": self.arms[:, :self.size].clone(),
                "rewards": self.rewards[:, :self.size].clone(), "included": self.included[:, :, :self.size].clone()}

    def load_state_dict(self, state: dict) -> None:
        size = state["arms"].shape[1]
        theirs = (*state["included"].shape[:2], state["contexts"].shape[2])
        if theirs != (self.n, self.views, self.features):
            raise ValueError(f"store: the checkpoint's holds (bandits, networks, features) {theirs}, this agent's "
                             f"{(self.n, self.views, self.features)}")
        self.size = 0
        self._resize(max(size, 1024))
        self.contexts[:, :size] = state["contexts"].to(self.device)
        self.arms[:, :size] = state["arms"].to(self.device)
        self.rewards[:, :size] = state["rewards"].to(self.device)
        self.included[:, :, :size] = state["included"].to(self.device)
        self.size = size


# -- the shared protocol ----------------------------------------------------------------------------------
class NeuralBandit(BanditAgent):
    """The store, the networks (``views`` per bandit) and their training rounds; subclasses choose arms."""

    views: int = 1  # networks per bandit
    name: ClassVar[str] = "neural"

    def __init__(self, config: NeuralConfig, context: BuildContext, views: int = 1):
        arms = self.check_context(context, self.name)
        super().__init__(context.n_envs, arms, Clock(), config.init_pulls)
        self.config = config
        self.views = views
        self.device = context.device
        self.features = int(context.observation_space.shape[0])
        self.rng = context.generator("neural_bandit")
        self.generator = torch.Generator(device=self.device).manual_seed(context.seed)
        settings = model_settings(context.approximation)
        with torch.random.fork_rng(devices=[]):  # the networks' initial weights follow the run's seed
            torch.manual_seed(context.seed)
            networks = [settings.head(context.observation_space, arms) for _ in range(self.n_bandits * views)]
        self.networks = StackedNetworks(networks, context.approximation.get("model", "mlp")).to(self.device)
        self.add_parameters()
        # The chosen optimiser (fused Adam by default: one kernel for every parameter, a fifth of the loop's time on
        # CPU for networks this small); its rate follows lr_decay, set in train_round.
        self.optimizer = make_optimizer(self.trained_parameters(), config.lr, context.approximation)[0]
        self.store = Store(self.n_bandits, self.features, views, self.device)
        self.logger = context.logger
        self.rounds = 0  # training rounds so far
        self.updates = 0  # gradient steps so far

    def add_parameters(self) -> None:
        """A subclass's parameters beside the networks' weights (the variational bandit's spreads), made before
        the optimiser that trains them (``trained_parameters``)."""

    def trained_parameters(self) -> list[torch.Tensor]:
        """What the optimizer trains and ``clip_grad`` bounds: each with the networks as its first dimension."""
        return list(self.networks.parameters())

    def state_dict(self) -> dict:
        return super().state_dict() | {"networks": self.networks.state_dict(), "optimizer": self.optimizer.state_dict(),
                                       "store": self.store.state_dict(), "rounds": self.rounds, "updates": self.updates}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.networks.load_state_dict(state["networks"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.store.load_state_dict(state["store"])
        self.rounds, self.updates = state["rounds"], state["updates"]

    def generators(self) -> dict[str, Any]:
        return {"rng": self.rng, "generator": self.generator}

    @classmethod
    def from_config(cls, config: NeuralConfig, context: BuildContext) -> NeuralBandit:
        return cls(config, context)

    def greedy(self, contexts):
        """The arm of the best clean prediction: the mean over the bandit's networks (its one network's)."""
        return self.predict(contexts).mean(axis=1).argmax(axis=1)

    # -- learning -----------------------------------------------------------------------------------------
    def learn(self, contexts, arms, rewards):
        x = torch.as_tensor(contexts, dtype=torch.float32, device=self.device)
        self.store.add(x, torch.as_tensor(arms, device=self.device),
                       torch.as_tensor(rewards, dtype=torch.float32, device=self.device), self.included())
        self.observed(contexts, arms, rewards)
        if self.store.size % self.config.update_every == 0:
            self.train_round()
            self.trained()

    def included(self) -> torch.Tensor | None:
        """Which of each bandit's networks the new pull trains, (n, views); None: all."""
        return None

    def observed(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """A pull joined the store (neural-linear updates its posterior here)."""

    def trained(self) -> None:
        """A training round ended."""

    def train_round(self) -> None:
        config, losses = self.config, []
        for step in range(config.gradient_steps):
            t = step if config.lr_reset else self.updates
            for group in self.optimizer.param_groups:
                group["lr"] = config.lr / (1.0 + config.lr_decay * t)
            loss = self.loss(*self.store.sample(config.batch_size, self.generator))
            self.optimizer.zero_grad()
            loss.backward()
            if config.clip_grad > 0:
                self._clip_gradients(config.clip_grad)
            self.optimizer.step()
            self.updates += 1
            losses.append(loss.detach())
        self.rounds += 1
        if self.logger is not None and self.logger.wants_debug(self.rounds):
            self.logger.add_scalar("loss/network", float(torch.stack(losses).mean()) / self.networks.members)

    def loss(self, contexts: torch.Tensor, arms: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
        """The squared error of each network's pulled-arm predictions on its minibatch (m, B, ...), summed over
        the networks: each one's gradient is its own loss's, as if it trained alone."""
        predicted = self.pulled(self.networks(contexts, dropout=self.config.dropout_p, generator=self.generator), arms)
        return ((predicted - rewards) ** 2).mean(dim=1).sum()

    def dropout(self, acting: bool) -> float:
        """The dropout of a forward pass that predicts (not one that trains): ``dropout_p`` where it chooses a
        training pull (``acting``) and ``eval_with_dropout`` asks for it, else none."""
        return self.config.dropout_p if acting and self.config.eval_with_dropout else 0.0

    @staticmethod
    def pulled(predictions: torch.Tensor, arms: torch.Tensor) -> torch.Tensor:
        """The predictions (m, B, arms) of the pulled arms (m, B)."""
        return predictions.gather(-1, arms.unsqueeze(-1)).squeeze(-1)

    def _clip_gradients(self, max_norm: float) -> None:
        """Scale each network's gradient to norm ``max_norm`` at most (clip_grad_norm_ network by network)."""
        grads = [p.grad for p in self.trained_parameters() if p.grad is not None]
        norms = torch.stack([g.flatten(1).sum(1) for g in torch._foreach_pow(grads, 2)]).sum(0).sqrt()  # (m,)
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        torch._foreach_mul_(grads, [scale.view(-1, *([1] * (g.dim() - 1))) for g in grads])

    # -- predicting ---------------------------------------------------------------------------------------
    @torch.no_grad()
    def predict(self, contexts: np.ndarray, noise: list[torch.Tensor] | None = None,
                acting: bool = False) -> np.ndarray:
        """Every network's predicted rewards for its bandit's context: (n, views, arms). ``acting``: for the
        arm a training pull takes, with dropout on where ``eval_with_dropout`` asks for it (GenRL's inference)."""
        x = torch.as_tensor(contexts, dtype=torch.float32, device=self.device)
        x = x.repeat_interleave(self.views, dim=0).unsqueeze(1)  # (m, 1, d)
        out = self.networks(x, noise, dropout=self.dropout(acting), generator=self.generator)
        return out.view(self.n_bandits, self.views, self.arms).double().cpu().numpy()


# -- neural greedy ----------------------------------------------------------------------------------------
class NeuralGreedy(NeuralBandit):
    Config = NeuralGreedyConfig
    name = "neural_greedy"

    def choose(self, contexts):
        arms = argmax_random_ties(self.predict(contexts, acting=True)[:, 0], self.rng)
        explore = self.rng.random(len(arms)) < self.config.epsilon
        return np.where(explore, self.rng.integers(self.arms, size=len(arms)), arms)


# -- neural linear ----------------------------------------------------------------------------------------
class NeuralLinear(NeuralBandit):
    """The network learns features; each arm's posterior over linear weights on them is exact given the
    features, so it is refitted from the whole store whenever the features change (after each round)."""

    Config = NeuralLinearConfig
    name = "neural_linear"

    def __init__(self, config: NeuralLinearConfig, context: BuildContext):
        super().__init__(config, context)
        width = self.networks.weights[-1].shape[1]
        self.stats = RidgeStatistics(self.n_bandits, self.arms, width + config.intercept, config.lambda_prior)

    def state_dict(self) -> dict:
        return super().state_dict() | {"stats": self.stats.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.stats.load_state_dict(state["stats"])

    @torch.no_grad()
    def latent(self, contexts: torch.Tensor, dropout: float = 0.0) -> torch.Tensor:
        """The features of contexts (n, B, d): (n, B, width [+ 1]), float64."""
        z = self.networks.features(contexts, dropout, self.generator).double()
        return torch.cat([z, torch.ones_like(z[..., :1])], dim=-1) if self.config.intercept else z

    def _latent_now(self, contexts: np.ndarray, acting: bool = False) -> np.ndarray:
        """The features of each bandit's context; ``acting`` as ``predict``'s."""
        x = torch.as_tensor(contexts, dtype=torch.float32, device=self.device).unsqueeze(1)
        return self.latent(x, self.dropout(acting))[:, 0].cpu().numpy()

    def observed(self, contexts, arms, rewards):
        self.stats.add(self._latent_now(contexts), arms, rewards)

    def trained(self):
        size = self.store.size
        self.stats.refit(self.latent(self.store.contexts[:, :size]), self.store.arms[:, :size],
                         self.store.rewards[:, :size])

    def choose(self, contexts):
        z = self._latent_now(contexts, acting=True)
        return argmax_random_ties(thompson_scores(self.stats, z, self.config.a0, self.config.b0, self.rng), self.rng)

    def greedy(self, contexts):
        return self.stats.predict(self._latent_now(contexts)).argmax(axis=1)


# -- bootstrap --------------------------------------------------------------------------------------------
class BootstrapNeural(NeuralBandit):
    Config = BootstrapNeuralConfig
    name = "bootstrap_neural"

    def __init__(self, config: BootstrapNeuralConfig, context: BuildContext):
        super().__init__(config, context, views=config.ensemble)

    def included(self):
        draw = torch.rand(self.n_bandits, self.views, generator=self.generator, device=self.device)
        return draw < self.config.add_probability

    def choose(self, contexts):
        member = self.rng.integers(self.views, size=self.n_bandits)
        return argmax_random_ties(self.predict(contexts, acting=True)[np.arange(self.n_bandits), member], self.rng)


# -- noise sampling ---------------------------------------------------------------------------------------
class NoiseSampling(NeuralBandit):
    """Each bandit's noise std is its own (``noise_std`` in checkpoints); so is the noise of ``resample:
    round``, kept until the next round."""

    Config = NoiseSamplingConfig
    name = "noise_sampling"

    def __init__(self, config: NoiseSamplingConfig, context: BuildContext):
        super().__init__(config, context)
        self.noise_std = np.full(self.n_bandits, config.noise_std)
        self.noise = self.draw_noise()

    def draw_noise(self) -> list[torch.Tensor]:
        std = torch.as_tensor(self.noise_std, dtype=torch.float32, device=self.device)
        return [torch.randn(p.shape, generator=self.generator, device=self.device) * std.view(-1, *[1] * (p.dim() - 1))
                for p in self.networks.parameter_list()]

    def trained(self):
        if self.config.noise_target is not None:
            self.adapt()
        if self.config.resample == "round":
            self.noise = self.draw_noise()

    @torch.no_grad()
    def adapt(self) -> None:
        """The noise grows while the noisy network is closer to the clean one than the target, else shrinks:
        closeness measured on ``noise_batch_size`` stored contexts as the share whose best arm the noise
        changes, or (``kl``, Plappert et al.'s rule) as the KL divergence of the softmaxes of the predictions,
        against that of greedy from epsilon-greedy, -log(1 - epsilon + epsilon / arms)."""
        rows = torch.randint(self.store.size, (self.n_bandits, self.config.noise_batch_size),
                             generator=self.generator, device=self.device)
        x = self.store.contexts[torch.arange(self.n_bandits, device=self.device)[:, None], rows]
        clean, noisy = self.networks(x), self.networks(x, self.draw_noise())
        epsilon = self.config.noise_target
        if self.config.noise_measure == "kl":
            target = -math.log(1 - epsilon + epsilon / self.arms)
            clean, noisy = torch.log_softmax(clean, dim=-1), torch.log_softmax(noisy, dim=-1)
            distance = (clean.exp() * (clean - noisy)).sum(-1).mean(-1).cpu().numpy()  # (n,)
        else:
            target = epsilon
            distance = (clean.argmax(-1) != noisy.argmax(-1)).float().mean(-1).cpu().numpy()
        self.noise_std = np.where(distance < target, self.noise_std * self.config.noise_adapt,
                                  self.noise_std / self.config.noise_adapt)
        if self.logger is not None and self.logger.wants_debug(self.rounds):
            self.logger.add_scalar("debug/noise_std", float(self.noise_std.mean()))

    def choose(self, contexts):
        if self.config.resample == "pull":
            self.noise = self.draw_noise()
        return argmax_random_ties(self.predict(contexts, self.noise, acting=True)[:, 0], self.rng)

    def state_dict(self) -> dict:
        return super().state_dict() | arrays_state(self, ("noise_std",)) | {"noise": [n.clone() for n in self.noise]}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        load_arrays(self, ("noise_std",), state)
        self.noise = [n.to(self.device) for n in state["noise"]]
