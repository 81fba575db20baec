"""PPI-ATE's paper-scale path (the official GP DGP) on a reduced grid."""

from __future__ import annotations

import numpy as np
import pytest

from shared.config import compose_dict
from shared.entry import execute


@pytest.mark.smoke
def test_paper_scale_gp_path_runs(tmp_path):
    overrides = ["seeds=[0]", "runtime.progress=false"]
    for name in ("no_confounding", "u_confounding", "strong_confounding"):
        overrides += [
            f"settings.{name}.gp_grid_points=11",
            f"settings.{name}.n_d2=600",
            f"settings.{name}.true_ate_mc_draws=500",
        ]
    record = execute("ppi_ate", compose_dict("ppi_ate", "paper", overrides), tmp_path)
    assert record["scale"] == "paper" and record["claims"] == []
    for method in ("aipw", "ppi", "d2_only"):
        stats = record["metrics"][f"strong_confounding/{method}"]
        assert np.isfinite(stats["half_width"]["mean"]) and stats["half_width"]["mean"] > 0
