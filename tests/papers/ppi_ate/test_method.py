"""Tests of papers/ppi_ate: brief `ppi_ate.md` Sec. 7 items 1-7, plus out-of-fold cross-fitting,
PPI's unbiasedness under a biased CATE model, the confounded D2-only interval and the
measure-of-fit-on-D1 collapse, the data generators, determinism, and the speed target
(papers/ppi_ate/benchmark.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.interpolate import RectBivariateSpline
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsRegressor

from papers.ppi_ate.config import LearnerConfig, SettingConfig
from papers.ppi_ate.data import (
    TOY_TRUE_ATE,
    Dataset,
    gp_draw,
    independent_streams,
    make_gp_world,
    mean_over_x,
    toy_draw,
)
from papers.ppi_ate.method import (
    aipw_interval,
    aipw_pseudo_outcomes,
    cross_fit_nuisances,
    d2_only_interval,
    ppi_interval,
    split_d2,
    z_quantile,
)
from papers.ppi_ate.model import outcome_factory
from papers.ppi_ate.train import intervals
from shared.config import compose
from tests.helpers import load_benchmark

REPO_ROOT = Path(__file__).resolve().parents[3]
THETA = 5.0 / 3.0  # E_X[1 + 3 sin(3X) + 2X^2], X ~ U[-1, 1] (brief Sec. 5)
CLIP = (0.01, 0.99)
SPLINE = outcome_factory(LearnerConfig())  # the toy's outcome regression: cubic splines, 6 knots


@pytest.fixture(scope="module")
def toy_cfg():
    """The toy config (spline learners, 2-fold cross-fitting, alpha = 0.05)."""
    return compose("ppi_ate", "toy")


def _toy_mu(x: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The toy's potential-outcome means, written out from the brief (Sec. 5), not imported."""
    mu0 = 1.0 + 0.5 * x + 2.0 * u
    mu1 = mu0 + 1.0 + 3.0 * np.sin(3.0 * x) + 2.0 * x**2 + u
    return mu0, mu1


def _tau(x: np.ndarray) -> np.ndarray:
    """The true D1 CATE (U = 0)."""
    return 1.0 + 3.0 * np.sin(3.0 * x) + 2.0 * x**2


def _random_inputs(rng: np.random.Generator, n: int = 200, n_ev: int = 1500):
    phi = rng.normal(1.5, 2.0, n)  # (n,)
    f_d1 = 0.7 * phi + rng.normal(0.3, 0.5, n)  # (n,), correlated with phi
    f_d2_eval = rng.normal(1.8, 1.2, n_ev)  # (N_ev,)
    return phi, f_d1, f_d2_eval


def _spline_phi(x: np.ndarray, a: np.ndarray, y: np.ndarray, known: float, rng):
    """phi of D1 with the toy's cross-fitted spline nuisances and a known propensity."""
    mu0, mu1, e = cross_fit_nuisances(x, a, y, SPLINE, None, known, 2, CLIP, rng)
    return aipw_pseudo_outcomes(y, a, mu0, mu1, e)


# ----------------------------------------------------------------------------------------------
# Item 1: shift invariance
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shift", [-7.25, 0.5, 123.4])
def test_shift_of_the_model_leaves_ppi_unchanged(shift):
    phi, f_d1, f_d2_eval = _random_inputs(np.random.default_rng(1))
    base = ppi_interval(phi, f_d1, f_d2_eval, 0.05)
    shifted = ppi_interval(phi, f_d1 + shift, f_d2_eval + shift, 0.05)
    assert abs(shifted.estimate - base.estimate) < 1e-10
    assert abs(shifted.half_width - base.half_width) < 1e-10
    # the shift must be applied to both f(X_i) and f(X~_j): shifting one alone moves the estimate
    assert abs(ppi_interval(phi, f_d1 + shift, f_d2_eval, 0.05).estimate - base.estimate) > 0.4


# ----------------------------------------------------------------------------------------------
# Item 2: a constant model reproduces AIPW
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("c", [0.0, -2.5, 3.7])
def test_constant_model_reproduces_aipw(c):
    phi, _, _ = _random_inputs(np.random.default_rng(2))
    z = z_quantile(0.05)
    interval = ppi_interval(phi, np.full(phi.size, c), np.full(777, c), 0.05)
    expected_hw = z * np.std(phi, ddof=0) / np.sqrt(phi.size)
    if c == 0.0:  # nothing to round: bit-identical estimate
        assert interval.estimate == np.mean(phi)
    assert interval.estimate == pytest.approx(np.mean(phi), rel=1e-14, abs=1e-14)
    assert interval.half_width == pytest.approx(expected_hw, rel=1e-14)
    aipw = aipw_interval(phi, 0.05)
    assert interval.estimate == pytest.approx(aipw.estimate, rel=1e-14, abs=1e-14)
    assert interval.half_width == pytest.approx(aipw.half_width, rel=1e-14)
    # ddof = 0, not 1: the two differ by sqrt(n / (n - 1)), far above the tolerance
    assert interval.half_width != pytest.approx(
        z * np.std(phi, ddof=1) / np.sqrt(phi.size), rel=1e-6
    )


# ----------------------------------------------------------------------------------------------
# Item 3: AIPW identity and the official-code variant
# ----------------------------------------------------------------------------------------------


def test_two_algebraic_forms_of_aipw_agree():
    rng = np.random.default_rng(3)
    n = 10_000
    a = rng.integers(0, 2, n)
    y = rng.normal(0.0, 3.0, n)
    mu0, mu1 = rng.normal(0.0, 2.0, n), rng.normal(1.0, 2.0, n)
    e = rng.uniform(0.05, 0.95, n)
    phi = aipw_pseudo_outcomes(y, a, mu0, mu1, e, variant="correct")
    # Sec. 3.2 step 4, second form: AY/e - (1-A)Y/(1-e) - (A - e)/(e(1-e)) [(1-e)mu1 + e mu0]
    second = a * y / e - (1 - a) * y / (1 - e) - (a - e) / (e * (1 - e)) * ((1 - e) * mu1 + e * mu0)
    np.testing.assert_allclose(phi, second, rtol=0, atol=1e-12)
    # the official code's precedence quirk: (A - e)/e*(1 - e) is (A - e)(1 - e)/e
    official = aipw_pseudo_outcomes(y, a, mu0, mu1, e, variant="official_code")
    quirk = a * y / e - (1 - a) * y / (1 - e) - (a - e) * (1 - e) / e * ((1 - e) * mu1 + e * mu0)
    np.testing.assert_allclose(official, quirk, rtol=0, atol=1e-12)
    assert np.max(np.abs(official - phi)) > 1.0  # the variants differ in general
    with pytest.raises(ValueError, match="aipw variant"):
        aipw_pseudo_outcomes(y, a, mu0, mu1, e, variant="efficient")


def test_both_aipw_variants_are_unbiased_with_a_correct_propensity():
    """Observational D1 (e(x) = sigmoid(0.8x), plugged in exactly) and deliberately wrong
    outcome models, so the augmentation term is not zero: both variants are unbiased for theta
    because E[A - e(X) | X] = 0, though with different variances."""
    rng = np.random.default_rng(4)
    n = 200_000
    x = rng.uniform(-1.0, 1.0, n)
    e = expit(0.8 * x)
    a = (rng.uniform(size=n) < e).astype(int)
    mu0, mu1 = _toy_mu(x, np.zeros(n))
    y = np.where(a == 1, mu1, mu0) + 0.5 * rng.standard_normal(n)
    wrong0, wrong1 = mu0 - 0.4 + 0.6 * x, mu1 + 0.8 - 0.5 * x**2  # misspecified outcome models
    correct = aipw_pseudo_outcomes(y, a, wrong0, wrong1, e, variant="correct")
    official = aipw_pseudo_outcomes(y, a, wrong0, wrong1, e, variant="official_code")
    assert np.mean(np.abs(correct - official)) > 0.3  # they differ draw by draw
    for phi in (correct, official):
        se = np.std(phi) / np.sqrt(n)
        assert se < 0.01  # so the 5-standard-error tolerance below is tight (< 0.05)
        assert abs(np.mean(phi) - THETA) < 5 * se, (np.mean(phi), se)
    # the difference has mean zero too (same draws, so a tighter paired test)
    diff = correct - official
    assert abs(np.mean(diff)) < 5 * np.std(diff) / np.sqrt(n)


# ----------------------------------------------------------------------------------------------
# Item 4: known propensity, perfect outcome models
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("design", ["rct", "observational"])
def test_perfect_nuisances_give_mean_zero_residual(design):
    rng = np.random.default_rng(5)
    n = 100_000
    x = rng.uniform(-1.0, 1.0, n)
    e = np.full(n, 0.5) if design == "rct" else expit(0.8 * x)
    a = (rng.uniform(size=n) < e).astype(int)
    mu0, mu1 = _toy_mu(x, np.zeros(n))  # U = 0 in D1
    y = np.where(a == 1, mu1, mu0) + 0.5 * rng.standard_normal(n)
    phi = aipw_pseudo_outcomes(y, a, mu0, mu1, e)
    resid = phi - (mu1 - mu0)
    assert abs(np.mean(resid)) < 0.02, np.mean(resid)  # measured: -0.004 (se 0.003)
    assert abs(np.mean(phi) - THETA) < 0.05
    # shifted outcome models with the same correct e: still unbiased (double robustness) ...
    d0, d1 = 1.0 + x, 0.5 + x  # wrong e: bias E[(1 - 2e(X))(d0 + d1)(X)] ~ -0.26
    phi_shift = aipw_pseudo_outcomes(y, a, mu0 + d0, mu1 + d1, e)
    assert abs(np.mean(phi_shift - (mu1 - mu0))) < 0.02
    if design == "observational":  # ... but not with a wrong propensity (a failable control)
        phi_bad = aipw_pseudo_outcomes(y, a, mu0 + d0, mu1 + d1, np.full(n, 0.5))
        assert abs(np.mean(phi_bad - (mu1 - mu0))) > 0.1


# ----------------------------------------------------------------------------------------------
# Item 5: oracle model
# ----------------------------------------------------------------------------------------------


def test_oracle_model_shrinks_the_interval():
    rng = np.random.default_rng(6)
    setting = SettingConfig(n_d1=500, n_d2=8, noise_sd=0.0)  # D2 unused: N_ev drawn below
    d1, _ = toy_draw(setting, rng)
    phi = _spline_phi(d1.x, d1.a, d1.y, 0.5, rng)  # cross-fitted splines, noiseless outcomes
    f_d1 = _tau(d1.x[:, 0])  # f = the true tau
    f_d2_eval = _tau(rng.uniform(-1.0, 1.0, 200_000))  # large N_ev
    assert np.var(phi - f_d1) <= np.var(phi)
    assert np.var(phi - f_d1) < 0.1 * np.var(phi)  # measured ratio ~ 1e-4
    ppi, aipw = ppi_interval(phi, f_d1, f_d2_eval, 0.05), aipw_interval(phi, 0.05)
    assert ppi.half_width < aipw.half_width
    assert ppi.half_width < 0.5 * aipw.half_width
    assert ppi.covers(THETA) and aipw.covers(THETA)


# ----------------------------------------------------------------------------------------------
# Item 6: splitting D2
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_rows", [4, 5, 10, 4001])
def test_split_d2_halves_are_disjoint_and_cover(n_rows):
    train, evaluate = split_d2(n_rows)
    assert set(train.tolist()).isdisjoint(evaluate.tolist())
    assert sorted(train.tolist() + evaluate.tolist()) == list(range(n_rows))
    np.testing.assert_array_equal(train, np.arange(n_rows // 2))  # the first floor(N/2) rows


@pytest.mark.parametrize("n_rows", [0, 1, 2, 3])
def test_split_d2_rejects_tiny_d2(n_rows):
    with pytest.raises(ValueError, match="at least 4 rows"):
        split_d2(n_rows)


# ----------------------------------------------------------------------------------------------
# Item 7: nested intervals
# ----------------------------------------------------------------------------------------------


def test_intervals_are_nested_in_alpha():
    phi, f_d1, f_d2_eval = _random_inputs(np.random.default_rng(7))
    for build in (
        lambda alpha: ppi_interval(phi, f_d1, f_d2_eval, alpha),
        lambda alpha: aipw_interval(phi, alpha),
        lambda alpha: d2_only_interval(f_d2_eval, alpha),
    ):
        wide, narrow = build(0.05), build(0.1)
        assert narrow.estimate == wide.estimate
        assert wide.low < narrow.low <= narrow.high < wide.high
    assert z_quantile(0.05) == pytest.approx(stats.norm.ppf(0.975), rel=1e-12)


# ----------------------------------------------------------------------------------------------
# Item 8: cross-fitting is out-of-fold
# ----------------------------------------------------------------------------------------------


class _Recorder:
    """A regressor/classifier that logs the row ids (the only covariate) it was fit on and
    predicts its own index in the log, so every prediction can be traced to its training rows."""

    def __init__(self, log: list[frozenset], probability: bool = False):
        self.log, self.probability = log, probability

    def fit(self, x, y):
        self.log.append(frozenset(x[:, 0].astype(int).tolist()))
        self.index = len(self.log) - 1
        return self

    def predict(self, x):
        return np.full(len(x), float(self.index))

    def predict_proba(self, x):
        p = np.full(len(x), 0.1 + 0.1 * self.index)  # inside (0.01, 0.99): not clipped
        return np.column_stack([1.0 - p, p])


@pytest.mark.parametrize("n_folds", [2, 3])
def test_cross_fitting_predicts_out_of_fold(n_folds):
    rng = np.random.default_rng(8)
    n = 60
    x = np.arange(n, dtype=float)[:, None]  # the covariate is the row id
    a = rng.integers(0, 2, n)
    a[:4] = [0, 1, 0, 1]
    y = rng.normal(size=n)
    reg_log, clf_log = [], []
    mu0, mu1, e = cross_fit_nuisances(
        x,
        a,
        y,
        lambda: _Recorder(reg_log),
        lambda: _Recorder(clf_log, probability=True),
        None,
        n_folds,
        CLIP,
        rng,
    )
    assert len(reg_log) == 2 * n_folds and len(clf_log) == n_folds
    folds = {}
    for i in range(n):
        folds.setdefault(int(mu0[i]), set()).add(i)
    assert len(folds) == n_folds
    sizes = sorted(len(f) for f in folds.values())
    assert sizes[-1] - sizes[0] <= 1  # balanced folds
    for i in range(n):
        fold = folds[int(mu0[i])]
        outside = set(range(n)) - fold
        m0, m1 = reg_log[int(mu0[i])], reg_log[int(mu1[i])]
        c = clf_log[round((e[i] - 0.1) / 0.1)]
        assert i not in m0 and i not in m1 and i not in c  # never fit on its own row
        assert m0 == {j for j in outside if a[j] == 0}  # arm 0 of the other folds
        assert m1 == {j for j in outside if a[j] == 1}  # arm 1 of the other folds
        assert c == outside  # the propensity model sees both arms of the other folds


def test_cross_fitting_one_nearest_neighbour_does_not_reproduce_y():
    """In-sample, a 1-NN regressor returns each row's own outcome; out of fold it cannot."""
    rng = np.random.default_rng(9)
    n = 300
    x = rng.uniform(-1.0, 1.0, (n, 1))
    a = rng.integers(0, 2, n)
    y = x[:, 0] + rng.normal(size=n)
    make = lambda: KNeighborsRegressor(n_neighbors=1)
    in_sample = make().fit(x[a == 1], y[a == 1]).predict(x[a == 1])
    np.testing.assert_array_equal(in_sample, y[a == 1])  # the control: in-sample is exact
    mu0, mu1, e = cross_fit_nuisances(x, a, y, make, None, 0.5, 2, CLIP, rng)
    assert np.all(mu1[a == 1] != y[a == 1])
    assert np.all(mu0[a == 0] != y[a == 0])
    assert np.all(e == 0.5)  # known propensity plugged in exactly


def test_propensities_are_clipped_and_known_value_exact():
    rng = np.random.default_rng(10)
    n = 400
    x = rng.uniform(-1.0, 1.0, (n, 1))
    a = (x[:, 0] > 0).astype(int)  # near-perfect separation: the classifier says ~0 and ~1
    a[:10] = 1 - a[:10]
    y = rng.normal(size=n)
    reg = SPLINE
    strong = lambda: LogisticRegression(C=1e6, max_iter=1000)
    _, _, e = cross_fit_nuisances(x, a, y, reg, strong, None, 2, (0.05, 0.95), rng)
    assert e.min() == 0.05 and e.max() == 0.95  # clipped exactly to the range
    assert np.all((e >= 0.05) & (e <= 0.95))
    _, _, e = cross_fit_nuisances(x, a, y, reg, strong, 0.37, 2, (0.05, 0.95), rng)
    np.testing.assert_array_equal(e, np.full(n, 0.37))


# ----------------------------------------------------------------------------------------------
# Item 9: PPI is unbiased under a biased model; D2-only is not
# ----------------------------------------------------------------------------------------------


def test_ppi_unbiased_under_a_biased_model():
    setting = SettingConfig(n_d1=200, n_d2=4000)  # the toy RCT setting
    rng = np.random.default_rng(11)
    biased = lambda x: _tau(x) + 1.0 + 0.5 * x  # constant and heterogeneous bias
    ppi, d2_only = [], []
    for _ in range(200):
        d1, d2 = toy_draw(setting, rng)
        phi = _spline_phi(d1.x, d1.a, d1.y, 0.5, rng)
        _, evaluate = split_d2(len(d2.y))
        f_d2_eval = biased(d2.x[evaluate, 0])
        ppi.append(ppi_interval(phi, biased(d1.x[:, 0]), f_d2_eval, 0.05).estimate)
        d2_only.append(d2_only_interval(f_d2_eval, 0.05).estimate)
    # measured: mean PPI - theta = -0.008 (se 0.007); D2-only: +0.99
    assert abs(np.mean(ppi) - THETA) < 0.05, np.mean(ppi)
    assert np.std(ppi) / np.sqrt(len(ppi)) < 0.015  # the tolerance is > 3 standard errors
    assert abs(np.mean(d2_only) - THETA) > 0.9, np.mean(d2_only)


# ----------------------------------------------------------------------------------------------
# Item 10: the confounded D2-only interval misses; measure of fit on D1 collapses to AIPW
# ----------------------------------------------------------------------------------------------


def test_d2_only_misses_and_fit_on_d1_collapses_to_aipw(toy_cfg):
    setting = toy_cfg.settings["rct"]
    methods = ["aipw", "ppi", "d2_only", "ppi_fit_on_d1"]
    ratios, ppi_ratios = [], []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        d1, d2 = toy_draw(setting, rng)
        out = intervals(d1, d2, setting, toy_cfg, methods, rng)
        assert not out["d2_only"].covers(TOY_TRUE_ATE), out["d2_only"]
        assert out["d2_only"].estimate - TOY_TRUE_ATE > 1.0  # confounding bias, measured ~ +1.4
        # evaluated on D1's own X the estimate *is* AIPW's: mean f cancels the rectifier's
        assert out["ppi_fit_on_d1"].estimate == pytest.approx(out["aipw"].estimate, abs=1e-12)
        ratios.append(out["ppi_fit_on_d1"].half_width / out["aipw"].half_width)
        ppi_ratios.append(out["ppi"].half_width / out["aipw"].half_width)
    assert min(ratios) > 0.9, ratios  # measured 0.98-1.03: no gain left
    assert max(ppi_ratios) < 0.7, ppi_ratios  # the proper split keeps the gain (~0.51)


# ----------------------------------------------------------------------------------------------
# Item 11: data generators
# ----------------------------------------------------------------------------------------------


def test_toy_draw_follows_the_brief():
    setting = SettingConfig(n_d1=20_000, n_d2=20_000)
    d1, d2 = toy_draw(setting, np.random.default_rng(12))
    uniform = stats.uniform(loc=-1.0, scale=2.0)
    for d in (d1, d2):
        assert d.x.shape[1] == 1 and d.x.min() >= -1.0 and d.x.max() <= 1.0
        assert stats.kstest(d.x[:, 0], uniform.cdf).pvalue > 1e-3
    assert abs(d1.a.mean() - 0.5) < 0.015  # RCT, P(A = 1) = 0.5 (se 0.0035)
    # D1 has U = 0: its outcomes minus mu_A(X, 0) are pure N(0, 0.5^2) noise
    mu0, mu1 = _toy_mu(d1.x[:, 0], np.zeros(len(d1.y)))
    resid1 = d1.y - np.where(d1.a == 1, mu1, mu0)
    assert abs(resid1.mean()) < 0.02 and resid1.std() == pytest.approx(0.5, abs=0.02)
    # D2 is confounded by U ~ U[-1, 1]: the same residual carries 2U (+U), sd well above 0.5
    mu0, mu1 = _toy_mu(d2.x[:, 0], np.zeros(len(d2.y)))
    resid2 = d2.y - np.where(d2.a == 1, mu1, mu0)
    assert resid2.std() > 1.2
    assert resid2[d2.a == 1].mean() > 0.5  # treated units have high U (confounding)
    # without noise D1's outcomes are exactly mu_A(X, 0)
    d1, _ = toy_draw(SettingConfig(n_d1=500, n_d2=8, noise_sd=0.0), np.random.default_rng(13))
    mu0, mu1 = _toy_mu(d1.x[:, 0], np.zeros(len(d1.y)))
    np.testing.assert_allclose(d1.y, np.where(d1.a == 1, mu1, mu0), rtol=0, atol=1e-12)


def test_toy_true_ate_matches_quadrature():
    value, _ = integrate.quad(lambda x: 1.0 + 3.0 * np.sin(3.0 * x) + 2.0 * x**2, -1.0, 1.0)
    assert TOY_TRUE_ATE == pytest.approx(value / 2.0, abs=1e-12)
    assert TOY_TRUE_ATE == pytest.approx(THETA, abs=1e-15)


def test_gp_true_ate_is_the_exact_mean_over_x():
    """The GP truth E_X[f1(X, 0) - f0(X, 0)], X ~ U[-1, 1], by quadrature: equal to scipy's
    adaptive quadrature over the spline's pieces, to a large Monte Carlo within its error, and,
    on the paper's surfaces (data seed 17, 51 x 51 grid), to the issue's -0.3428 (10^7 draws);
    the official 10^4-draw Monte Carlo was -0.391."""
    world = make_gp_world(SettingConfig(generator="gp", gp_grid_points=21, gp_data_seed=3))

    def effect(x):
        return world.outcome1.ev(x, np.zeros_like(x)) - world.outcome0.ev(x, np.zeros_like(x))

    breaks = np.unique(world.outcome1.get_knots()[0])
    assert np.array_equal(breaks, np.unique(world.outcome0.get_knots()[0]))
    pieces = [
        integrate.quad(effect, lo, hi)[0] for lo, hi in zip(breaks[:-1], breaks[1:], strict=True)
    ]
    assert world.true_ate == pytest.approx(sum(pieces) / 2.0, abs=1e-12)
    assert mean_over_x(world.outcome1) - mean_over_x(world.outcome0) == world.true_ate

    draws = effect(np.random.default_rng(0).uniform(-1.0, 1.0, 1_000_000))
    standard_error = draws.std() / np.sqrt(draws.size)
    assert abs(draws.mean() - world.true_ate) < 4.0 * standard_error

    paper = make_gp_world(compose("ppi_ate", "paper").settings["strong_confounding"])
    assert paper.true_ate == pytest.approx(-0.3428, abs=1e-3)  # 10^7-draw se: 7e-4
    assert abs(paper.true_ate - (-0.391)) > 0.04  # no longer the 10^4-draw estimate


def test_mean_over_x_is_exact_on_a_known_surface():
    """A spline interpolating a bicubic polynomial reproduces it: its mean is known."""
    axis = np.linspace(-1.0, 1.0, 9)
    xx, uu = np.meshgrid(axis, axis, indexing="ij")
    surface = RectBivariateSpline(axis, axis, 2.0 + xx**3 - 3.0 * xx**2 * uu + uu)
    # at u = 0.5: E[2 + X^3 - 1.5 X^2 + 0.5] = 2.5 - 1.5 / 3
    assert mean_over_x(surface, 0.5) == pytest.approx(2.0, abs=1e-12)


def test_gp_world_is_deterministic_and_finite():
    setting = SettingConfig(generator="gp", gp_grid_points=11)
    world, again = make_gp_world(setting), make_gp_world(setting)
    assert np.isfinite(world.true_ate) and world.true_ate == again.true_ate
    grid = np.linspace(-1.0, 1.0, 7)
    for name in ("outcome0", "outcome1", "selection", "treatment"):
        np.testing.assert_array_equal(
            getattr(world, name)(grid, grid), getattr(again, name)(grid, grid)
        )
    other = make_gp_world(SettingConfig(generator="gp", gp_grid_points=11, gp_data_seed=18))
    assert other.true_ate != world.true_ate
    small = SettingConfig(generator="gp", gp_grid_points=11, n_d1=100, n_d2=500)
    d1, d2 = gp_draw(small, world, np.random.default_rng(0))
    e1, e2 = gp_draw(small, world, np.random.default_rng(0))
    for d, e in ((d1, e1), (d2, e2)):
        assert all(np.all(np.isfinite(v)) for v in (d.x, d.a, d.y))
        for field in ("x", "a", "y"):
            np.testing.assert_array_equal(getattr(d, field), getattr(e, field))
    assert set(np.unique(d1.a)) == {0, 1} and set(np.unique(d2.a)) == {0, 1}
    # D1 is noiseless with U = 0
    np.testing.assert_allclose(
        d1.y,
        np.where(
            d1.a == 1,
            world.outcome1.ev(d1.x[:, 0], 0.0 * d1.x[:, 0]),
            world.outcome0.ev(d1.x[:, 0], 0.0 * d1.x[:, 0]),
        ),
        rtol=0,
        atol=1e-12,
    )


def test_independent_streams_advance_the_parent():
    parent = np.random.default_rng(14)
    before = copy.deepcopy(parent.bit_generator.state)
    first = [g.random(3) for g in independent_streams(parent, 2)]
    assert parent.bit_generator.state != before  # the parent moved on
    second = [g.random(3) for g in independent_streams(parent, 2)]
    assert not np.allclose(first[0], second[0])  # so the next call draws new children
    assert not np.allclose(first[0], first[1])  # and siblings differ
    resumed = np.random.default_rng()
    resumed.bit_generator.state = before  # "resume from a checkpoint" of the parent
    replay = [g.random(3) for g in independent_streams(resumed, 2)]
    for got, want in zip(replay, first, strict=True):
        np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------------------------
# Item 12: determinism of the whole interval computation
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("design", ["rct", "observational"])
def test_intervals_are_deterministic(toy_cfg, design):
    setting = toy_cfg.settings[design]
    methods = ["aipw", "ppi", "d2_only", "ppi_fit_on_d1"]

    def run() -> dict:
        rng = np.random.default_rng(15)
        d1, d2 = toy_draw(setting, rng)
        return intervals(d1, d2, setting, toy_cfg, methods, rng)

    first, second = run(), run()
    assert set(first) == set(methods)
    for m in methods:
        assert first[m] == second[m]  # frozen dataclass: exact equality of both numbers
    # the cross-fitting folds depend on the rng: another seed changes the AIPW estimate
    rng = np.random.default_rng(15)
    d1, d2 = toy_draw(setting, rng)
    other = intervals(d1, d2, setting, toy_cfg, methods, np.random.default_rng(99))
    assert other["aipw"].estimate != first["aipw"].estimate


def test_intervals_accept_a_dataset_built_by_hand(toy_cfg):
    """``intervals`` needs nothing from the generators: plain arrays in a ``Dataset`` work."""
    rng = np.random.default_rng(16)
    x1, x2 = rng.uniform(-1, 1, (300, 1)), rng.uniform(-1, 1, (2000, 1))
    a1, a2 = rng.integers(0, 2, 300), rng.integers(0, 2, 2000)
    d1 = Dataset(x1, a1, 2.0 * a1 + rng.normal(size=300))
    d2 = Dataset(x2, a2, 2.0 * a2 + rng.normal(size=2000))
    out = intervals(d1, d2, toy_cfg.settings["rct"], toy_cfg, ["aipw", "ppi"], rng)
    assert set(out) == {"aipw", "ppi"}
    assert out["ppi"].covers(2.0) and out["aipw"].covers(2.0)


# ----------------------------------------------------------------------------------------------
# Speed target (issue): <= 2 s for one interval computation at n_rct = 1000, n_obs = 100000
# ----------------------------------------------------------------------------------------------


@pytest.mark.smoke
def test_benchmark_reports_the_speed_target_verdict():
    module = load_benchmark("ppi_ate")
    rows = module.main(["--n-rct", "1000", "--n-obs", "100000", "--repeats", "3"])
    assert len(rows) == 1 and rows[0]["n_rct"] == 1000 and rows[0]["n_obs"] == 100_000
    # Wall time depends on the machine's load: the benchmark prints its verdict, CI doesn't gate it.
    assert rows[0]["seconds"] > 0 and isinstance(rows[0]["meets_target"], bool)
