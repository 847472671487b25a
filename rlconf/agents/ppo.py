"""PPO (Schulman et al. 2017): clipped policy-gradient updates on GAE advantages from parallel environments.

The agent collects ``n_steps`` steps from each of its ``n_envs`` environments, computes generalised advantage
estimates, then runs ``epochs`` passes of minibatch updates maximising the clipped surrogate
``min(ratio * A, clip(ratio, 1 - clip, 1 + clip) * A)`` plus an entropy bonus, and regresses the value head on
the returns. Policy and value heads sit on shared features or on a trunk each (``approximation.shared``).
Discrete actions get a softmax policy, Box actions a Gaussian (``_policy_gradient.build_networks``).

With a recurrent trunk (``approximation.recurrent``, as CleanRL's ppo_atari_lstm and SB3-contrib's
RecurrentPPO) the updates are truncated backpropagation through time over sequences: by default each
environment's whole chunk of the rollout (CleanRL's), or with ``sequence_length`` the chunks cut into segments
of that many steps (SB3-contrib's minibatches of ``batch_size`` consecutive steps). A minibatch is
``batch_size // length`` sequences (at least one), each unrolled from the recurrent state acting had before its
first row, with the state zeroed where an episode begins; the losses are means over its transitions, whose
advantages are normalised over the minibatch. (SB3-contrib also cuts sequences at episode ends and pads them:
the same gradients, more bookkeeping.) Segments matter where rollouts are long: on Pendulum without its velocity
(4 environments x 1,024 steps, minibatches of 128) whole chunks make 40 updates a rollout, segments of 128 make
RecurrentPPO's 320.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from rlconf import distributed
from rlconf.agents._agent import BuildContext
from rlconf.agents._policy_gradient import RolloutPolicyGradient, normalized
from rlconf.agents.specs.ppo import PPOConfig
from rlconf.approximation import Approximation, VNetwork
from rlconf.memory import GeneralizedAdvantageBuffer, Rollout, SequenceRollout
from rlconf.optim import Clock, LinearScheduler, schedule
from rlconf.policies import StochasticPolicy


def minibatch_indices(order: torch.Tensor, size: int, count: int) -> list[torch.Tensor]:
    """``order`` cut into minibatches of ``size`` (the last one smaller); with several data-parallel learners,
    into ``count`` minibatches of nearly equal sizes, as many on every learner."""
    if not distributed.active():
        return [order[start : start + size] for start in range(0, len(order), size)]
    return list(torch.tensor_split(order, count))


class PPO(RolloutPolicyGradient):
    Config = PPOConfig

    def __init__(self, features: Approximation, policy: StochasticPolicy, v: VNetwork, clock: Clock,
                 config: PPOConfig, device: torch.device | str = "cpu", seed: int = 0, *,
                 buffer: GeneralizedAdvantageBuffer, clip: float | LinearScheduler, frame_lanes: int = 1):
        super().__init__(features, policy, v, clock, config, device, seed, buffer)
        self.clip = clip
        self.frame_lanes = frame_lanes  # BuildContext.frame_lanes: minibatches of whole frames

    @classmethod
    def extras(cls, config: PPOConfig, context: BuildContext, clock: Clock) -> dict[str, Any]:
        return {"buffer": cls.rollout_buffer(config, context, lam=config.lam),
                "clip": schedule(config.clip, config.clip_final, context.total_steps, clock, "clip"),
                "frame_lanes": context.frame_lanes}

    def _train(self) -> None:
        with torch.no_grad():
            if self.carried is None:
                features = self._rollout_features(self.features.no_grad, self.buffer.observation)
            else:  # whole chunks are one segment each: the same single unroll
                length = self.config.sequence_length or self.config.n_steps
                features, starts = self._segment_features(self.features.no_grad, self.buffer.observation, length)
            values = self.v.no_grad(features.flatten(0, 1)).view(features.shape[:2])
        if self.carried is not None:
            self._train_on_sequences(self.buffer.sequences(values).segments(length, starts))
            return
        rollout = self.buffer.rollout(values)
        n, size = rollout.size, self.config.batch_size
        # A rollout's size is its transitions (reset steps excluded), which differ between data-parallel
        # learners: they agree on the number of minibatches, as each of their updates is a step of all.
        count = distributed.agree_max(-(-n // size))
        if count == 0:  # every row was an episode's reset step (all environments ended together): nothing to learn
            return
        if count == 1:
            # One minibatch holds the whole rollout: its gradient does not depend on the order of the
            # samples, so shuffling, slicing and normalising once serve every epoch.
            rollout = self._normalized(rollout)
            for _ in range(self.config.epochs):
                self._update(rollout, self.features(rollout.observation))
            return
        for _ in range(self.config.epochs):
            for part in minibatch_indices(self._order(n), size, count):
                batch = self._normalized(rollout.rows(part))
                self._update(batch, self.features(batch.observation))

    def _order(self, n: int) -> torch.Tensor:
        """A random order of the rollout's ``n`` transitions; a team's, frame by frame (each frame's lanes side by
        side, as they lie in the rollout) where the rollout holds whole frames (none of whose agents finished
        alone), so that a minibatch is whole frames, as BenchMARL's are."""
        lanes = self.frame_lanes
        if lanes == 1 or n % lanes:
            return torch.randperm(n, generator=self.generator, device=self.generator.device)
        frames = torch.randperm(n // lanes, generator=self.generator, device=self.generator.device)
        return (frames.unsqueeze(1) * lanes + torch.arange(lanes, device=frames.device)).flatten()

    def _train_on_sequences(self, rollout: SequenceRollout) -> None:
        """``epochs`` passes over the rollout's sequences (its columns: chunks or segments) in minibatches of
        ``batch_size // length`` of them, shuffled (one minibatch of all of them: no order to draw)."""
        count, per_batch = rollout.n_envs, max(1, self.config.batch_size // len(rollout.valid))
        for _ in range(self.config.epochs):
            if count <= per_batch:
                self._update_sequences(rollout)
                continue
            order = torch.randperm(count, generator=self.generator, device=self.generator.device)
            for start in range(0, count, per_batch):
                self._update_sequences(rollout.columns(order[start : start + per_batch]))

    def _update_sequences(self, sequences: SequenceRollout) -> None:
        """One update on whole sequences: the trunk unrolled over them with gradients, the losses on their
        transitions (a reset step after an episode's end has features but is no transition)."""
        if not sequences.valid.any():  # every row is an episode's reset step: nothing to learn from
            return
        features, _ = self.features(sequences.observation, sequences.start, sequences.resets)
        self._update(self._normalized(sequences.transitions()), features[sequences.valid])

    def _normalized(self, batch: Rollout) -> Rollout:
        if not self.config.normalize_advantages:
            return batch
        return batch._replace(advantage=normalized(batch.advantage))

    def _update(self, batch: Rollout, features: torch.Tensor) -> None:
        """One clipped-surrogate step on ``batch``, whose ``features`` (with gradients) the caller computed."""
        advantages = batch.advantage
        distribution = self.policy(features, mask=batch.action_mask)  # the masked distribution acting sampled
        ratio = torch.exp(distribution.log_prob(batch.action) - batch.log_prob)
        clip = float(self.clip)
        surrogate = torch.min(ratio * advantages, ratio.clamp(1.0 - clip, 1.0 + clip) * advantages)
        policy_loss = -surrogate.mean()
        if self.config.entropy_loss_scaling:
            policy_loss = policy_loss - self.config.entropy_loss_scaling * distribution.entropy().mean()
        self._log_update(distribution, ratio, clip)
        self._reinforce(policy_loss, F.mse_loss(self.v(features), batch.returns))

    def _log_update(self, distribution: Any, ratio: torch.Tensor, clip: float) -> None:
        """With ``verbose=true``, every ``logger.debug_every`` updates: the policy's entropy, the approximate KL
        from the acting policy (the mean of ``(r - 1) - log r``, Schulman's low-variance estimator) and the
        fraction of samples whose ratio the clip holds: what tells a policy that has stopped moving (ratios
        clipped, entropy collapsed) from one that has nothing left to learn. ``distribution``: the policy's
        (a DiagonalNormal, a Categorical or multi.distributions' product)."""
        logger = self.policy.logger
        if logger is None or not logger.wants_debug(self.policy.updates + 1):
            return
        with torch.no_grad():
            logger.add_scalars({"debug/entropy": distribution.entropy().mean().item(),
                                "debug/approx_kl": ((ratio - 1) - ratio.log()).mean().item(),
                                "debug/clip_fraction": ((ratio - 1).abs() > clip).float().mean().item()})

