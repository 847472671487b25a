"""Multi-agent runs: the single-agent loop, with each player's returns kept apart.

The loop is ``Experiment``'s own (``state = env.step(agent.act(state))`` is exactly PettingZoo's cycle of
turns); what differs is the bookkeeping:

- a finished game has a return per player. episodes.csv gets one row per game: ``return`` is the first
  player's (so ``rlconf plot`` and every tool reading ``return`` still read one curve), then a
  ``return/<player>`` column per player; TensorBoard and wandb get ``train/return/<player>``;
- a test plays the agent's ``test_matches``: self-play of the trained players, or (``agent.test_against``)
  each tested seat's trained agent against opponents in the other seats, the games shared evenly among the
  seats. Its returns (what summary.json's ``test_return_mean`` averages, and evaluations.csv) are the tested
  seat's, in self-play the first player's; ``test_details`` has every player's mean and, against opponents,
  the win-or-draw rate: the fraction of games whose tested seat's return is >= 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlconf.agents import Multiagent
from rlconf.experiments.loop.evaluate import evaluate
from rlconf.experiments.loop.experiment import TEST_SEED_OFFSET, Experiment

WIN_OR_DRAW = "eval/win_or_draw"


@dataclass
class MultiagentTest:
    """The games of one test: each with its tested seat (None in self-play) and every player's return."""

    players: list[str]
    games: list[tuple[str | None, dict[str, float]]]

    @property
    def returns(self) -> list[float]:
        """The tested seat's return in each game (in self-play, the first player's)."""
        return [returns[seat or self.players[0]] for seat, returns in self.games]

    def by_player(self) -> dict[str, list[float]]:
        """Each player's returns in the games where its trained agent played (all of them in self-play)."""
        found: dict[str, list[float]] = {}
        for seat, returns in self.games:
            for player in [seat] if seat else self.players:
                found.setdefault(player, []).append(returns[player])
        return found

    def details(self) -> dict[str, Any]:
        """For summary.json (``test_*`` keys) beside the tested seat's returns."""
        details: dict[str, Any] = {"test_return_by_agent": {p: _mean(r) for p, r in self.by_player().items()}}
        if self.games and self.games[0][0] is not None:  # against opponents: how often the tested seat held
            details["test_win_or_draw"] = _win_or_draw(self.returns)
            details["test_win_or_draw_by_agent"] = {p: _win_or_draw(r) for p, r in self.by_player().items()}
        return details


def play_test(agent: Multiagent, env, episodes: int, seed: int,
              report: Callable[[int, int], None] | None = None) -> MultiagentTest:
    """``episodes`` test games of ``agent`` in ``env``, shared evenly among its matches (the first matches
    play one more when they do not divide); match ``i`` is played with seed ``seed + i``. ``report(done,
    stalled)``: as ``evaluate`` calls it, counting the games of every match."""
    matches = agent.test_matches()
    games: list[tuple[str | None, dict[str, float]]] = []
    for i, match in enumerate(matches):
        count = episodes // len(matches) + (i < episodes % len(matches))
        played = len(games)
        counted = None if report is None else lambda done, stalled, played=played: report(played + done, stalled)
        games += [(match.seat, returns) for returns in evaluate(match.agent, env, count, seed=seed + i,
                                                                report=counted)]
    return MultiagentTest(list(env.agents), games)


class MultiagentExperiment(Experiment):
    """``Experiment`` for a ``Multiagent`` in a multi-agent environment (see the module's docstring)."""

    def _episode_returns(self, episode) -> tuple[float, dict[str, float]]:
        return episode.returns[self.env.agents[0]], episode.returns

    def test(self, episodes: int, report: Callable[[int, int], None] | None = None) -> list[float]:
        result = play_test(self.agent, self.test_env(), episodes, seed=self.seed + TEST_SEED_OFFSET, report=report)
        self.test_details = result.details() if result.games else {}
        return result.returns

    def evaluate(self) -> None:
        super().evaluate()  # the tested seat's returns: evaluations.csv, eval/return_*
        by_agent = self.test_details.get("test_return_by_agent", {})
        values = {f"eval/return_mean/{player}": mean for player, mean in by_agent.items()}
        if "test_win_or_draw" in self.test_details:
            values[WIN_OR_DRAW] = self.test_details["test_win_or_draw"]
        self.logger.add_scalars(values, self.env.steps)


def _mean(values: list[float]) -> float:
    return float(np.mean(values))


def _win_or_draw(returns: list[float]) -> float:
    return float(np.mean(np.asarray(returns) >= 0))
