"""The fixed-arm baseline (``agent=fixed``): every bandit pulls ``agent.arm`` every time, as GenRL's FixedAgent
with all its probability on one arm. It learns nothing; its regret is the line a learning agent's curve should
leave behind (in a Bernoulli bandit, the arm's gap times the pulls)."""

from __future__ import annotations

import numpy as np

from rlconf.agents._agent import BuildContext
from rlconf.agents._bandit import BanditAgent
from rlconf.agents.specs.multi_armed import FixedConfig
from rlconf.errors import ConfigError
from rlconf.optim import Clock


class FixedArm(BanditAgent):
    Config = FixedConfig

    def __init__(self, n_bandits: int, arms: int, arm: int):
        super().__init__(n_bandits, arms, Clock())
        self.arm = arm

    @classmethod
    def from_config(cls, config: FixedConfig, context: BuildContext) -> FixedArm:
        arms = cls.check_context(context, "fixed")
        if config.arm >= arms:
            raise ConfigError(f"agent.arm={config.arm}: out of range; allowed: 0 to {arms - 1} "
                              f"(the env has {arms} arms)")
        return cls(context.n_envs, arms, config.arm)

    def generators(self):
        return {}  # draws nothing

    def learn(self, contexts, arms, rewards):
        pass  # a baseline learns nothing

    def choose(self, contexts):
        return np.full(len(contexts), self.arm, dtype=np.int64)

    def greedy(self, contexts):
        return self.choose(contexts)
