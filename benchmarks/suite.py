"""A suite's report: every game's final tests beside the published per-game means, and the aggregate of
human-normalised scores (IQM, median, mean, optimality gap with stratified-bootstrap 95% intervals, and the
performance profile) beside the published agent's, as Agarwal et al. (2021) report Atari 100k.

learning.py trains a suite (``python benchmarks/learning.py --suite atari100k-der``) and calls ``write`` with
the final tests of every run it has, from the run directories or from the committed tests.csv: the report
is drawn from the tests alone, so ``--report`` rebuilds it on a fresh clone, where no run directory is. Where it
writes the committed results it also rewrites the README's copy of the report (``readme_block``), between two
markers that the README's hand-written text keeps around it.

The published agent's per-game means (one number a game: no interval) enter the aggregate as one run a game,
so that the same statistics are computed the same way on both; the aggregates the sources publish themselves
(their own number of runs a game) are listed beside them and marked on the figure.
"""

from __future__ import annotations

import contextlib
import math
import statistics
from pathlib import Path

import numpy as np

from rlconf.analysis.aggregate import Aggregate, aggregate
from rlconf.analysis.references import PublishedSuite, human_references
from rlconf.analysis.runs import Run
from rlconf.files import write_text

REPS = 2000  # bootstrap resamples, as rlconf plot's default
# A game whose mean is below FAR_BELOW of the published agent's human-normalised score is named, where that agent
# plays above random (ABOVE_RANDOM of the way from random to human): under that, as on Boxing (0.2 against
# random's 0.1 and human's 12.1), "half of it" is within the noise of random play.
FAR_BELOW = 0.5
ABOVE_RANDOM = 0.05


def runs_of(tests: list[dict[str, object]], label: str) -> list[Run]:
    """Final tests as the aggregate's runs: only their env, seed and score matter to it."""
    return [Run(Path(label), label, str(t["env"]), int(t["seed"]), np.empty(0), np.empty(0),
                {"test_return_mean": float(t["test_return_mean"])}, label=label) for t in tests]


def published_runs(reference: PublishedSuite, envs: list[str], label: str) -> list[Run]:
    """The published per-game means of ``envs`` as one run a game."""
    return runs_of([{"env": env, "seed": 0, "test_return_mean": reference.per_game[env]} for env in envs
                    if env in reference.per_game], label)


def suite_aggregate(tests: list[dict[str, object]], reference: PublishedSuite, ours: str, theirs: str) -> Aggregate:
    """Both agents' aggregates over the games rlconf has finished (every seed's test is a run)."""
    envs = sorted({str(t["env"]) for t in tests})
    return aggregate([*runs_of(tests, ours), *published_runs(reference, envs, theirs)], "human", REPS, seed=0)


def short(source: str) -> str:
    """A source's authors and year, ``Agarwal et al. (2021)``: its text up to the first closing parenthesis."""
    return source[: source.index(")") + 1] if ")" in source else source


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def _interval(estimate) -> str:
    return f"{estimate.value:.3f} [{estimate.ci_low:.3f}, {estimate.ci_high:.3f}]"


def game_lines(tests: list[dict[str, object]], reference: PublishedSuite,
               seeds: list[int]) -> tuple[list[str], list[str]]:
    """The per-game table's lines, and the games far below the published agent (with their scores)."""
    humans = human_references()
    lines = [f"| game | rlconf: {', '.join(f's{s}' for s in seeds)} | rlconf mean | published | rlconf normalised "
             "| published normalised |", "|---|---|--:|--:|--:|--:|"]
    far = []
    for env in sorted({str(t["env"]) for t in tests} | set(reference.per_game)):
        mine = {int(t["seed"]): float(t["test_return_mean"]) for t in tests if t["env"] == env}
        published = reference.per_game.get(env)
        human = humans[env]
        each = ", ".join(_number(mine[s]) if s in mine else "–" for s in seeds)
        mean = statistics.fmean(mine.values()) if mine else math.nan
        theirs = math.nan if published is None else float(human.normalize(published))
        ours = float(human.normalize(mean)) if mine else math.nan
        lines.append(f"| {human.game} | {each} | {_number(mean) if mine else '–'} | "
                     f"{'–' if published is None else _number(published)} | "
                     f"{'–' if not mine else f'{ours:.3f}'} | {'–' if published is None else f'{theirs:.3f}'} |")
        if mine and published is not None and theirs >= ABOVE_RANDOM and ours < FAR_BELOW * theirs:
            far.append(f"{human.game} ({_number(mean)} against {_number(published)})")
    return lines, far


def aggregate_lines(result: Aggregate, reference: PublishedSuite) -> list[str]:
    """Each agent's aggregates with their intervals, then what the sources publish."""
    lines = ["| | " + " | ".join(result.statistics) + " |", "|---|" + "--:|" * len(result.statistics)]
    for agent in result.agents:
        lines.append(f"| {agent.label} ({agent.runs} runs, {agent.tasks} games) | "
                     + " | ".join(_interval(agent.estimates[s]) for s in result.statistics) + " |")
    for published in reference.aggregates:
        cells = []
        for s in result.statistics:
            e = published.statistics.get(s)
            if e is None or e.value is None:
                cells.append("–")
            elif e.ci_low is None:
                cells.append(f"{e.value:.3f}")
            else:
                cells.append(f"{e.value:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]")
        runs = f"{published.runs_per_game} runs a game" if published.runs_per_game else "runs a game not given"
        lines.append(f"| published: {short(published.source)} ({runs}) | " + " | ".join(cells) + " |")
    lines += ["", "Sources of the published aggregates:", "",
              *(f"- {published.source}" for published in reference.aggregates)]  # each source names itself first
    return lines


def table(name: str, budget: str, tests: list[dict[str, object]], reference: PublishedSuite, seeds: list[int],
          result: Aggregate | None) -> str:
    games, far = game_lines(tests, reference, seeds)
    done = len({str(t["env"]) for t in tests})
    source = reference.per_game_source.rstrip(".")
    # The title and a blank line, then the report: docs/algorithms/rainbow.md includes the file from its third line.
    header = [f"# {name}: {len(tests)} finished runs on {done} of {len(reference.per_game)} games, budget {budget}",
              "", f"Final tests (mean return of the test episodes) per seed; published: {source}. "
              "Normalised: (score - random) / (human - random), rlconf/analysis/data/atari_human.csv.", "", *games]
    if result is not None:
        header += ["", f"Aggregates of human-normalised scores over the {done} games rlconf has finished, 95% "
                   f"stratified-bootstrap intervals ({REPS} resamples); the published per-game means of those games "
                   f"enter as one run a game; the sources' own aggregates are over all {len(reference.per_game)}:", "",
                   *aggregate_lines(result, reference)]
    if far:
        header += ["", f"Below half the published normalised score (of the games where it is {ABOVE_RANDOM} or more): "
                   f"{'; '.join(far)}."]
    return "\n".join(header) + "\n"


def figure(result: Aggregate, reference: PublishedSuite, title: str, png: Path) -> None:
    """rlconf plot's aggregate panels for both agents, the sources' own aggregates as dashed lines."""
    from rlconf.analysis.figure import draw, save_png

    drawn = draw([], result, title, window=1)
    axes = drawn.axes
    for ax, statistic in zip(axes, result.statistics, strict=False):
        for i, published in enumerate(reference.aggregates):
            e = published.statistics.get(statistic)
            if e is not None and e.value is not None:
                ax.axvline(e.value, color="grey", linestyle=("--", ":")[i % 2], linewidth=1,
                           label=f"published: {short(published.source)}")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small", loc="lower left")
    save_png(drawn, png)


def write(name: str, budget: str, tests: list[dict[str, object]], reference: PublishedSuite, seeds: list[int],
          out: Path) -> str:
    """table.md and aggregate.png in ``out``; returns the table."""
    out.mkdir(parents=True, exist_ok=True)
    result = None
    if tests:
        result = suite_aggregate(tests, reference, "rlconf", f"{reference.agent.upper()} (published means)")
        with contextlib.suppress(ImportError):  # matplotlib is the plot extra's: then the table comes alone
            figure(result, reference, f"{name}: rlconf and the published {reference.agent.upper()}",
                   out / "aggregate.png")
    text = table(name, budget, tests, reference, seeds, result)
    write_text(out / "table.md", text)
    return text


def readme_markers(name: str) -> tuple[str, str]:
    """The lines that open and close the README's copy of suite ``name``'s report."""
    return (f"<!-- the {name} report: written by python benchmarks/learning.py --suite {name} --report -->",
            f"<!-- end of the {name} report -->")


def readme_block(name: str, table_text: str, figure: str) -> str:
    """The README's copy of the report ``table_text`` (table.md): its title as a bold line, the rest as it is,
    then the figure (``figure``: its path from the README), between the markers."""
    title, _, report = table_text.partition("\n\n")
    begin, end = readme_markers(name)
    return (f"{begin}\n**{title.removeprefix('# ')}**\n\n{report.rstrip()}\n\n"
            f"![{name}: aggregates of human-normalised scores, rlconf and the published agent]({figure})\n{end}")


def with_readme_block(readme: str, name: str, block: str) -> str | None:
    """The README text ``readme`` with its copy of suite ``name``'s report replaced by ``block``; None where the
    README has no place for it (its markers)."""
    begin, end = readme_markers(name)
    start, stop = readme.find(begin), readme.find(end)
    if start < 0 or stop < start:
        return None
    return readme[:start] + block + readme[stop + len(end):]
