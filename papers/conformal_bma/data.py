"""Data for CBMA: the brief's simulated settings and the paper's real-data path.

Real data are read from local files only: California housing from scikit-learn's cache
folder (``fetch_california_housing(data_home=<data_root>, download_if_missing=False)``), and
scikit-learn's bundled diabetes set as the offline stand-in the tests use.
"""

from __future__ import annotations

import numpy as np

from papers.conformal_bma.config import SettingConfig


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


def load_real(source: str, data_root: str | None) -> tuple[np.ndarray, np.ndarray]:
    """A real regression data set ``(X (N, d), y (N,))`` from local files only."""
    from sklearn import datasets

    if source == "diabetes":  # bundled with scikit-learn
        data = datasets.load_diabetes()
        return data.data.astype(np.float64), data.target.astype(np.float64)
    if source == "california_housing":
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
        return data.data.astype(np.float64), data.target.astype(np.float64)
    raise ValueError(f"unknown data source {source!r}: simulated, california_housing or diabetes")
