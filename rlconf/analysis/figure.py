"""The figure: a panel of learning curves per env and, on request, a row of aggregate panels (IQM, median
and mean with their intervals, and performance profiles).

matplotlib is imported only here and only inside functions: ``rlconf list`` and training never load it.
The figure is drawn on an Agg canvas of its own (no pyplot, no global backend switched), so a caller's
interactive backend is left alone.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from rlconf.analysis.aggregate import AgentAggregate, Aggregate
from rlconf.analysis.curves import Band
from rlconf.analysis.runs import AnalysisError
from rlconf.analysis.stats import CONFIDENCE, STATISTICS
from rlconf.experiments.rundir import atomic_write

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MATPLOTLIB_MISSING = "rlconf plot needs matplotlib: pip install 'rlconf[plot]'"
DPI = 100
MAX_COLUMNS = 3  # env panels per row
CURVE_PANEL = (5.0, 3.6)  # inches
AGGREGATE_PANEL = (4.0, 3.4)
AGGREGATE_PANELS = len(STATISTICS) + 1  # one per statistic, then the performance profiles


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise AnalysisError(MATPLOTLIB_MISSING) from None


def curve_grid(envs: int) -> tuple[int, int]:
    """(rows, columns) of the env panels."""
    columns = min(envs, MAX_COLUMNS)
    return math.ceil(envs / columns), columns


def figure_size(envs: int, aggregate: bool) -> tuple[float, float]:
    """Inches (width, height); the PNG is ``DPI`` pixels per inch."""
    rows, columns = curve_grid(envs)
    width, height = columns * CURVE_PANEL[0], rows * CURVE_PANEL[1] + 0.5  # + the title
    if aggregate:
        width = max(width, AGGREGATE_PANELS * AGGREGATE_PANEL[0])
        height += AGGREGATE_PANEL[1] + 0.4
    return width, height


def agent_colors(agents: list[str]) -> dict[str, tuple]:
    """The same colour for an agent in every panel."""
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    return {agent: palette(i % palette.N) for i, agent in enumerate(sorted(agents))}


def draw(bands: list[Band], aggregate: Aggregate | None, title: str, y_label: str) -> Figure:
    from matplotlib.figure import Figure

    envs = sorted({band.env for band in bands})
    colors = agent_colors(sorted({b.agent for b in bands} | {a.agent for a in (aggregate.agents if aggregate else [])}))
    figure = Figure(figsize=figure_size(len(envs), aggregate is not None), dpi=DPI, layout="constrained")
    figure.suptitle(title)
    if aggregate is None:
        curves_part = figure
    else:
        rows, _ = curve_grid(len(envs))
        curves_part, aggregate_part = figure.subfigures(2, 1, height_ratios=[rows * CURVE_PANEL[1],
                                                                            AGGREGATE_PANEL[1]])
        draw_aggregate(aggregate_part, aggregate, colors)
    draw_curves(curves_part, envs, bands, y_label, colors)
    return figure


def _short_count(value: float, _position=None) -> str:
    """A tick label for a count of steps: 0, 500, 20k, 250k, 1M, 2.5M."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def draw_curves(part, envs: list[str], bands: list[Band], y_label: str, colors: dict[str, tuple]) -> None:
    rows, columns = curve_grid(len(envs))
    axes = part.subplots(rows, columns, squeeze=False).ravel()
    for ax, env in zip(axes, envs, strict=False):
        for band in (b for b in bands if b.env == env):
            seeds = int(band.seeds.max())
            ax.plot(band.steps, band.mean, color=colors[band.agent], label=f"{band.agent} ({seeds} seed"
                    f"{'s' if seeds != 1 else ''})")
            ax.fill_between(band.steps, band.lower, band.upper, color=colors[band.agent], alpha=0.25, linewidth=0)
        ax.set_title(env)
        ax.xaxis.set_major_formatter(_short_count)  # 250k, 1.5M: seven-digit ticks run into each other
        ax.set_xlabel("env steps")
        ax.set_ylabel(y_label)
        ax.grid(alpha=0.3)
        ax.legend(title=f"shaded: {bands[0].spread}", fontsize="small", title_fontsize="small")
    for ax in axes[len(envs):]:
        ax.set_visible(False)


def draw_aggregate(part, aggregate: Aggregate, colors: dict[str, tuple]) -> None:
    runs = sum(a.runs for a in aggregate.agents)
    part.suptitle(f"final scores of {runs} runs: {CONFIDENCE:.0%} intervals from a stratified bootstrap "
                  f"({aggregate.reps} resamples)", fontsize="medium")
    axes = part.subplots(1, AGGREGATE_PANELS)
    for ax, statistic in zip(axes, STATISTICS, strict=False):
        draw_intervals(ax, statistic, aggregate.agents, colors)
        ax.set_xlabel(aggregate.score_label)
    draw_profiles(axes[-1], aggregate, colors)


def draw_intervals(ax: Axes, statistic: str, agents: list[AgentAggregate], colors: dict[str, tuple]) -> None:
    for row, agent in enumerate(agents):
        estimate = agent.estimates[statistic]
        below, above = max(0.0, estimate.value - estimate.ci_low), max(0.0, estimate.ci_high - estimate.value)
        ax.errorbar(estimate.value, row, xerr=[[below], [above]], fmt="o", color=colors[agent.agent], capsize=4)
    ax.set_yticks(range(len(agents)), [agent.agent for agent in agents])
    ax.set_ylim(len(agents) - 0.5, -0.5)  # the first agent on top
    ax.set_title(statistic)
    ax.grid(axis="x", alpha=0.3)


def draw_profiles(ax: Axes, aggregate: Aggregate, colors: dict[str, tuple]) -> None:
    for agent in aggregate.agents:
        profile = agent.profile
        ax.plot(profile.taus, profile.fraction, color=colors[agent.agent], label=agent.agent)
        ax.fill_between(profile.taus, profile.ci_low, profile.ci_high, color=colors[agent.agent], alpha=0.25,
                        linewidth=0)
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
