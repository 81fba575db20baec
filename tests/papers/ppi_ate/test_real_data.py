"""PPI-ATE's real rung: the causaldata loaders on the real files, bad files refused naming
the file, the confounded split's math (``confounded_keep_probability``, ``rank_to_unit``,
``real_draw``) and the covariate-shift check (``method.shift_check``)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from papers.ppi_ate.config import SettingConfig, is_off
from papers.ppi_ate.data import (
    REAL_ASSET,
    REAL_DATASETS,
    Dataset,
    RealData,
    confounded_keep_probability,
    difference_in_means,
    load_real,
    rank_to_unit,
    real_draw,
)
from papers.ppi_ate.method import shift_check
from papers.ppi_ate.train import intervals
from shared.config import REAL_SCALE, compose
from tests.helpers import require_assets


@pytest.fixture(scope="module")
def files():
    return require_assets(REAL_ASSET)[REAL_ASSET]


# ------------------------------------------------------------------------- the real files
@pytest.mark.parametrize(
    ("name", "rows", "p", "treated", "reference"),
    [
        ("black_politicians", 5593, 12, 2779, -0.26613),
        ("thornton_hiv", 2816, 3, 2198, 0.44793),
        ("nsw_cps", 445, 8, 185, 1794.343),
    ],
)
def test_loader_on_the_real_files(files, name, rows, p, treated, reference):
    data = load_real(name, files)
    exp = data.experiment
    assert exp.x.shape == (rows, p) and exp.a.shape == exp.y.shape == (rows,)
    assert data.columns == REAL_DATASETS[name].covariates
    assert set(np.unique(exp.a)) == {0, 1} and int(exp.a.sum()) == treated
    assert np.all(np.isfinite(exp.x)) and np.all(np.isfinite(exp.y))
    assert data.reference == pytest.approx(reference, abs=1e-3)
    assert data.reference == difference_in_means(exp.a, exp.y)
    if name == "nsw_cps":  # the CPS comparison group: 15,992 untreated men
        assert data.external.x.shape == (15992, p) and not data.external.a.any()
    else:
        assert data.external is None
    if name == "thornton_hiv":  # indeterminate tests (-1) and incomplete rows dropped
        assert set(np.unique(exp.x[:, 2])) == {0.0, 1.0}


def test_default_files_are_the_verified_asset(files):
    assert load_real("nsw_cps").reference == load_real("nsw_cps", files).reference


def test_unknown_dataset_is_refused(files):
    with pytest.raises(ValueError, match="unknown real_dataset 'nsw'"):
        load_real("nsw", files)


# ------------------------------------------------------------------------- bad files
def _copy(files, tmp_path, name: str) -> dict:
    copied = dict(files)
    copied[name] = tmp_path / name
    shutil.copy(files[name], copied[name])
    return copied


def test_truncated_csv_names_the_file(files, tmp_path):
    bad = _copy(files, tmp_path, "black_politicians.csv")
    text = bad["black_politicians.csv"].read_bytes()
    bad["black_politicians.csv"].write_bytes(text[: len(text) // 2])
    with pytest.raises(ValueError, match=r"black_politicians\.csv.*(rows|missing|cannot)"):
        load_real("black_politicians", bad)


def test_csv_without_a_column_names_it(files, tmp_path):
    bad = _copy(files, tmp_path, "black_politicians.csv")
    pd.read_csv(files["black_politicians.csv"]).drop(columns="south").to_csv(
        bad["black_politicians.csv"], index=False
    )
    with pytest.raises(
        ValueError, match=r"black_politicians\.csv: missing column\(s\) \['south'\]"
    ):
        load_real("black_politicians", bad)


def test_csv_with_a_text_value_names_the_file(files, tmp_path):
    bad = _copy(files, tmp_path, "black_politicians.csv")
    frame = pd.read_csv(files["black_politicians.csv"]).astype({"totalpop": object})
    frame.loc[3, "totalpop"] = "n/a"
    frame.to_csv(bad["black_politicians.csv"], index=False)
    with pytest.raises(ValueError, match=r"black_politicians\.csv"):
        load_real("black_politicians", bad)


@pytest.mark.parametrize("name", ["thornton_hiv.dta", "cps_mixtape.dta"])
def test_truncated_stata_file_names_the_file(files, tmp_path, name):
    bad = _copy(files, tmp_path, name)
    data = bad[name].read_bytes()
    bad[name].write_bytes(data[: len(data) // 3])
    dataset = "thornton_hiv" if name.startswith("thornton") else "nsw_cps"
    with pytest.raises(ValueError, match=name.replace(".", r"\.")):
        load_real(dataset, bad)


def test_corrupted_stata_header_names_the_file(files, tmp_path):
    bad = _copy(files, tmp_path, "nsw_mixtape.dta")
    data = bytearray(bad["nsw_mixtape.dta"].read_bytes())
    data[:64] = b"\x00" * 64
    bad["nsw_mixtape.dta"].write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"nsw_mixtape\.dta: cannot read it"):
        load_real("nsw_cps", bad)


# ------------------------------------------------------------------------- confounded split
def test_rank_to_unit_spans_the_interval_symmetrically():
    u = rank_to_unit(np.array([3.0, 1.0, 2.0, 10.0]))
    np.testing.assert_allclose(u, [0.25, -0.75, -0.25, 0.75])
    tied = rank_to_unit(np.array([0.0, 0.0, 1.0, 1.0]))
    np.testing.assert_allclose(tied, [-0.5, -0.5, 0.5, 0.5])


@pytest.mark.parametrize("pi", [0.5, 0.78])
def test_keep_probability_confounds_without_moving_p_x(pi):
    """P(kept | W) is one constant (P(X) of D2 = the experiment's) and
    P(A = 1 | W, kept) = p(W); every keep probability lies in [0, 1]."""
    u = np.linspace(-1.0, 1.0, 201)
    a = np.concatenate([np.ones_like(u), np.zeros_like(u)]).astype(int)
    uu = np.concatenate([u, u])
    keep, p = confounded_keep_probability(a, uu, 2.0, [0.05, 0.95])
    # a pool whose treated share is pi: weight the two copies of each u
    keep1, keep0 = keep[: u.size], keep[u.size :]
    _, p_pi = confounded_keep_probability(
        (np.arange(1000) < pi * 1000).astype(int), np.zeros(1000), 0.0, [0.05, 0.95]
    )
    assert p_pi[0] == pytest.approx(pi)  # strength 0: p is the treated share
    pool_pi = 0.5
    kept = pool_pi * keep1 + (1 - pool_pi) * keep0
    np.testing.assert_allclose(kept, kept[0], rtol=1e-12)
    np.testing.assert_allclose(pool_pi * keep1 / kept, p[: u.size], rtol=1e-12)
    assert keep.min() >= 0.0 and keep.max() == pytest.approx(1.0)
    assert np.all(np.diff(p[: u.size]) >= 0)  # larger W, more likely treated in D2
    # the same identities for an unbalanced pool
    n1 = int(round(pi * 1000))
    a2 = (np.arange(1000) < n1).astype(int)
    w = np.random.default_rng(0).uniform(-1, 1, 1000)
    keep2, p2 = confounded_keep_probability(a2, w, 2.0, [0.05, 0.95])
    share = a2.mean()
    k1 = keep2[a2 == 1][0] / p2[a2 == 1][0]  # kappa / pi, the same for every treated unit
    np.testing.assert_allclose(keep2[a2 == 1] / p2[a2 == 1], k1)
    np.testing.assert_allclose(keep2[a2 == 0] / (1 - p2[a2 == 0]), k1 * share / (1 - share))
    assert keep2.max() <= 1.0 + 1e-12


def _synthetic_real(m: int = 4000, seed: int = 0) -> RealData:
    """A randomised experiment whose outcome depends on W (column 1)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(m, 3))
    a = (rng.uniform(size=m) < 0.5).astype(int)
    y = x[:, 0] + 2.0 * x[:, 1] + a * (1.0 + x[:, 0]) + 0.1 * rng.normal(size=m)
    return RealData("synthetic", ("x0", "w", "x2"), Dataset(x, a, y), None, 1.0)


def test_real_draw_confounds_d2_on_the_hidden_covariate():
    data = _synthetic_real()
    setting = SettingConfig(generator="real", n_d1=300, n_d2=0, hidden_covariate="w")
    d1, d2, shared = real_draw(setting, data, np.random.default_rng(1))
    assert d1.x.shape == (300, 3) and d2.x.shape[1] == 2
    np.testing.assert_array_equal(shared, [0, 2])
    # D1 and D2 are disjoint sets of the experiment's units (outcomes are continuous)
    assert not set(d1.y.tolist()) & set(d2.y.tolist())
    assert 0.5 * 3700 < len(d2.y) < 3700
    # D2 is confounded: naive difference in means is biased upwards (W raises Y and A)
    naive = difference_in_means(d2.a, d2.y)
    assert naive > 1.0 + 0.5
    # ... while its covariates keep the experiment's distribution
    assert not shift_check(data.experiment.x[:, shared], d2.x).flagged


def test_real_draw_lalonde_shape_and_cap():
    rng = np.random.default_rng(0)
    exp = Dataset(rng.normal(size=(50, 2)), np.arange(50) % 2, rng.normal(size=50))
    ext = Dataset(rng.normal(size=(500, 2)) + 3.0, np.zeros(500, int), rng.normal(size=500))
    data = RealData("nsw_cps", ("a", "b"), exp, ext, 0.0)
    d1, d2, shared = real_draw(SettingConfig(n_d1=0, n_d2=0), data, rng)
    assert len(d1.y) == 50 and len(d2.y) == 525 and int(d2.a.sum()) == 25
    assert shift_check(d1.x[:, shared], d2.x).flagged
    d1, d2, _ = real_draw(SettingConfig(n_d1=20, n_d2=100, hidden_covariate="b"), data, rng)
    assert d1.x.shape == (20, 2) and d2.x.shape == (100, 1)


def test_real_draw_refuses_bad_settings():
    data = _synthetic_real(200)
    with pytest.raises(ValueError, match="hidden_covariate 'zz'"):
        real_draw(SettingConfig(n_d1=50, hidden_covariate="zz"), data, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_d1=0 must lie"):
        real_draw(SettingConfig(n_d1=0), data, np.random.default_rng(0))


def test_intervals_use_the_shared_columns_for_f():
    """PPI's CATE model sees only D2's covariates; D1's nuisances see all of D1's."""
    cfg = compose("ppi_ate", REAL_SCALE)
    data = _synthetic_real()
    setting = cfg.settings["politicians"]
    setting = SettingConfig(**{**vars(setting), "n_d1": 300, "hidden_covariate": "w"})
    d1, d2, shared = real_draw(setting, data, np.random.default_rng(2))
    out = intervals(
        d1, d2, setting, cfg, ["aipw", "ppi", "d2_only"], np.random.default_rng(3), shared
    )
    assert set(out) == {"aipw", "ppi", "d2_only"}
    assert all(np.isfinite(i.half_width) and i.half_width > 0 for i in out.values())


# ------------------------------------------------------------------------- shift check
def test_shift_check_math():
    rng = np.random.default_rng(0)
    same = shift_check(rng.normal(size=(300, 4)), rng.normal(size=(3000, 4)))
    assert not same.flagged and same.max_abs_smd < 0.2
    shifted = shift_check(rng.normal(size=(300, 4)), rng.normal(size=(3000, 4)) + [0, 0, 0.5, 0])
    assert shifted.flagged and 0.3 < shifted.max_abs_smd < 0.7
    # SMD by hand
    x1, x2 = np.array([[0.0], [2.0]]), np.array([[1.0], [3.0], [1.0], [3.0]])
    assert shift_check(x1, x2).max_abs_smd == pytest.approx(1.0)  # (1 - 2) / sqrt((1 + 1)/2)
    # a tiny material difference in a huge sample is significant but not material
    big = rng.normal(size=(200000, 1))
    assert not shift_check(big, big[::-1] + 0.05).flagged
    # constant columns: equal -> 0, different -> infinite and flagged
    assert shift_check(np.ones((5, 1)), np.ones((7, 1))).max_abs_smd == 0.0
    assert shift_check(np.ones((5, 1)), np.zeros((7, 1))).flagged
    with pytest.raises(ValueError, match="shift_check needs"):
        shift_check(np.ones((5, 2)), np.ones((5, 3)))


def test_real_config_composes_with_its_three_experiments():
    cfg = compose("ppi_ate", REAL_SCALE)
    settings = {k: v for k, v in cfg.settings.items() if v is not None and not is_off(v)}
    assert set(settings) == {"politicians", "hiv", "lalonde"}
    assert is_off(cfg.settings["own"])  # the slot for a user's CSV, off until its path is set
    assert {s.real_dataset for s in settings.values()} == {
        "black_politicians",
        "thornton_hiv",
        "nsw_cps",
    }
    assert all(s.generator == "real" for s in settings.values())
    assert cfg.learners.d1_propensity == "constant"
