"""PPO (rlconf.agents.ppo): its schema and what it declares."""

from __future__ import annotations

from dataclasses import dataclass

from rlconf import registry
from rlconf.agents.specs._defaults import agent_defaults
from rlconf.agents.specs._policy_gradient import PolicyGradientConfig, StateDependentExploration
from rlconf.agents.specs._spec import AgentSpec
from rlconf.agents.specs.a2c import ROLLOUT
from rlconf.errors import require


@dataclass
@agent_defaults("ppo")
class PPOConfig(PolicyGradientConfig, StateDependentExploration):
    lam: float
    clip: float
    clip_final: float | None
    n_steps: int
    epochs: int
    batch_size: int
    normalize_advantages: bool
    sequence_length: int | None  # with a recurrent trunk: minibatches of segments this long (null: whole chunks)

    def __post_init__(self):
        super().__post_init__()
        require(0 <= self.lam <= 1, "agent.lam", self.lam, "must be in [0, 1]")
        for key in ("n_steps", "epochs", "batch_size"):
            require(getattr(self, key) >= 1, f"agent.{key}", getattr(self, key), "must be at least 1")
        require(self.clip > 0, "agent.clip", self.clip, "must be positive")
        if self.sequence_length is not None:
            require(self.sequence_length >= 1 and self.n_steps % self.sequence_length == 0,
                    "agent.sequence_length", self.sequence_length,
                    f"must divide agent.n_steps={self.n_steps} (or null: each environment's whole chunk)")



# With a recurrent core, a minibatch of chunks that holds no transition is skipped (PPO._update_sequences):
# learners would not step together.
registry.built_in(AgentSpec("ppo", "rlconf.agents.ppo:PPO", PPOConfig,
                            "Proximal Policy Optimisation: clipped surrogate, GAE, parallel envs", **ROLLOUT,
                            data_parallel_recurrent=False))
