r"""
# Constructing Confidence Intervals for Average Treatment Effects from Multiple Datasets

Wang, Schroeder, Frauen, Schweisthal, Hess & Feuerriegel, ICLR 2025,
[arXiv 2412.11511](https://arxiv.org/abs/2412.11511).

A small data set D1 (an RCT, or observational with every confounder measured) identifies the
ATE $\theta = E_{D1}[Y(1) - Y(0)]$ but gives wide intervals. A large data set D2 may be
arbitrarily confounded. Prediction-powered inference (PPI) uses both: a CATE model $f$
trained on D2 is averaged over D2's covariates (the *measure of fit*), and its bias is
removed by a *rectifier*, the mean over D1 of AIPW pseudo-outcome minus prediction:

$$\hat\theta_{PP} = \underbrace{\frac{1}{N_{ev}}\sum_{j \in D2^{ev}} f(\tilde X_j)}_{\tilde\tau}
 + \underbrace{\frac1n \sum_{i \in D1} \big(\varphi_i - f(X_i)\big)}_{\hat\Delta},
\qquad \hat\theta_{PP} \pm z_{1-\alpha/2}\sqrt{\hat\sigma^2_\Delta / n + \tilde\sigma^2 / N_{ev}}.$$

It is unbiased whatever $f$'s bias, and narrower than D1-only AIPW when $f$ captures part of the
effect heterogeneity. This module holds the estimator and its pieces (no Hydra, no I/O); "Sec."
refers to the implementation brief `ppi_ate.md`. Assumption worth repeating: the covariate
distribution P(X) must be the same in D1 and D2 (Sec. 3.1), otherwise $\tilde\tau$ estimates
the wrong mean and the estimator is biased.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from papers.ppi_ate.config import AIPW_VARIANTS


@dataclass(frozen=True)
class Interval:
    """A normal confidence interval: estimate ± half_width."""

    estimate: float
    half_width: float

    @property
    def low(self) -> float:
        return self.estimate - self.half_width

    @property
    def high(self) -> float:
        return self.estimate + self.half_width

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high


def z_quantile(alpha: float) -> float:
    r"""$z_{1-\alpha/2} = \Phi^{-1}(1 - \alpha/2)$ (Sec. 3.4)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    return float(norm.ppf(1.0 - alpha / 2.0))


def check_dataset(name: str, x: np.ndarray, a: np.ndarray, y: np.ndarray) -> None:
    """Reject a data set with NaNs, a non-binary treatment or only one arm, naming the data set
    and the column."""
    for column, values in (("X", x), ("A", a), ("Y", y)):
        values = np.asarray(values, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"data set {name}: column {column} contains NaN or inf")
    if len(np.asarray(a)) != len(np.asarray(y)) or len(np.asarray(x)) != len(np.asarray(y)):
        raise ValueError(f"data set {name}: columns X, A, Y have different lengths")
    levels = set(np.unique(a).tolist())
    if not levels <= {0, 1}:
        raise ValueError(f"data set {name}: treatment column A must be binary 0/1, got {levels}")
    if levels != {0, 1}:
        raise ValueError(
            f"data set {name}: treatment column A has only arm(s) {sorted(levels)}; both arms "
            "are needed to fit per-arm outcome models"
        )


def aipw_pseudo_outcomes(
    y: np.ndarray,
    a: np.ndarray,
    mu0: np.ndarray,
    mu1: np.ndarray,
    e: np.ndarray,
    variant: str = "correct",
) -> np.ndarray:
    r"""AIPW pseudo-outcomes $\varphi_i$ of D1 (Sec. 3.2 step 4).

    ``correct``: $\varphi = \hat\mu_1 - \hat\mu_0 + A(Y - \hat\mu_1)/\hat e
    - (1 - A)(Y - \hat\mu_0)/(1 - \hat e)$.

    ``official_code``: the author code's operator precedence, ``(A - e)/e*(1 - e)``, which
    is $(A - e)(1 - e)/e$ instead of $(A - e)/(e(1 - e))$ (Sec. 3.4): still mean-zero with a
    correct $\hat e$, not the efficient AIPW. Kept only for bit-level comparison.

    Args:
        y, a: outcomes and binary treatments, shape (n,).
        mu0, mu1: outcome-model predictions under control and treatment, shape (n,).
        e: propensities $\hat e(X_i)$, shape (n,), strictly inside (0, 1).

    Returns:
        (n,) pseudo-outcomes whose mean is the AIPW ATE estimate.
    """
    e = np.asarray(e, dtype=np.float64)
    if np.any(e <= 0.0) or np.any(e >= 1.0):
        raise ValueError("propensities must lie strictly in (0, 1); got values at 0 or 1")
    if variant == "correct":
        return mu1 - mu0 + a * (y - mu1) / e - (1 - a) * (y - mu0) / (1 - e)
    if variant == "official_code":
        ipw = a * y / e - (1 - a) * y / (1 - e)
        return ipw - ((a - e) / e * (1 - e)) * ((1 - e) * mu1 + e * mu0)
    raise ValueError(f"aipw variant must be one of {AIPW_VARIANTS}, got {variant!r}")


def split_d2(n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    r"""D2's training half (first $\lfloor N/2 \rfloor$ rows) and evaluation half (the rest),
    disjoint: the CATE model is never evaluated on rows it was fit on (Sec. 3.2 step 1)."""
    if n_rows < 4:
        raise ValueError(f"D2 needs at least 4 rows to split into two halves, got {n_rows}")
    half = n_rows // 2
    return np.arange(half), np.arange(half, n_rows)


def ppi_interval(
    phi: np.ndarray, f_d1: np.ndarray, f_d2_eval: np.ndarray, alpha: float
) -> Interval:
    r"""The PPI-ATE estimate and interval (Sec. 3.2 steps 3, 5-7).

    Args:
        phi: AIPW pseudo-outcomes of D1, shape (n,).
        f_d1: the D2-trained CATE model at D1's covariates, shape (n,).
        f_d2_eval: the same model at D2's evaluation-half covariates, shape (N_ev,).
        alpha: miscoverage level.

    Returns:
        $\hat\theta_{PP} = \tilde\tau + \hat\Delta$ with half-width
        $z\sqrt{\hat\sigma^2_\Delta/n + \tilde\sigma^2/N_{ev}}$; variances with ddof = 0.
    """
    rectifier = phi - f_d1  # (n,)
    tau_tilde = float(np.mean(f_d2_eval))  # measure of fit
    delta_hat = float(np.mean(rectifier))  # rectifier
    variance = np.var(rectifier) / rectifier.size + np.var(f_d2_eval) / f_d2_eval.size
    return Interval(tau_tilde + delta_hat, z_quantile(alpha) * float(np.sqrt(variance)))


def aipw_interval(phi: np.ndarray, alpha: float) -> Interval:
    r"""D1-only AIPW baseline: mean(φ) ± z sd(φ)/√n (Sec. 3.3, ``normal_aipw``)."""
    return Interval(float(np.mean(phi)), z_quantile(alpha) * float(np.std(phi) / np.sqrt(phi.size)))


def d2_only_interval(f_d2_eval: np.ndarray, alpha: float) -> Interval:
    r"""D2-only baseline: $\tilde\tau \pm z\tilde\sigma/\sqrt{N_{ev}}$ (Sec. 3.3, ``normal_obs``);
    biased under confounding, so it under-covers."""
    return Interval(
        float(np.mean(f_d2_eval)),
        z_quantile(alpha) * float(np.std(f_d2_eval) / np.sqrt(f_d2_eval.size)),
    )


# --------------------------------------------------------------------------------------------
# Nuisances and the CATE model (scikit-learn estimators chosen by the caller)
# --------------------------------------------------------------------------------------------
Regressor = Callable[[], object]  # factory of a fresh sklearn regressor
Classifier = Callable[[], object]  # factory of a fresh sklearn classifier


OUTCOME_DESIGNS = ("per_arm", "pooled")  # cross_fit_nuisances' outcome models


def _fit_per_arm(make_regressor: Regressor, x: np.ndarray, a: np.ndarray, y: np.ndarray):
    """One outcome regression per arm: (model for A = 0, model for A = 1)."""
    return tuple(make_regressor().fit(x[a == arm], y[a == arm]) for arm in (0, 1))


def _with_arm(x: np.ndarray, arm) -> np.ndarray:
    """[X, A]: the covariates with the treatment as a last column (``arm``: (n,) or 0/1)."""
    return np.column_stack([x, np.broadcast_to(arm, (len(x),))])


def cross_fit_nuisances(
    x: np.ndarray,
    a: np.ndarray,
    y: np.ndarray,
    make_regressor: Regressor,
    make_classifier: Classifier | None,
    known_propensity: float | None,
    n_folds: int,
    clip: tuple[float, float],
    rng: np.random.Generator,
    outcome_design: str = "per_arm",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Out-of-fold $\hat\mu_0, \hat\mu_1, \hat e$ on D1 by K-fold cross-fitting (Sec. 3.4).

    In-sample nuisances under-estimate Var(φ) and under-cover with flexible learners; every
    prediction here comes from models fit on the other folds. The propensity is the known
    RCT value when given, else the classifier's, clipped to ``clip``. ``outcome_design``:
    ``per_arm``, one regression per arm; ``pooled``, one regression on [X, A] predicted at
    A = 0 and A = 1 (econml's DR-learner, ``econml/dr/_drlearner.py:88,115,123`` in 0.15.1).

    Returns:
        ``(mu0, mu1, e)``, each (n,).
    """
    n = len(y)
    folds = rng.permutation(n) % n_folds  # (n,) balanced random fold labels
    mu0, mu1, e = np.empty(n), np.empty(n), np.empty(n)
    for k in range(n_folds):
        train, test = folds != k, folds == k
        check_dataset(f"D1 (cross-fitting fold {k} training part)", x[train], a[train], y[train])
        if outcome_design == "per_arm":
            model0, model1 = _fit_per_arm(make_regressor, x[train], a[train], y[train])
            mu0[test], mu1[test] = model0.predict(x[test]), model1.predict(x[test])
        elif outcome_design == "pooled":
            model = make_regressor().fit(_with_arm(x[train], a[train]), y[train])
            mu0[test] = model.predict(_with_arm(x[test], 0))
            mu1[test] = model.predict(_with_arm(x[test], 1))
        else:
            raise ValueError(
                f"outcome_design must be one of {OUTCOME_DESIGNS}, got {outcome_design!r}"
            )
        if known_propensity is None:
            classifier = make_classifier().fit(x[train], a[train])
            e[test] = classifier.predict_proba(x[test])[:, 1]
        else:
            e[test] = known_propensity
    if known_propensity is None:
        e = np.clip(e, *clip)
    return mu0, mu1, e


def t_learner(
    x: np.ndarray, a: np.ndarray, y: np.ndarray, make_regressor: Regressor
) -> Callable[[np.ndarray], np.ndarray]:
    r"""CATE model $f(x) = \hat\mu_1(x) - \hat\mu_0(x)$ from per-arm regressions (the toy's
    D2 learner, Sec. 5). Fit on confounded data it is biased; PPI does not mind."""
    model0, model1 = _fit_per_arm(make_regressor, x, a, y)
    return lambda x_new: model1.predict(x_new) - model0.predict(x_new)


def dr_learner(
    x: np.ndarray,
    a: np.ndarray,
    y: np.ndarray,
    make_regressor: Regressor,
    make_classifier: Classifier,
    make_final: Regressor,
    n_folds: int,
    clip: tuple[float, float],
    rng: np.random.Generator,
    outcome_design: str = "pooled",
) -> Callable[[np.ndarray], np.ndarray]:
    r"""DR-learner CATE model: cross-fitted AIPW pseudo-outcomes regressed on X.

    With a linear final stage this is what econml's ``LinearDRLearner`` (the official D2
    learner, Sec. 3.2 step 2) computes, written with scikit-learn alone: as econml, one
    outcome regression on [X, A] (not one per arm), predicted at A = 0 and A = 1. Two
    differences remain: the folds are random rather than stratified by A, and the
    propensities are clipped to ``clip`` rather than floored at econml's 1e-6.
    ``outcome_design="per_arm"`` is this function before issue 51 (one regression per arm).
    """
    mu0, mu1, e = cross_fit_nuisances(
        x,
        a,
        y,
        make_regressor,
        make_classifier,
        None,
        n_folds,
        clip,
        rng,
        outcome_design=outcome_design,
    )
    pseudo = aipw_pseudo_outcomes(y, a, mu0, mu1, e)
    final = make_final().fit(x, pseudo)
    return final.predict


# --------------------------------------------------------------------------------------------
# The overlap assumption, checked (real data)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ShiftCheck:
    """Covariate-shift check of D1 against D2: the largest absolute standardised mean
    difference and whether the check flags a shift."""

    max_abs_smd: float
    flagged: bool


def shift_check(
    x1: np.ndarray, x2: np.ndarray, alpha: float = 0.05, smd_threshold: float = 0.1
) -> ShiftCheck:
    r"""Does P(X) differ between D1 and D2 (the assumption PPI needs, Sec. 3.1)?

    Per covariate k, the standardised mean difference
    $\mathrm{SMD}_k = (\bar x_{1k} - \bar x_{2k}) / \sqrt{(s_{1k}^2 + s_{2k}^2)/2}$ and the
    two-sample statistic $z_k = (\bar x_{1k} - \bar x_{2k}) / \sqrt{s_{1k}^2/n + s_{2k}^2/N}$.
    A shift is flagged when some covariate is both significant at family-wise level
    ``alpha`` (Bonferroni: $|z_k| > z_{1 - \alpha/(2p)}$) and material
    ($|\mathrm{SMD}_k| > $ ``smd_threshold``, the usual 0.1 of balance checks); the
    significance part keeps random splits of one population from being flagged by chance,
    the size part keeps huge samples from flagging negligible differences.

    Args:
        x1: D1's covariates, shape (n, p); x2: D2's, shape (N, p). Variances use ddof = 0.

    Returns:
        The largest $|\mathrm{SMD}_k|$ and the flag. A covariate constant in both data sets
        has SMD 0 if the constants agree and infinite otherwise.
    """
    x1, x2 = np.asarray(x1, dtype=np.float64), np.asarray(x2, dtype=np.float64)
    if x1.ndim != 2 or x2.ndim != 2 or x1.shape[1] != x2.shape[1]:
        raise ValueError(f"shift_check needs (n, p) and (N, p) arrays, got {x1.shape}, {x2.shape}")
    if min(len(x1), len(x2)) < 2:
        raise ValueError("shift_check needs at least 2 rows in each data set")
    diff = x1.mean(0) - x2.mean(0)  # (p,)
    v1, v2 = x1.var(0), x2.var(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        smd = np.where(diff == 0.0, 0.0, diff / np.sqrt((v1 + v2) / 2.0))
        z = np.where(diff == 0.0, 0.0, diff / np.sqrt(v1 / len(x1) + v2 / len(x2)))
    critical = float(norm.ppf(1.0 - alpha / (2.0 * x1.shape[1])))
    flagged = bool(np.any((np.abs(z) > critical) & (np.abs(smd) > smd_threshold)))
    return ShiftCheck(float(np.max(np.abs(smd))), flagged)
