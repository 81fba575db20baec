"""The k-variance generalisation bound in the space of an expressivity upper bound.

"Towards Bridging Generalization and Expressivity of Graph Neural Networks" (Li, Geerts, Kim,
Wang; ICLR 2025; arXiv 2410.10051). Official code: ``seanli3/hom_gen``, ``wl/compute_bound.py``.

The bound (brief Sec. 3.2, a reconstruction from the official code and Chuang et al. 2021,
Thm. 1): with probability >= 1 - delta,

    P(rho(phi(G), y) <= 0) <= R_gamma + E_c[ Lip_rho L_phi / gamma * Var_{m_c}(lambda_# mu_c) ]
                              + sqrt(ln(1/delta) / 2m),

where lambda is the expressivity upper bound (1-WL or F-WL colour histograms, ``wl.py``),
phi the network's logits, L_phi the Lipschitz constant of phi as a function of lambda, and
Var_k the k-variance (expected W1 between two k-samples of a class). More expressive lambda
separates classes 1-WL merges (a margin becomes possible) but spreads each class out in
lambda-space (larger k-variance): concentration against separation.

:func:`kvariance_bound` is Algorithm 1 (brief Sec. 3.3) as the official code computes it.
Each official quirk is a :class:`BoundSettings` flag whose default is the official value;
the other values give the reading of Chuang et al.:

* ``log_base="10"``: the confidence log is base 10 (``math.log(x, 10)``); ``"e"``: natural;
* ``diameter="phi_times_lip"``: the class diameter, measured in phi-space, is multiplied by
  L_phi again; ``"phi"``: by Lip_rho / gamma only;
* ``halves="independent_draws"``: two independent draws without replacement, which may
  overlap; ``"disjoint"``: a permutation cut into disjoint halves;
* ``margin_risk=False``: R_gamma is not added (the official code compares the rest with the
  train-test gap); ``True``: it is;
* ``class_weights="uniform"``: classes averaged with equal weight; ``"empirical"``: E_{c~p}
  with the training class frequencies.

No Hydra, no I/O: arrays in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from papers.gnn_kvariance.config import CLASS_WEIGHTS, DIAMETERS, HALVES, LIP_RHO

Matrix = np.ndarray | sparse.sparray | sparse.spmatrix
# The class-subset draws accept either stream: a Generator, or a legacy RandomState, whose
# choice() is the draw np.random.seed(41); np.random.choice(...) makes in the official code.
Rng = np.random.Generator | np.random.RandomState


# ----------------------------------------------------------------------------------------
# Distances and W1 (brief Sec. 3.1: k-variance)
# ----------------------------------------------------------------------------------------
def pairwise_distances(a: Matrix, b: Matrix) -> np.ndarray:
    """Euclidean distances between the rows of ``a`` (n, D) and ``b`` (m, D): (n, m).

    Dense rows use ``cdist``. Sparse rows (colour histograms, D up to ~10^5 colours) use
    ||a||^2 + ||b||^2 - 2 a.b with a sparse product: integer counts stay exact in int64, so
    equal histograms are at distance exactly 0 (never an (n x m x D) tensor).
    """
    if sparse.issparse(a) or sparse.issparse(b):
        a, b = sparse.csr_array(a), sparse.csr_array(b)
        if a.shape[1] != b.shape[1]:
            raise ValueError(f"{a.shape[1]} vs {b.shape[1]} columns")
        sq_a = np.asarray(a.multiply(a).sum(axis=1)).ravel()
        sq_b = np.asarray(b.multiply(b).sum(axis=1)).ravel()
        cross = (a @ b.T).toarray()
        squared = sq_a[:, None] + sq_b[None, :] - 2 * cross
        return np.sqrt(np.maximum(squared, 0).astype(np.float64))
    return cdist(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


def wasserstein_1(a: Matrix, b: Matrix) -> float:
    """W1 between the uniform distributions on the k rows of ``a`` and the k rows of ``b``
    (Euclidean ground cost; brief Sec. 3.1).

    With equal sizes and uniform weights an optimal plan is a permutation (Birkhoff), so
    W1 = (1/k) min_pi sum_i ||a_i - b_pi(i)||: an assignment problem.
    """
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"W1 of equal-size sets only: {a.shape[0]} vs {b.shape[0]} points")
    if a.shape[0] == 0:
        raise ValueError("W1 of empty sets")
    cost = pairwise_distances(a, b)  # (k, k)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())


# ----------------------------------------------------------------------------------------
# Algorithm 1, step 1: the Lipschitz constant of phi as a function of lambda
# ----------------------------------------------------------------------------------------
def lipschitz_estimate(lam: Matrix, phi: np.ndarray, block_size: int = 256) -> float:
    """L_phi = max over pairs with ||lambda_i - lambda_j|| > 0 of
    ||phi_i - phi_j|| / ||lambda_i - lambda_j|| (Algorithm 1 step 1); 0 if no pair is left.

    Pairs with equal lambda are skipped: phi cannot tell them apart in exact arithmetic
    (Sec. 3.1 requirement), so any phi difference there is float noise. Computed in row
    blocks of ``block_size`` against all rows: memory (block_size x m).
    """
    m = phi.shape[0]
    if lam.shape[0] != m:
        raise ValueError(f"lambda has {lam.shape[0]} rows, phi {m}")
    lam = sparse.csr_array(lam) if sparse.issparse(lam) else np.asarray(lam, dtype=np.float64)
    phi = np.asarray(phi, dtype=np.float64)
    best = 0.0
    for start in range(0, m, block_size):
        stop = min(start + block_size, m)
        lam_dist = pairwise_distances(lam[start:stop], lam)  # (b, m)
        phi_dist = cdist(phi[start:stop], phi)  # (b, m)
        distinct = lam_dist > 0
        if distinct.any():
            best = max(best, float((phi_dist[distinct] / lam_dist[distinct]).max()))
    return best


# ----------------------------------------------------------------------------------------
# Algorithm 1: the empirical bound
# ----------------------------------------------------------------------------------------
LOG_BASES = {"10": 10.0, "e": math.e}  # keyed by config.LOG_BASES (a test checks the keys)


@dataclass(frozen=True)
class BoundSettings:
    """Algorithm 1's constants and the official quirks (defaults: the official values)."""

    gamma: float = 1.0  # margin
    delta: float = 0.1  # failure probability
    n_split: int = 1  # draws of two k_c-subsets per class, W1 averaged over them
    log_base: str = "10"  # "10" (official math.log(x, 10)) | "e"
    lip_rho: str = "official"  # "official": sqrt(K-1)/K | "sqrt2": ||e_y - e_y'|| of rho
    diameter: str = "phi_times_lip"  # "phi_times_lip" (official) | "phi"
    halves: str = "independent_draws"  # official | "disjoint" (Chuang et al.)
    margin_risk: bool = False  # add R_gamma (official: no)
    class_weights: str = "uniform"  # official unweighted class mean | "empirical"
    block_size: int = 256  # rows per block of the Lipschitz estimate

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("log_base", self.log_base, tuple(LOG_BASES)),
            ("lip_rho", self.lip_rho, LIP_RHO),
            ("diameter", self.diameter, DIAMETERS),
            ("halves", self.halves, HALVES),
            ("class_weights", self.class_weights, CLASS_WEIGHTS),
        ):
            if value not in allowed:
                raise ValueError(f"bound.{name}={value!r}; choose from {list(allowed)}")
        if self.gamma <= 0 or not 0 < self.delta < 1 or self.n_split < 1:
            raise ValueError("need gamma > 0, 0 < delta < 1 and n_split >= 1")


@dataclass
class BoundTerms:
    """Every quantity of Algorithm 1, for reporting."""

    bound: float
    lipschitz: float  # L_phi
    lip_rho: float
    confidence: float  # sqrt(ln(2/delta) / (2 sum_c k_c))
    margin_risk: float  # R_gamma (computed always; added only when settings.margin_risk)
    w1: list[float]  # W1_c in lambda-space, averaged over n_split draws
    diameter: list[float]  # D_c in phi-space
    k: list[int]  # k_c = floor(m_c / (2 n_split))
    class_terms: list[float]  # T_c


def margin(phi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """rho(z, y) = z_y - max_{y' != y} z_y' (brief Sec. 3.1), per row."""
    phi = np.asarray(phi, dtype=np.float64)
    own = phi[np.arange(len(y)), y]
    others = phi.copy()
    others[np.arange(len(y)), y] = -np.inf
    return own - others.max(axis=1)


def margin_lipschitz(num_classes: int, kind: str = "official") -> float:
    """Lip_rho (Algorithm 1 step 2): official sqrt(K-1)/K; "sqrt2" is the l2 Lipschitz
    constant of z -> z_y - z_y' (gradient e_y - e_y')."""
    return math.sqrt(num_classes - 1) / num_classes if kind == "official" else math.sqrt(2.0)


def class_halves(
    members: np.ndarray, k: int, n_split: int, halves: str, rng: Rng
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_split`` pairs of k-subsets of one class's training indices (Algorithm 1 step 3).

    The official order of draws (``compute_bound.py`` l. 415-418): per split, the first
    subset then the second, each ``choice(members, k, replace=False)``; with a RandomState
    seeded 41 and classes visited 0..K-1 this is the official global-stream sequence.
    """
    if halves == "independent_draws":  # official: np.random.choice twice, may overlap
        return [
            (rng.choice(members, k, replace=False), rng.choice(members, k, replace=False))
            for _ in range(n_split)
        ]
    order = rng.permutation(members)  # Chuang et al.: disjoint halves of one permutation
    return [
        (order[2 * j * k : (2 * j + 1) * k], order[(2 * j + 1) * k : (2 * j + 2) * k])
        for j in range(n_split)
    ]


def kvariance_bound(
    lam: Matrix,
    phi: np.ndarray,
    y: np.ndarray,
    num_classes: int,
    settings: BoundSettings,
    rng: Rng,
) -> BoundTerms:
    """Algorithm 1 (brief Sec. 3.3) on the training graphs.

    Args:
        lam: (m, C) lambda features (colour histograms; sparse or dense) of the training graphs.
        phi: (m, K) the model's logits on the same graphs.
        y: (m,) integer labels in 0..num_classes-1.
        num_classes: K (classes absent from training are an error, as in the official code).
        settings: gamma, delta, n_split and the quirk flags.
        rng: draws the class subsets, classes in order 0..K-1 (the official order). A
            ``np.random.RandomState(41)`` gives the official draws exactly, provided the rows
            are in the official ``train_idx`` order (``train_test_split`` output, unsorted).

    Returns:
        :class:`BoundTerms`; ``bound`` = class-average of
        T_c = (W1_c + 2 D_c sqrt(log_b(2K/delta) / (n k_c))) L_phi Lip_rho / gamma
        plus sqrt(ln(2/delta) / (2 sum_c k_c)) (steps 3-4), with the flags' variants.
    """
    s = settings
    y = np.asarray(y, dtype=np.int64)
    phi = np.asarray(phi, dtype=np.float64)
    lam = sparse.csr_array(lam) if sparse.issparse(lam) else np.asarray(lam, dtype=np.float64)
    lipschitz = lipschitz_estimate(lam, phi, s.block_size)  # step 1
    lip_rho = margin_lipschitz(num_classes, s.lip_rho)  # step 2
    log_term = math.log(2 * num_classes / s.delta, LOG_BASES[s.log_base])

    w1s, diameters, ks, terms, weights = [], [], [], [], []
    for c in range(num_classes):  # step 3
        members = np.flatnonzero(y == c)
        k = len(members) // (2 * s.n_split)
        if k == 0:
            raise ValueError(
                f"class {c} has {len(members)} training graphs; Algorithm 1 needs at least "
                f"{2 * s.n_split} (two subsets per split)"
            )
        draws = class_halves(members, k, s.n_split, s.halves, rng)
        w1 = float(np.mean([wasserstein_1(lam[a], lam[b]) for a, b in draws]))
        diameter = float(cdist(phi[members], phi[members]).max())  # D_c, in phi-space
        concentration = 2 * diameter * math.sqrt(log_term / (s.n_split * k))
        if s.diameter == "phi_times_lip":  # official: everything times L_phi
            term = (w1 + concentration) * lipschitz * lip_rho / s.gamma
        else:  # W1 contracts by L_phi from lambda to phi; the phi-diameter needs no L_phi
            term = (w1 * lipschitz + concentration) * lip_rho / s.gamma
        w1s.append(w1)
        diameters.append(diameter)
        ks.append(k)
        terms.append(term)
        weights.append(len(members) / len(y) if s.class_weights == "empirical" else 1.0)

    confidence = math.sqrt(math.log(2 / s.delta) / (2 * sum(ks)))  # step 4
    risk = float(np.mean(margin(phi, y) <= s.gamma))
    bound = float(np.dot(weights, terms) / sum(weights)) + confidence
    if s.margin_risk:
        bound += risk
    return BoundTerms(
        bound=bound,
        lipschitz=lipschitz,
        lip_rho=lip_rho,
        confidence=confidence,
        margin_risk=risk,
        w1=w1s,
        diameter=diameters,
        k=ks,
        class_terms=terms,
    )
