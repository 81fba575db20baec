"""Data for CBMA: the brief's simulated settings and the real tables.

Real data are read from local files only, never downloaded:

* ``diabetes``: scikit-learn's bundled Efron et al. (2004) table (442 patients x 10
  covariates, disease progression after one year), read from the two files that
  ``shared.assets.require("diabetes")`` verifies (``diabetes_data_raw.csv.gz``,
  ``diabetes_target.csv.gz``: whitespace-separated numbers, no header) with numpy;
* ``csv``: any numeric table with a header row and a named response column (``path``,
  ``target`` in the setting), so another real table needs a config entry, not code;
* ``california_housing``: scikit-learn's local cache folder
  (``fetch_california_housing(data_home=<data_root>, download_if_missing=False)``).

Bad input stops with one :class:`RealDataError` naming the file (and the column, where one is
at fault).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from papers.conformal_bma.config import REAL_SOURCES, SettingConfig

# scikit-learn's DESCR of the diabetes set names the ten columns of diabetes_data_raw in order.
DIABETES_COLUMNS = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")
DIABETES_ROWS = 442
DIABETES_DATA, DIABETES_TARGET = "diabetes_data_raw.csv.gz", "diabetes_target.csv.gz"


class RealDataError(ValueError):
    """A real data file is absent, unreadable or malformed; the message names the file."""


@dataclass(frozen=True)
class RealTable:
    """A real regression table: inputs, response, input column names, where it came from."""

    X: np.ndarray  # (N, d) float64
    y: np.ndarray  # (N,) float64
    columns: tuple[str, ...]  # (d,) names of the input columns
    origin: str  # the file(s) read

    def column_indices(self, names: list[str], model: str) -> tuple[int, ...]:
        """Indices of the named input columns (a candidate's feature subset); an unknown name
        is refused, listing the table's columns."""
        unknown = [n for n in names if n not in self.columns]
        if unknown or not names:
            raise RealDataError(
                f"model {model!r} asks for columns {list(names)}; {self.origin} has input "
                f"columns {list(self.columns)}"
            )
        return tuple(self.columns.index(n) for n in names)


def simulate(setting: SettingConfig, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Draw ``n`` points of a simulated setting (brief Sec. 5): returns ``(x, y)``, (n,) each."""
    x = rng.uniform(setting.x_low, setting.x_high, size=n)  # (n,)
    mean = np.polynomial.polynomial.polyval(x, setting.coefficients)  # (n,)
    if setting.noise == "constant":
        sd = np.ones(n)
    elif setting.noise == "abs_linear":
        sd = setting.noise_offset + np.abs(x)
    else:
        raise ValueError(f"unknown noise {setting.noise!r}: constant or abs_linear")
    return x, mean + setting.noise_scale * sd * rng.standard_normal(n)


def _read_numbers(path: Path) -> np.ndarray:
    """A whitespace-separated numeric file (gzip when it ends in .gz) as a 2-D float array."""
    if not path.is_file():
        raise RealDataError(f"{path} does not exist (run `python scripts/fetch_assets.py`)")
    try:
        values = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except (OSError, EOFError, ValueError, zlib.error, UnicodeDecodeError) as err:
        raise RealDataError(
            f"{path} is not a readable whitespace-separated numeric table: {err}"
        ) from err
    if not np.all(np.isfinite(values)):
        raise RealDataError(f"{path} holds values that are not finite (nan or inf)")
    return values


def load_diabetes_files(data_file: Path, target_file: Path) -> RealTable:
    """The diabetes table from scikit-learn's two bundled files: X (442, 10) raw covariates
    (age, sex, bmi, bp, s1-s6, unscaled) and y (442,) disease progression."""
    data_file, target_file = Path(data_file), Path(target_file)
    X = _read_numbers(data_file)
    if X.shape != (DIABETES_ROWS, len(DIABETES_COLUMNS)):
        raise RealDataError(
            f"{data_file} has shape {X.shape}, expected ({DIABETES_ROWS}, "
            f"{len(DIABETES_COLUMNS)}) (truncated or not the diabetes covariates)"
        )
    y = _read_numbers(target_file)
    if y.shape != (DIABETES_ROWS, 1):
        raise RealDataError(
            f"{target_file} has shape {y.shape}, expected ({DIABETES_ROWS}, 1) "
            "(truncated or not the diabetes target)"
        )
    return RealTable(X, y[:, 0], DIABETES_COLUMNS, f"{data_file.name} + {target_file.name}")


def load_diabetes() -> RealTable:
    """The diabetes table through the pinned asset (checksums verified, nothing downloaded)."""
    from shared.assets import require

    files = require("diabetes")
    return load_diabetes_files(files[DIABETES_DATA], files[DIABETES_TARGET])


def _read_frame(path: Path):
    """A CSV's cells as strings (numbers are parsed column by column, naming bad cells)."""
    import pandas as pd

    if not path.is_file():
        raise RealDataError(f"{path} does not exist (settings.<name>.path of a csv source)")
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise RealDataError(f"{path} cannot be read as a CSV table: {err}") from err


def _numbers(frame, path: Path, columns) -> np.ndarray:
    """The ``columns`` of ``frame`` as float64 (N, len(columns)); an empty cell or a value that
    is not a finite number raises naming the file, the column and the line."""
    import pandas as pd

    values = np.empty((len(frame), len(columns)), dtype=np.float64)
    for j, column in enumerate(columns):
        numbers = pd.to_numeric(frame[column].str.strip(), errors="coerce").to_numpy(float)
        bad = np.flatnonzero(~np.isfinite(numbers))
        if bad.size:
            row = int(bad[0])
            raise RealDataError(
                f"{path}, column {column!r}, line {row + 2}: value {frame[column].iloc[row]!r} "
                "is not a finite number (every column must be numeric, with no empty cells)"
            )
        values[:, j] = numbers
    return values


def load_inputs(
    path: str | Path, columns: tuple[str, ...], target: str
) -> tuple[np.ndarray, np.ndarray | None]:
    """A table of new inputs (a user's test rows): the training table's input ``columns``, by
    name, and the response ``target`` where the file has it (else None)."""
    path = Path(path).expanduser()
    frame = _read_frame(path)
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        raise RealDataError(f"{path} lacks the input column(s) {absent} of the training table")
    y = _numbers(frame, path, [target])[:, 0] if target in frame.columns else None
    return _numbers(frame, path, list(columns)), y


def load_csv(path: str | Path, target: str) -> RealTable:
    """Any numeric CSV table with a header row: ``target`` is the response, every other column
    an input. A missing file or column, an empty cell or a value that is not numeric is
    refused, naming the file, the column and the line."""
    path = Path(path).expanduser()
    frame = _read_frame(path)
    if target not in frame.columns:
        raise RealDataError(
            f"{path} has no column {target!r} (the setting's target); its columns are "
            f"{list(frame.columns)}"
        )
    inputs = [c for c in frame.columns if c != target]
    if not inputs or frame.shape[0] < 2:
        raise RealDataError(
            f"{path} needs at least one input column besides {target!r} and two rows, "
            f"has columns {list(frame.columns)} and {frame.shape[0]} rows"
        )
    values = _numbers(frame, path, list(frame.columns))  # (N, d + 1)
    X = values[:, [frame.columns.get_loc(c) for c in inputs]]
    y = values[:, frame.columns.get_loc(target)]
    return RealTable(X, y, tuple(str(c) for c in inputs), str(path))


def load_california_housing(data_root: str | None) -> RealTable:
    """California housing from scikit-learn's local cache under ``data_root``."""
    from sklearn import datasets

    if data_root is None:
        raise FileNotFoundError(
            "data_root is not set. Put scikit-learn's California housing cache "
            "(cal_housing_py3.pkz, as fetch_california_housing leaves it) in a folder and "
            "pass data_root=/that/folder. Nothing is downloaded."
        )
    try:
        data = datasets.fetch_california_housing(data_home=data_root, download_if_missing=False)
    except OSError as err:
        raise FileNotFoundError(
            f"California housing not found under {data_root}: copy cal_housing_py3.pkz "
            "there (from a machine where fetch_california_housing(data_home=...) ran). "
            "Nothing is downloaded."
        ) from err
    return RealTable(
        data.data.astype(np.float64),
        data.target.astype(np.float64),
        tuple(data.feature_names),
        f"{data_root}/cal_housing_py3.pkz",
    )


def load_real(setting: SettingConfig, data_root: str | None) -> RealTable:
    """The real table a setting names (``source``), from local files only."""
    if setting.source == "diabetes":
        return load_diabetes()
    if setting.source == "csv":
        if not setting.path or not setting.target:
            raise RealDataError(
                "a csv source needs settings.<name>.path (the file) and settings.<name>.target "
                f"(its response column), got path={setting.path!r}, target={setting.target!r}"
            )
        return load_csv(setting.path, setting.target)
    if setting.source == "california_housing":
        return load_california_housing(data_root)
    raise ValueError(
        f"unknown data source {setting.source!r}: simulated, {', '.join(REAL_SOURCES)}"
    )
