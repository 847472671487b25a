"""The numbers behind the figure as CSV files beside it, so they can be quoted, tabulated or re-plotted.

Each file names what its interval or band shows (``spread``, ``normalize`` columns) and which configuration
(``config``: the agent and the settings its runs differ in) and metric a row is of: a number without that
cannot be read. Numbers are written at full precision; files are written atomically.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

from rlconf.analysis.aggregate import Aggregate
from rlconf.analysis.curves import Band
from rlconf.files import atomic_write

CURVE_FIELDS = ["env", "agent", "config", "metric", "step", "mean", "lower", "upper", "seeds", "spread"]
AGGREGATE_FIELDS = ["agent", "config", "statistic", "value", "ci_low", "ci_high", "runs", "tasks", "normalize"]
PROFILE_FIELDS = ["agent", "config", "tau", "fraction", "ci_low", "ci_high", "normalize"]


def number(x: float) -> str:
    return repr(float(x))


def write_csv(path: Path, fields: list[str], rows: Iterable[list]) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file)
            writer.writerow(fields)
            writer.writerows(rows)

    atomic_write(path, write)


def curve_rows(bands: list[Band]) -> Iterable[list]:
    for band in bands:
        for i, step in enumerate(band.steps):
            yield [band.env, band.agent, band.label, band.metric, int(step), number(band.mean[i]),
                   number(band.lower[i]), number(band.upper[i]), int(band.seeds[i]), band.point_spread(i)]


def aggregate_rows(aggregate: Aggregate) -> Iterable[list]:
    for agent in aggregate.agents:
        for statistic, estimate in agent.estimates.items():
            yield [agent.agent, agent.label, statistic, number(estimate.value), number(estimate.ci_low),
                   number(estimate.ci_high), agent.runs, agent.tasks, aggregate.normalize]


def profile_rows(aggregate: Aggregate) -> Iterable[list]:
    for agent in aggregate.agents:
        p = agent.profile
        for i, tau in enumerate(p.taus):
            yield [agent.agent, agent.label, number(tau), number(p.fraction[i]), number(p.ci_low[i]),
                   number(p.ci_high[i]), aggregate.normalize]


def output_paths(figure: Path) -> dict[str, Path]:
    """The files written for ``--out figure``: the figure, and CSVs beside it named after its stem
    (``figs/x.pdf``: ``figs/x_curves.csv`` ...)."""
    return {kind: figure if kind == "figure" else figure.with_name(f"{figure.stem}_{kind}.csv")
            for kind in ("figure", "curves", "aggregate", "profiles")}
