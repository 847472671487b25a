"""The figure: a panel of learning curves per env (its own metric on its y axis, a line per configuration)
and, on request, a row of aggregate panels (IQM, median and mean, and of human-normalised scores the optimality
gap, with their intervals, and performance profiles), sized and lettered by a ``styles.Style``.

One legend serves the whole figure, below its panels: a configuration has the same colour, line style and
marker shape in every panel, and its entry says how many seeds its points average (a range where some hold
fewer: ``curves.seed_count``); its title says what is shaded, where anything is. Every line has the same
width; none hides another, as its markers sit at points staggered from the other lines' (two runs that
coincide show both lines' markers); a curve of one point is a marker, with an error bar where it averages
several runs. Panels count steps from 0, or on a log axis (``log_x``, ``log_y``: a bandit's regret against
log pulls).

matplotlib is imported only here and only inside functions: ``rlconf list`` and training never load it.
The figure is drawn on a canvas of its own (no pyplot, no global backend switched), so a caller's
interactive backend is left alone; PNG, PDF and SVG by the file's extension.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from rlconf.analysis.aggregate import AgentAggregate, Aggregate
from rlconf.analysis.curves import Band, Panel, seed_count
from rlconf.analysis.runs import AnalysisError
from rlconf.analysis.stats import CONFIDENCE, STATISTICS
from rlconf.analysis.styles import DEFAULT, VECTOR_METADATA, Style, fitted_width
from rlconf.files import atomic_write
from rlconf.text import counted

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MATPLOTLIB_MISSING = "rlconf plot needs matplotlib: pip install 'rlconf[plot]'"
FORMATS = ("png", "pdf", "svg")  # what --out may end in: matplotlib writes each by its extension
DPI = DEFAULT.dpi
MAX_COLUMNS = 3  # env panels per row
CURVE_PANEL = DEFAULT.panel  # inches
AGGREGATE_PANEL = DEFAULT.aggregate_panel
LEGEND_CHARS = DEFAULT.legend_chars  # characters a legend line holds: longer labels wrap (a layout would
#                                     otherwise shrink the panels to the width of the longest one)
AGGREGATE_PANELS = len(STATISTICS) + 1  # one per statistic, then the performance profiles
STATISTIC_TITLES = {"median": "median (of per-env means)",  # rliable's aggregate median
                    "optimality gap": "optimality gap (lower is better)"}
MARKERS = "osD^vP*Xph<>"
LINE_STYLES = ("-", "--", ":", "-.")
MARKS_PER_CURVE = 8


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


def legend_entry(label: str, count: str, chars: int = LEGEND_CHARS) -> str:
    """A configuration's legend entry, with what its points average, wrapped to ``chars`` a line."""
    return textwrap.fill(f"{label} ({count})", chars, subsequent_indent="    ", break_on_hyphens=False)


def legend_entries(panels: list[Panel], aggregate: Aggregate | None, style: Style = DEFAULT) -> dict[str, str]:
    """Configuration (label) -> its entry in the figure's legend: what its points average over every panel it
    has a line in, or for one of the aggregate alone, its runs."""
    bands: dict[str, list[Band]] = {}
    for panel in panels:
        for band in panel.bands:
            bands.setdefault(band.label, []).append(band)
    counts = {label: seed_count(mine) for label, mine in bands.items()}
    for agent in aggregate.agents if aggregate else []:
        counts.setdefault(agent.label, counted(agent.runs, "run"))
    return {label: legend_entry(label, count, style.legend_chars) for label, count in sorted(counts.items())}


def legend_layout(entries: list[str], titled: bool, width: float, style: Style = DEFAULT) -> tuple[int, int]:
    """(columns, lines of text) of the legend: as many entries side by side as ``width`` inches hold, and its
    title's line where it has one."""
    if not entries:
        return 1, 0
    widest = max(len(line) for entry in entries for line in entry.splitlines()) * style.char_width
    columns = max(1, min(len(entries), int(width // (widest + style.legend_handle))))
    tallest = max(entry.count("\n") + 1 for entry in entries)
    return columns, math.ceil(len(entries) / columns) * tallest + titled


def legend_height(lines: int, style: Style = DEFAULT) -> float:
    return style.legend_line * (lines + 1) if lines else 0.0


def figure_width(envs: int, aggregate_panels: int, style: Style = DEFAULT) -> float:
    """Inches: what the env panels' columns and the aggregate's row (``aggregate_panels``, 0: none) need, fitted
    to the style's widths."""
    needed = max(curve_grid(envs)[1] * style.panel[0], aggregate_panels * style.aggregate_panel[0])
    return fitted_width(needed, style)


def figure_size(envs: int, aggregate: bool, legend_rows: int = 1, aggregate_panels: int = AGGREGATE_PANELS,
                style: Style = DEFAULT, title: bool = False) -> tuple[float, float]:
    """Inches (width, height); a PNG is ``style.dpi`` pixels per inch. ``legend_rows``: the lines of text of the
    figure's legend (``legend_layout``); ``aggregate_panels``: a statistic's each, and the profiles'."""
    rows, _ = curve_grid(envs)
    width = figure_width(envs, aggregate_panels if aggregate else 0, style)
    height = rows * style.panel[1] + legend_height(legend_rows, style) + (style.title if title else 0.0)
    if aggregate:
        height += style.aggregate_panel[1] + style.aggregate_title
    return width, height


def looks(labels: list[str]) -> dict[str, dict]:
    """The same colour, line style and marker for a configuration in every panel: tab10's colours (tab20's
    beyond 10 configurations), then the next line style."""
    from matplotlib import colormaps

    palette = colormaps["tab10" if len(labels) <= 10 else "tab20"]
    return {label: {"color": palette(i % palette.N), "linestyle": LINE_STYLES[i // palette.N % len(LINE_STYLES)],
                    "marker": MARKERS[i % len(MARKERS)]} for i, label in enumerate(sorted(labels))}


def draw(panels: list[Panel], aggregate: Aggregate | None, title: str | None, window: int, style: Style = DEFAULT,
         log_x: bool = False, log_y: bool = False) -> Figure:
    """The figure of ``panels`` (curves) and ``aggregate`` (either may be missing), its legend below them;
    ``title`` None or empty: none (each panel is titled by its env)."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    with rc_context(style.rc):
        entries = legend_entries(panels, aggregate, style)
        look = looks(list(entries))
        shaded = next((band.spread for panel in panels for band in panel.bands if band.shaded), None)
        statistics = len(aggregate.statistics) + 1 if aggregate else 0
        columns, lines = legend_layout(list(entries.values()), shaded is not None,
                                       figure_width(len(panels), statistics, style), style)
        figure = Figure(figsize=figure_size(len(panels), aggregate is not None, lines, statistics or AGGREGATE_PANELS,
                                            style, bool(title)), dpi=style.dpi, layout="constrained")
        if title:
            figure.suptitle(title)
        heights = [curve_grid(len(panels))[0] * style.panel[1]] if panels else []
        heights += [style.aggregate_panel[1] + style.aggregate_title] if aggregate else []
        parts = list(figure.subfigures(len(heights) + 1, 1, squeeze=False, height_ratios=[
            *heights, legend_height(lines, style) or 1e-3]).ravel())
        if panels:
            draw_curves(parts.pop(0), panels, window, look, style, log_x, log_y)
        if aggregate:
            draw_aggregate(parts.pop(0), aggregate, look, style)
        handles = [legend_handle(look[label], style) for label in entries]
        parts[0].legend(handles, list(entries.values()), loc="center", ncols=columns, frameon=False,
                        title=f"shaded: {shaded}" if shaded else None)
        figure.draw_without_rendering()  # tick labels are made as they are first drawn: in the style's sizes
    return figure


def legend_handle(look: dict, style: Style):
    from matplotlib.lines import Line2D

    return Line2D([], [], **look, linewidth=style.line_width, markersize=style.marker_size)


def wrapped(text: str, inches: float, style: Style) -> str:
    """``text`` in lines that fit ``inches`` (an axis label longer than its panel would be cut)."""
    return textwrap.fill(text, max(12, int(inches / style.char_width)), break_on_hyphens=False)


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


def draw_curves(part, panels: list[Panel], window: int, look: dict[str, dict], style: Style, log_x: bool,
                log_y: bool) -> None:
    rows, columns = curve_grid(len(panels))
    axes = part.subplots(rows, columns, squeeze=False).ravel()
    for ax, panel in zip(axes, panels, strict=False):
        for rank, band in enumerate(panel.bands):
            draw_band(ax, band, marks(len(band.steps), rank, len(panel.bands)), look[band.label], style)
        ax.set_title(panel.env)
        ax.set_xlabel(panel.x_label)
        ax.set_ylabel(wrapped(panel.source.label.format(window=window), style.panel[1] * 0.85, style))
        ax.grid(alpha=0.3)
        step_axis(ax, max(float(band.steps[-1]) for band in panel.bands), log_x)
        if log_y:
            ax.set_yscale("log")
    for ax in axes[len(panels):]:
        ax.set_visible(False)


def draw_band(ax: Axes, band: Band, markers: list[int], look: dict, style: Style) -> None:
    """A configuration's mean, and its band where it averages runs; a curve of one point is a larger marker,
    its band an error bar."""
    if len(band.steps) == 1 and band.shaded:
        ax.errorbar(band.steps, band.mean, yerr=[band.mean - band.lower, band.upper - band.mean],
                    fmt=look["marker"], color=look["color"], markersize=style.marker_size * 1.5,
                    elinewidth=style.line_width, capsize=style.marker_size, label=band.label)
        return
    ax.plot(band.steps, band.mean, **look, markevery=markers, linewidth=style.line_width,
            markersize=style.marker_size * (1.5 if len(band.steps) == 1 else 1), label=band.label)
    if band.shaded:
        ax.fill_between(band.steps, band.lower, band.upper, color=look["color"], alpha=0.2, linewidth=0)


def step_axis(ax: Axes, last: float, log: bool) -> None:
    """Steps (or pulls) from 0 to a little past the last, in whole numbers written short (250k, 1.5M: seven
    digits run into each other), or on a log axis."""
    from matplotlib.ticker import MaxNLocator, NullFormatter

    if log:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins="auto", integer=True, steps=[1, 2, 2.5, 5, 10]))
        ax.set_xlim(0, last * (1 + ax.margins()[0]) or 1)
    ax.xaxis.set_major_formatter(_short_count)


def draw_aggregate(part, aggregate: Aggregate, look: dict[str, dict], style: Style = DEFAULT) -> None:
    runs = sum(a.runs for a in aggregate.agents)
    part.suptitle(f"final scores of {counted(runs, 'run')}: {CONFIDENCE:.0%} intervals from a stratified bootstrap "
                  f"({aggregate.reps} resamples)", fontsize="medium")
    axes = part.subplots(1, len(aggregate.statistics) + 1)
    width = figure_width(0, len(axes), style) / len(axes)
    for i, (ax, statistic) in enumerate(zip(axes, aggregate.statistics, strict=False)):
        draw_intervals(ax, statistic, aggregate.agents, look, names=i == 0)  # the rows are alike: named once
        ax.set_xlabel(wrapped(aggregate.score_label, width * 0.9, style))
    draw_profiles(axes[-1], aggregate, look, style)
    axes[-1].set_xlabel(wrapped(f"{aggregate.score_label} τ", width * 0.9, style))


def draw_intervals(ax: Axes, statistic: str, agents: list[AgentAggregate], look: dict[str, dict],
                   names: bool = True) -> None:
    for row, agent in enumerate(agents):
        estimate = agent.estimates[statistic]
        below, above = max(0.0, estimate.value - estimate.ci_low), max(0.0, estimate.ci_high - estimate.value)
        ax.errorbar(estimate.value, row, xerr=[[below], [above]], fmt=look[agent.label]["marker"],
                    color=look[agent.label]["color"], capsize=4)
    ax.set_yticks(range(len(agents)), [agent.label for agent in agents] if names else [])
    ax.set_ylim(len(agents) - 0.5, -0.5)  # the first configuration on top
    ax.set_title(STATISTIC_TITLES.get(statistic, statistic))
    ax.grid(axis="x", alpha=0.3)


def draw_profiles(ax: Axes, aggregate: Aggregate, look: dict[str, dict], style: Style = DEFAULT) -> None:
    for agent in aggregate.agents:
        profile = agent.profile
        ax.plot(profile.taus, profile.fraction, color=look[agent.label]["color"],
                linestyle=look[agent.label]["linestyle"], linewidth=style.line_width, label=agent.label)
        ax.fill_between(profile.taus, profile.ci_low, profile.ci_high, color=look[agent.label]["color"],
                        alpha=0.25, linewidth=0)
    ax.set_title("performance profile")
    ax.set_ylabel("fraction of runs > τ")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)


def figure_format(path: Path) -> str | None:
    """The format ``path``'s extension names (``png``, ``pdf``, ``svg``), or None for another."""
    kind = path.suffix.lower().lstrip(".")
    return kind if kind in FORMATS else None


def save_figure(figure: Figure, path: Path, style: Style = DEFAULT) -> None:
    """Render in the format of ``path``'s extension into a temporary file beside it, then rename it into place.
    A vector file carries no date, so the same runs give the same bytes."""
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    kind = figure_format(path)
    if kind is None:
        raise AnalysisError(f"{path}: a figure is written as {', '.join(f'.{k}' for k in FORMATS)}")
    FigureCanvasAgg(figure)  # PNG through Agg; savefig finds PDF's and SVG's own canvases by the format
    with rc_context(style.rc):
        atomic_write(path, lambda tmp: figure.savefig(tmp, format=kind, dpi=style.dpi,
                                                      metadata=VECTOR_METADATA.get(kind)))


def save_png(figure: Figure, path: Path) -> None:
    """A PNG in the default style (``benchmarks/suite.py``'s figure)."""
    save_figure(figure, path)
