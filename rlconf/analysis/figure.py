"""The figure: a panel of learning curves per env (its own metric on its y axis, a line per configuration)
and, on request, a row of aggregate panels (IQM, median and mean, and of human-normalised scores the optimality
gap, with their intervals, and performance profiles).

No line may hide another: each configuration has its colour, line style and marker shape in every panel,
lines drawn first are drawn wider (two runs that coincide show as a line inside a wider one), markers sit at
staggered points, a curve of one point is a marker, and the legend lies below its panel, not over its lines.
A legend says what is shaded only where something is.

matplotlib is imported only here and only inside functions: ``rlconf list`` and training never load it.
The figure is drawn on an Agg canvas of its own (no pyplot, no global backend switched), so a caller's
interactive backend is left alone.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from rlconf.analysis.aggregate import AgentAggregate, Aggregate
from rlconf.analysis.curves import Panel
from rlconf.analysis.runs import AnalysisError
from rlconf.analysis.stats import CONFIDENCE, STATISTICS
from rlconf.files import atomic_write

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MATPLOTLIB_MISSING = "rlconf plot needs matplotlib: pip install 'rlconf[plot]'"
DPI = 100
MAX_COLUMNS = 3  # env panels per row
CURVE_PANEL = (5.0, 3.6)  # inches, without its legend
LEGEND_ROW = 0.2  # inches per line of a legend below a panel
LEGEND_CHARS = 72  # characters a legend line below a panel holds: longer labels wrap (a layout would otherwise
#                    shrink the panel to the width of the longest one)
AGGREGATE_PANEL = (4.0, 3.4)
AGGREGATE_PANELS = len(STATISTICS) + 1  # one per statistic, then the performance profiles
STATISTIC_TITLES = {"median": "median (of per-env means)",  # rliable's aggregate median
                    "optimality gap": "optimality gap (lower is better)"}
MARKERS = "osD^vP*Xph<>"
LINE_STYLES = ("-", "--", ":", "-.")
MARKS_PER_CURVE = 8
WIDEST, NARROWEST = 3.6, 1.4  # line widths of the first and the last line drawn in a panel


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise AnalysisError(MATPLOTLIB_MISSING) from None


def curve_grid(envs: int) -> tuple[int, int]:
    """(rows, columns) of the env panels (none: a figure of the aggregate alone)."""
    if envs == 0:
        return 0, 0
    columns = min(envs, MAX_COLUMNS)
    return math.ceil(envs / columns), columns


def legend_entry(label: str, runs: int) -> str:
    """A configuration's legend entry, with its number of runs, wrapped to the panel's width."""
    return textwrap.fill(f"{label} ({runs})", LEGEND_CHARS, subsequent_indent="    ", break_on_hyphens=False)


def legend_lines(panels: list[Panel]) -> int:
    """The most lines a panel's legend has: its configurations' wrapped entries, and its title if it has one."""
    return max((sum(legend_entry(b.label, b.count).count("\n") + 1 for b in p.bands) + any(b.shaded for b in p.bands)
                for p in panels), default=0)


def curve_panel_height(legend_rows: int) -> float:
    return CURVE_PANEL[1] + LEGEND_ROW * (legend_rows + 1)


def figure_size(envs: int, aggregate: bool, legend_rows: int = 1,
                aggregate_panels: int = AGGREGATE_PANELS) -> tuple[float, float]:
    """Inches (width, height); the PNG is ``DPI`` pixels per inch. ``legend_rows``: the lines of the
    longest legend below a panel; ``aggregate_panels``: a statistic's each, and the profiles'."""
    rows, columns = curve_grid(envs)
    width, height = columns * CURVE_PANEL[0], rows * curve_panel_height(legend_rows) + 0.5  # + the title
    if aggregate:
        width = max(width, aggregate_panels * AGGREGATE_PANEL[0])
        height += AGGREGATE_PANEL[1] + 0.4
    return width, height


def styles(labels: list[str]) -> dict[str, dict]:
    """The same colour, line style and marker for a configuration in every panel: tab10's colours (tab20's
    beyond 10 configurations), then the next line style."""
    from matplotlib import colormaps

    palette = colormaps["tab10" if len(labels) <= 10 else "tab20"]
    return {label: {"color": palette(i % palette.N), "linestyle": LINE_STYLES[i // palette.N % len(LINE_STYLES)],
                    "marker": MARKERS[i % len(MARKERS)]} for i, label in enumerate(sorted(labels))}


def draw(panels: list[Panel], aggregate: Aggregate | None, title: str, window: int) -> Figure:
    from matplotlib.figure import Figure

    labels = {b.label for p in panels for b in p.bands} | {a.label for a in (aggregate.agents if aggregate else [])}
    style = styles(sorted(labels))
    legend_rows = legend_lines(panels)
    panel_count = len(aggregate.statistics) + 1 if aggregate else AGGREGATE_PANELS
    figure = Figure(figsize=figure_size(len(panels), aggregate is not None, legend_rows, panel_count), dpi=DPI,
                    layout="constrained")
    figure.suptitle(title)
    if aggregate is None:
        curves_part = figure
    elif not panels:  # scores without curves (a suite's report, from its tests)
        draw_aggregate(figure.subfigures(1, 1), aggregate, style)
        return figure
    else:
        rows, _ = curve_grid(len(panels))
        curves_part, aggregate_part = figure.subfigures(2, 1, height_ratios=[rows * curve_panel_height(legend_rows),
                                                                            AGGREGATE_PANEL[1]])
        draw_aggregate(aggregate_part, aggregate, style)
    draw_curves(curves_part, panels, window, style)
    return figure


def _short_count(value: float, _position=None) -> str:
    """A tick label for a count of steps: 0, 500, 20k, 250k, 1M, 2.5M."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def marks(points: int, rank: int, lines: int) -> list[int]:
    """Where the ``rank``-th of ``lines`` lines of a panel puts its markers: about ``MARKS_PER_CURVE`` points,
    each line starting at another offset so that lines on top of each other show every marker, and the
    last point (where the run ended)."""
    spacing = max(1, points // MARKS_PER_CURVE)
    return sorted(set(range(rank * spacing // max(lines, 1), points, spacing)) | {points - 1})


def draw_curves(part, panels: list[Panel], window: int, style: dict[str, dict]) -> None:
    rows, columns = curve_grid(len(panels))
    axes = part.subplots(rows, columns, squeeze=False).ravel()
    for ax, panel in zip(axes, panels, strict=False):
        lines = len(panel.bands)
        for rank, band in enumerate(panel.bands):
            wide = (lines - 1 - rank) / max(lines - 1, 1)  # 1 for the first line drawn, 0 for the last
            ax.plot(band.steps, band.mean, **style[band.label], markevery=marks(len(band.steps), rank, lines),
                    linewidth=NARROWEST + (WIDEST - NARROWEST) * wide,
                    markersize=(4 + 3 * wide) * (1.5 if len(band.steps) == 1 else 1),  # a lone point: larger
                    label=legend_entry(band.label, band.count))
            if band.shaded:
                ax.fill_between(band.steps, band.lower, band.upper, color=style[band.label]["color"], alpha=0.2,
                                linewidth=0)
        ax.set_title(panel.env)
        ax.xaxis.set_major_formatter(_short_count)  # 250k, 1.5M: seven-digit ticks run into each other
        ax.set_xlabel("env steps")
        ax.set_ylabel(panel.source.label.format(window=window))
        ax.grid(alpha=0.3)
        shaded = next((band.spread for band in panel.bands if band.shaded), None)
        ax.legend(title=f"shaded: {shaded}" if shaded else None, fontsize="small", title_fontsize="small",
                  loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    for ax in axes[len(panels):]:
        ax.set_visible(False)


def draw_aggregate(part, aggregate: Aggregate, style: dict[str, dict]) -> None:
    runs = sum(a.runs for a in aggregate.agents)
    part.suptitle(f"final scores of {runs} runs: {CONFIDENCE:.0%} intervals from a stratified bootstrap "
                  f"({aggregate.reps} resamples)", fontsize="medium")
    axes = part.subplots(1, len(aggregate.statistics) + 1)
    for ax, statistic in zip(axes, aggregate.statistics, strict=False):
        draw_intervals(ax, statistic, aggregate.agents, style)
        ax.set_xlabel(aggregate.score_label)
    draw_profiles(axes[-1], aggregate, style)


def draw_intervals(ax: Axes, statistic: str, agents: list[AgentAggregate], style: dict[str, dict]) -> None:
    for row, agent in enumerate(agents):
        estimate = agent.estimates[statistic]
        below, above = max(0.0, estimate.value - estimate.ci_low), max(0.0, estimate.ci_high - estimate.value)
        ax.errorbar(estimate.value, row, xerr=[[below], [above]], fmt=style[agent.label]["marker"],
                    color=style[agent.label]["color"], capsize=4)
    ax.set_yticks(range(len(agents)), [agent.label for agent in agents])
    ax.set_ylim(len(agents) - 0.5, -0.5)  # the first configuration on top
    ax.set_title(STATISTIC_TITLES.get(statistic, statistic))
    ax.grid(axis="x", alpha=0.3)


def draw_profiles(ax: Axes, aggregate: Aggregate, style: dict[str, dict]) -> None:
    for agent in aggregate.agents:
        profile = agent.profile
        ax.plot(profile.taus, profile.fraction, color=style[agent.label]["color"],
                linestyle=style[agent.label]["linestyle"], label=agent.label)
        ax.fill_between(profile.taus, profile.ci_low, profile.ci_high, color=style[agent.label]["color"],
                        alpha=0.25, linewidth=0)
    ax.set_title("performance profile")
    ax.set_xlabel(f"{aggregate.score_label} τ")
    ax.set_ylabel("fraction of runs > τ")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def save_png(figure: Figure, path: Path) -> None:
    """Render on an Agg canvas into a temporary file beside ``path``, then rename it into place."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    atomic_write(path, lambda tmp: figure.savefig(tmp, format="png", dpi=DPI))
