"""Per configuration (an agent, and the settings its runs differ in: ``Run.label``): its runs' final scores
over envs, their IQM, median and mean (and, of human-normalised scores, the optimality gap) with
stratified-bootstrap intervals, and its performance profile.

A run's score is ``Run.score``: the final test return, or the mean of its last 10% of training episodes when
it has no test. Envs are the tasks the bootstrap stratifies by. Each configuration's resamples come from a
generator seeded by ``seed`` and its label, so its intervals do not change when others join the plot.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from rlconf.analysis.references import human_normalize
from rlconf.analysis.runs import Run
from rlconf.analysis.stats import (
    STATISTICS,
    TARGET_STATISTICS,
    Estimate,
    Profile,
    interval_estimates,
    minmax_normalize,
    performance_profile,
    stratified_resamples,
    tau_grid,
)

SCORE_LABELS = {"none": "test return", "minmax": "score (min-max normalised per env)",
                "human": "human-normalised score"}
NORMALIZERS = {"minmax": minmax_normalize, "human": human_normalize}  # "none": the scores as they are


@dataclass
class AgentAggregate:
    agent: str
    label: str  # the configuration
    runs: int
    tasks: int
    estimates: dict[str, Estimate]
    profile: Profile


@dataclass
class Aggregate:
    normalize: str  # "none", "minmax" or "human"
    reps: int
    agents: list[AgentAggregate]

    @property
    def score_label(self) -> str:
        return SCORE_LABELS[self.normalize]

    @property
    def statistics(self) -> list[str]:
        """The statistics each configuration has, in the order reported."""
        return list(statistics_of(self.normalize))


def statistics_of(normalize: str) -> dict:
    """The optimality gap needs a target of 1, which only human-normalised scores have (see ``stats``)."""
    return TARGET_STATISTICS if normalize == "human" else STATISTICS


def scores_by_env(runs: list[Run]) -> dict[str, dict[str, np.ndarray]]:
    """env -> configuration (label) -> the scores of its runs."""
    table: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        table.setdefault(run.env, {}).setdefault(run.label or run.agent, []).append(run.score)
    return {env: {agent: np.asarray(s) for agent, s in by_agent.items()} for env, by_agent in table.items()}


def agent_rng(seed: int, agent: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(agent.encode())])


def aggregate(runs: list[Run], normalize: str, reps: int, seed: int) -> Aggregate:
    """``normalize`` is ``none``, ``minmax`` or ``human`` (see ``stats.resolve_normalization`` for ``auto``)."""
    scores = scores_by_env(runs)
    if normalize in NORMALIZERS:
        scores = NORMALIZERS[normalize](scores)
    taus = tau_grid(np.concatenate([s for by_agent in scores.values() for s in by_agent.values()]))
    agents = []
    agent_of = {run.label or run.agent: run.agent for run in runs}
    for label in sorted(agent_of):
        by_task = [scores[env][label] for env in sorted(scores) if label in scores[env]]
        resamples = stratified_resamples(by_task, reps, agent_rng(seed, label))
        agents.append(AgentAggregate(agent_of[label], label, sum(len(t) for t in by_task), len(by_task),
                                     interval_estimates(by_task, resamples, statistics_of(normalize)),
                                     performance_profile(by_task, resamples, taus)))
    return Aggregate(normalize, reps, agents)
