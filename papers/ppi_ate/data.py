"""Data for PPI-ATE: the brief's closed-form toy DGP and the official GP-based DGP.

Both draw D1 (small; U = 0, so unconfounded given X) and D2 (large; confounded by U) with
X ~ U[-1, 1] in both, so P(X) is shared as the method requires (brief Sec. 3.1). D1 and D2
use independent generator streams (the official code reseeds the global RNG with one seed
for both, correlating their X draws; brief Sec. 3.4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.interpolate import RectBivariateSpline
from scipy.special import expit

from papers.ppi_ate.config import SettingConfig


def independent_streams(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """``n`` generators seeded from draws of ``rng``.

    Unlike ``rng.spawn``, this advances ``rng``'s own state, so a run resumed from a
    checkpoint of that state draws the same children.
    """
    return [np.random.default_rng(s) for s in rng.integers(0, 2**63, size=n)]


TOY_TRUE_ATE = 5.0 / 3.0  # E_X[1 + 3 sin(3X) + 2X^2] for X ~ U[-1, 1]
GP_JITTER = 1e-6  # relative diagonal jitter: the GP kernels are near-singular on the grid
GAUSS_NODES = 4  # Gauss-Legendre nodes per spline piece: exact up to degree 7 (pieces: cubic)


@dataclass
class Dataset:
    x: np.ndarray  # (n, 1)
    a: np.ndarray  # (n,) int 0/1
    y: np.ndarray  # (n,)


# ----------------------------------------------------------------------------- closed form
def _toy_outcomes(x: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu0 = 1.0 + 0.5 * x + 2.0 * u
    mu1 = mu0 + 1.0 + 3.0 * np.sin(3.0 * x) + 2.0 * x**2 + u
    return mu0, mu1


def toy_draw(setting: SettingConfig, rng: np.random.Generator) -> tuple[Dataset, Dataset]:
    """The brief's Sec. 5 DGP: returns (D1, D2); the true ATE is ``TOY_TRUE_ATE``."""
    rng_d1, rng_d2 = independent_streams(rng, 2)
    x1 = rng_d1.uniform(-1.0, 1.0, setting.n_d1)
    if setting.d1_design == "rct":
        e1 = np.full(setting.n_d1, setting.rct_propensity)
    elif setting.d1_design == "observational":
        e1 = expit(setting.d1_propensity_slope * x1)
    else:
        raise ValueError(f"unknown d1_design {setting.d1_design!r}: rct or observational")
    a1 = (rng_d1.uniform(size=setting.n_d1) < e1).astype(int)
    mu0, mu1 = _toy_outcomes(x1, np.zeros_like(x1))
    y1 = np.where(a1 == 1, mu1, mu0) + setting.noise_sd * rng_d1.standard_normal(setting.n_d1)

    x2 = rng_d2.uniform(-1.0, 1.0, setting.n_d2)
    u2 = rng_d2.uniform(-1.0, 1.0, setting.n_d2)
    e2 = np.clip(
        expit(setting.d2_propensity_x * x2 + setting.d2_propensity_u * u2),
        *setting.d2_propensity_clip,
    )
    a2 = (rng_d2.uniform(size=setting.n_d2) < e2).astype(int)
    mu0, mu1 = _toy_outcomes(x2, u2)
    y2 = np.where(a2 == 1, mu1, mu0) + setting.noise_sd * rng_d2.standard_normal(setting.n_d2)
    return Dataset(x1[:, None], a1, y1), Dataset(x2[:, None], a2, y2)


# ----------------------------------------------------------------------------- official GP
def rbf_linear_kernel(
    z: np.ndarray, lengthscale: np.ndarray, linear: np.ndarray, variance: float
) -> np.ndarray:
    r"""The official kernel (brief Sec. 6):
    $k(z, z') = v \exp(-\tfrac12\lVert (z - z')/\ell\rVert^2) + z^\top \mathrm{diag}(\alpha) z'$."""
    scaled = z / lengthscale  # (M, 2)
    sq = (scaled**2).sum(1)[:, None] + (scaled**2).sum(1)[None, :] - 2.0 * scaled @ scaled.T
    return variance * np.exp(-0.5 * np.maximum(sq, 0.0)) + (z * linear) @ z.T


def sample_gp_surface(
    lengthscale: list[float],
    linear: list[float],
    variance: float,
    grid_points: int,
    rng: np.random.Generator,
) -> RectBivariateSpline:
    """One GP draw on a grid over (x, u) in [-1, 1]^2, interpolated by a bicubic spline."""
    axis = np.linspace(-1.0, 1.0, grid_points)
    xx, uu = np.meshgrid(axis, axis, indexing="ij")
    z = np.column_stack([xx.ravel(), uu.ravel()])  # (M, 2)
    K = rbf_linear_kernel(z, np.asarray(lengthscale), np.asarray(linear), variance)
    K[np.diag_indices_from(K)] += GP_JITTER * (np.trace(K) / len(K))
    sample = np.linalg.cholesky(K) @ rng.standard_normal(len(K))
    return RectBivariateSpline(axis, axis, sample.reshape(grid_points, grid_points))


@dataclass
class GPWorld:
    """The four GP surfaces of one data seed: outcomes under A=0, A=1, and D1's and D2's
    treatment scores."""

    outcome0: RectBivariateSpline
    outcome1: RectBivariateSpline
    selection: RectBivariateSpline
    treatment: RectBivariateSpline
    true_ate: float


def mean_over_x(surface: RectBivariateSpline, u: float = 0.0) -> float:
    r"""$E_X[s(X, u)]$ for $X \sim U[-1, 1]$, exactly: $\tfrac12 \int_{-1}^{1} s(x, u)\,dx$.

    With ``u`` fixed the bicubic spline is a cubic polynomial in x between consecutive x-knots,
    so Gauss-Legendre quadrature with ``GAUSS_NODES`` nodes per piece integrates it exactly
    (up to round-off).
    """
    breaks = np.unique(surface.get_knots()[0])  # (P + 1,) x-knots: the cubic pieces' ends
    if breaks[0] != -1.0 or breaks[-1] != 1.0:
        raise ValueError(f"the spline's x-knots span [{breaks[0]}, {breaks[-1]}], not [-1, 1]")
    nodes, weights = np.polynomial.legendre.leggauss(GAUSS_NODES)  # on [-1, 1]
    centre = (breaks[1:] + breaks[:-1]) / 2.0  # (P,)
    half = (breaks[1:] - breaks[:-1]) / 2.0  # (P,)
    x = centre[:, None] + half[:, None] * nodes[None, :]  # (P, GAUSS_NODES)
    values = surface.ev(x.ravel(), np.full(x.size, u)).reshape(x.shape)
    integral = float((half[:, None] * weights[None, :] * values).sum())
    return integral / 2.0  # density of U[-1, 1]


def make_gp_world(setting: SettingConfig) -> GPWorld:
    """Draw the surfaces from ``gp_data_seed``; the true ATE
    $E_X[f_1(X, 0) - f_0(X, 0)]$ (D1's population, U = 0) by exact quadrature.

    The official code takes a Monte-Carlo mean over 10^4 draws of X, whose error (about 0.05
    here, two standard errors) alone moves the measured coverage.
    """
    # One stream per surface (the same four streams the Monte-Carlo truth's fifth came after).
    streams = independent_streams(np.random.default_rng(setting.gp_data_seed), 4)

    def surface(lengthscale, linear, rng):
        return sample_gp_surface(
            lengthscale, linear, setting.gp_variance, setting.gp_grid_points, rng
        )

    outcome0 = surface(setting.gp_outcome0_lengthscale, setting.gp_outcome0_linear, streams[0])
    outcome1 = surface(setting.gp_outcome1_lengthscale, setting.gp_outcome1_linear, streams[1])
    true_ate = mean_over_x(outcome1) - mean_over_x(outcome0)
    return GPWorld(
        outcome0,
        outcome1,
        surface(setting.gp_selection_lengthscale, setting.gp_selection_linear, streams[2]),
        surface(setting.gp_treatment_lengthscale, setting.gp_treatment_linear, streams[3]),
        true_ate,
    )


def gp_draw(
    setting: SettingConfig, world: GPWorld, rng: np.random.Generator
) -> tuple[Dataset, Dataset]:
    """D1 (U = 0; RCT or GP selection score) and D2 (U ~ U[-1, 1]; GP treatment score),
    with noiseless outcomes, as the official generator (brief Sec. 6)."""
    rng_d1, rng_d2 = independent_streams(rng, 2)
    x1 = rng_d1.uniform(-1.0, 1.0, setting.n_d1)
    u1 = np.zeros_like(x1)
    if setting.d1_design == "rct":
        e1 = np.full(setting.n_d1, setting.rct_propensity)
    else:
        e1 = np.clip(expit(world.selection.ev(x1, u1)), *setting.gp_propensity_clip)
    a1 = (rng_d1.uniform(size=setting.n_d1) < e1).astype(int)
    y1 = np.where(a1 == 1, world.outcome1.ev(x1, u1), world.outcome0.ev(x1, u1))

    x2 = rng_d2.uniform(-1.0, 1.0, setting.n_d2)
    u2 = rng_d2.uniform(-1.0, 1.0, setting.n_d2)
    e2 = np.clip(expit(world.treatment.ev(x2, u2)), *setting.gp_propensity_clip)
    a2 = (rng_d2.uniform(size=setting.n_d2) < e2).astype(int)
    y2 = np.where(a2 == 1, world.outcome1.ev(x2, u2), world.outcome0.ev(x2, u2))
    return Dataset(x1[:, None], a1, y1), Dataset(x2[:, None], a2, y2)
