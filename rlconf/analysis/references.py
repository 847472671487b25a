"""Published reference scores shipped with rlconf (``rlconf/analysis/data/``): the random and human scores of
the Atari-57 games, which human-normalised scores are measured against, and Data-Efficient Rainbow's published
Atari 100k results, which a suite's report compares with.

A game is keyed by rlconf's env name (``atari/ms_pacman``: ``Run.env``), so a run finds its reference scores
without any renaming. Each data file says in its header where its numbers come from.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from rlconf.errors import AnalysisError

HUMAN_SCORES_FILE = "atari_human.csv"
DER_FILE = "der_atari100k.json"


@dataclass(frozen=True)
class HumanReference:
    """One game's reference points: ``random`` maps to 0 and ``human`` to 1."""

    env: str  # rlconf's name, ``atari/pong``
    game: str  # rliable's and Dopamine's, ``Pong``
    random: float
    human: float

    def normalize(self, scores: np.ndarray) -> np.ndarray:
        return (np.asarray(scores, dtype=float) - self.random) / (self.human - self.random)


@dataclass(frozen=True)
class PublishedEstimate:
    """A published aggregate; None where the source gives no number (no interval, or only a figure)."""

    value: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class PublishedAggregate:
    source: str
    runs_per_game: int | None
    statistics: dict[str, PublishedEstimate]  # "IQM", "median", "mean", "optimality gap"


@dataclass(frozen=True)
class PublishedSuite:
    """An agent's published results on a suite: mean score per game (by rlconf env name) and aggregates."""

    agent: str
    suite: str
    per_game_source: str
    per_game: dict[str, float]
    aggregates: list[PublishedAggregate]


def _data_text(name: str) -> str:
    return resources.files("rlconf.analysis").joinpath("data", name).read_text(encoding="utf-8")


@cache
def human_references() -> dict[str, HumanReference]:
    """env name -> its random and human scores, for the 57 games of the Atari-57 set (atari_human.csv)."""
    lines = [line for line in _data_text(HUMAN_SCORES_FILE).splitlines() if not line.startswith("#")]
    return {row["env"]: HumanReference(row["env"], row["game"], float(row["random"]), float(row["human"]))
            for row in csv.DictReader(lines)}


def require_human_references(envs: set[str]) -> dict[str, HumanReference]:
    """The references of ``envs``; an env without any is an error naming it and the envs that have them."""
    known = human_references()
    missing = sorted(envs - known.keys())
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise AnalysisError(
            f"--normalize human: no published human and random scores for env{plural} {', '.join(missing)}; "
            f"they exist for the {len(known)} Atari-57 games: {', '.join(sorted(known))}")
    return {env: known[env] for env in envs}


def human_normalize(scores: dict[str, dict[str, np.ndarray]]) -> dict[str, dict[str, np.ndarray]]:
    """env -> configuration -> scores, each as (score - random) / (human - random) of its env's game."""
    references = require_human_references(set(scores))
    return {env: {label: references[env].normalize(values) for label, values in by_label.items()}
            for env, by_label in scores.items()}


@cache
def der_atari100k_reference() -> PublishedSuite:
    """Data-Efficient Rainbow's published Atari 100k results (der_atari100k.json), for a suite's report.

    ``per_game``: the mean score of each of the 26 games (rlconf env names) from van Hasselt et al. (2019).
    ``aggregates``: the human-normalised summaries each source publishes, with its own source line: the 2019
    paper's median and mean, and Agarwal et al.'s (2021) 100-run re-evaluation. A number the source does not give
    in citable text (an interval, or a statistic shown only in a figure) is None, never an estimate of ours.
    """
    data = json.loads(_data_text(DER_FILE))
    aggregates = [PublishedAggregate(entry["source"], entry["runs_per_game"],
                                     {name: PublishedEstimate(e["value"], e["ci_low"], e["ci_high"])
                                      for name, e in entry["statistics"].items()})
                  for entry in data["aggregates"]]
    per_game = data["per_game"]
    return PublishedSuite("der", "atari100k", per_game["source"],
                          {env: float(score) for env, score in per_game["scores"].items()}, aggregates)
