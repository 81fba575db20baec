r"""
# CBMA: Improving Conformal Prediction through Bayesian Model Averaging

Bhagwat, Kong & Jiang, ICLR 2025, [arXiv 2511.16924](https://arxiv.org/abs/2511.16924).

Full conformal prediction scores every candidate value $y$ of a test response by refitting on
the augmented data $Z^y = Z_{1:n} \cup \{(x_{n+1}, y)\}$. *Conformal Bayes* (CB, Fong & Holmes
2021) uses the **add-one-in** posterior predictive $p(Y_i \mid X_i, Z^y)$ as the conformity
score; it is valid for any model and volume-optimal when the model is right (Hoff 2023).
**CBMA** averages the add-one-in predictives of K candidate models with the posterior model
probabilities of the *augmented* data, $\omega_k(y) = p(M_k \mid Z^y)$, recomputed for every $y$
so the score stays a symmetric function of the n+1 points (brief Sec. 3.3):

$$\sigma_i^y = \sum_k \omega_k(y)\, p_k(Y_i \mid X_i, Z^y), \qquad
  \omega_k(y) \propto p(M_k)\, m_k(Z_{1:n})\, p_k(y \mid x_{n+1}, Z_{1:n}).$$

This module holds the method only (no Hydra, no I/O): conjugate Normal-Inverse-Gamma (NIG)
regression with a known variance profile, its add-one-in scores over a whole y-grid by a
rank-one update, the CBMA mixture in log space, conformal p-values and set sizes, and the
importance-sampling route for models known only through posterior draws. "Sec." refers to
the implementation brief `conformal_bma.md`; steps it marks "(derivation)" are listed under
Deviations in the README.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, logsumexp

LOG_2PI = float(np.log(2.0 * np.pi))


# --------------------------------------------------------------------------------------------
# Inputs and features
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NIGPrior:
    r"""$\beta \mid \sigma^2 \sim N(0, \sigma^2 g I_p)$, $\sigma^2 \sim \mathrm{InvGamma}(a_0, b_0)$
    (Sec. 3.4; toy values g = 100, a0 = b0 = 1)."""

    g: float = 100.0
    a0: float = 1.0
    b0: float = 1.0

    def __post_init__(self) -> None:
        if not (self.g > 0 and self.a0 > 0 and self.b0 > 0):
            raise ValueError(f"NIG prior needs g, a0, b0 > 0, got {self}")


@dataclass(frozen=True)
class ModelSpec:
    r"""One candidate model: polynomial features of x and a known variance profile h(x).

    Features are $[1, x, x^2, \dots, x^{\text{degree}}]$ per input column (no interactions).
    ``variance`` is ``"constant"`` ($h \equiv 1$) or ``"abs_linear"``
    ($h(x) = (c + \lVert x \rVert_1)^2$ with ``c = variance_offset``, the toy's setting B).
    ``columns`` picks the input columns the model reads (a feature subset of a real table,
    brief Sec. 6); None reads them all.
    """

    name: str
    degree: int
    variance: str = "constant"
    variance_offset: float = 0.2
    columns: tuple[int, ...] | None = None

    def _inputs(self, x: np.ndarray) -> np.ndarray:
        x = _as_2d(x)  # (n, d)
        return x if self.columns is None else x[:, list(self.columns)]  # (n, d')

    def features(self, x: np.ndarray) -> np.ndarray:
        x = self._inputs(x)  # (n, d')
        powers = [x**k for k in range(1, self.degree + 1)]
        return np.concatenate([np.ones((x.shape[0], 1)), *powers], axis=1)  # (n, 1 + d'*deg)

    def variance_profile(self, x: np.ndarray) -> np.ndarray:
        x = self._inputs(x)
        if self.variance == "constant":
            return np.ones(x.shape[0])
        if self.variance == "abs_linear":
            return (self.variance_offset + np.abs(x).sum(axis=1)) ** 2  # (n,)
        raise ValueError(f"unknown variance profile {self.variance!r}: constant or abs_linear")

    def n_params(self, x_dim: int) -> int:
        return 1 + (x_dim if self.columns is None else len(self.columns)) * self.degree


def _as_2d(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x[:, None] if x.ndim == 1 else x


def check_inputs(x: np.ndarray, y: np.ndarray, models: list[ModelSpec], alpha: float) -> None:
    """Reject bad input before any computation, naming the problem."""
    if not models:
        raise ValueError("the list of candidate models is empty")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    x, y = _as_2d(x), np.asarray(y, dtype=np.float64)
    if y.ndim != 1 or x.shape[0] != y.shape[0]:
        raise ValueError(f"x has {x.shape[0]} rows but y has shape {y.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains non-finite values (nan or inf)")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains non-finite values (nan or inf)")
    for model in models:
        p = model.n_params(x.shape[1])
        if y.shape[0] < p:
            raise ValueError(
                f"model {model.name!r} has {p} parameters but only {y.shape[0]} data points"
            )


# --------------------------------------------------------------------------------------------
# Conjugate NIG regression (Sec. 3.4)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NIGPosterior:
    r"""Posterior of a whitened NIG regression: $V$, $m$, $a$, $b$, and the data's sufficient
    statistics $\tilde\Phi^\top\tilde y$ and $\tilde y^\top\tilde y$, with $\log m(Z)$."""

    V: np.ndarray  # (p, p)
    m: np.ndarray  # (p,)
    a: float
    b: float
    phi_t_y: np.ndarray  # (p,) Phi~^T y~
    y_t_y: float  # y~^T y~
    n: int
    log_evidence: float  # log m(Z) on the original y scale


def fit_nig(phi: np.ndarray, y: np.ndarray, h: np.ndarray, prior: NIGPrior) -> NIGPosterior:
    r"""Closed-form NIG posterior and log marginal likelihood (Sec. 3.4).

    Whitening: $\tilde y_i = y_i/\sqrt{h_i}$, $\tilde\phi_i = \phi_i/\sqrt{h_i}$;
    $V = (I/g + \tilde\Phi^\top\tilde\Phi)^{-1}$, $m = V\tilde\Phi^\top\tilde y$,
    $a = a_0 + n/2$, $b = b_0 + \tfrac12(\tilde y^\top\tilde y - m^\top V^{-1} m)$, and

    $\log m = -\tfrac N2\log 2\pi + \tfrac12\log|V| - \tfrac p2\log g + a_0\log b_0 - a\log b
    + \ln\Gamma(a) - \ln\Gamma(a_0) - \tfrac12\sum_i\log h_i$,

    the last term being the Jacobian back to the original y scale (Sec. 3.5).
    """
    sqrt_h = np.sqrt(h)
    phi_w, y_w = phi / sqrt_h[:, None], y / sqrt_h  # (n, p), (n,)
    n, p = phi_w.shape
    precision = np.eye(p) / prior.g + phi_w.T @ phi_w  # (p, p) V^{-1}
    V = np.linalg.inv(precision)
    phi_t_y = phi_w.T @ y_w  # (p,)
    m = V @ phi_t_y
    y_t_y = float(y_w @ y_w)
    a = prior.a0 + n / 2.0
    b = prior.b0 + 0.5 * (y_t_y - float(m @ phi_t_y))  # m^T V^{-1} m = m^T Phi~^T y~
    _, logdet_V = np.linalg.slogdet(V)
    log_evidence = (
        -0.5 * n * LOG_2PI
        + 0.5 * logdet_V
        - 0.5 * p * np.log(prior.g)
        + prior.a0 * np.log(prior.b0)
        - a * np.log(b)
        + gammaln(a)
        - gammaln(prior.a0)
        - 0.5 * float(np.log(h).sum())
    )
    return NIGPosterior(V, m, a, b, phi_t_y, y_t_y, n, float(log_evidence))


def student_t_logpdf(x: np.ndarray, df: float, loc: np.ndarray, scale2: np.ndarray) -> np.ndarray:
    r"""$\log t_\nu(x; \mu, s^2)$, written out (scipy's ``t.logpdf`` is several times slower)."""
    z2 = (x - loc) ** 2 / (df * scale2)
    return (
        gammaln(0.5 * (df + 1.0))
        - gammaln(0.5 * df)
        - 0.5 * np.log(np.pi * df * scale2)
        - 0.5 * (df + 1.0) * np.log1p(z2)
    )


def log_predictive(
    post: NIGPosterior, phi_new: np.ndarray, h_new: float, y: np.ndarray
) -> np.ndarray:
    r"""Posterior predictive $\log p(y \mid x_{n+1}, Z_{1:n})$ at each value of ``y`` (Sec. 3.4):
    $t_{2a}(\tilde y; \tilde\phi^\top m, (b/a)(1 + \tilde\phi^\top V\tilde\phi)) / \sqrt{h}$."""
    phi_w = phi_new / np.sqrt(h_new)  # (p,)
    scale2 = post.b / post.a * (1.0 + phi_w @ post.V @ phi_w)
    y_w = np.asarray(y) / np.sqrt(h_new)
    return student_t_logpdf(y_w, 2.0 * post.a, phi_w @ post.m, scale2) - 0.5 * np.log(h_new)


def add_one_in_log_scores(
    post: NIGPosterior,
    phi: np.ndarray,
    y: np.ndarray,
    h: np.ndarray,
    phi_new: np.ndarray,
    h_new: float,
    y_grid: np.ndarray,
    prior: NIGPrior,
) -> tuple[np.ndarray, np.ndarray]:
    r"""CB scores of one model over a whole y-grid, by the rank-one augmentation (Sec. 3.4).

    For every candidate $y$ (row) and every point $i = 1..n+1$ (column; the last is the test
    point with response $y$), the **add-one-in** log predictive
    $L[y, i] = \log p(Y_i \mid X_i, Z^y)$: the posterior conditions on all n+1 points, point
    $i$ included. With $\tilde\phi, \tilde y$ the whitened new point,

    * $V' = V - V\tilde\phi\tilde\phi^\top V / (1 + \tilde\phi^\top V\tilde\phi)$ (no y),
    * $m'(y) = V'(\tilde\Phi^\top\tilde y + \tilde\phi\,\tilde y_{new})$, linear in y,
    * $b'(y) = b_0 + \tfrac12(\tilde y^\top\tilde y + \tilde y_{new}^2
      - m'^\top(\tilde\Phi^\top\tilde y + \tilde\phi\,\tilde y_{new}))$, quadratic in y,
    * $a' = a_0 + (n+1)/2$,

    and $p(Y_i \mid X_i, Z^y) = t_{2a'}(\tilde y_i; \tilde\phi_i^\top m', (b'/a')
    (1 + \tilde\phi_i^\top V'\tilde\phi_i)) / \sqrt{h_i}$.

    Also returns the augmented log evidence
    $\log m(Z^y) = \log m(Z_{1:n}) + \log p(y \mid x_{n+1}, Z_{1:n})$ (Sec. 3.3).

    Returns:
        ``(L, log_evidence_aug)`` of shapes (G, n+1) and (G,).
    """
    sqrt_h = np.sqrt(h)
    phi_w, y_w = phi / sqrt_h[:, None], y / sqrt_h  # (n, p), (n,)
    phi_new_w = phi_new / np.sqrt(h_new)  # (p,)
    y_new_w = np.asarray(y_grid, dtype=np.float64) / np.sqrt(h_new)  # (G,)

    V_phi = post.V @ phi_new_w  # (p,)
    V_aug = post.V - np.outer(V_phi, V_phi) / (1.0 + phi_new_w @ V_phi)  # (p, p)
    m0 = V_aug @ post.phi_t_y  # (p,) the y-free part of m'
    u = V_aug @ phi_new_w  # (p,) m' = m0 + y_new u
    a_aug = prior.a0 + (post.n + 1) / 2.0
    # m'^T (Phi^T y + phi y_new) expanded in powers of y_new
    quad = (
        float(m0 @ post.phi_t_y)
        + y_new_w * (float(m0 @ phi_new_w) + float(u @ post.phi_t_y))
        + y_new_w**2 * float(u @ phi_new_w)
    )  # (G,)
    b_aug = prior.b0 + 0.5 * (post.y_t_y + y_new_w**2 - quad)  # (G,)

    phi_all = np.vstack([phi_w, phi_new_w])  # (n+1, p)
    leverage = np.einsum("ip,pq,iq->i", phi_all, V_aug, phi_all)  # (n+1,) phi^T V' phi
    df = 2.0 * a_aug
    # Student-t log density, with the scale split into its y part and its point part so the
    # only (G, n+1) transcendental is one log1p (the hot loop of the whole method).
    scale_y = b_aug / a_aug  # (G,)  s^2 = scale_y * (1 + leverage)
    resid = np.empty((y_new_w.size, phi_all.shape[0]))  # (G, n+1)
    np.subtract(y_w[None, :], (phi_w @ m0)[None, :], out=resid[:, :-1])
    resid[:, :-1] -= y_new_w[:, None] * (phi_w @ u)[None, :]
    resid[:, -1] = y_new_w - (phi_new_w @ m0 + y_new_w * (phi_new_w @ u))
    resid **= 2
    resid *= (1.0 / (df * scale_y))[:, None]
    resid *= (1.0 / (1.0 + leverage))[None, :]
    L = np.log1p(resid, out=resid)
    L *= -0.5 * (df + 1.0)
    log_h = np.append(np.log(h), np.log(h_new))  # (n+1,) Jacobian to the original y scale
    L += (
        gammaln(0.5 * (df + 1.0))
        - gammaln(0.5 * df)
        - 0.5 * np.log(np.pi * df)
        - 0.5 * np.log(scale_y)[:, None]
        - 0.5 * (np.log1p(leverage) + log_h)[None, :]
    )

    log_evidence_aug = post.log_evidence + log_predictive(post, phi_new, h_new, y_grid)
    return L, log_evidence_aug


# --------------------------------------------------------------------------------------------
# CBMA and conformal p-values (Sec. 3.1, 3.3)
# --------------------------------------------------------------------------------------------
def model_log_weights(log_evidence_aug: np.ndarray, log_prior: np.ndarray) -> np.ndarray:
    r"""$\log\omega_k(y) = \log p(M_k \mid Z^y)$: a softmax over models of
    $E_k[y] = \log p(M_k) + \log m_k(Z^y)$ (Sec. 3.3 step 4).

    Args:
        log_evidence_aug: (K, G) augmented log evidences.
        log_prior: (K,) log prior model probabilities.

    Returns:
        (K, G) log weights; ``exp`` sums to 1 over models for every y.
    """
    E = log_evidence_aug + np.asarray(log_prior)[:, None]  # (K, G)
    return E - logsumexp(E, axis=0, keepdims=True)


def cbma_log_scores(L: np.ndarray, log_weights: np.ndarray) -> np.ndarray:
    r"""CBMA scores $S[y, i] = \log\sum_k \omega_k(y)\,p_k(Y_i \mid X_i, Z^y)$, in log space
    (Sec. 3.3 step 5).

    Args:
        L: (K, G, n+1) add-one-in log predictives of each model.
        log_weights: (K, G) log model weights (y-dependent for CBMA).

    Returns:
        (G, n+1) log scores.
    """
    terms = L + log_weights[:, :, None]  # (K, G, n+1)
    top = terms.max(axis=0)  # (G, n+1)
    terms -= top
    np.exp(terms, out=terms)
    return top + np.log(terms.sum(axis=0))


def conformal_pvalues(scores: np.ndarray) -> np.ndarray:
    r"""$\pi(y) = \frac{1}{n+1}\#\{i \le n+1 : \sigma_i^y \le \sigma_{n+1}^y\}$ (Sec. 3.1).

    The count includes the test point itself, so $\pi(y) \ge 1/(n+1)$; the set is
    $\{y : \pi(y) > \alpha\}$.

    Args:
        scores: (G, n+1) conformity scores (any monotone transform, e.g. logs); the last
            column is the test point's.

    Returns:
        (G,) p-values.
    """
    return np.mean(scores <= scores[:, -1:], axis=1)


def set_size(pvalues: np.ndarray, alpha: float, grid_step: float) -> float:
    r"""Lebesgue size of $\{y : \pi(y) > \alpha\}$ on a uniform grid: $\Delta y$ times the
    number of grid points in the set (the set need not be an interval; Sec. 3.1)."""
    return float(np.count_nonzero(pvalues > alpha) * grid_step)


def conformal_set_by_model(
    models: list[ModelSpec],
    prior: NIGPrior,
    x: np.ndarray,
    y: np.ndarray,
    x_new: np.ndarray,
    y_grid: np.ndarray,
    log_prior: np.ndarray | None = None,
    posteriors: list[NIGPosterior] | None = None,
    with_frozen: bool = False,
) -> dict[str, np.ndarray]:
    r"""Everything CB and CBMA need at one test input, for every value of ``y_grid``.

    Returns a dict with ``L`` (K, G, n+1) add-one-in log predictives, ``log_weights`` (K, G)
    y-dependent CBMA weights, ``frozen_log_weights`` (K,) $\log p(M_k \mid Z_{1:n})$ (for the
    labelled ablation only), ``cbma_pvalues`` (G,), ``cb_pvalues`` (K, G) and, with
    ``with_frozen``, ``frozen_pvalues`` (G,).
    """
    x, x_new = _as_2d(x), _as_2d(x_new)
    K = len(models)
    log_prior = np.full(K, -np.log(K)) if log_prior is None else np.asarray(log_prior)
    if posteriors is None:
        posteriors = [fit_nig(m.features(x), y, m.variance_profile(x), prior) for m in models]
    L, E = [], []
    for model, post in zip(models, posteriors, strict=True):
        L_k, E_k = add_one_in_log_scores(
            post,
            model.features(x),
            y,
            model.variance_profile(x),
            model.features(x_new)[0],
            float(model.variance_profile(x_new)[0]),
            y_grid,
            prior,
        )
        L.append(L_k)
        E.append(E_k)
    L = np.stack(L)  # (K, G, n+1)
    log_weights = model_log_weights(np.stack(E), log_prior)  # (K, G)
    evidence = np.array([p.log_evidence for p in posteriors]) + log_prior
    frozen = evidence - logsumexp(evidence)  # (K,)
    out = {
        "L": L,
        "log_weights": log_weights,
        "frozen_log_weights": frozen,
        "cbma_pvalues": conformal_pvalues(cbma_log_scores(L, log_weights)),
        "cb_pvalues": np.stack([conformal_pvalues(L_k) for L_k in L]),
    }
    if with_frozen:  # labelled ablation: weights from Z_{1:n} only, not symmetric in Z^y
        frozen_weights = np.broadcast_to(frozen[:, None], log_weights.shape)
        out["frozen_pvalues"] = conformal_pvalues(cbma_log_scores(L, frozen_weights))
    return out


# --------------------------------------------------------------------------------------------
# Models known only through posterior draws: add-one-in importance sampling (Sec. 3.2)
# --------------------------------------------------------------------------------------------
def importance_sampling_log_scores(
    loglik_train: np.ndarray, loglik_new: np.ndarray, max_elements: int = 2**24
) -> tuple[np.ndarray, np.ndarray]:
    r"""Add-one-in CB scores from B posterior draws $\theta^{(b)} \sim \pi(\theta \mid Z_{1:n})$
    (Fong & Holmes; Sec. 3.2, MCMC route).

    With importance weights $w_b(y) = f(y \mid x_{n+1}, \theta^{(b)})$,
    $\sigma_i^y \approx \sum_b w_b f(Y_i \mid X_i, \theta^{(b)}) / \sum_b w_b$ for $i \le n$ and
    $\sigma_{n+1}^y \approx \sum_b w_b^2 / \sum_b w_b$, all in log space. The effective sample
    size $(\sum_b w_b)^2 / \sum_b w_b^2$ flags degenerate weights at outlying y (Sec. 3.5).

    Args:
        loglik_train: (B, n) $\log f(Y_i \mid X_i, \theta^{(b)})$.
        loglik_new: (B, G) $\log f(y \mid x_{n+1}, \theta^{(b)})$ for each grid value.
        max_elements: bound on the (grid chunk, B, n) intermediate, for memory.

    Returns:
        ``(L, ess)``: (G, n+1) log scores (last column the test point) and (G,) ESS.
    """
    log_w = loglik_new.T  # (G, B)
    log_norm = logsumexp(log_w, axis=1)  # (G,)
    # The (grid, draws, n) intermediate is processed in grid chunks of at most max_elements.
    chunk = max(1, max_elements // loglik_train.size)
    train = np.concatenate(
        [
            logsumexp(log_w[g : g + chunk, :, None] + loglik_train[None, :, :], axis=1)
            for g in range(0, log_w.shape[0], chunk)
        ]
    )  # (G, n)
    new = logsumexp(2.0 * log_w, axis=1)  # (G,)
    L = np.concatenate([train, new[:, None]], axis=1) - log_norm[:, None]
    ess = np.exp(2.0 * log_norm - new)  # (G,)
    return L, ess


def nig_posterior_draws(
    post: NIGPosterior, n_draws: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact draws $(\beta, \sigma^2)$ from an NIG posterior: $\sigma^2 \sim IG(a, b)$,
    $\beta \mid \sigma^2 \sim N(m, \sigma^2 V)$. Stand-in for MCMC output when checking the
    importance-sampling route against the closed form.

    Returns:
        ``(beta, sigma2)`` of shapes (B, p) and (B,).
    """
    sigma2 = post.b / rng.gamma(post.a, 1.0, size=n_draws)  # (B,)
    chol = np.linalg.cholesky(post.V)  # (p, p)
    z = rng.standard_normal((n_draws, post.m.size))  # (B, p)
    beta = post.m[None, :] + np.sqrt(sigma2)[:, None] * (z @ chol.T)
    return beta, sigma2


def gaussian_loglik(
    beta: np.ndarray, sigma2: np.ndarray, phi: np.ndarray, h: np.ndarray, y: np.ndarray
) -> np.ndarray:
    r"""$\log N(y_i; \phi_i^\top\beta^{(b)}, \sigma^{2(b)} h_i)$ for every draw and point, (B, N).

    ``y`` is (N,) matched to the rows of ``phi``; use one row repeated for a grid of y."""
    var = sigma2[:, None] * h[None, :]  # (B, N)
    resid = y[None, :] - beta @ phi.T  # (B, N)
    return -0.5 * (LOG_2PI + np.log(var) + resid**2 / var)
