"""Team runs (``EnvKind.TEAM``): the single-agent loop over copies of a game whose agents act at once.

``state = env.step(agent.act(state))`` as ever, with a ``TeamState`` for ``state`` and a dict of each group's
actions for the agent's answer. A finished episode's ``return`` is the team's: the mean over all its agents of
each agent's return (what BenchMARL and marl-eval report for one group); episodes.csv adds a ``return/<group>``
column for each group (its agents' mean), TensorBoard and wandb ``train/return/<group>``. A test's returns are
the team's too; summary.json adds ``test_return_by_group``, and each periodic evaluation logs
``eval/return_mean/<group>`` beside the team's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rlconf.experiments.loop.evaluate import evaluate
from rlconf.experiments.loop.experiment import TEST_SEED_OFFSET, Experiment


class TeamExperiment(Experiment):
    """``Experiment`` for a team agent in a team environment (see the module's docstring)."""

    def _episode_returns(self, episode) -> tuple[float, dict[str, float]]:
        return episode.returns, episode.group_returns

    def test(self, episodes: int, report: Callable[[int, int], None] | None = None) -> list[float]:
        played: list = []
        returns = evaluate(self.agent.test_agent(), self.test_env(), episodes, seed=self.seed + TEST_SEED_OFFSET,
                           report=report, kept=played)
        groups = played[0].group_returns if played else {}
        self.test_details = {"test_return_by_group": {
            group: float(np.mean([episode.group_returns[group] for episode in played])) for group in groups}}
        return returns

    def evaluate(self) -> None:
        super().evaluate()  # the team's returns: evaluations.csv, eval/return_*
        by_group = self.test_details.get("test_return_by_group", {})
        self.logger.add_scalars({f"eval/return_mean/{group}": mean for group, mean in by_group.items()},
                                self.env.steps)
