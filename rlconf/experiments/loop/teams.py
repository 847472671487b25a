"""Team runs (``EnvKind.TEAM``): the single-agent loop over copies of a game whose agents act at once.

``state = env.step(agent.act(state))`` as ever, with a ``TeamState`` for ``state`` and a dict of each group's
actions for the agent's answer. A finished episode's ``return`` is the team's: the mean over all its agents of
each agent's return (what BenchMARL and marl-eval report for one group); episodes.csv adds a ``return/<group>``
column for each group (its agents' mean), TensorBoard and wandb ``train/return/<group>``.
"""

from __future__ import annotations

from rlconf.experiments.loop.experiment import Experiment


class TeamExperiment(Experiment):
    """``Experiment`` for a team agent in a team environment (see the module's docstring)."""

    def _episode_returns(self, episode) -> tuple[float, dict[str, float]]:
        return episode.returns, episode.group_returns
