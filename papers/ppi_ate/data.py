"""Data for PPI-ATE: the brief's closed-form toy DGP, the official GP-based DGP, and real
experiments (``load_real``, ``real_draw``: D1 a random subset of an experiment, D2 the rest,
confounded; or LaLonde's NSW against the CPS).

The two simulated DGPs draw D1 (small; U = 0, so unconfounded given X) and D2 (large;
confounded by U) with X ~ U[-1, 1] in both, so P(X) is shared as the method requires (brief
Sec. 3.1). D1 and D2 use independent generator streams (the official code reseeds the global
RNG with one seed for both, correlating their X draws; brief Sec. 3.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.interpolate import RectBivariateSpline
from scipy.special import expit
from scipy.stats import rankdata

from papers.ppi_ate.config import CSV_DATASET, MIN_D2_ROWS, REAL_COVARIATES, SettingConfig


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


# ----------------------------------------------------------------------------- real data
# Experiments that the causaldata 0.1.5 package ships (asset "causaldata", shared/assets.py),
# read with pandas; the package itself is never imported.
REAL_ASSET = "causaldata"


@dataclass(frozen=True)
class RealSpec:
    """Where one experiment's columns are: its file(s), treatment, outcome, covariates."""

    files: tuple[str, ...]  # the experiment's file, then (nsw_cps) the comparison group's
    rows: tuple[int, ...]  # rows each file holds (a truncated copy is refused)
    treatment: str
    outcome: str
    covariates: tuple[str, ...]


REAL_DATASETS = {
    # Butler & Broockman (2011): e-mails to 5,593 U.S. state legislators, the sender's
    # treatment randomised (treat_out); outcome: the legislator responded.
    "black_politicians": RealSpec(
        ("black_politicians.csv",),
        (5593,),
        "treat_out",
        "responded",
        REAL_COVARIATES["black_politicians"],
    ),
    # Thornton (2008): randomised cash incentives to learn one's HIV result in Malawi;
    # treatment: any incentive; outcome: got the result. Rows with the outcome, treatment
    # or a covariate missing, or an indeterminate test (hiv2004 = -1), are dropped (2,816 stay).
    "thornton_hiv": RealSpec(
        ("thornton_hiv.dta",),
        (4820,),
        "any",
        "got",
        REAL_COVARIATES["thornton_hiv"],
    ),
    # LaLonde (1986) via Dehejia & Wahba: the NSW job-training experiment (445 men) is D1;
    # D2 = the CPS comparison group (15,992 non-participants) plus NSW's treated men.
    "nsw_cps": RealSpec(
        ("nsw_mixtape.dta", "cps_mixtape.dta"),
        (445, 15992),
        "treat",
        "re78",
        REAL_COVARIATES["nsw_cps"],
    ),
}


@dataclass
class RealData:
    """One experiment (``experiment``: every covariate) and, for nsw_cps, the comparison
    group that joins D2 (``external``); ``reference`` is the experiment's difference in means,
    the estimand the intervals are scored against."""

    name: str
    columns: tuple[str, ...]
    experiment: Dataset
    external: Dataset | None
    reference: float


def difference_in_means(a: np.ndarray, y: np.ndarray) -> float:
    """mean(Y | A = 1) - mean(Y | A = 0): a randomised experiment's ATE estimate."""
    return float(y[a == 1].mean() - y[a == 0].mean())


def _read_table(path: Path) -> pd.DataFrame:
    """A CSV or Stata file as a DataFrame; an unreadable file raises one line naming it."""
    try:
        if path.suffix == ".csv":
            return pd.read_csv(path)
        if path.suffix == ".dta":
            return pd.read_stata(path, convert_categoricals=False)
    except Exception as err:  # pandas raises many kinds on a damaged file; name the file
        raise ValueError(
            f"{path}: cannot read it ({type(err).__name__}: {str(err)[:120]}); refetch with "
            "`python scripts/fetch_assets.py causaldata`"
        ) from err
    raise ValueError(f"{path}: expected a .csv or .dta file")


def _columns(
    path: Path, rows: int, spec: RealSpec, keep_incomplete: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, A, Y) of one file: its row count and columns checked, each error naming the file."""
    frame = _read_table(path)
    if len(frame) != rows:
        raise ValueError(
            f"{path}: {len(frame)} rows, expected {rows} (a truncated or different file); "
            "refetch with `python scripts/fetch_assets.py causaldata`"
        )
    return _numeric_columns(
        frame, path, spec.treatment, spec.outcome, spec.covariates, keep_incomplete
    )


def _numeric_columns(
    frame: pd.DataFrame,
    path: Path,
    treatment: str,
    outcome: str,
    covariates: tuple[str, ...],
    keep_incomplete: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, A, Y) from a table's named columns; a missing column, a value that is not a number,
    a gap (unless ``keep_incomplete``: the incomplete rows are dropped) or a treatment that is
    not 0/1 raises one line naming the file and the column."""
    needed = [treatment, outcome, *covariates]
    absent = [c for c in needed if c not in frame.columns]
    if absent:
        raise ValueError(f"{path}: missing column(s) {absent}; has {list(frame.columns)}")
    columns = []
    for column in needed:
        try:
            columns.append(frame[column].astype(np.float64).to_numpy())
        except (TypeError, ValueError) as err:
            raise ValueError(f"{path}: column {column!r} is not numeric ({err})") from err
    values = np.stack(columns, axis=1)  # (rows, 2 + p)
    complete = np.all(np.isfinite(values), axis=1)
    if not keep_incomplete and not complete.all():
        gaps = {c: int((~np.isfinite(values[:, j])).sum()) for j, c in enumerate(needed)}
        named = ", ".join(f"{c!r} ({n})" for c, n in gaps.items() if n)
        raise ValueError(
            f"{path}: {int((~complete).sum())} row(s) with a missing value, in column(s) {named}"
        )
    values = values[complete]
    a, y, x = values[:, 0], values[:, 1], values[:, 2:]
    if not set(np.unique(a).tolist()) <= {0.0, 1.0}:
        raise ValueError(f"{path}: treatment column {treatment!r} is not binary 0/1")
    return x, a.astype(int), y


def load_real(name: str, files: dict[str, Path] | None = None) -> RealData:
    """Read one experiment from the causaldata files (``files``: file name -> path, default
    the verified asset cache; nothing is downloaded).

    Args:
        name: a key of ``REAL_DATASETS``.
        files: paths by file name, e.g. ``shared.assets.require("causaldata")``.

    Returns:
        The experiment (and comparison group), covariates in ``REAL_DATASETS[name]`` order.
    """
    if name not in REAL_DATASETS:
        raise ValueError(f"unknown real_dataset {name!r}: one of {sorted(REAL_DATASETS)}")
    spec = REAL_DATASETS[name]
    if files is None:
        from shared.assets import require

        files = require(REAL_ASSET)
    paths = [Path(files[f]) for f in spec.files]
    thornton = name == "thornton_hiv"  # the only file with missing values (see REAL_DATASETS)
    x, a, y = _columns(paths[0], spec.rows[0], spec, keep_incomplete=thornton)
    if thornton:
        hiv = x[:, spec.covariates.index("hiv2004")]
        determinate = hiv >= 0  # -1: indeterminate test result
        x, a, y = x[determinate], a[determinate], y[determinate]
    experiment = Dataset(x, a, y)
    external = None
    if len(paths) > 1:
        xe, ae, ye = _columns(paths[1], spec.rows[1], spec, keep_incomplete=False)
        if ae.any():
            raise ValueError(f"{paths[1]}: the comparison group has treated rows")
        external = Dataset(xe, ae, ye)
    return RealData(name, spec.covariates, experiment, external, difference_in_means(a, y))


def load_experiment_csv(
    path: str | Path, treatment: str, outcome: str, covariates: list[str] | tuple[str, ...]
) -> RealData:
    """A user's randomised experiment (``real_dataset=csv``): one CSV with a header row.

    The same checks as the shipped experiments', each naming the file and the column: the
    named columns exist, hold numbers and no gap, the treatment is 0/1 with both arms.
    ``reference`` is its difference in means, as for the shipped experiments.
    """
    data = read_data_set(path, treatment, outcome, covariates)
    a, y = data.a, data.y
    return RealData(Path(path).name, tuple(covariates), data, None, difference_in_means(a, y))


def read_data_set(
    path: str | Path, treatment: str, outcome: str, covariates: list[str] | tuple[str, ...]
) -> Dataset:
    """One data set of a user's (a CSV with a header row): X the ``covariates`` in order, A
    the 0/1 ``treatment`` with both arms, Y the ``outcome``; each problem raises one line
    naming the file and the column."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(f"{path}: cannot read it as a CSV ({type(err).__name__})") from err
    x, a, y = _numeric_columns(frame, path, treatment, outcome, tuple(covariates), False)
    if set(np.unique(a).tolist()) != {0, 1}:
        raise ValueError(f"{path}: treatment column {treatment!r} holds one arm only")
    return Dataset(x, a, y)


def setting_data(setting: SettingConfig) -> RealData:
    """A real setting's experiment: a user's CSV (``real_dataset=csv``) or a shipped one."""
    if setting.real_dataset == CSV_DATASET:
        return load_experiment_csv(
            setting.path, setting.treatment, setting.outcome, setting.covariates
        )
    return load_real(setting.real_dataset)


def n_d1_problem(n_d1: int, data: RealData) -> str:
    """Why D1 cannot take ``n_d1`` units of ``data`` ('' when it can). An experiment split into
    D1 and a pool leaves the pool at least ``MIN_D2_ROWS`` units (D2's two halves of two);
    nsw_cps: D1 is the NSW experiment, all of it (0) or ``n_d1`` of its units."""
    m = len(data.experiment.y)
    if data.external is None:
        if not 0 < n_d1 <= m - MIN_D2_ROWS:
            return (
                f"must lie in [1, {m - MIN_D2_ROWS}]: {data.name} has {m} usable units and "
                f"D2's pool needs {MIN_D2_ROWS}"
            )
    elif not 0 <= n_d1 <= m:
        return f"must lie in [0, {m}]: {data.name}'s experiment has {m} units (0: all)"
    return ""


def rank_to_unit(w: np.ndarray) -> np.ndarray:
    r"""W's mid-ranks mapped onto (-1, 1): $u = 2(\mathrm{rank} - \tfrac12)/M - 1$, the
    real-data stand-in for the toy's hidden $U \sim U[-1, 1]$ (ties share their mean rank)."""
    return 2.0 * (rankdata(w) - 0.5) / len(w) - 1.0


def confounded_keep_probability(
    a: np.ndarray, u: np.ndarray, strength: float, clip: list[float]
) -> tuple[np.ndarray, np.ndarray]:
    r"""Probabilities of keeping each unit of a randomised pool in the confounded D2.

    With $\pi$ the pool's treated share and
    $p(u) = \mathrm{clip}(\sigma(\mathrm{logit}\,\pi + s\,u))$, a treated unit is kept with
    $k_1 = \kappa\,p/\pi$ and a control with $k_0 = \kappa(1 - p)/(1 - \pi)$, $\kappa$ the
    largest value keeping both at most 1. Because A was randomised,
    $P(\mathrm{kept} \mid W) = \pi k_1 + (1 - \pi) k_0 = \kappa$ for every W, so D2's
    covariates keep the experiment's distribution (the method's assumption), while
    $P(A = 1 \mid W, \mathrm{kept}) = p(W)$: D2 is confounded by W, as the toy's D2 by U.

    Returns:
        ``(keep, p)``: per-unit keep probabilities and D2's propensities p(W), each (M,).
    """
    pi = float(np.mean(a))
    if not 0.0 < pi < 1.0:
        raise ValueError(f"the pool needs both arms to confound, treated share {pi}")
    p = np.clip(expit(np.log(pi / (1.0 - pi)) + strength * u), *clip)
    kappa = min(pi / p.max(), (1.0 - pi) / (1.0 - p).max())
    keep = np.where(a == 1, kappa * p / pi, kappa * (1.0 - p) / (1.0 - pi))
    return keep, p


def _subset(data: Dataset, rows: np.ndarray, columns: np.ndarray | None = None) -> Dataset:
    x = data.x[rows] if columns is None else data.x[np.ix_(rows, columns)]
    return Dataset(x, data.a[rows], data.y[rows])


def real_draw(
    setting: SettingConfig, data: RealData, rng: np.random.Generator
) -> tuple[Dataset, Dataset, np.ndarray]:
    """One random split of a real experiment into D1 and a confounded D2.

    black_politicians, thornton_hiv: D1 = ``n_d1`` units drawn at random (a small RCT); the
    other units form the pool, of which D2 keeps a confounded subset
    (``confounded_keep_probability``, selection on ``hidden_covariate``), without that
    covariate. nsw_cps: D1 = the NSW experiment (all, or ``n_d1`` of it); D2 = the CPS
    comparison group plus NSW's treated men, whose covariates differ from NSW's.
    D2's rows are shuffled, so its halves (``method.split_d2``) are random.

    Returns:
        ``(D1, D2, shared)``: D1 with every covariate, D2 with those in ``shared`` (column
        indices into D1's X, the inputs of the CATE model).
    """
    rng_d1, rng_keep, rng_d2 = independent_streams(rng, 3)
    names = list(data.columns)
    hidden = setting.hidden_covariate
    if hidden and hidden not in names:
        raise ValueError(f"hidden_covariate {hidden!r} is not a covariate of {data.name}: {names}")
    shared = np.array([j for j, c in enumerate(names) if c != hidden])  # D2's covariates
    exp = data.experiment
    m = len(exp.y)
    problem = n_d1_problem(setting.n_d1, data)
    if problem:
        raise ValueError(f"{data.name}: n_d1={setting.n_d1} {problem}")
    if data.external is None:
        order = rng_d1.permutation(m)
        d1_rows, pool = order[: setting.n_d1], order[setting.n_d1 :]
        if hidden:
            u = rank_to_unit(exp.x[pool, names.index(hidden)])
            keep, _ = confounded_keep_probability(
                exp.a[pool], u, setting.selection_strength, setting.d2_propensity_clip
            )
            pool = pool[rng_keep.uniform(size=pool.size) < keep]
        d2 = _subset(exp, pool, shared)
    else:
        d1_rows = rng_d1.permutation(m)[: setting.n_d1] if setting.n_d1 else np.arange(m)
        treated = np.flatnonzero(exp.a == 1)
        d2 = Dataset(
            np.concatenate([data.external.x, exp.x[treated]])[:, shared],
            np.concatenate([data.external.a, exp.a[treated]]),
            np.concatenate([data.external.y, exp.y[treated]]),
        )
    rows = rng_d2.permutation(len(d2.y))
    if setting.n_d2 > 0:
        rows = rows[: setting.n_d2]
    return _subset(exp, d1_rows), _subset(d2, rows), shared
