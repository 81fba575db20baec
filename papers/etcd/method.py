r"""
# Efficient and Trustworthy Causal Discovery with Latent Variables and Complex Relations

Xiu-Chuan Li & Tongliang Liu, ICLR 2025, OpenReview
[BZYIEw4mcY](https://openreview.net/forum?id=BZYIEw4mcY).

The data come from a linear, non-Gaussian, acyclic model over observed **and** latent
variables, $V = BV + e$ with mutually independent non-Gaussian $e$, in which every kind of
edge is allowed (latent→latent, latent→observed, observed→latent, observed→observed). ETCD
assumes that every latent has at least two *pure children* (children whose only parent is
that latent) and then works in two stages:

* **Stage 1 (leaves → roots).** Pairs whose *pseudo-residual*
  $\mathrm{PR}(a, b \mid c) = a - \frac{\mathrm{cov}(a, c)}{\mathrm{cov}(b, c)}\, b$ is
  independent of every other variable are "identifiable pairs". A pair is a parent and its
  pure child (type I: the child is peeled off), a cluster of pure siblings (type II: a new
  latent replaces them, represented by two of its children as two *copies*), or a
  parent-child-sibling triangle (type III: left alone).
* **Stage 2 (roots → leaves).** The remaining variables (observed and the new latents) are
  ordered by repeatedly finding a root whose pseudo-residuals are independent of it, deflating
  the others, and reading normalised total effects off products of cross-covariances of the
  two copies; the direct effects are $A = I - M^{-1}$.

Both stages use a polynomial number of HSIC independence tests. ETCD is **trustworthy**: when
no candidate root passes its independence checks (smallest p-value below ``alpha_error``),
the pure-children assumption must be wrong, and it raises :class:`AssumptionInvalid` instead
of returning a wrong graph. The guarantee is asymptotic and needs strongly non-Gaussian noise
(brief Sec. 3.4): with Laplace noise it can silently return wrong graphs.

"Sec." refers to the implementation brief ``shared/papers/etcd.md`` (the paper's text was not
available; the brief reconstructs the method from the authors' code). This module has no I/O
and no global state; all randomness goes through a ``numpy.random.Generator``.

**Speed (Sec. 3.4).** ETCD runs thousands of small HSIC tests; multi-threaded BLAS makes each
about ten times slower. Callers should set ``OPENBLAS_NUM_THREADS=1`` / ``OMP_NUM_THREADS=1``
/ ``MKL_NUM_THREADS=1`` **before numpy is first imported** (this module does not, since that
would be global state). One HSIC test at n = 2000 then costs well under a millisecond, and
one Case-4 run about a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations, permutations

import networkx as nx
import numpy as np
from scipy.stats import pearsonr

CLUSTER_ORDERS = ("official", "sorted")  # orders of merged type-II clusters


class AssumptionInvalid(RuntimeError):
    """ETCD's trust signal (Sec. 3.3 step 1): no variable qualifies as the next root, so the
    pure-children assumption (or linearity / non-Gaussianity) "might be invalid"."""


# ------------------------------------------------------------------------------------------
# Settings
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HSICSettings:
    """The HSIC spectral test with random Fourier features (Sec. 3.1).

    Attributes:
        width: Gaussian kernel width, fixed; no median heuristic and no standardisation of
            the inputs (z-scoring hurt Case-4 success, Sec. 3.4).
        n_frequencies: random frequencies per argument; each gives a cosine and a sine
            feature, so 15 frequencies make the official 30 features.
        n_null: draws of the simulated null. The smallest attainable p-value is
            ``1 / (n_null + 1)``, which must lie below the smallest level used
            (``alpha_ip = 0.001``), hence 1000 (Sec. 3.4).
    """

    width: float = 1.0
    n_frequencies: int = 15
    n_null: int = 1000


@dataclass(frozen=True)
class ETCDSettings:
    """Levels and thresholds of ETCD (Sec. 3.2-3.3; the official constants are the defaults).

    Attributes:
        alpha_ip: level of the identifiable-pair tests (Sec. 3.2 step 1).
        alpha_type1: level of the parent → pure-child test (Sec. 3.2 step 2).
        alpha_quintuple: level of the type-III "quintuple" test (Sec. 3.2 step 2).
        alpha_corr: Pearson level that gates pairs in Stage 2 (Sec. 3.3 steps 1-2).
        alpha_error: the trust check raises when the best root's p-value is below this
            (Sec. 3.3 step 1).
        edge_threshold: $|A_{ij}|$ above which the edge j → i is declared (Sec. 3.3 step 3).
        error: raise :class:`AssumptionInvalid` when the trust check fires; ``False`` always
            returns a graph (the ablation).
        hsic: settings of the independence test.
        min_samples: :func:`check_data` refuses fewer samples than this.
        instrument_min_corr: the optional guard of Sec. 3.4 for the FindIP instrument k: take
            the first other variable whose |corr| with the pair's second member exceeds this.
            ``0`` (default) disables it: k is the first other variable, as in the official
            code.
        cluster_order: order of the merged type-II clusters, hence of the new latents' ids
            and of Vc, which breaks Stage-2 root ties (see :func:`merge_overlapping`).
            ``"official"`` (default): as the official ``utils.Mergelist``, clusters merged
            from several pairs first, then the pairs that overlap no other, in input order;
            ``"sorted"``: the clusters sorted (this code's earlier order).
    """

    alpha_ip: float = 0.001
    alpha_type1: float = 0.01
    alpha_quintuple: float = 0.05
    alpha_corr: float = 0.01
    alpha_error: float = 0.001
    edge_threshold: float = 0.25
    error: bool = True
    hsic: HSICSettings = field(default_factory=HSICSettings)
    min_samples: int = 100
    instrument_min_corr: float = 0.0
    cluster_order: str = "official"

    def __post_init__(self) -> None:
        if self.cluster_order not in CLUSTER_ORDERS:
            raise ValueError(
                f"cluster_order must be one of {CLUSTER_ORDERS}, got {self.cluster_order!r}"
            )


# ------------------------------------------------------------------------------------------
# Statistical building blocks (Sec. 3.1)
# ------------------------------------------------------------------------------------------
def _cov(a: np.ndarray, b: np.ndarray) -> float:
    """Unbiased (ddof = 1) sample covariance of two series, as ``np.cov(a, b)[0, 1]``."""
    return float(np.dot(a - a.mean(), b - b.mean()) / (a.size - 1))


def pseudo_residual(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    r"""$\mathrm{PR}(a, b \mid c) = a - \frac{\mathrm{cov}(a, c)}{\mathrm{cov}(b, c)}\, b$
    (Sec. 3.1, ddof = 1 covariances).

    Removes from ``a`` the part it shares with ``b``, using ``c`` as an instrument (the Triad
    residual of Cai et al., 2019); the result is exactly uncorrelated with ``c``. If
    ``cov(b, c)`` is 0 the result is not finite, which :class:`HSICTest` reports as
    "dependent".

    Args:
        a, b, c: series of shape (n,).

    Returns:
        The residual, shape (n,).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.float64(_cov(a, c)) / np.float64(_cov(b, c))
        return a - ratio * b  # (n,)


def pearson_correlated(a: np.ndarray, b: np.ndarray, alpha: float = 0.01) -> bool:
    """Pearson test (Sec. 3.1): "correlated" when ``scipy.stats.pearsonr``'s p-value < alpha."""
    return bool(pearsonr(a, b).pvalue < alpha)


class HSICTest:
    r"""HSIC independence test with random Fourier features and a spectral null (Sec. 3.1).

    For each call, ``n_frequencies`` frequencies $\omega \sim N(0, 1/\mathrm{width}^2)$ are
    drawn per argument, giving $D = 2 \cdot$ ``n_frequencies`` features
    $\phi(x) = \sqrt{2/D}\,[\cos(\omega x), \sin(\omega x)]$. The statistic is
    $n \lVert \hat C_{xy} \rVert_F^2$, where $\hat C_{xy}$ is the (1/n) cross-covariance of the
    centred features. Under independence it is approximately
    $\sum_{a,b} \lambda^x_a \lambda^y_b z_{ab}^2$ with $z_{ab} \sim N(0, 1)$ and $\lambda$ the
    eigenvalues of each feature covariance (ddof = 1).

    Speed trick (Sec. 3.4, validated by the brief): the chi-square variates $z_{ab}^2$ are
    drawn **once** per instance, a bank of shape (n_null, D, D); each test then only needs the
    eigenvalues and one matrix-vector product. Frequencies stay fresh per call.

    Args:
        settings: width, number of frequencies, number of null draws.
        rng: the source of all randomness of this test (the bank now, frequencies per call).
    """

    def __init__(self, settings: HSICSettings, rng: np.random.Generator) -> None:
        if settings.n_frequencies < 1 or settings.n_null < 1 or settings.width <= 0:
            raise ValueError(f"invalid HSIC settings {settings}")
        self.settings = settings
        self.rng = rng
        d = 2 * settings.n_frequencies  # number of features D
        # bank of chi-square(1) variates, flattened over (a, b): (n_null, D * D)
        self._null_bank = rng.standard_normal((settings.n_null, d * d)) ** 2

    @property
    def pvalue_floor(self) -> float:
        """The smallest attainable p-value, ``1 / (n_null + 1)`` (Sec. 3.4)."""
        return 1.0 / (self.settings.n_null + 1)

    def _features(self, x: np.ndarray) -> np.ndarray:
        """Centred random Fourier features of a series (n,) -> (n, D), fresh frequencies."""
        n_freq = self.settings.n_frequencies
        omega = self.rng.standard_normal(n_freq) / self.settings.width  # (F,)
        xw = np.multiply.outer(x, omega)  # (n, F)
        phi = np.sqrt(2.0 / (2 * n_freq)) * np.concatenate((np.cos(xw), np.sin(xw)), axis=1)
        return phi - phi.mean(axis=0)  # (n, D)

    def pvalue(self, x: np.ndarray, y: np.ndarray) -> float:
        """p-value ``(1 + #{null > stat}) / (n_null + 1)`` of the test of x ⟂ y.

        Args:
            x, y: series of shape (n,), on their raw scale (not standardised).

        Returns:
            The p-value; the floor ``1 / (n_null + 1)`` if an input is not finite (e.g. a
            pseudo-residual with a zero instrument covariance).
        """
        x = np.asarray(x, dtype=np.float64).ravel()
        y = np.asarray(y, dtype=np.float64).ravel()
        if x.size != y.size:
            raise ValueError(f"x and y differ in length: {x.size} vs {y.size}")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            return self.pvalue_floor
        n = x.size
        d = 2 * self.settings.n_frequencies
        phi = np.concatenate((self._features(x), self._features(y)), axis=1)  # (n, 2D)
        gram = phi.T @ phi  # (2D, 2D)
        statistic = np.sum(gram[:d, d:] ** 2) / n  # n * ||C_xy||_F^2 with C_xy = gram / n
        lam_x = np.linalg.eigvalsh(gram[:d, :d] / (n - 1))  # (D,)
        lam_y = np.linalg.eigvalsh(gram[d:, d:] / (n - 1))  # (D,)
        null = self._null_bank @ np.outer(lam_x, lam_y).ravel()  # (n_null,)
        return float((1 + np.count_nonzero(null > statistic)) / (self.settings.n_null + 1))

    def independent(self, x: np.ndarray, y: np.ndarray, alpha: float) -> bool:
        """ "Independent" means p > alpha (Sec. 3.1)."""
        return self.pvalue(x, y) > alpha


def quintuple_independent(
    x1: np.ndarray,
    x2: np.ndarray,
    x3: np.ndarray,
    x4: np.ndarray,
    x5: np.ndarray,
    hsic: HSICTest,
    alpha: float = 0.05,
) -> bool:
    r"""The "quintuple" (GIN-type) check Q of the type-III test (Sec. 3.2 step 2).

    Solves for $(c_0, c_1)$ making $w = x_1 + c_0 x_3 + c_1 x_4$ uncorrelated with $x_5$ and
    $x_2$:
    $\begin{pmatrix}\mathrm{cov}(x_3,x_5) & \mathrm{cov}(x_4,x_5)\\
    \mathrm{cov}(x_3,x_2) & \mathrm{cov}(x_4,x_2)\end{pmatrix} c
    = -\begin{pmatrix}\mathrm{cov}(x_1,x_5)\\ \mathrm{cov}(x_1,x_2)\end{pmatrix}$,
    then tests $w \perp x_2$ at level ``alpha``.

    Returns:
        True when w is judged independent of x2; False when dependent or when the 2×2 system
        is numerically singular (rank < 2 by ``np.linalg.matrix_rank``'s SVD tolerance,
        Sec. 3.4).
    """
    system = np.array([[_cov(x3, x5), _cov(x4, x5)], [_cov(x3, x2), _cov(x4, x2)]])  # (2, 2)
    rhs = -np.array([_cov(x1, x5), _cov(x1, x2)])  # (2,)
    if not np.all(np.isfinite(system)) or np.linalg.matrix_rank(system) < 2:
        return False
    c0, c1 = np.linalg.solve(system, rhs)
    w = x1 + c0 * x3 + c1 * x4  # (n,)
    return hsic.independent(w, x2, alpha)


def merge_overlapping(pairs: Sequence[Sequence[int]], order: str = "official") -> list[list[int]]:
    """Merge groups that share a member into clusters (Sec. 3.2 step 2; brief Sec. 7 item 8).

    The clusters are the connected components of the graph whose edges are the groups (the
    transitive closure in one pass: chains and nested overlaps all end in one cluster); each
    cluster is sorted. Their order sets the new latents' ids and Vc's order, which breaks
    Stage-2 root ties:

    * ``"official"``, as ``utils.Mergelist`` of the official code: first the clusters merged
      from two or more groups, ordered by the position of their first group in ``pairs``;
      then every group that overlaps no other, in input order.
      ``[(0, 1), (5, 6), (6, 7)] -> [[5, 6, 7], [0, 1]]``.
    * ``"sorted"``: the clusters sorted. ``[(0, 1), (5, 6), (6, 7)] -> [[0, 1], [5, 6, 7]]``.

    Args:
        pairs: groups of variable ids (empty groups are ignored).
        order: ``"official"`` or ``"sorted"``.

    Returns:
        The clusters, each a sorted list.
    """
    if order not in CLUSTER_ORDERS:
        raise ValueError(f"order must be one of {CLUSTER_ORDERS}, got {order!r}")
    groups = [list(group) for group in pairs if len(group)]
    graph = nx.Graph()
    for members in groups:
        graph.add_nodes_from(members)
        graph.add_edges_from(zip(members[:-1], members[1:], strict=True))
    component_of = {
        v: index
        for index, component in enumerate(nx.connected_components(graph))
        for v in component
    }
    # component -> positions of its groups in the input; dict order = first group's position
    positions: dict[int, list[int]] = {}
    for position, members in enumerate(groups):
        positions.setdefault(component_of[members[0]], []).append(position)
    clusters = {
        comp: sorted({v for p in where for v in groups[p]}) for comp, where in positions.items()
    }
    if order == "sorted":
        return sorted(clusters.values())
    merged = [clusters[comp] for comp, where in positions.items() if len(where) > 1]
    alone = [clusters[comp] for comp, where in positions.items() if len(where) == 1]
    return merged + alone


# ------------------------------------------------------------------------------------------
# Input validation and result containers
# ------------------------------------------------------------------------------------------
def check_data(X: np.ndarray, min_samples: int = 100) -> None:
    """Refuse data ETCD cannot use, with a message that names the problem.

    Args:
        X: observed data, shape (p_observed, n_samples): one **row** per variable.
        min_samples: the fewest samples accepted.

    Raises:
        ValueError: X is not 2-D or has no variables; has NaN/inf (names the row); has fewer
            than ``min_samples`` samples; has a constant row (names it); has two identical
            rows (names both).
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(
            f"X must be a 2-D array of shape (p_observed, n_samples), got shape {X.shape}"
        )
    p, n = X.shape
    if p == 0:
        raise ValueError("X has no variables (0 rows)")
    X = X.astype(np.float64, copy=False)
    bad_rows = np.flatnonzero(~np.all(np.isfinite(X), axis=1))
    if bad_rows.size:
        raise ValueError(f"X contains NaN or inf in row {int(bad_rows[0])}")
    if n < min_samples:
        hint = " (is X transposed? rows are variables)" if p >= min_samples else ""
        raise ValueError(
            f"X has {n} samples (columns); the independence tests need at least {min_samples}{hint}"
        )
    constant = np.flatnonzero(np.ptp(X, axis=1) == 0)
    if constant.size:
        raise ValueError(f"row {int(constant[0])} of X is constant; remove it")
    seen: dict[bytes, int] = {}
    for i, row in enumerate(X):
        key = row.tobytes()
        if key in seen:
            raise ValueError(f"rows {seen[key]} and {i} of X are identical; remove one")
        seen[key] = i


@dataclass
class Stage1Result:
    """What Stage 1 hands to Stage 2 (Sec. 3.2).

    Attributes:
        active: the final set Vc, in the algorithm's order (observed survivors first, then
            latents as created); the order breaks ties in Stage 2.
        copies: variable -> indices of its two **observed** proxy rows (V1, V2).
        children: variable -> its Stage-1 children (pure children peeled off, or the cluster
            a latent was created for).
        n_total: number of observed plus created latent variables (latent ids start at p).
    """

    active: list[int]
    copies: dict[int, tuple[int, int]]
    children: dict[int, list[int]]
    n_total: int


@dataclass
class ETCDResult:
    """The recovered graph.

    Attributes:
        adjacency: (n_total, n_total); rows/columns are observed 0..p-1 then latents in
            creation order; a nonzero ``adjacency[b, a]`` is the edge a -> b (Stage-2
            effects above threshold keep their value, Stage-1 pure-child edges are 1).
        n_observed: p.
        n_latent: number of latents created.
        order: Stage 2's causal order (variables still active after Stage 1).
        min_root_pvalue: smallest trust statistic (the chosen root's min p-value) over all
            Stage-2 steps; error mode raises exactly when this is below ``alpha_error``.
    """

    adjacency: np.ndarray
    n_observed: int
    n_latent: int
    order: list[int]
    min_root_pvalue: float = 1.0


# ------------------------------------------------------------------------------------------
# Stage 1: latents and pure-child edges, leaves -> roots (Sec. 3.2)
# ------------------------------------------------------------------------------------------
def _instrument(
    V1: dict[int, np.ndarray],
    active: list[int],
    i: int,
    j: int,
    min_corr: float,
) -> int:
    """FindIP's instrument k (Sec. 3.2 step 1): the first element of Vc other than i, j;
    with the optional guard (Sec. 3.4), the first one with |corr(V1[j], V1[k])| > min_corr."""
    others = [k for k in active if k not in (i, j)]
    if min_corr > 0:
        for k in others:
            if abs(np.corrcoef(V1[j], V1[k])[0, 1]) > min_corr:
                return k
    return others[0]


def _find_identifiable_pairs(
    X: np.ndarray,
    active: list[int],
    copies: dict[int, tuple[int, int]],
    settings: ETCDSettings,
    hsic: HSICTest,
) -> list[tuple[int, int]]:
    """Sec. 3.2 step 1: pairs {i, j} of Vc whose PR(V1[i], V1[j] | V1[k]) is independent of
    V1[l] for every other l (alpha_ip). Uses only the first copies."""
    if len(active) < 3:
        return []
    V1 = {v: X[copies[v][0]] for v in active}
    pairs = []
    for i, j in combinations(active, 2):
        k = _instrument(V1, active, i, j, settings.instrument_min_corr)
        r = pseudo_residual(V1[i], V1[j], V1[k])  # (n,)
        # all() stops at the first dependent ell, as the official loop does
        if all(
            hsic.independent(r, V1[ell], settings.alpha_ip) for ell in active if ell not in (i, j)
        ):
            pairs.append((i, j))
    return pairs


def _classify_pairs(
    X: np.ndarray,
    active: list[int],
    copies: dict[int, tuple[int, int]],
    pairs: list[tuple[int, int]],
    settings: ETCDSettings,
    hsic: HSICTest,
) -> tuple[list[tuple[int, int]], list[list[int]], list[tuple[int, int]]]:
    """Sec. 3.2 step 2: split identifiable pairs into type I (ordered parent -> child),
    type-II clusters (merged) and type III (ordered, not acted on)."""
    V1 = {v: X[copies[v][0]] for v in active}
    V2 = {v: X[copies[v][1]] for v in active}

    def parent_child(i: int, j: int) -> bool:
        # i -> j: the residual of V1[i] on V1[j], instrumented by i's second copy, is the
        # child's noise and so independent of V2[i]
        return hsic.independent(pseudo_residual(V1[i], V1[j], V2[i]), V2[i], settings.alpha_type1)

    def triangle(i: int, j: int) -> bool:
        # P -> i, P -> j, i -> j: some other k (with both copies), or some ordered (k, l),
        # lets the quintuple combination cancel e_i
        others = [v for v in active if v not in (i, j)]
        for k in others:
            if quintuple_independent(
                V1[i], V2[i], V1[j], V1[k], V2[k], hsic, settings.alpha_quintuple
            ):
                return True
        for k, ell in permutations(others, 2):
            if quintuple_independent(
                V1[i], V2[i], V1[j], V1[k], V1[ell], hsic, settings.alpha_quintuple
            ):
                return True
        return False

    type1: list[tuple[int, int]] = []
    for i, j in pairs:
        if parent_child(i, j):
            type1.append((i, j))
        elif parent_child(j, i):
            type1.append((j, i))
    typed1 = {frozenset(pair) for pair in type1}
    rest = [pair for pair in pairs if frozenset(pair) not in typed1]

    # type II: a member appears in more than one identifiable pair
    count = {v: 0 for v in active}
    for i, j in pairs:
        count[i] += 1
        count[j] += 1
    type2 = [(i, j) for i, j in rest if count[i] > 1 or count[j] > 1]

    # isolated pairs: type III if the quintuple check passes in either orientation, else II
    type3: list[tuple[int, int]] = []
    for i, j in rest:
        if count[i] > 1 or count[j] > 1:
            continue
        if triangle(i, j):
            type3.append((i, j))
        elif triangle(j, i):
            type3.append((j, i))
        else:
            type2.append((i, j))
    return type1, merge_overlapping(type2, settings.cluster_order), type3


def stage1(X: np.ndarray, settings: ETCDSettings, hsic: HSICTest) -> Stage1Result:
    """Stage 1 of ETCD (Sec. 3.2): identify latents and pure-child edges, leaves -> roots.

    Repeats FindIP, classification and update until a round finds neither a type-I pair nor
    a type-II cluster. Type-I children leave Vc; each type-II cluster that shares no member
    with a type-I pair of the round becomes a new latent (id ``pointer``, copies = the first
    copies of its first two members); other clusters wait a round; type-III pairs stay.

    Args:
        X: observed data, shape (p, n).
        settings: levels (``alpha_ip``, ``alpha_type1``, ``alpha_quintuple``).
        hsic: the independence test (and its generator).

    Returns:
        The final Vc, the copies, the children and the number of variables.
    """
    p = X.shape[0]
    active = list(range(p))
    copies = {v: (v, v) for v in range(p)}  # an observed variable is its own two copies
    children: dict[int, list[int]] = {v: [] for v in range(p)}
    pointer = p  # next latent id
    while True:
        pairs = _find_identifiable_pairs(X, active, copies, settings, hsic)
        type1, clusters, _type3 = _classify_pairs(X, active, copies, pairs, settings, hsic)
        if not type1 and not clusters:
            break
        # Sec. 3.2 step 3: peel off pure children ...
        for parent, child in type1:
            children[parent].append(child)
            if child in active:
                active.remove(child)
        # ... then replace clusters of pure siblings that touch no type-I pair by a latent
        in_type1 = {v for pair in type1 for v in pair}
        for cluster in clusters:
            if in_type1 & set(cluster):
                continue  # postponed to the next round
            for v in cluster:
                active.remove(v)
            active.append(pointer)
            copies[pointer] = (copies[cluster[0]][0], copies[cluster[1]][0])
            children[pointer] = list(cluster)
            pointer += 1
    return Stage1Result(active=active, copies=copies, children=children, n_total=pointer)


# ------------------------------------------------------------------------------------------
# Stage 2: causal order and effects, roots -> leaves (Sec. 3.3)
# ------------------------------------------------------------------------------------------
def _stage2(
    X: np.ndarray, stage1_result: Stage1Result, settings: ETCDSettings, hsic: HSICTest
) -> tuple[np.ndarray, list[int], float]:
    """Stage 2 returning also the smallest root p-value (the trust statistic)."""
    active = list(stage1_result.active)
    copies = stage1_result.copies
    n_total = stage1_result.n_total
    X1 = {v: X[copies[v][0]].copy() for v in active}  # working copies, deflated
    X2 = {v: X[copies[v][1]] for v in active}  # never modified
    c2 = np.zeros(n_total)  # (n_total,) cov(X1[r], X2[r]) at r's turn
    c4 = np.zeros((n_total, n_total))  # products of two cross-covariances
    sign = np.zeros((n_total, n_total))  # signs of the total effects
    order: list[int] = []
    min_root_pvalue = 1.0

    while active:
        # -- step 1: the root is the variable whose worst pseudo-residual test is best
        min_p = {}
        for i in active:
            worst = 1.0
            for j in active:
                if j == i or not pearson_correlated(X1[i], X2[j], settings.alpha_corr):
                    continue
                residual = pseudo_residual(X1[j], X1[i], X2[i])  # (n,)
                worst = min(worst, hsic.pvalue(residual, X2[i]))
            min_p[i] = worst
        root = max(active, key=lambda v: min_p[v])  # first maximiser in Vc order
        min_root_pvalue = min(min_root_pvalue, min_p[root])
        if settings.error and min_p[root] < settings.alpha_error:
            raise AssumptionInvalid(
                f"assumption might be invalid: no variable qualifies as a root (best "
                f"candidate {root} has p = {min_p[root]:.4g} < alpha_error = "
                f"{settings.alpha_error}); the pure-children assumption, linearity or "
                "non-Gaussianity may fail"
            )
        order.append(root)

        # -- step 2: record effects of the root on all related variables, THEN deflate
        c2[root] = _cov(X1[root], X2[root])
        related = [
            i
            for i in active
            if i != root and pearson_correlated(X1[root], X2[i], settings.alpha_corr)
        ]
        for i in related:
            c4[i, root] = _cov(X1[root], X2[i]) * _cov(X2[root], X1[i])
            sign[i, root] = np.sign(_cov(X1[root], X2[i]) / _cov(X1[i], X2[i]))
        for i in related:
            X1[i] = pseudo_residual(X1[i], X1[root], X2[root])
        active.remove(root)
        del X1[root], X2[root]

    # -- step 3: normalised total effects M, direct effects A = I - M^{-1}
    M = np.eye(n_total)  # (n_total, n_total)
    for i, j in permutations(order, 2):
        M[i, j] = sign[i, j] * np.sqrt(np.abs(c4[i, j] / (c2[i] * c2[j])))
    A = np.eye(n_total) - np.linalg.inv(M)  # (n_total, n_total)
    A = np.where(np.abs(A) > settings.edge_threshold, A, 0.0)
    return A, order, min_root_pvalue


def stage2(
    X: np.ndarray, stage1: Stage1Result, settings: ETCDSettings, hsic: HSICTest
) -> tuple[np.ndarray, list[int]]:
    """Stage 2 of ETCD (Sec. 3.3): causal order and direct effects among the variables left
    in Vc, from the roots down.

    Each step picks as root the variable i maximising
    ``min_j p(PR(X1[j], X1[i] | X2[i]) ⟂ X2[i])`` over the j correlated with it (1 if none),
    records ``C4[i, r] = cov(X1[r], X2[i]) cov(X2[r], X1[i])`` and signs for all correlated i,
    and only then deflates their first copies ``X1[i] <- PR(X1[i], X1[r] | X2[r])``. Finally
    ``M[i, j] = S[i, j] sqrt(|C4[i, j] / (C2[i] C2[j])|)`` and ``A = I - M^{-1}``.

    Args:
        X: observed data, shape (p, n).
        stage1: Stage 1's output (Vc, copies, n_total).
        settings: levels, edge threshold and the error switch.
        hsic: the independence test.

    Returns:
        ``(A, order)``: A is (n_total, n_total), ``A[i, j] != 0`` means j -> i, values kept
        where ``|A| > edge_threshold`` and zero elsewhere; order is the causal order.

    Raises:
        AssumptionInvalid: in error mode, when the best root's p-value < ``alpha_error``.
    """
    A, order, _ = _stage2(X, stage1, settings, hsic)
    return A, order


def etcd(X: np.ndarray, settings: ETCDSettings, rng: np.random.Generator) -> ETCDResult:
    """Run ETCD: validate, Stage 1, Stage 2, merge (Sec. 3.2-3.3).

    Args:
        X: observed data, shape (p_observed, n_samples), raw scale (no standardisation).
        settings: all levels and thresholds.
        rng: seeds the single :class:`HSICTest` (its null bank and every RFF draw).

    Returns:
        The graph over observed variables (0..p-1) and latents (p..), Stage-1 pure-child
        edges set to 1 on top of Stage 2's thresholded effects (Sec. 3.3 step 4).

    Raises:
        ValueError: unusable data (see :func:`check_data`).
        AssumptionInvalid: in error mode, when the trust check fires.
    """
    check_data(X, settings.min_samples)
    X = np.asarray(X, dtype=np.float64)
    hsic = HSICTest(settings.hsic, rng)
    first = stage1(X, settings, hsic)
    adjacency, order, min_root_pvalue = _stage2(X, first, settings, hsic)
    for parent, kids in first.children.items():
        for child in kids:
            adjacency[child, parent] = 1.0
    p = X.shape[0]
    return ETCDResult(
        adjacency=adjacency,
        n_observed=p,
        n_latent=first.n_total - p,
        order=order,
        min_root_pvalue=min_root_pvalue,
    )


# ------------------------------------------------------------------------------------------
# Graph helpers and the official metrics (Sec. 3.5)
# ------------------------------------------------------------------------------------------
def to_networkx(
    adjacency: np.ndarray, n_observed: int, names: Sequence[str] | None = None
) -> nx.DiGraph:
    """A ``networkx.DiGraph`` of an adjacency in ETCD's layout (observed first, then latents).

    Args:
        adjacency: (n, n), a nonzero ``[b, a]`` is the edge a -> b.
        n_observed: how many leading rows are observed.
        names: node names; default ``x1..xp`` then ``L1..Lm``.

    Returns:
        Nodes carry ``latent: bool``; edges carry ``weight``.
    """
    size = adjacency.shape[0]
    if names is None:
        names = [f"x{i + 1}" for i in range(n_observed)]
        names += [f"L{i + 1}" for i in range(size - n_observed)]
    if len(names) != size:
        raise ValueError(f"{len(names)} names for {size} variables")
    graph = nx.DiGraph()
    for idx, name in enumerate(names):
        graph.add_node(name, latent=idx >= n_observed)
    for child, parent in zip(*np.nonzero(adjacency), strict=True):
        graph.add_edge(names[parent], names[child], weight=float(adjacency[child, parent]))
    return graph


def _reachability(adjacency: np.ndarray) -> np.ndarray:
    """Boolean (n, n): ``[i, j]`` when j is a proper ancestor of i (a directed path j -> i),
    i.e. the off-diagonal support of the mixing matrix (I - A)^{-1} without cancellations."""
    reach = adjacency != 0  # (n, n)
    for k in range(reach.shape[0]):  # Warshall's transitive closure
        reach = reach | (reach[:, k : k + 1] & reach[k : k + 1, :])
    np.fill_diagonal(reach, False)
    return reach


def _f1(true_positives: int, n_estimated: int, n_true: int) -> float:
    """F1 = 2 TP / (#estimated + #true); 1 when both are empty."""
    total = n_estimated + n_true
    return 1.0 if total == 0 else 2.0 * true_positives / total


def performance(
    B_true: np.ndarray, n_true_latent: int, A_est: np.ndarray, n_observed: int
) -> tuple[int, float, float]:
    """The official metrics (Sec. 3.5): latent-count error, correct-ordering rate, F1.

    Every assignment of estimated latents to true latents is tried (missing latents are
    padded as empty ones; extra estimated latents are dropped); the assignment with the
    most true-positive edges wins, ties broken by ordering hits. Ancestral pairs are read
    from the support of the mixing matrices (computed as a transitive closure, so weighted
    estimates cannot cancel).

    Args:
        B_true: (p_total, p_total) true weights ``B[child, parent]``, ordered
            [latents..., observed...].
        n_true_latent: number of true latents.
        A_est: (p + m, p + m) estimate ordered [observed..., latents...], nonzero = edge.
        n_observed: p.

    Returns:
        ``(|#true latents - #estimated latents|, ordering hits / #true ancestral pairs,
        2 TP / (#estimated edges + #true edges))``; a rate is 1.0 when its denominator is 0.
    """
    n_est_latent = A_est.shape[0] - n_observed
    size = B_true.shape[0]
    if size != n_true_latent + n_observed:
        raise ValueError("B_true must have n_true_latent + n_observed rows")
    true_edges = B_true != 0  # (size, size)
    true_reach = _reachability(B_true)
    n_true_pairs = int(true_reach.sum())
    n_est_edges = int(np.count_nonzero(A_est))  # all estimated edges, dropped latents too
    padded = np.zeros((max(A_est.shape[0], size),) * 2)
    padded[: A_est.shape[0], : A_est.shape[0]] = A_est
    best = (-1, -1)
    for latents in permutations(range(n_observed, padded.shape[0]), n_true_latent):
        idx = list(latents) + list(range(n_observed))  # estimate in the true layout
        est = padded[np.ix_(idx, idx)]  # (size, size)
        tp = int(np.count_nonzero((est != 0) & true_edges))
        hits = int(np.count_nonzero(_reachability(est) & true_reach))
        best = max(best, (tp, hits))
    tp, hits = best
    ordering = 1.0 if n_true_pairs == 0 else hits / n_true_pairs
    return abs(n_true_latent - n_est_latent), ordering, _f1(tp, n_est_edges, int(true_edges.sum()))


def observed_edge_f1(
    B_true: np.ndarray, n_true_latent: int, A_est_observed_block: np.ndarray
) -> float:
    """F1 over observed -> observed edges only (Sec. 5 claim 3: ETCD vs DirectLiNGAM).

    Args:
        B_true: (p_total, p_total) true weights, ordered [latents..., observed...].
        n_true_latent: number of true latents.
        A_est_observed_block: (p, p) estimate among the observed variables, same
            ``[child, parent]`` convention.

    Returns:
        ``2 TP / (#estimated + #true)`` over observed pairs (1.0 if both are empty).
    """
    true = B_true[n_true_latent:, n_true_latent:] != 0  # (p, p)
    est = np.asarray(A_est_observed_block) != 0  # (p, p)
    if true.shape != est.shape:
        raise ValueError(f"observed blocks differ in shape: {true.shape} vs {est.shape}")
    return _f1(int(np.count_nonzero(true & est)), int(est.sum()), int(true.sum()))


# ------------------------------------------------------------------------------------------
# Metrics of the real rung: indicator clusters and edges against a known graph
# ------------------------------------------------------------------------------------------
def _pairs(counts: np.ndarray) -> float:
    """Sum of C(c, 2) over the counts."""
    counts = np.asarray(counts, dtype=np.float64)
    return float(np.sum(counts * (counts - 1) / 2))


def adjusted_rand_index(labels_true: Sequence[int], labels_pred: Sequence[int]) -> float:
    """Adjusted Rand index of two partitions (Hubert & Arabie, 1985).

    ``ARI = (Σ_ij C(n_ij, 2) - E) / (½ [Σ_i C(a_i, 2) + Σ_j C(b_j, 2)] - E)`` with
    ``E = Σ_i C(a_i, 2) Σ_j C(b_j, 2) / C(n, 2)``, where ``n_ij`` is the contingency table
    and a, b its margins: 1 for identical partitions, about 0 for independent ones. When both
    partitions are the same trivial one (all in one cluster, or all singletons) the ratio is
    0/0 and the value is 1, as in scikit-learn.

    Args:
        labels_true: one cluster label per item.
        labels_pred: one cluster label per item, same length.

    Returns:
        The index, in [-1, 1].
    """
    a = np.asarray(labels_true)
    b = np.asarray(labels_pred)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"label vectors must be 1-D of one length, got {a.shape} and {b.shape}")
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(table, (ia, ib), 1)
    index = _pairs(table)
    sum_a, sum_b = _pairs(table.sum(axis=1)), _pairs(table.sum(axis=0))
    expected = sum_a * sum_b / _pairs(np.array([a.size]))
    maximum = (sum_a + sum_b) / 2
    if maximum == expected:
        return 1.0
    return (index - expected) / (maximum - expected)


def indicator_clusters(adjacency: np.ndarray, n_observed: int) -> np.ndarray:
    """Which latent each observed variable measures, read off a graph: its nearest latent
    ancestor along paths through observed variables only (a latent parent first, else a
    latent parent of an observed parent, ...; the smallest id on ties). A variable with no
    latent ancestor is a cluster of its own.

    Args:
        adjacency: (n, n) in ETCD's layout (observed 0..p-1, then latents); a nonzero
            ``[b, a]`` is the edge a -> b.
        n_observed: p.

    Returns:
        One label per observed variable: a latent's index, or the variable's own index.
    """
    is_parent = np.asarray(adjacency) != 0  # [child, parent]
    labels = np.arange(n_observed)
    for v in range(n_observed):
        frontier, seen = [v], {v}
        while frontier:
            parents = sorted({int(q) for u in frontier for q in np.flatnonzero(is_parent[u])})
            latents = [q for q in parents if q >= n_observed]
            if latents:
                labels[v] = latents[0]
                break
            frontier = [q for q in parents if q not in seen]
            seen.update(frontier)
    return labels


def cluster_pair_f1(labels_true: Sequence[int], labels_pred: Sequence[int]) -> float:
    """F1 over pairs of items: a pair is positive when both items share a cluster.

    Returns:
        ``2 TP / (#predicted pairs + #true pairs)`` (1.0 when both are empty).
    """
    a, b = np.asarray(labels_true), np.asarray(labels_pred)
    same_a = a[:, None] == a[None, :]
    same_b = b[:, None] == b[None, :]
    upper = np.triu(np.ones_like(same_a, dtype=bool), k=1)
    tp = int(np.count_nonzero(same_a & same_b & upper))
    return _f1(tp, int(np.count_nonzero(same_b & upper)), int(np.count_nonzero(same_a & upper)))


def edge_scores(true_adjacency: np.ndarray, estimated: np.ndarray) -> dict[str, float]:
    """Precision, recall and F1 of an estimated graph against a known one, as directed edges
    and as a skeleton (unordered pairs).

    Args:
        true_adjacency: (p, p), nonzero ``[effect, cause]``.
        estimated: (p, p), same convention.

    Returns:
        ``{directed,skeleton}_{precision,recall,f1}``; a precision with no estimated edge
        (or a recall with no true edge) is 0, F1 is ``2 TP / (#estimated + #true)``.
    """
    true = np.asarray(true_adjacency) != 0
    est = np.asarray(estimated) != 0
    if true.shape != est.shape:
        raise ValueError(f"graphs differ in shape: {true.shape} vs {est.shape}")
    upper = np.triu(np.ones_like(true), k=1)
    scores = {}
    for kind, t, e in (
        ("directed", true, est),
        ("skeleton", (true | true.T) & upper, (est | est.T) & upper),
    ):
        tp, n_est, n_true = int(np.count_nonzero(t & e)), int(e.sum()), int(t.sum())
        scores[f"{kind}_precision"] = tp / n_est if n_est else 0.0
        scores[f"{kind}_recall"] = tp / n_true if n_true else 0.0
        scores[f"{kind}_f1"] = _f1(tp, n_est, n_true)
    return scores
