"""The metrics of paper Sec. 5.2 (Eq. 8-10) on hand cases (brief Sec. 7, items 1-5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from papers.cadcodeverify.metrics import (
    FAIL_DISTANCE,
    chamfer,
    failed_score,
    hausdorff,
    icp_align,
    iogt,
    normalise_unit_cube,
    score_clouds,
    summarise_scores,
)


def _cloud(seed: int, n: int = 200) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 3)) * [3.0, 1.0, 0.5]


def test_distances_vanish_on_identical_clouds_and_chamfer_is_symmetric():
    P, Q = _cloud(0), _cloud(1)
    assert chamfer(P, P) == 0 and hausdorff(P, P) == 0
    assert chamfer(P, Q) == pytest.approx(chamfer(Q, P), abs=1e-15)
    assert hausdorff(P, Q) == pytest.approx(hausdorff(Q, P), abs=1e-15)


def test_hand_example_unsquared_half_weighted():
    P = np.array([[0.0, 0, 0]])
    Q = np.array([[1.0, 0, 0], [0, 2, 0]])
    # 1/2 * 1 + 1/2 * (1 + 2) / 2 (Euclidean, not squared: squared would give 0.5 + 1.25)
    assert chamfer(P, Q) == pytest.approx(1.25)
    assert hausdorff(P, Q) == pytest.approx(2.0)


def _box(lo, hi) -> np.ndarray:
    """The 8 corners of an axis-aligned box."""
    return np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )


def test_iogt_divides_by_the_ground_truth_box_only():
    truth = _box([0, 0, 0], [1, 1, 1])
    assert iogt(_box([0, 0, 0], [0.5, 1, 1]), truth) == pytest.approx(0.5)
    assert iogt(_box([-1, -1, -1], [2, 2, 2]), truth) == pytest.approx(1.0)  # not IoU
    assert iogt(_box([2, 2, 2], [3, 3, 3]), truth) == 0.0
    flat = _box([0, 0, 0], [1, 1, 0])
    assert iogt(truth, flat) == 0.0  # degenerate ground-truth box


def test_normalisation_one_scale_keeps_aspect_ratio():
    P = _cloud(2)
    N = normalise_unit_cube(P)
    assert N.min() >= 0 and N.max() <= 1 + 1e-12
    extents = N.max(axis=0) - N.min(axis=0)
    assert extents.max() == pytest.approx(1.0, abs=1e-15)
    raw = P.max(axis=0) - P.min(axis=0)
    assert np.allclose(extents / extents[0], raw / raw[0])


def test_distance_invariant_to_translation_and_uniform_scale_before_normalising():
    P, Q = _cloud(3), _cloud(4)
    base = score_clouds(P, Q, icp=False, icp_iterations=0)
    for moved in (P + [5.0, -2.0, 7.0], 3.7 * P, 0.01 * P - 4.0):
        again = score_clouds(moved, Q, icp=False, icp_iterations=0)
        assert again.distance == pytest.approx(base.distance, abs=1e-9)
        assert again.hausdorff == pytest.approx(base.hausdorff, abs=1e-9)
        assert again.iogt == pytest.approx(base.iogt, abs=1e-9)
    swapped = score_clouds(P, 2.5 * Q + 1.0, icp=False, icp_iterations=0)
    assert swapped.distance == pytest.approx(base.distance, abs=1e-9)


def test_failure_penalty_counts_in_the_median():
    fail = failed_score()
    assert fail.distance == fail.hausdorff == math.sqrt(3) == FAIL_DISTANCE
    assert fail.iogt == 0.0 and not fail.compiled
    ok = score_clouds(_cloud(5), _cloud(5), icp=False, icp_iterations=0)
    summary = summarise_scores([ok, fail, fail])
    assert summary["median_d"] == pytest.approx(math.sqrt(3))  # 2 of 3 failed: the penalty
    assert summary["compile_rate"] == pytest.approx(1 / 3)
    assert summary["median_d_compiled"] == 0.0  # the compiled-only median is reported too
    assert summary["success"] == pytest.approx(1 / 3)


def test_icp_recovers_a_small_rotation():
    P = normalise_unit_cube(_cloud(6, 400))
    angle = np.radians(4.0)
    R = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]])
    rotated = (P - 0.5) @ R.T + 0.5
    aligned = icp_align(rotated, P, iterations=50)
    assert chamfer(aligned, P) < 0.2 * chamfer(rotated, P)
    # a rigid map: pairwise distances are kept (no scaling, no reflection)
    assert np.linalg.norm(aligned[0] - aligned[1]) == pytest.approx(
        np.linalg.norm(rotated[0] - rotated[1])
    )
