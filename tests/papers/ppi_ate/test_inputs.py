"""Bad input to papers/ppi_ate is rejected before any computation, with a clear message that
names the data set and the column (``check_dataset``, ``aipw_pseudo_outcomes``,
``z_quantile``, ``train.intervals``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from papers.ppi_ate.config import SettingConfig
from papers.ppi_ate.data import Dataset
from papers.ppi_ate.method import aipw_pseudo_outcomes, check_dataset, z_quantile
from papers.ppi_ate.train import intervals
from shared.config import ConfigError, compose

METHODS = ["aipw", "ppi", "d2_only"]


@pytest.fixture(scope="module")
def toy_cfg():
    return compose("ppi_ate", "toy")


def _data(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A valid data set: X (n, 1), both arms, finite outcomes."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, (n, 1))
    a = np.arange(n) % 2  # both arms, balanced
    y = 1.0 + x[:, 0] + 2.0 * a + rng.normal(size=n)
    return x, a, y


def _message(excinfo) -> str:
    return str(excinfo.value)


def test_valid_input_passes():
    x, a, y = _data()
    check_dataset("D1", x, a, y)
    check_dataset("D1", x[:, 0], a, y)  # 1-D X
    check_dataset("D2", x, a.astype(float), y)  # 0.0 / 1.0 floats are binary too
    check_dataset("D2", x, a.astype(bool), y)  # and booleans


# ----------------------------------------------------------------------------------------------
# check_dataset: NaN / inf, naming the data set and the column
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["D1", "D2"])
@pytest.mark.parametrize("column", ["X", "A", "Y"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_value_names_data_set_and_column(name, column, bad):
    x, a, y = _data()
    x, a, y = x.copy(), a.astype(float), y.copy()
    {"X": x[:, 0], "A": a, "Y": y}[column][7] = bad
    with pytest.raises(ValueError) as excinfo:
        check_dataset(name, x, a, y)
    message = _message(excinfo)
    assert name in message and f"column {column}" in message, message
    assert "NaN" in message
    other = {"D1": "D2", "D2": "D1"}[name]
    assert other not in message  # names the right data set, not both


def test_nan_in_a_second_covariate_column_is_caught():
    x, a, y = _data()
    x = np.column_stack([x, x**2])  # (n, 2)
    x[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"D1.*column X"):
        check_dataset("D1", x, a, y)


# ----------------------------------------------------------------------------------------------
# check_dataset: treatment column and lengths
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values", [[0, 1, 2], [-1, 1], [0, 0.5, 1], [1, 2]], ids=["012", "pm1", "half", "12"]
)
def test_non_binary_treatment(values):
    x, _, y = _data(n=36)
    a = np.resize(np.asarray(values), 36)
    with pytest.raises(ValueError) as excinfo:
        check_dataset("D2", x, a, y)
    message = _message(excinfo)
    assert "D2" in message and "column A" in message and "binary" in message, message


@pytest.mark.parametrize("arm", [0, 1])
def test_only_one_arm(arm):
    x, _, y = _data()
    a = np.full(len(y), arm)
    with pytest.raises(ValueError) as excinfo:
        check_dataset("D1", x, a, y)
    message = _message(excinfo)
    assert "D1" in message and "column A" in message, message
    assert "both arms are needed" in message, message


@pytest.mark.parametrize("short", ["X", "A", "Y"])
def test_mismatched_lengths(short):
    x, a, y = _data()
    if short == "X":
        x = x[:-1]
    elif short == "A":
        a = a[:-1]
    else:
        y = y[:-1]
    with pytest.raises(ValueError) as excinfo:
        check_dataset("D2", x, a, y)
    message = _message(excinfo)
    assert "D2" in message and "different lengths" in message, message


# ----------------------------------------------------------------------------------------------
# aipw_pseudo_outcomes and z_quantile
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("edge", [0.0, 1.0, -0.2, 1.3])
@pytest.mark.parametrize("variant", ["correct", "official_code"])
def test_propensity_at_zero_or_one_is_rejected(edge, variant):
    x, a, y = _data()
    e = np.full(len(y), 0.5)
    e[5] = edge
    mu = np.zeros(len(y))
    with pytest.raises(ValueError, match=r"strictly in \(0, 1\)"):
        aipw_pseudo_outcomes(y, a, mu, mu, e, variant=variant)
    with pytest.raises(ValueError, match=r"strictly in \(0, 1\)"):  # a scalar propensity too
        aipw_pseudo_outcomes(y, a, mu, mu, edge, variant=variant)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_alpha_outside_unit_interval(alpha):
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 1\)"):
        z_quantile(alpha)


# ----------------------------------------------------------------------------------------------
# train.intervals: the pipeline checks both data sets and the RCT propensity
# ----------------------------------------------------------------------------------------------


def _pair(seed: int = 0) -> tuple[Dataset, Dataset]:
    x1, a1, y1 = _data(n=60, seed=seed)
    x2, a2, y2 = _data(n=400, seed=seed + 1)
    return Dataset(x1, a1, y1), Dataset(x2, a2, y2)


def test_intervals_run_on_valid_pair(toy_cfg):
    d1, d2 = _pair()
    out = intervals(d1, d2, toy_cfg.settings["rct"], toy_cfg, METHODS, np.random.default_rng(0))
    assert set(out) == set(METHODS)


@pytest.mark.parametrize("arm", [0, 1])
def test_intervals_reject_d1_with_one_arm(toy_cfg, arm):
    d1, d2 = _pair()
    d1 = Dataset(d1.x, np.full(len(d1.y), arm), d1.y)
    with pytest.raises(ValueError) as excinfo:
        intervals(d1, d2, toy_cfg.settings["rct"], toy_cfg, METHODS, np.random.default_rng(0))
    message = _message(excinfo)
    assert "D1" in message and "both arms are needed" in message, message


def test_intervals_name_d2_for_bad_d2(toy_cfg):
    d1, d2 = _pair()
    y2 = d2.y.copy()
    y2[10] = np.nan
    with pytest.raises(ValueError, match=r"data set D2: column Y"):
        intervals(
            d1,
            Dataset(d2.x, d2.a, y2),
            toy_cfg.settings["rct"],
            toy_cfg,
            METHODS,
            np.random.default_rng(0),
        )
    # both arms in D2 overall, but its training half (the first rows) holds only controls
    a2 = np.r_[np.zeros(200, dtype=int), np.arange(200) % 2]
    with pytest.raises(ValueError, match=r"D2 \(training half\).*both arms"):
        intervals(
            d1,
            Dataset(d2.x, a2, d2.y),
            toy_cfg.settings["rct"],
            toy_cfg,
            METHODS,
            np.random.default_rng(0),
        )


@pytest.mark.parametrize("propensity", [0.0, 1.0])
def test_intervals_reject_degenerate_known_propensity(toy_cfg, propensity):
    # refused at start, when the config becomes its dataclass (a declared bound)
    with pytest.raises(ConfigError, match=r"^settings\.rct\.rct_propensity="):
        compose("ppi_ate", "toy", [f"settings.rct.rct_propensity={propensity}"])
    d1, d2 = _pair()
    setting = dataclasses.replace(toy_cfg.settings["rct"], rct_propensity=propensity)
    assert setting.d1_design == "rct" and setting.use_known_propensity
    # estimated instead of plugged in: intervals never reads the degenerate value
    estimated = dataclasses.replace(setting, use_known_propensity=False)
    out = intervals(d1, d2, estimated, toy_cfg, METHODS, np.random.default_rng(0))
    assert np.isfinite(out["aipw"].half_width)


def test_default_setting_config_is_valid():
    setting = SettingConfig()
    assert 0.0 < setting.rct_propensity < 1.0
