"""Analysis of finished (or running) runs: learning curves across seeds, aggregate statistics with
stratified-bootstrap intervals, and the figure and CSV files of ``rlconf plot``; and the published reference
scores they are compared with (``references``: Atari's random and human scores, DER's Atari 100k results).

Reading and statistics need numpy only; matplotlib is imported when a figure is drawn (``rlconf[plot]``).
"""

from rlconf.analysis.aggregate import AgentAggregate, Aggregate, aggregate, scores_by_env
from rlconf.analysis.command import plot
from rlconf.analysis.curves import CURVE_SOURCES, SPREADS, Band, Curve, CurveOptions, CurveSource, Panel, panels
from rlconf.analysis.references import (
    HumanReference,
    PublishedSuite,
    der_atari100k_reference,
    human_normalize,
    human_references,
)
from rlconf.analysis.runs import AnalysisError, Run, find_run_dirs, label_runs, load_runs, select_runs
from rlconf.analysis.stats import (
    STATISTICS,
    Estimate,
    Profile,
    interquartile_mean,
    interval_estimates,
    minmax_normalize,
    optimality_gap,
    performance_profile,
    stratified_resamples,
)

__all__ = [
    "CURVE_SOURCES", "SPREADS", "STATISTICS", "Aggregate", "AgentAggregate", "AnalysisError", "Band", "Curve",
    "CurveOptions", "CurveSource", "Estimate", "HumanReference", "Panel", "Profile", "PublishedSuite", "Run",
    "aggregate", "der_atari100k_reference", "find_run_dirs", "human_normalize", "human_references",
    "interquartile_mean", "interval_estimates", "label_runs", "load_runs", "minmax_normalize", "optimality_gap",
    "panels", "performance_profile", "plot", "scores_by_env", "select_runs", "stratified_resamples",
]
