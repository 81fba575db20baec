"""CBMA's data: the simulated settings, the local-only real-data path, and paper scale."""

from __future__ import annotations

import numpy as np
import pytest

from papers.conformal_bma.config import SettingConfig
from papers.conformal_bma.data import load_real, simulate
from papers.conformal_bma.train import exact_coverage
from shared.config import compose_dict
from shared.entry import execute


def test_simulated_settings_follow_the_brief():
    rng = np.random.default_rng(0)
    a = SettingConfig(coefficients=[0.5, 1.0, 1.5], noise="constant")
    x, y = simulate(a, 20000, rng)
    assert x.min() >= -2 and x.max() <= 2
    resid = y - (0.5 + x + 1.5 * x**2)
    assert resid.std() == pytest.approx(1.0, abs=0.02)
    b = SettingConfig(coefficients=[1.0, 2.0], noise="abs_linear", noise_offset=0.2)
    x, y = simulate(b, 20000, rng)
    scaled = (y - (1 + 2 * x)) / (0.2 + np.abs(x))
    assert scaled.std() == pytest.approx(1.0, abs=0.02)


def test_exact_coverage_formula():
    assert exact_coverage(19, 0.1) == pytest.approx(0.90)
    assert exact_coverage(9, 0.1) == pytest.approx(0.90)
    assert exact_coverage(100, 0.1) == pytest.approx(1 - 10 / 101)


def test_real_data_is_local_only(tmp_path):
    california = SettingConfig(source="california_housing")
    with pytest.raises(FileNotFoundError, match="data_root"):
        load_real(california, None)
    with pytest.raises(FileNotFoundError, match="Nothing is downloaded"):
        load_real(california, str(tmp_path))
    assert not list(tmp_path.rglob("*.pkz"))
    with pytest.raises(ValueError, match="unknown data source"):
        load_real(SettingConfig(source="imagenet"), None)


@pytest.mark.smoke
def test_paper_scale_runs_on_a_standin(tmp_path):
    cfg = compose_dict(
        "conformal_bma",
        "paper",
        [
            "settings.california_housing.source=diabetes",
            "n_train=60",
            "n_test=5",
            "replications=2",
            "grid_size=60",
            "runtime.progress=false",
        ],
    )
    record = execute("conformal_bma", cfg, tmp_path)
    metrics = record["metrics"]["california_housing/cbma"]
    assert 0.0 <= metrics["coverage"]["mean"] <= 1.0
    assert np.isfinite(metrics["length"]["mean"]) and metrics["length"]["mean"] > 0
    assert record["claims"] == []
