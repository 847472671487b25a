"""The UCI data sets of the Deep Bayesian Bandits Showdown (Riquelme et al. 2018) and GenRL, read as contextual
bandits: ``env=bandit/<name> env.path=FILE``.

Each data set is its file as UCI distributes it (nothing is downloaded: ``source`` says where it comes from;
a ``.gz`` file is read as it is), its layout (the separator, a header row or none, the values per row), its
label column and its preprocessing, as those loaders do it: categorical columns become one indicator per
value, numeric ones are standardised to mean 0 and std 1 (a column of 0s and 1s, Covertype's wilderness and
soil indicators, stays as it is), rows with a missing value (``?``) are dropped where the loaders drop them
(Adult) and kept as a value of their own where they keep them (Mushroom's stalk-root). Labels become arms in
sorted order (numerically where they are numbers). ``read`` returns the features, labels and label names;
the bandit (rlconf.environments.bandit) pays them by the data set's reward rule.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rlconf.errors import ConfigError

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
BLOCK = 8192  # rows converted to numbers at a time: Covertype's 581,012 rows never sit in memory as strings


@dataclass(frozen=True)
class DataSet:
    """A UCI data set as a bandit: where its file comes from, its layout, label and preprocessing."""

    name: str  # env.id, and env=bandit/<name>
    file: str  # the file's name as UCI serves it
    source: str  # where to get it
    fields: int  # values per row
    label: int | str  # the label column: its index, or its name in the header row
    separator: str | None = ","  # None: runs of spaces (shuttle)
    header: bool = False  # the first row names the columns
    categorical: tuple[int, ...] | None = ()  # columns one-hot encoded; None: every feature column
    ignore: tuple[str, ...] = ()  # header names of columns that are no feature (Census's caseid)
    drop_missing: bool = False  # drop rows with a "?" (else "?" is a value of its own)
    numeric: bool = False  # every value a number: read straight into float arrays
    reward: str = "label"  # the reward rule (rlconf.environments.bandit_rewards)

    def where(self) -> str:
        return f"{self.file} from {self.source}"


DATA_SETS: dict[str, DataSet] = {data.name: data for data in (
    DataSet("covertype", "covtype.data", f"{UCI}/covtype/covtype.data.gz", 55, 54, numeric=True),
    DataSet("statlog", "shuttle.trn", f"{UCI}/statlog/shuttle/shuttle.trn.Z (uncompress it)", 10, 9,
            separator=None, numeric=True),
    DataSet("adult", "adult.data", f"{UCI}/adult/adult.data", 15, 6, categorical=(1, 3, 5, 7, 8, 9, 13, 14),
            drop_missing=True),
    DataSet("census", "USCensus1990.data.txt", f"{UCI}/census1990-mld/USCensus1990.data.txt", 69, "dOccup",
            header=True, categorical=None, ignore=("caseid",), numeric=True),
    DataSet("magic", "magic04.data", f"{UCI}/magic/magic04.data", 11, 10),
    DataSet("mushroom", "agaricus-lepiota.data", f"{UCI}/mushroom/agaricus-lepiota.data", 23, 0,
            categorical=None, reward="mushroom"),
)}


@dataclass
class Table:
    """A data set as the bandit takes it."""

    features: np.ndarray  # (rows, features) float32
    labels: np.ndarray  # (rows,) int64, indices into label_names
    label_names: list[str]


def read(data: DataSet, path: object, rows: int | None = None) -> Table:
    """``data``'s file at ``path`` (its first ``rows`` rows; None: all), preprocessed; one line if it is missing
    or not in the data set's layout."""
    if not path:
        raise ConfigError(f"env.path: not set; env=bandit/{data.name} reads {data.where()} (nothing is "
                          f"downloaded): env.path=FILE")
    path = Path(str(path)).expanduser()
    if not path.is_file():
        raise ConfigError(f"env.path={path}: no such file; env=bandit/{data.name} reads {data.where()}")
    header, lines = _split_rows(data, path, rows)
    if len(lines) < 2:
        raise ConfigError(f"env.path={path}: fewer than 2 rows of data; env=bandit/{data.name} reads {data.where()}")
    try:
        columns = _numbers(lines, data.fields) if data.numeric else list(zip(*lines, strict=True))
    except ValueError as error:
        raise ConfigError(f"env.path={path}: {error}; env=bandit/{data.name} reads {data.where()}") from None
    label = header.index(data.label) if isinstance(data.label, str) else data.label
    ignored = {header.index(name) for name in data.ignore}
    categorical = set(range(data.fields)) if data.categorical is None else set(data.categorical)
    blocks = [one_hot(columns[i]) if i in categorical else _standardised(columns[i], i, path)
              for i in range(data.fields) if i != label and i not in ignored]
    label_names, labels = _labels(columns[label])
    if len(label_names) < 2:
        raise ConfigError(f"env.path={path}: every row has the label {label_names[0]}; a bandit needs at least 2 "
                          f"(env=bandit/{data.name} reads {data.where()})")
    return Table(np.concatenate(blocks, axis=1).astype(np.float32), labels, label_names)


def _split_rows(data: DataSet, path: Path, limit: int | None) -> tuple[list[str], list[list[str]]]:
    """The header's names (or column numbers) and the rows' values, each row checked for its count."""
    header: list[str] | None = None
    rows: list[list[str]] = []
    for number, values in _lines(data, path):
        if header is None and data.header:
            header = values
        elif not (data.drop_missing and "?" in values):
            rows.append(values)
        if len(values) != data.fields:
            raise ConfigError(f"env.path={path}: line {number} has {len(values)} values, {data.name}'s rows have "
                              f"{data.fields} (features and the label); env=bandit/{data.name} reads {data.where()}")
        if limit is not None and len(rows) >= limit:
            break
    missing = [name for name in data.ignore + ((data.label,) if isinstance(data.label, str) else ())
               if name not in (header or [])]
    if missing:
        raise ConfigError(f"env.path={path}: no column {missing[0]} in the header row; env=bandit/{data.name} reads "
                          f"{data.where()}")
    return header or [str(i) for i in range(data.fields)], rows


def _lines(data: DataSet, path: Path) -> Iterator[tuple[int, list[str]]]:
    """Each non-blank line's number and values, text stripped of spaces (Adult writes ", ") and of a trailing
    period (adult.test's labels); lines of comments (``|``, adult.test's first) are skipped."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", newline="") as file:
            for number, line in enumerate(file, 1):
                line = line.strip()
                if line and not line.startswith("|"):
                    values = line.split(data.separator)
                    # Numbers parse with spaces around them: only text is cleaned (a fifth of Covertype's time)
                    yield number, values if data.numeric and number > data.header else [_clean(v) for v in values]
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"env.path={path}: unreadable ({error}); env=bandit/{data.name} reads "
                          f"{data.where()}") from None


def _clean(value: str) -> str:
    value = value.strip()
    return value[:-1] if len(value) > 1 and value.endswith(".") else value


def _numbers(rows: list[list[str]], fields: int) -> list[np.ndarray]:
    """The columns of rows of numbers, converted a block at a time."""
    blocks = []
    for start in range(0, len(rows), BLOCK):
        block = rows[start:start + BLOCK]
        try:
            blocks.append(np.array(block, dtype=np.float64))
        except ValueError:
            bad = next(value for row in block for value in row if not _is_number(value))
            raise ValueError(f"{bad!r} is not a number") from None
    table = np.concatenate(blocks) if blocks else np.zeros((0, fields))
    return list(table.T)


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def one_hot(column) -> np.ndarray:
    """One indicator per value of a categorical column, values in sorted order (float64, rows x values)."""
    _, index = np.unique(np.asarray(column), return_inverse=True)
    onehot = np.zeros((len(index), int(index.max()) + 1))
    onehot[np.arange(len(index)), index] = 1.0
    return onehot


def _standardised(column, index: int, path: Path) -> np.ndarray:
    """A numeric column at mean 0, std 1; a column of 0s and 1s (an indicator) as it is."""
    try:
        values = np.asarray(column, dtype=np.float64)
    except ValueError:
        bad = next(value for value in column if not _is_number(value))
        raise ConfigError(f"env.path={path}: column {index + 1} holds {bad!r}, not a number") from None
    if np.isin(values, (0.0, 1.0)).all():
        return values[:, None]
    return ((values - values.mean()) / (values.std() or 1.0))[:, None]


def _labels(column) -> tuple[list[str], np.ndarray]:
    """The distinct labels (numbers in numeric order, as text) and each row's index among them."""
    values = np.asarray(column)
    if values.dtype.kind == "f":
        names, index = np.unique(values, return_inverse=True)
        return [f"{name:g}" for name in names], index.astype(np.int64)
    try:
        order = sorted(set(values.tolist()), key=float)
    except ValueError:
        order = sorted(set(values.tolist()))
    lookup = {name: i for i, name in enumerate(order)}
    return order, np.array([lookup[v] for v in values.tolist()], dtype=np.int64)
