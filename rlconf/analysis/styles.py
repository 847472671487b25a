"""How big the parts of ``rlconf plot``'s figure are and how its text is set: ``default`` for a screen, ``paper``
for a two-column paper (``--style paper``).

A paper's figure has the width of one column (3.3 in) when its panels fit there, else of the page (6.9 in, a
``figure*`` across both columns); its text is set in 7-8 pt, the size of a caption, so it reads the same as the
paper around it when included at 100%. Sizes are inches. Nothing here imports matplotlib: ``rc`` is handed to
``matplotlib.rc_context`` by the figure, while it is drawn and while it is saved (tick labels are made as the
figure is saved).
"""

from __future__ import annotations

from dataclasses import dataclass, field

VECTOR_METADATA = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}  # no date: the same runs, the same bytes
# Fonts embedded as TrueType in a PDF (publishers refuse Type 3, matplotlib's default) and text kept as
# paths in an SVG (it looks the same without the font)
COMMON_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "path", "svg.hashsalt": "rlconf"}


@dataclass(frozen=True)
class Style:
    name: str
    panel: tuple[float, float]  # a curve panel's width and height
    aggregate_panel: tuple[float, float]  # an aggregate panel's
    dpi: int  # pixels per inch of a PNG
    line_width: float  # points; every line alike
    marker_size: float  # points
    legend_chars: int  # characters of a legend entry's line before it wraps
    char_width: float  # inches a legend character takes (what fits in a row of the legend)
    legend_handle: float  # inches of a legend column besides its text (the line sample, the gaps)
    legend_line: float  # inches per line of text in the legend
    title: float  # inches a figure title takes
    aggregate_title: float  # inches the aggregate row's heading takes
    widths: tuple[float, ...] = ()  # the widths the figure may have (a column's, a page's): the narrowest that fits
    rc: dict = field(default_factory=dict)


DEFAULT = Style("default", panel=(5.0, 3.6), aggregate_panel=(4.0, 3.4), dpi=100, line_width=1.8, marker_size=5.0,
                legend_chars=72, char_width=0.075, legend_handle=0.7, legend_line=0.2, title=0.4,
                aggregate_title=0.4, rc={**COMMON_RC, "legend.fontsize": "small", "legend.title_fontsize": "small"})
PAPER = Style("paper", panel=(3.3, 2.3), aggregate_panel=(1.7, 1.9), dpi=300, line_width=1.1, marker_size=3.2,
              legend_chars=56, char_width=0.053, legend_handle=0.32, legend_line=0.13, title=0.22,
              aggregate_title=0.22, widths=(3.3, 6.9),
              rc={**COMMON_RC, "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7,
                  "ytick.labelsize": 7, "legend.fontsize": 7, "legend.title_fontsize": 7, "figure.titlesize": 9,
                  "axes.linewidth": 0.6, "grid.linewidth": 0.4, "xtick.major.width": 0.6, "ytick.major.width": 0.6,
                  "xtick.major.size": 2.5, "ytick.major.size": 2.5, "xtick.minor.size": 1.5, "ytick.minor.size": 1.5,
                  "lines.markeredgewidth": 0.6, "errorbar.capsize": 2, "legend.columnspacing": 1.0,
                  "legend.handlelength": 1.6, "legend.handletextpad": 0.5, "figure.constrained_layout.h_pad": 0.02,
                  "figure.constrained_layout.w_pad": 0.02})
STYLES = {style.name: style for style in (DEFAULT, PAPER)}


def fitted_width(needed: float, style: Style) -> float:
    """The figure's width: what its panels need, or in a paper the narrowest of its widths that holds them
    (the panels then share it)."""
    if not style.widths:
        return needed
    return next((width for width in style.widths if needed <= width + 1e-9), style.widths[-1])
