"""The evaluation protocol of paper Sec. 5.2 (Eq. 8-10), brief Sec. 3.3.

Each cloud is normalised on its own into the unit cube with ONE scale (the largest extent, so
aspect ratios survive), optionally aligned by rigid ICP, and then compared with

* the point-cloud distance D (Eq. 8): the 1/2-weighted symmetric Chamfer distance with
  Euclidean, *unsquared* nearest-neighbour distances;
* the Hausdorff distance H (Eq. 9);
* IoGT (Eq. 10): the volume of the intersection of the two axis-aligned bounding boxes over
  the *ground-truth* box's volume (not IoU).

An item whose final code does not compile scores D = H = sqrt(3) (the unit-cube diagonal) and
IoGT = 0, and these penalties are included in the medians.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

FAIL_DISTANCE = math.sqrt(3.0)  # the unit cube's diagonal: the largest possible distance
FAIL_IOGT = 0.0
SUCCESS_DISTANCE = 0.01  # brief Sec. 5: an item with D below this counts as a success


def normalise_unit_cube(points: np.ndarray) -> np.ndarray:
    """Subtract the per-axis minimum and divide by the single largest extent (brief Sec. 3.3).

    The result lies in [0, 1]^3 with largest extent exactly 1 and the extent ratios kept.
    """
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != 3 or len(points) == 0:
        raise ValueError(f"expected a non-empty (n, 3) point cloud, got shape {points.shape}")
    shifted = points - points.min(axis=0)
    scale = shifted.max()
    if scale <= 0:
        raise ValueError("the point cloud is a single point (zero extent); cannot normalise")
    return shifted / scale


def _nearest_distances(P: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """min_q ||p - q|| for every p, and min_p ||q - p|| for every q (Euclidean)."""
    d_pq, _ = cKDTree(Q).query(P)
    d_qp, _ = cKDTree(P).query(Q)
    return d_pq, d_qp


def chamfer(P: np.ndarray, Q: np.ndarray) -> float:
    """Eq. (8): D(P, Q) = 1/(2|P|) sum_p min_q ||p - q|| + 1/(2|Q|) sum_q min_p ||q - p||."""
    d_pq, d_qp = _nearest_distances(P, Q)
    return float(0.5 * d_pq.mean() + 0.5 * d_qp.mean())


def hausdorff(P: np.ndarray, Q: np.ndarray) -> float:
    """Eq. (9): max(max_p min_q ||p - q||, max_q min_p ||q - p||)."""
    d_pq, d_qp = _nearest_distances(P, Q)
    return float(max(d_pq.max(), d_qp.max()))


def iogt(generated: np.ndarray, ground_truth: np.ndarray) -> float:
    """Eq. (10): |box(generated) ∩ box(ground truth)| / |box(ground truth)|.

    The boxes are the clouds' axis-aligned bounding boxes; 0 for a degenerate ground-truth box.
    """
    g_lo, g_hi = generated.min(axis=0), generated.max(axis=0)
    t_lo, t_hi = ground_truth.min(axis=0), ground_truth.max(axis=0)
    gt_volume = float(np.prod(t_hi - t_lo))
    if gt_volume <= 0:
        return 0.0
    overlap = np.clip(np.minimum(g_hi, t_hi) - np.maximum(g_lo, t_lo), 0.0, None)
    return float(np.prod(overlap) / gt_volume)


def icp_align(
    source: np.ndarray, target: np.ndarray, iterations: int, tolerance: float = 1e-9
) -> np.ndarray:
    """Rigid point-to-point ICP of ``source`` onto ``target`` from the identity (brief Sec. 3.3:
    no scaling, no reflection). Kabsch steps with nearest neighbours; returns the moved source."""
    tree = cKDTree(target)
    moved = np.asarray(source, dtype=float).copy()
    previous = math.inf
    for _ in range(iterations):
        dist, idx = tree.query(moved)
        matched = target[idx]
        mu_s, mu_t = moved.mean(axis=0), matched.mean(axis=0)
        H = (moved - mu_s).T @ (matched - mu_t)  # (3, 3) cross-covariance
        U, _, Vt = np.linalg.svd(H)
        sign = np.sign(np.linalg.det(Vt.T @ U.T)) or 1.0  # a rotation, never a reflection
        R = Vt.T @ np.diag([1.0, 1.0, sign]) @ U.T
        moved = (moved - mu_s) @ R.T + mu_t
        error = float(dist.mean())
        if previous - error < tolerance:
            break
        previous = error
    return moved


@dataclass(frozen=True)
class Score:
    """The metrics of one item (brief Sec. 3.3)."""

    compiled: bool
    distance: float  # D, Eq. (8)
    hausdorff: float  # H, Eq. (9)
    iogt: float  # Eq. (10)


def failed_score(distance: float = FAIL_DISTANCE, iogt_value: float = FAIL_IOGT) -> Score:
    """The failure penalty of an item whose final code does not compile (D = H = sqrt(3),
    IoGT = 0 by default); it is included in the medians."""
    return Score(False, distance, distance, iogt_value)


def score_clouds(
    generated: np.ndarray, ground_truth: np.ndarray, icp: bool, icp_iterations: int
) -> Score:
    """Normalise both clouds independently, optionally ICP-align and re-normalise, then score.

    Scale is removed only here: generated objects are never rescaled before this point.
    """
    P = normalise_unit_cube(generated)
    Q = normalise_unit_cube(ground_truth)
    if icp:
        P = normalise_unit_cube(icp_align(P, Q, icp_iterations))
    return Score(True, chamfer(P, Q), hausdorff(P, Q), iogt(P, Q))


def summarise_scores(
    scores: list[Score], success_distance: float = SUCCESS_DISTANCE
) -> dict[str, float]:
    """Medians (with IQR) over all items, penalties included, and over compiled items only."""
    if not scores:
        raise ValueError("no scores to summarise")
    d = np.array([s.distance for s in scores])
    h = np.array([s.hausdorff for s in scores])
    io = np.array([s.iogt for s in scores])
    ok = np.array([s.compiled for s in scores])
    q25, q75 = np.percentile(d, [25, 75])
    summary = {
        "median_d": float(np.median(d)),
        "iqr_d": float(q75 - q25),
        "q75_d": float(q75),
        "success": float(np.mean(d < success_distance)),
        "median_h": float(np.median(h)),
        "median_iogt": float(np.median(io)),
        "mean_iogt": float(np.mean(io)),
        "compile_rate": float(ok.mean()),
    }
    # Over compiled items only: the penalty turns compile gains into distance gains.
    summary["median_d_compiled"] = float(np.median(d[ok])) if ok.any() else float("nan")
    return summary
