"""``rlconf plot RUNS_DIR``: learning curves of every run below a folder, and with ``--aggregate`` the
statistics that compare agents across seeds and envs, as one figure (PNG, PDF or SVG; ``--style paper`` for a
two-column paper) and the CSV files of its numbers.

Runs are drawn and compared per configuration (``runs.label_runs``: an agent and the settings its runs
differ in), never pooled across budgets or hyperparameters; each env's panel draws its own metric.

Everything the user gave is checked before anything is computed or written; a problem is an
``AnalysisError`` (one line, exit status 2 from the CLI). What was left out, and why, is one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rlconf.analysis.aggregate import Aggregate, aggregate
from rlconf.analysis.curves import CURVE_SOURCES, SPREADS, Band, CurveOptions, Panel, panels
from rlconf.analysis.figure import FORMATS, draw, figure_format, require_matplotlib, save_figure
from rlconf.analysis.references import require_human_references
from rlconf.analysis.runs import AnalysisError, Run, label_runs, left_out_line, load_runs, select_runs
from rlconf.analysis.stats import NORMALIZATIONS, resolve_normalization
from rlconf.analysis.styles import STYLES, Style
from rlconf.analysis.tables import (
    AGGREGATE_FIELDS,
    CURVE_FIELDS,
    PROFILE_FIELDS,
    aggregate_rows,
    curve_rows,
    output_paths,
    profile_rows,
    write_csv,
)
from rlconf.text import counted

USAGE = "rlconf plot RUNS_DIR [--out FILE.png|.pdf|.svg] [--aggregate] [options]"


class _Parser(argparse.ArgumentParser):
    """argparse whose complaints are one line naming the problem and what is allowed (its own are a usage
    block and a message, and it exits by itself)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        if message.startswith("unrecognized arguments:"):
            given = message.split(":", 1)[1].split()
            options = [o for action in self._actions for o in action.option_strings if o.startswith("--")]
            if any(arg.startswith("-") for arg in given):
                unknown = next(arg for arg in given if arg.startswith("-"))
                raise AnalysisError(f"unknown option {unknown!r}; allowed: {', '.join(options)}")
            raise AnalysisError(f"one RUNS_DIR only, also given: {' '.join(given)}; usage: {USAGE}")
        if "required: RUNS_DIR" in message:
            raise AnalysisError(f"missing RUNS_DIR; usage: {USAGE}")
        raise AnalysisError(f"{message}; usage: {USAGE} (see rlconf plot --help)")


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return int(text)


def non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, not {text!r}")
    return int(text)


def name_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("needs comma-separated names")
    return names


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rlconf plot", allow_abbrev=False, usage=USAGE,
                     description="Plot the learning curves of the runs below RUNS_DIR (one panel per env, one "
                                 "line per configuration: an agent and the settings its runs differ in, a band "
                                 "across seeds) and, with --aggregate, compare configurations' final scores: "
                                 "IQM, median (of per-env means) and mean with stratified-bootstrap 95% "
                                 "intervals (and the optimality gap of human-normalised scores), and "
                                 "performance profiles.")
    add = parser.add_argument
    add("runs_dir", metavar="RUNS_DIR", type=Path, help="a folder with run directories at any depth")
    add("--out", type=Path, metavar="FILE",
        help="the figure, a .png, .pdf or .svg by its extension (default RUNS_DIR/plot.png); its numbers are "
             "written beside it, named after it: --out figs/x.pdf writes figs/x_curves.csv (and with "
             "--aggregate x_aggregate.csv, x_profiles.csv)")
    add("--aggregate", action="store_true", help="add IQM, median, mean and performance profiles of final scores")
    add("--metric", metavar="|".join(CURVE_SOURCES),
        help="training returns, greedy evaluations (evaluations.csv), or for bandits cumulative regret and "
             "the best-arm rate (pulls.csv), in every panel; default: per env, regret for a bandit's, else return")
    add("--window", type=positive_int, default=100, metavar="N",
        help="episodes (bandits: rows of pulls.csv) in the rolling means of returns and rates (default 100)")
    add("--spread", default="std", metavar="|".join(SPREADS),
        help="the band across seeds: ±1 std (default), min to max, or a bootstrap 95%% CI of the mean")
    add("--agents", type=name_list, metavar="A,B", help="only these agents")
    add("--envs", type=name_list, metavar="E1,E2", help="only these envs (e.g. classic/cartpole)")
    add("--normalize", default="auto", metavar="|".join(NORMALIZATIONS),
        help="scores of several envs are pooled min-max normalised per env; none keeps raw returns; human: "
             "(score - random) / (human - random) with the published scores of each Atari game, adding the "
             "optimality gap; auto (default): none for one env, minmax for several")
    add("--reps", type=positive_int, default=2000, metavar="N", help="bootstrap resamples (default 2000)")
    add("--seed", type=non_negative_int, default=0, metavar="N", help="seed of the bootstrap (default 0)")
    add("--title", metavar="TEXT", help="the figure's title (default: none; each panel is titled by its env)")
    add("--style", default="default", metavar="|".join(STYLES),
        help="default: for a screen; paper: for a two-column paper, one column wide (3.3 in) or, with more "
             "panels than fit there, the page (6.9 in), 7-9 pt text, a PNG at 300 dpi")
    add("--log-x", action="store_true",
        help="a logarithmic step (bandits: pulls) axis in every curve panel, as regret is read against log "
             "pulls; the curves' points (and the CSV's steps) are then spaced evenly on it")
    add("--log-y", action="store_true",
        help="a logarithmic value axis in every curve panel (refused where a mean is 0 or below; a band "
             "reaching below 0 is cut at the axis)")
    return parser


def check_choice(what: str, value: str, allowed: list[str] | tuple[str, ...]) -> None:
    if value not in allowed:
        from rlconf.registry import unknown_message

        raise AnalysisError(unknown_message(f"{what} value", value, list(allowed)))


def parse(argv: list[str]) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    if args.metric is not None:
        check_choice("--metric", args.metric, list(CURVE_SOURCES))
    check_choice("--spread", args.spread, list(SPREADS))
    check_choice("--normalize", args.normalize, NORMALIZATIONS)
    check_choice("--style", args.style, list(STYLES))
    args.out = args.out or args.runs_dir / "plot.png"
    if figure_format(args.out) is None:
        raise AnalysisError(f"--out {args.out}: must name a {', '.join(f'.{kind}' for kind in FORMATS)} file")
    if args.out.is_dir():
        raise AnalysisError(f"--out {args.out}: is a directory")
    return args


def note(text: str) -> None:
    print(f"rlconf plot: {text}", file=sys.stderr)


def untested_note(runs: list[Run]) -> str | None:
    untested = sum(not run.tested for run in runs)
    if not untested:
        return None
    return (f"{untested} of {counted(len(runs), 'run')} {'has' if untested == 1 else 'have'} no test return "
            "(summary.json): each scored by the mean return "
            "of its last 10% of training episodes")


def design_notes(runs: list[Run]) -> list[str]:
    """What a reader of the aggregate should know about how the runs were laid out."""
    notes = []
    envs_of = {label: {r.env for r in runs if r.label == label} for label in {r.label for r in runs}}
    if len({frozenset(envs) for envs in envs_of.values()}) > 1:
        notes.append("the configurations were not all run on the same envs: their aggregates pool different "
                     "tasks (see the tasks column)")
    seen: dict[tuple[str, str, int], int] = {}
    for run in runs:
        seen[run.env, run.label, run.seed] = seen.get((run.env, run.label, run.seed), 0) + 1
    for (env, label, seed), count in sorted(seen.items()):
        if count > 1:
            notes.append(f"{count} runs of {label} on {env} have seed {seed}: each counts as a run")
    return notes


def check_log_axes(drawn: list[Panel], log_x: bool, log_y: bool) -> None:
    """A log axis cannot place 0 or a negative value: a curve with one is refused, naming it (a band's edge
    below 0 is only cut at the axis)."""
    for axis, wanted in (("x", log_x), ("y", log_y)):
        for panel in drawn if wanted else []:
            for band in panel.bands:
                values = band.steps if axis == "x" else band.mean
                if (values <= 0).any():
                    what = panel.x_label if axis == "x" else f"a mean {band.metric}"
                    raise AnalysisError(f"--log-{axis}: {band.label} on {panel.env} has {what} of "
                                        f"{float(values.min()):g}; a log axis shows only values above 0 (leave "
                                        "it out, or choose panels with --envs)")


@dataclass
class Plot:
    """What ``rlconf plot`` computed: the runs drawn, the panels, the aggregate, and what it left out."""

    runs: list[Run]
    panels: list[Panel]
    aggregate: Aggregate | None
    notes: list[str] = field(default_factory=list)

    @property
    def bands(self) -> list[Band]:
        return [band for panel in self.panels for band in panel.bands]


def compute(args: argparse.Namespace, runs: list[Run] | None = None) -> Plot:
    """Read, group and reduce the runs of ``args`` (as ``parse`` returns them); nothing is drawn or written.
    ``runs``: these, rebuilt by the caller, instead of those found under ``args.runs_dir``."""
    left_out: dict[str, list[Path]] = {}
    if runs is None:
        runs, directories = load_runs(args.runs_dir, left_out)
    else:
        directories = len(runs)
    runs = select_runs(runs, args.agents, args.envs)
    label_runs(runs)
    if args.aggregate and args.normalize == "human":  # refused before anything is read further or drawn
        require_human_references({run.env for run in runs})
    drawn = panels(runs, args.metric, CurveOptions(window=args.window), args.spread, args.reps, args.seed, left_out,
                   args.log_x)
    if not drawn:
        metric = f"a {args.metric} curve ({CURVE_SOURCES[args.metric].missing})" if args.metric else "a curve"
        raise AnalysisError(f"{args.runs_dir}: no run has {metric}")
    check_log_axes(drawn, args.log_x, args.log_y)
    skipped = {path for paths in left_out.values() for path in paths}
    runs = [run for run in runs if run.path not in skipped]  # those drawn
    notes = [left_out_line(left_out, directories, args.runs_dir) or ""]
    result = None
    if args.aggregate:
        normalize = resolve_normalization(args.normalize, len({run.env for run in runs}))
        result = aggregate(runs, normalize, args.reps, args.seed)
        notes += [untested_note(runs) or "", *design_notes(runs)]
    return Plot(runs, drawn, result, [note for note in notes if note])


def write_outputs(out: Path, figure, bands: list[Band], result: Aggregate | None, style: Style) -> list[Path]:
    """The figure, its curves CSV and, with an aggregate, its statistics and profiles CSVs; returns their paths."""
    paths = output_paths(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(figure, paths["figure"], style)
    write_csv(paths["curves"], CURVE_FIELDS, curve_rows(bands))
    if result is None:
        return [paths["figure"], paths["curves"]]
    write_csv(paths["aggregate"], AGGREGATE_FIELDS, aggregate_rows(result))
    write_csv(paths["profiles"], PROFILE_FIELDS, profile_rows(result))
    return list(paths.values())


def render(args: argparse.Namespace, result: Plot) -> list[Path]:
    """The figure of ``result`` in ``args``' style, and its CSV files, written to ``args.out``; their paths."""
    style = STYLES[args.style]
    figure = draw(result.panels, result.aggregate, args.title, args.window, style, args.log_x, args.log_y)
    try:
        return write_outputs(args.out, figure, result.bands, result.aggregate, style)
    except OSError as error:
        raise AnalysisError(f"cannot write {error.filename or args.out}: {error.strerror or error}") from None


def plot(argv: list[str]) -> int:
    """The whole command; returns the exit status."""
    args = parse(argv)
    require_matplotlib()
    result = compute(args)
    for text in result.notes:
        note(text)
    runs = result.runs
    written = render(args, result)
    counts = ", ".join(counted(len({key(r) for r in runs}), what) for key, what in (
        (lambda r: r.agent, "agent"), (lambda r: r.env, "env"), (lambda r: (r.env, r.label), "configuration")))
    print(f"rlconf plot: {counted(len(runs), 'run')} ({counts}) "
          f"-> {', '.join(map(str, written))}")
    return 0
