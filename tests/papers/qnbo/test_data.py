"""Tests of papers/qnbo/data.py: the two toys of brief `qnbo.md` Sec. 5."""

from __future__ import annotations

import pytest
import torch
from sklearn.datasets import load_digits

from papers.qnbo.data import DTYPE, make_hyper_cleaning, make_quadratic

N_DIGITS = 1797  # sklearn's bundled digits
N_FEATURES = 65  # 8 x 8 pixels + bias
N_CLASSES = 10


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


# ----------------------------------------------------------------------------------------------
# Toy 1: the quadratic
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def quad():
    return make_quadratic(0, d_y=30, d_x=12, condition=100.0, target_sd=3.0, rho=0.1)


def test_quadratic_shapes_and_dtype(quad):
    assert quad.A.shape == (30, 30) and quad.B.shape == (30, 12)
    assert quad.c.shape == (30,) and quad.y_target.shape == (30,)
    assert all(t.dtype == DTYPE for t in (quad.A, quad.B, quad.c, quad.y_target))


def test_quadratic_A_is_spd_with_the_requested_condition(quad):
    assert torch.equal(quad.A, quad.A.T)
    eigen = torch.linalg.eigvalsh(quad.A)
    assert float(eigen.min()) == pytest.approx(1.0, rel=1e-8)
    assert float(eigen.max()) == pytest.approx(100.0, rel=1e-8)
    assert float(eigen.max() / eigen.min()) == pytest.approx(100.0, rel=1e-8)


def test_quadratic_y_star_solves_the_lower_level(quad):
    x = torch.randn(12, generator=torch.Generator().manual_seed(1), dtype=DTYPE)
    y = quad.y_star(x)
    rhs = quad.B @ x + quad.c
    assert rel(quad.A @ y, rhs) < 1e-12
    # and it is the zero of the autograd lower-level gradient
    assert float(quad.bilevel().grad_y_f(x, y).norm()) < 1e-10 * float(rhs.norm())


def test_quadratic_x_star_is_stationary(quad):
    x_star = quad.x_star()
    assert float(quad.hypergradient(x_star).norm()) < 1e-10
    # and a minimum: Phi grows in random directions
    gen = torch.Generator().manual_seed(2)
    for _ in range(3):
        d = torch.randn(12, generator=gen, dtype=DTYPE)
        assert quad.phi(x_star + 1e-2 * d) > quad.phi(x_star)


def test_quadratic_step_sizes(quad):
    eigen = torch.linalg.eigvalsh(quad.A)
    assert quad.lower_step() == pytest.approx(1.0 / float(eigen.max()), rel=1e-12)
    M = torch.linalg.solve(quad.A, quad.B)
    hessian_phi = M.T @ M + quad.rho * torch.eye(12, dtype=DTYPE)  # Phi is quadratic
    assert quad.upper_step() == pytest.approx(
        1.0 / float(torch.linalg.eigvalsh(hessian_phi).max()), rel=1e-10
    )


def test_quadratic_is_deterministic_per_seed():
    a = make_quadratic(3, 6, 2, 10.0, 1.0, 0.1)
    b = make_quadratic(3, 6, 2, 10.0, 1.0, 0.1)
    c = make_quadratic(4, 6, 2, 10.0, 1.0, 0.1)
    assert torch.equal(a.A, b.A) and torch.equal(a.y_target, b.y_target)
    assert not torch.equal(a.B, c.B)


# ----------------------------------------------------------------------------------------------
# Toy 2: data hyper-cleaning on digits
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cleaning():
    return make_hyper_cleaning(0, n_train=1000, n_val=300, corruption=0.5, mu=1e-2)


def test_hyper_cleaning_split_sizes(cleaning):
    assert cleaning.a_train.shape == (1000, N_FEATURES)
    assert cleaning.a_val.shape == (300, N_FEATURES)
    assert cleaning.a_test.shape == (N_DIGITS - 1300, N_FEATURES) == (497, N_FEATURES)
    assert cleaning.y_train.shape == (1000,) and cleaning.y_val.shape == (300,)
    assert cleaning.y_test.shape == (497,) and cleaning.corrupted.shape == (1000,)
    assert cleaning.n_classes == N_CLASSES


def test_hyper_cleaning_splits_partition_the_digits(cleaning):
    """train + val + test is a permutation of all digits rows (as a multiset: digits has
    duplicate images), with matching clean labels on val and test."""
    digits = load_digits()
    full = torch.cat(
        [torch.as_tensor(digits.data / 16.0, dtype=DTYPE), torch.ones(N_DIGITS, 1, dtype=DTYPE)],
        dim=1,
    )
    rows = torch.cat([cleaning.a_train, cleaning.a_val, cleaning.a_test])
    got, got_counts = torch.unique(rows, dim=0, return_counts=True)
    want, want_counts = torch.unique(full, dim=0, return_counts=True)
    assert torch.equal(got, want) and torch.equal(got_counts, want_counts)
    assert torch.bincount(torch.cat([cleaning.y_val, cleaning.y_test])).sum() == 797


@pytest.mark.parametrize("corruption", [0.0, 0.25, 0.5, 0.333])
def test_hyper_cleaning_corrupts_the_requested_number_of_rows(corruption):
    data = make_hyper_cleaning(1, n_train=200, n_val=50, corruption=corruption, mu=1e-2)
    assert int(data.corrupted.sum()) == round(corruption * 200)
    assert data.corrupted.dtype == torch.bool


def test_hyper_cleaning_clean_rows_and_labels_are_valid(cleaning):
    # validation and test labels are clean; training labels are valid classes
    for labels in (cleaning.y_train, cleaning.y_val, cleaning.y_test):
        assert labels.dtype == torch.long
        assert int(labels.min()) >= 0 and int(labels.max()) < N_CLASSES
    # corruption draws a uniformly random class, so roughly 10% of corrupted rows keep their
    # label: about 450 of the 500 corrupted rows differ from the clean label. Check with a
    # fresh seed-0 split of the clean labels.
    clean = make_hyper_cleaning(0, n_train=1000, n_val=300, corruption=0.0, mu=1e-2)
    assert torch.equal(clean.a_train, cleaning.a_train)
    changed = clean.y_train != cleaning.y_train
    assert not bool(changed[~cleaning.corrupted].any())
    assert 350 < int(changed[cleaning.corrupted].sum()) < 500


def test_hyper_cleaning_features_in_unit_interval_with_bias(cleaning):
    for a in (cleaning.a_train, cleaning.a_val, cleaning.a_test):
        assert a.dtype == DTYPE
        assert float(a[:, :-1].min()) >= 0.0 and float(a[:, :-1].max()) <= 1.0
        assert torch.equal(a[:, -1], torch.ones(a.shape[0], dtype=DTYPE))
    assert float(cleaning.a_train[:, :-1].max()) == 1.0  # pixels / 16, not / 255


def test_hyper_cleaning_determinism_and_seed_dependence(cleaning):
    again = make_hyper_cleaning(0, n_train=1000, n_val=300, corruption=0.5, mu=1e-2)
    for name in ("a_train", "y_train", "a_val", "y_val", "a_test", "y_test", "corrupted"):
        assert torch.equal(getattr(again, name), getattr(cleaning, name)), name
    other = make_hyper_cleaning(1, n_train=1000, n_val=300, corruption=0.5, mu=1e-2)
    assert not torch.equal(other.a_train, cleaning.a_train)
    assert not torch.equal(other.corrupted, cleaning.corrupted)


def test_hyper_cleaning_lower_step_positive(cleaning):
    beta = cleaning.lower_step()
    L_hat = 0.25 * float((cleaning.a_train**2).sum(1).max()) + cleaning.mu
    assert beta > 0.0 and beta == pytest.approx(1.0 / L_hat, rel=1e-12)


@pytest.mark.parametrize("mu", [1e-2, 0.5])
def test_hyper_cleaning_lower_level_is_mu_strongly_convex(mu):
    data = make_hyper_cleaning(2, n_train=20, n_val=10, corruption=0.5, mu=mu)
    problem = data.bilevel()
    gen = torch.Generator().manual_seed(3)
    x = 2.0 * torch.randn(20, generator=gen, dtype=DTYPE)
    w = 0.5 * torch.randn(N_FEATURES * N_CLASSES, generator=gen, dtype=DTYPE)
    H = torch.autograd.functional.hessian(lambda w_: problem.f(x, w_), w, vectorize=True)
    assert torch.allclose(H, H.T, atol=1e-12)
    assert float(torch.linalg.eigvalsh(H).min()) >= mu - 1e-10
    # the autograd HVP of the method agrees with the dense Hessian
    v = torch.randn(N_FEATURES * N_CLASSES, generator=gen, dtype=DTYPE)
    assert rel(problem.hvp(x, w, v), H @ v) < 1e-10


def test_hyper_cleaning_objectives_at_zero(cleaning):
    w = torch.zeros(N_FEATURES * N_CLASSES, dtype=DTYPE)
    log10 = float(torch.log(torch.tensor(10.0, dtype=DTYPE)))
    assert cleaning.validation_ce(w) == pytest.approx(log10, rel=1e-12)
    problem = cleaning.bilevel()
    assert float(problem.F(torch.zeros(1000, dtype=DTYPE), w)) == pytest.approx(log10, rel=1e-12)
    # sigma(0) = 1/2 weight on every training CE
    assert float(problem.f(torch.zeros(1000, dtype=DTYPE), w)) == pytest.approx(
        0.5 * log10, rel=1e-12
    )
    acc = cleaning.test_accuracy(w)  # argmax of all-zero logits is class 0
    assert acc == pytest.approx(float((cleaning.y_test == 0).double().mean()))
