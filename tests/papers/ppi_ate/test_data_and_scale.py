"""PPI-ATE's paper-scale path (the official GP DGP) on a reduced grid."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from papers.ppi_ate.data import toy_draw
from papers.ppi_ate.model import outcome_factory, propensity_factory
from papers.ppi_ate.train import intervals
from shared.config import compose, compose_dict
from shared.entry import execute
from tests.helpers import load_benchmark


@pytest.mark.smoke
def test_paper_scale_gp_path_runs(tmp_path):
    overrides = ["seeds=[0]", "runtime.progress=false"]
    for name in ("no_confounding", "u_confounding", "strong_confounding"):
        overrides += [
            f"settings.{name}.gp_grid_points=11",
            f"settings.{name}.n_d2=600",
        ]
    record = execute("ppi_ate", compose_dict("ppi_ate", "paper", overrides), tmp_path)
    assert record["scale"] == "paper" and record["claims"] == []
    for method in ("aipw", "ppi", "d2_only"):
        stats = record["metrics"][f"strong_confounding/{method}"]
        assert np.isfinite(stats["half_width"]["mean"]) and stats["half_width"]["mean"] > 0


def test_d1_nuisances_have_their_own_learners():
    """Paper scale: D1's AIPW nuisances are the official linear / logistic models, D2's CATE
    model keeps gradient boosting; the toy uses its splines for both."""
    paper = compose("ppi_ate", "paper").learners
    assert (paper.d1_outcome, paper.d1_propensity) == ("linear", "logistic")
    assert (paper.outcome, paper.propensity, paper.cate) == (
        "gradient_boosting",
        "gradient_boosting",
        "dr_learner",
    )
    toy = compose("ppi_ate", "toy").learners
    assert (toy.d1_outcome, toy.outcome) == ("spline", "spline")
    with pytest.raises(ValueError, match=r"learners\.d1_outcome"):
        outcome_factory(dataclasses.replace(paper, d1_outcome="forest"), "d1_outcome")
    with pytest.raises(ValueError, match=r"learners\.d1_propensity"):
        propensity_factory(dataclasses.replace(paper, d1_propensity="forest"), "d1_propensity")


def test_intervals_fit_d1_with_the_d1_learner():
    """Changing only learners.d1_outcome changes AIPW (D1 only) but not D2-only (D2 only)."""
    cfg = compose("ppi_ate", "toy")
    setting = cfg.settings["rct"]
    linear = dataclasses.replace(
        cfg, learners=dataclasses.replace(cfg.learners, d1_outcome="linear")
    )
    d1, d2 = toy_draw(setting, np.random.default_rng(0))
    methods = ["aipw", "d2_only"]
    spline_out = intervals(d1, d2, setting, cfg, methods, np.random.default_rng(1))
    linear_out = intervals(d1, d2, setting, linear, methods, np.random.default_rng(1))
    assert spline_out["aipw"].estimate != linear_out["aipw"].estimate
    assert spline_out["d2_only"].estimate == linear_out["d2_only"].estimate


@pytest.mark.smoke
def test_benchmark_paper_scale_rows():
    module = load_benchmark("ppi_ate")
    rows = module.main(["--paper-scale", "--repeats", "1"])
    assert [r["d1_outcome"] for r in rows] == ["linear (paper config)", "gradient_boosting"]
    for r in rows:
        assert (r["setting"], r["n_rct"], r["n_obs"]) == ("strong_confounding", 100, 5000)
        assert r["seconds"] > 0 and r["meets_target"] is None
