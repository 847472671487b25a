"""A search space in Hydra's override syntax, as Optuna distributions: the params of a sweep config
(``hydra.sweeper.params``) and the sweeps typed on the command line.

    agent.lr: tag(log, interval(1e-5, 1e-2))    a float, drawn on a log scale (interval: a float, always)
    agent.batch_size: choice(32, 64, 128)       one of these values (numbers, strings, booleans, lists)
    agent.n_steps: range(1, 9)                  an integer 1 .. 8 (stop excluded, as Python's range; a step too)
    agent.hidden: tag(log, range(16, 513))      an integer on a log scale
    agent.gamma: 0.99                           fixed: given to every trial, not searched

A trial's values are turned back into overrides (``override``), the same text for the same value, so a trial
asked again names the same run directory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from rlconf.errors import TuningError

ALLOWED = ("allowed: choice(a,b,...), range(start,stop[,step]), interval(low,high), tag(log,interval(low,high)), "
           "tag(log,range(start,stop)), or a fixed value")
PRIMITIVES = (bool, int, float, str)


@dataclass
class Dimension:
    """One searched key: its distribution and, for a choice, the override text of each choice."""

    key: str
    prefix: str  # the override's +, ++ or nothing
    distribution: BaseDistribution
    texts: tuple[str, ...] = ()  # choice i's override text (categorical distributions only)

    def override(self, value: Any) -> str:
        """The override that gives the key ``value`` (a value this dimension's distribution drew)."""
        if isinstance(self.distribution, CategoricalDistribution):
            index = next(i for i, c in enumerate(self.distribution.choices) if type(c) is type(value) and c == value)
            return f"{self.prefix}{self.key}={self.texts[index]}"
        return f"{self.prefix}{self.key}={number_text(value)}"

    def examples(self) -> list[str]:
        """Values every draw lies among or between, as override values: what the command line checks compose
        with before anything runs. An interval adds one inside it that no integer key takes, so an integer
        key swept with interval() is refused there (range() draws integers)."""
        d = self.distribution
        if isinstance(d, CategoricalDistribution):
            return list(self.texts)
        inside = [] if isinstance(d, IntDistribution) else [d.low + (d.high - d.low) / math.e]
        return [number_text(v) for v in (d.low, d.high, *inside)]


@dataclass
class SearchSpace:
    dimensions: dict[str, Dimension]
    fixed: list[str]  # overrides given to every trial as they are

    def overrides(self, params: dict[str, Any]) -> list[str]:
        """A trial's overrides: the fixed ones, then its drawn values in the space's order."""
        return [*self.fixed, *(self.dimensions[key].override(params[key]) for key in self.dimensions)]

    @property
    def distributions(self) -> dict[str, BaseDistribution]:
        return {key: d.distribution for key, d in self.dimensions.items()}

    def check_values(self, values: dict[str, Any], where: str) -> None:
        """Values a study holds for a trial to run (read from its journal, which is a file of the sweep
        directory, so untrusted): each a searched key's, inside its distribution (type, bounds, step); a
        TuningError naming the first that is not, since a run would otherwise train with it."""
        for key, value in values.items():
            dimension = self.dimensions.get(key)
            if dimension is None:
                raise TuningError(f"{where}: {key} is not a searched key of this sweep; allowed: "
                                  f"{', '.join(self.dimensions)}")
            if not contains(dimension.distribution, value):
                raise TuningError(f"{where}: {key}={value!r} lies outside this sweep's search space of {key} "
                                  f"({describe(dimension.distribution)}); start a new sweep, or restore the study")


def contains(distribution: BaseDistribution, value: Any) -> bool:
    """Whether ``value`` is one that ``distribution`` can draw (Optuna trusts a stored value)."""
    d = distribution
    if isinstance(d, CategoricalDistribution):
        return any(type(c) is type(value) and c == value for c in d.choices)
    number = int if isinstance(d, IntDistribution) else (int, float)
    if not isinstance(value, number) or isinstance(value, bool) or not math.isfinite(value):
        return False
    if not d.low <= value <= d.high:
        return False
    return d.step is None or math.isclose((value - d.low) / d.step, round((value - d.low) / d.step), abs_tol=1e-8)


def describe(distribution: BaseDistribution) -> str:
    """A distribution as the sweep gave it: ``choice(32, 64)``, ``interval(1e-05, 0.01), log``, ..."""
    d = distribution
    if isinstance(d, CategoricalDistribution):
        return f"choice({', '.join(map(str, d.choices))})"
    kind = "an integer" if isinstance(d, IntDistribution) else "a float"
    return f"{kind} from {d.low} to {d.high}{', log scale' if d.log else ''}{f', step {d.step}' if d.step else ''}"


def number_text(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def search_space(params: dict[str, Any], arguments: Iterable[str]) -> SearchSpace:
    """The space of a sweep config's ``params`` (key -> spec) and the command line's ``arguments`` (overrides,
    sweeps or not): a key given in both is the command line's."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    lines = [(f"hydra.sweeper.params.{key}", f"{key}={value}") for key, value in params.items()]
    lines += [("", argument) for argument in arguments]
    dimensions: dict[str, Dimension] = {}
    fixed: dict[str, str] = {}
    parser = OverridesParser.create()
    for where, line in lines:
        try:
            (override,) = parser.parse_overrides([line])
        except Exception as error:  # Hydra's parser errors are several lines; the first says what
            shown = f"{where}={line.split('=', 1)[1]}" if where else line
            raise TuningError(f"{shown}: {str(error).splitlines()[-1].strip() or 'cannot parse'}; {ALLOWED}") from None
        key = override.get_key_element().lstrip("+~")  # the prefix is the override's, not the key's
        dimensions.pop(key, None)
        fixed.pop(key, None)
        if override.is_sweep_override():
            prefix = line[: len(line) - len(line.lstrip("+~"))]
            dimensions[key] = Dimension(key, prefix, *_distribution(override, where or key))
        else:
            fixed[key] = override.input_line
    return SearchSpace(dimensions, list(fixed.values()))


def _distribution(override, where: str) -> tuple[BaseDistribution, tuple[str, ...]]:
    """The distribution of a sweep override, and its choices' texts; a TuningError naming ``where``."""
    from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep

    value = override.value()
    shown = f"{where}={override.input_line.split('=', 1)[1]}"
    tags = set(getattr(value, "tags", ()) or ())
    if tags - {"log"}:
        raise TuningError(f"{shown}: unknown tag {sorted(tags - {'log'})[0]!r}; allowed tags: log")
    log = "log" in tags
    if isinstance(value, ChoiceSweep) or (isinstance(value, RangeSweep) and value.shuffle):
        if log:
            raise TuningError(f"{shown}: choice() draws among its values, not on a scale; {ALLOWED}")
        return _categorical(override, shown)
    if isinstance(value, RangeSweep):
        return _range(override, shown, log), ()
    if isinstance(value, IntervalSweep):
        low, high = float(value.start), float(value.end)
        if not low < high:
            raise TuningError(f"{shown}: interval(low, high) needs low below high")
        if log and low <= 0:
            raise TuningError(f"{shown}: tag(log, ...) needs a positive low end")
        return FloatDistribution(low, high, log=log), ()
    raise TuningError(f"{shown}: {type(value).__name__.lower()} cannot be searched; {ALLOWED}")


def _categorical(override, shown: str) -> tuple[CategoricalDistribution, tuple[str, ...]]:
    values = list(override.sweep_iterator())
    texts = tuple(override.sweep_string_iterator())
    if not values:
        raise TuningError(f"{shown}: an empty choice; {ALLOWED}")
    # Optuna's choices are plain values; a list or mapping is drawn as its override text.
    choices = tuple(v if isinstance(v, PRIMITIVES) else t for v, t in zip(values, texts, strict=True))
    if len(set(texts)) < len(texts):
        raise TuningError(f"{shown}: a value is given twice")
    return CategoricalDistribution(choices), texts


def _range(override, shown: str, log: bool) -> BaseDistribution:
    start, stop, step = override.value().start, override.value().stop, override.value().step
    values = list(override.sweep_iterator())  # Hydra's own enumeration: what the basic sweeper would run
    if not values:
        raise TuningError(f"{shown}: the range is empty")
    low, high = min(values), max(values)
    if all(isinstance(v, int) for v in (start, stop, step)):
        if log and (low < 1 or abs(step) != 1):
            raise TuningError(f"{shown}: tag(log, range(...)) needs a start of at least 1 and a step of 1")
        return IntDistribution(low, high, log=log, step=1 if log else abs(step))
    if log:
        raise TuningError(f"{shown}: tag(log, ...) of a float range: use tag(log, interval(low, high))")
    if len(values) == 1:
        return FloatDistribution(low, high)
    return FloatDistribution(low, high, step=abs(float(step)))
