"""W1, the Lipschitz estimate and Algorithm 1 (brief Sec. 7, items 3-5 and 7)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import sparse

from papers.gnn_kvariance import method
from papers.gnn_kvariance.method import (
    BoundSettings,
    class_halves,
    kvariance_bound,
    lipschitz_estimate,
    margin,
    pairwise_distances,
    wasserstein_1,
)
from papers.gnn_kvariance.train import draw_rng, stream
from shared.seeding import numpy_rng

RNG = np.random.default_rng(0)


# ------------------------------------------------------------------------------- 3. W1
def test_w1_of_a_set_with_itself_is_zero():
    a = RNG.normal(size=(10, 5))
    assert wasserstein_1(a, a) == 0.0


def test_w1_in_one_dimension_is_the_mean_gap_of_sorted_values():
    a, b = RNG.normal(size=(12, 1)), RNG.normal(size=(12, 1))
    expected = np.abs(np.sort(a[:, 0]) - np.sort(b[:, 0])).mean()
    assert wasserstein_1(a, b) == pytest.approx(expected, abs=1e-12)


def test_w1_matches_pot_emd2():
    ot = pytest.importorskip("ot")  # POT, in the dev extra
    for _ in range(5):
        a, b = RNG.normal(size=(10, 5)), RNG.normal(size=(10, 5))
        uniform = np.full(10, 1 / 10)
        expected = ot.emd2(uniform, uniform, pairwise_distances(a, b))
        assert wasserstein_1(a, b) == pytest.approx(expected, abs=1e-9)


def test_w1_is_invariant_to_row_order():
    a, b = RNG.normal(size=(9, 4)), RNG.normal(size=(9, 4))
    shuffled = wasserstein_1(a[RNG.permutation(9)], b[RNG.permutation(9)])
    assert shuffled == pytest.approx(wasserstein_1(a, b), abs=1e-12)


def test_w1_refuses_unequal_sizes():
    with pytest.raises(ValueError, match="equal-size"):
        wasserstein_1(np.zeros((3, 2)), np.zeros((4, 2)))


def test_sparse_distances_are_exact_and_match_dense():
    counts = RNG.integers(0, 4, size=(15, 40))
    counts[3] = counts[7]  # equal histograms: distance exactly 0
    dense = pairwise_distances(counts.astype(float), counts.astype(float))
    sp = pairwise_distances(sparse.csr_array(counts), sparse.csr_array(counts))
    np.testing.assert_allclose(sp, dense, atol=1e-12)
    assert sp[3, 7] == 0.0 and np.all(np.diag(sp) == 0.0)


# ------------------------------------------------------------------- 4. Lipschitz
def test_lipschitz_of_a_scaled_copy_is_the_scale():
    lam = RNG.normal(size=(30, 6))
    assert lipschitz_estimate(lam, 3 * lam) == pytest.approx(3.0, abs=1e-12)


def test_lipschitz_ignores_pairs_at_zero_lambda_distance():
    lam = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    phi = np.array([[0.0], [100.0], [2.0]])  # rows 0 and 1 share lambda: not a pair
    # remaining pairs: (0, 2) ratio 2/1, (1, 2) ratio 98/1
    assert lipschitz_estimate(lam, phi) == pytest.approx(98.0)
    assert lipschitz_estimate(np.zeros((4, 3)), RNG.normal(size=(4, 2))) == 0.0


def test_lipschitz_does_not_depend_on_the_block_size():
    lam = sparse.csr_array(RNG.integers(0, 3, size=(50, 20)))
    phi = RNG.normal(size=(50, 2))
    values = {lipschitz_estimate(lam, phi, block_size=b) for b in (1, 7, 50, 256)}
    assert len(values) == 1


# ------------------------------------------------------------------- 5. Algorithm 1
def confidence(class_sizes, delta=0.1):
    return math.sqrt(math.log(2 / delta) / (2 * sum(m // 2 for m in class_sizes)))


def test_degenerate_bound_is_the_confidence_term():
    y = np.repeat([0, 1], 70)
    lam = RNG.integers(0, 5, size=(140, 8))
    phi = np.ones((140, 2))  # constant phi: L_phi = 0, D_c = 0
    terms = kvariance_bound(lam, phi, y, 2, BoundSettings(), np.random.default_rng(0))
    assert terms.lipschitz == 0.0
    assert terms.bound == pytest.approx(confidence([70, 70]))
    assert terms.bound == pytest.approx(0.14628, abs=5e-6)


def random_problem(m=60, classes=3, seed=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=m)
    lam = sparse.csr_array(rng.integers(0, 4, size=(m, 25)))
    phi = rng.normal(size=(m, classes)) * 2
    return lam, phi, y


def test_bound_by_hand_for_the_official_quirks():
    lam, phi, y = random_problem()
    settings = BoundSettings()
    terms = kvariance_bound(lam, phi, y, 3, settings, np.random.default_rng(5))
    lip, lip_rho = terms.lipschitz, math.sqrt(2) / 3
    expected = 0.0
    for c in range(3):
        k = terms.k[c]
        assert k == (y == c).sum() // 2
        concentration = 2 * terms.diameter[c] * math.sqrt(math.log10(2 * 3 / 0.1) / k)
        expected += (terms.w1[c] + concentration) * lip * lip_rho / 3
    expected += math.sqrt(math.log(2 / 0.1) / (2 * sum(terms.k)))
    assert terms.bound == pytest.approx(expected, rel=1e-12)
    assert terms.lip_rho == pytest.approx(lip_rho)


def test_bound_in_gamma():
    """Item 7: bound(gamma=2) = confidence + (bound(gamma=1) - confidence) / 2."""
    lam, phi, y = random_problem()
    one = kvariance_bound(lam, phi, y, 3, BoundSettings(gamma=1.0), np.random.default_rng(2))
    two = kvariance_bound(lam, phi, y, 3, BoundSettings(gamma=2.0), np.random.default_rng(2))
    assert two.bound == pytest.approx(one.confidence + (one.bound - one.confidence) / 2)


def test_chuang_reading_flags():
    lam, phi, y = random_problem()
    official = kvariance_bound(lam, phi, y, 3, BoundSettings(), np.random.default_rng(3))
    natural_log = kvariance_bound(
        lam, phi, y, 3, BoundSettings(log_base="e"), np.random.default_rng(3)
    )
    assert natural_log.bound > official.bound  # ln x > log10 x for x = 60
    phi_only = kvariance_bound(
        lam, phi, y, 3, BoundSettings(diameter="phi"), np.random.default_rng(3)
    )
    for c in range(3):  # the phi-diameter term is no longer multiplied by L_phi
        concentration = 2 * phi_only.diameter[c] * math.sqrt(math.log10(60) / phi_only.k[c])
        expected = (phi_only.w1[c] * phi_only.lipschitz + concentration) * phi_only.lip_rho
        assert phi_only.class_terms[c] == pytest.approx(expected)
    with_risk = kvariance_bound(
        lam, phi, y, 3, BoundSettings(margin_risk=True), np.random.default_rng(3)
    )
    risk = np.mean(margin(phi, y) <= 1.0)
    assert with_risk.bound == pytest.approx(official.bound + risk)
    weighted = kvariance_bound(
        lam, phi, y, 3, BoundSettings(class_weights="empirical"), np.random.default_rng(3)
    )
    p = np.bincount(y) / len(y)
    expected = float(np.dot(p, weighted.class_terms)) + weighted.confidence
    assert weighted.bound == pytest.approx(expected)


def test_halves_official_draws_may_overlap_disjoint_do_not():
    members = np.arange(20)
    rng = np.random.default_rng(0)
    overlaps = [
        len(set(a) & set(b)) for a, b in class_halves(members, 10, 50, "independent_draws", rng)
    ]
    assert max(overlaps) > 0
    for a, b in class_halves(members, 5, 2, "disjoint", rng):
        assert len(a) == len(b) == 5 and not set(a) & set(b)


# Hand case for the official draws (issue 31 (a)): 14 graphs, the training set in
# train_test_split order (unsorted), as compute_bound.py sees it.
TRAIN_IDX = np.array([11, 4, 7, 0, 9, 2, 13, 5, 8, 1, 12, 3])
LABELS = np.array([0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0])  # of graphs 0..13


def official_draws(seed: int = 41) -> list[np.ndarray]:
    """compute_bound.py l. 405-418, verbatim in effect: np.random.seed(41), then per class
    candidates = train_idx[y[train_idx] == c] and two np.random.choice draws. The global
    state is restored afterwards."""
    saved = np.random.get_state()  # noqa: NPY002
    try:
        np.random.seed(seed)  # noqa: NPY002  (the official call, as reference)
        draws = []
        for c in range(2):
            candidates = TRAIN_IDX[LABELS[TRAIN_IDX] == c]
            k = int(len(candidates) / 2)
            draws.append(np.random.choice(candidates, k, replace=False))  # noqa: NPY002
            draws.append(np.random.choice(candidates, k, replace=False))  # noqa: NPY002
        return draws
    finally:
        np.random.set_state(saved)  # noqa: NPY002


def drawn_subsets(monkeypatch, rng) -> list[np.ndarray]:
    """The subsets Algorithm 1 computes W1 on, as dataset indices: each training graph's
    lambda row is its own dataset index, and W1 is replaced by a recorder."""
    drawn = []

    def record(a, b):
        drawn.extend([a[:, 0].astype(int), b[:, 0].astype(int)])
        return 0.0

    monkeypatch.setattr(method, "wasserstein_1", record)
    lam = TRAIN_IDX[:, None].astype(float)  # (12, 1)
    phi = np.zeros((len(TRAIN_IDX), 2))
    kvariance_bound(lam, phi, LABELS[TRAIN_IDX], 2, BoundSettings(), rng)
    return drawn


def legacy_global_state() -> tuple[list[int], int]:
    """numpy's global legacy stream: the Mersenne Twister key and position."""
    _, key, pos, *_ = np.random.get_state()  # noqa: NPY002
    return key.tolist(), pos


def test_official_draw_is_the_np_random_seed_41_choice_sequence(monkeypatch):
    before = legacy_global_state()
    drawn = drawn_subsets(monkeypatch, draw_rng("random_state", 41, "ENZYMES"))
    assert legacy_global_state() == before  # no global numpy state is touched
    expected = official_draws()
    assert len(drawn) == len(expected) == 4  # class 0: two subsets, then class 1: two
    for ours, theirs in zip(drawn, expected, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    # the same draws written out by hand (numpy's legacy stream is frozen)
    hand = [[0, 5, 2], [2, 7, 5], [4, 1, 9], [3, 1, 4]]
    assert [d.tolist() for d in drawn] == hand
    # the task name plays no part in the official stream
    assert [d.tolist() for d in drawn_subsets(monkeypatch, draw_rng("random_state", 41, "x"))] == (
        hand
    )


def test_generator_draw_is_seeded_from_seed_and_task(monkeypatch):
    ours = drawn_subsets(monkeypatch, draw_rng("generator", 41, "ENZYMES"))
    again = drawn_subsets(monkeypatch, numpy_rng(41, stream("ENZYMES")))
    assert [d.tolist() for d in ours] == [d.tolist() for d in again]
    with pytest.raises(ValueError, match="draw_rng"):
        draw_rng("global", 41, "ENZYMES")


def test_margin():
    phi = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 1.0]])
    np.testing.assert_allclose(margin(phi, np.array([0, 2])), [1.0, -4.0])


def test_a_class_too_small_for_two_subsets_is_named():
    y = np.array([0, 0, 0, 1])
    with pytest.raises(ValueError, match="class 1 has 1 training graphs"):
        kvariance_bound(np.eye(4), np.eye(4)[:, :2], y, 2, BoundSettings(), RNG)


def test_unknown_flag_values_are_refused():
    with pytest.raises(ValueError, match="halves"):
        BoundSettings(halves="overlapping")
