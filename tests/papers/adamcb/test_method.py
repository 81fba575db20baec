"""Tests of papers/adamcb/method.py: brief `adamcb.md` Sec. 7 items 1-5, 7 and 8."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from papers.adamcb.method import (
    AdamBSSampler,
    AdamCBSampler,
    CorrectedAdamBSSampler,
    Draw,
    NormRange,
    UniformSampler,
    dep_round,
    exp3m_probabilities,
    importance_weighted_loss,
    per_sample_grad_norms,
    per_sample_grads,
)

Z_MAX = 4.5  # Sec. 7 item 1: bound on |z| of every empirical inclusion frequency
REL_TOL_UNBIASED = 0.03  # Sec. 7 item 4: relative error of the averaged estimate
N_UNBIASED = 20_000  # Sec. 7 item 4: draws averaged


# ----------------------------------------------------------------------------------------------
# 1. DepRound marginals
# ----------------------------------------------------------------------------------------------


def _fractional_p(n: int = 50, K: int = 5, seed: int = 0) -> np.ndarray:
    """p in [0, 1]^n, sum K, with two entries exactly 1, one exactly 0 and a few large ones."""
    rng = np.random.default_rng(seed)
    fixed = np.array([1.0, 1.0, 0.0, 0.75, 0.5, 0.5, 0.3])  # (7,)
    rest = rng.lognormal(0.0, 1.0, n - fixed.size)  # (n - 7,)
    rest *= (K - fixed.sum()) / rest.sum()
    p = np.concatenate([fixed, rest])  # (n,)
    assert p.max() <= 1.0 and abs(p.sum() - K) < 1e-12
    return p


def _inclusion_z(draws: np.ndarray, p: np.ndarray) -> np.ndarray:
    """z-scores of empirical inclusion frequencies of the fractional entries of p."""
    n_draws = draws.shape[0]
    freq = np.bincount(draws.ravel(), minlength=p.size) / n_draws  # (n,)
    frac = (p > 0) & (p < 1)
    return (freq[frac] - p[frac]) / np.sqrt(p[frac] * (1 - p[frac]) / n_draws)


def test_dep_round_marginals():
    n, K, n_draws = 50, 5, 100_000  # Sec. 7 item 1 sizes
    p = _fractional_p(n, K)
    rng = np.random.default_rng(1)
    draws = np.stack([dep_round(p, rng) for _ in range(n_draws)])  # (n_draws, K)

    assert draws.dtype == np.int64
    assert np.all(np.diff(draws, axis=1) > 0)  # sorted, hence K distinct indices
    capped = np.flatnonzero(p == 1.0)
    assert all(np.isin(capped, row).all() for row in draws[:1000])
    counts = np.bincount(draws.ravel(), minlength=n)
    assert np.all(counts[capped] == n_draws)  # capped entries always included
    assert counts[p == 0.0].sum() == 0  # zero entries never included
    assert np.abs(_inclusion_z(draws, p)).max() < Z_MAX


def test_choice_without_replacement_shortcut_fails_the_marginal_test():
    """Sec. 3.6: the official `np.random.choice(replace=False, p=p/K)` shortcut is not DepRound.

    Shows that the marginal test above has the power to reject a wrong sampler.
    """
    n, K, n_draws = 50, 5, 20_000
    p = _fractional_p(n, K)
    rng = np.random.default_rng(2)
    draws = np.stack([rng.choice(n, K, replace=False, p=p / K) for _ in range(n_draws)])
    counts = np.bincount(draws.ravel(), minlength=n)
    capped_always = np.all(counts[p == 1.0] == n_draws)
    assert not capped_always or np.abs(_inclusion_z(draws, p)).max() >= Z_MAX


def test_dep_round_integral_and_roundoff_inputs():
    rng = np.random.default_rng(0)
    p = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    np.testing.assert_array_equal(dep_round(p, rng), [1, 3, 4])
    # Sum off by float round-off (Sec. 3.6: "4.999999999997").
    p = np.full(10, 0.5 - 3e-13)
    out = dep_round(p, rng)
    assert out.shape == (5,) and np.unique(out).size == 5


@pytest.mark.parametrize(
    "p",
    [
        np.array([0.5, 0.5, 1.2, -0.2]),  # above 1
        np.array([0.5, 0.5, -0.5, 1.5]),  # below 0
        np.array([0.5, 0.4, 0.3]),  # non-integral sum
        np.array([[0.5, 0.5]]),  # not 1-D
        np.array([0.5, np.nan, 0.5]),  # not finite
    ],
)
def test_dep_round_rejects_bad_input(p):
    with pytest.raises(ValueError):
        dep_round(p, np.random.default_rng(0))


# ----------------------------------------------------------------------------------------------
# 2-3. Exp3.M probabilities and capping
# ----------------------------------------------------------------------------------------------


def _reference_exp3m(w: np.ndarray, K: int, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Plain-loop transcription of Sec. 3.1 steps 1.1-1.4 on raw weights."""
    n = w.size
    tau = (1 / K - gamma / n) / (1 - gamma)
    w_cap = w.astype(float).copy()
    capped = np.zeros(n, dtype=bool)
    if w.max() >= tau * w.sum():
        w_sorted = np.sort(w)[::-1]
        for i in range(n):
            alpha = tau * w_sorted[i:].sum() / (1 - i * tau)
            if alpha > w_sorted[i]:
                break
        capped = w >= alpha
        w_cap[capped] = alpha
    p = K * ((1 - gamma) * w_cap / w_cap.sum() + gamma / n)
    return p, capped


@pytest.mark.parametrize("scale", [0.0, 0.5, 2.0, 5.0])
@pytest.mark.parametrize(("n", "K", "gamma"), [(50, 5, 0.4), (30, 10, 0.1), (20, 1, 0.9)])
def test_exp3m_invariants(scale, n, K, gamma):
    rng = np.random.default_rng(int(10 * scale) + n)
    log_w = scale * rng.normal(size=n)  # (n,)
    p, capped = exp3m_probabilities(log_w, K, gamma)

    assert p.shape == (n,) and capped.shape == (n,) and capped.dtype == bool
    assert abs(p.sum() - K) < 1e-9
    assert np.all(p > 0) and np.all(p <= 1.0)
    assert np.all(p >= K * gamma / n - 1e-12)
    assert np.all(p[capped] == 1.0) and np.all(p[~capped] < 1.0)

    p_ref, capped_ref = _reference_exp3m(np.exp(log_w), K, gamma)
    np.testing.assert_array_equal(capped, capped_ref)
    np.testing.assert_allclose(p, p_ref, rtol=1e-10, atol=1e-12)


def test_exp3m_caps_in_the_large_spread_case():
    p, capped = exp3m_probabilities(5.0 * np.random.default_rng(0).normal(size=50), 5, 0.4)
    assert 0 < capped.sum() < 5  # the invariant test above really exercises capping


def test_exp3m_equal_weights_give_k_over_n():
    p, capped = exp3m_probabilities(np.full(40, -3.0), 8, 0.4)
    np.testing.assert_allclose(p, np.full(40, 8 / 40), rtol=1e-12)
    assert not capped.any()


def test_exp3m_works_in_log_space():
    """Sec. 3.6: a common shift changes nothing, and huge log-weight gaps neither overflow."""
    log_w = np.random.default_rng(3).normal(size=30)
    p, capped = exp3m_probabilities(log_w, 4, 0.4)
    p_shift, capped_shift = exp3m_probabilities(log_w + 5000.0, 4, 0.4)  # exp(5000) overflows
    np.testing.assert_allclose(p_shift, p, rtol=1e-12)
    np.testing.assert_array_equal(capped_shift, capped)

    # Arm 0 is e^3000 times heavier than the rest, arm 1 e^3000 times lighter: raw weights
    # would overflow or underflow, but capping only needs ratios.
    K, gamma, n = 4, 0.4, 30
    log_w[0] = 3000.0
    log_w[1] = -3000.0
    p, capped = exp3m_probabilities(log_w, K, gamma)
    assert np.all(np.isfinite(p)) and np.flatnonzero(capped).tolist() == [0] and p[0] == 1.0
    assert abs(p.sum() - K) < 1e-9
    assert p[1] == pytest.approx(K * gamma / n, rel=1e-12)
    # The others keep their relative weights: p_i - K gamma / n is proportional to w_i.
    excess = p[2:] - K * gamma / n
    np.testing.assert_allclose(excess / excess.sum(), np.exp(log_w[2:]) / np.exp(log_w[2:]).sum())


def test_capping_one_huge_weight():
    n, K, gamma = 20, 3, 0.4
    w = np.ones(n)
    w[7] = 1e6
    p, capped = exp3m_probabilities(np.log(w), K, gamma)
    np.testing.assert_array_equal(np.flatnonzero(capped), [7])
    assert p[7] == 1.0
    # The other arms share the remaining K - 1 equally.
    np.testing.assert_allclose(np.delete(p, 7), (K - 1) / (n - 1), rtol=1e-12)


def test_capping_two_huge_weights():
    n, K, gamma = 20, 4, 0.4
    w = np.ones(n)
    w[[3, 11]] = [1e6, 1e5]
    p, capped = exp3m_probabilities(np.log(w), K, gamma)
    np.testing.assert_array_equal(np.flatnonzero(capped), [3, 11])
    assert p[3] == 1.0 and p[11] == 1.0
    np.testing.assert_allclose(np.delete(p, [3, 11]), (K - 2) / (n - 2), rtol=1e-12)


@pytest.mark.parametrize(("factor", "expect_cap"), [(0.99, False), (1.01, True)])
def test_capping_threshold_boundary(factor, expect_cap):
    """One weight x among ones is capped iff x >= tau (x + n - 1), i.e. x >= tau(n-1)/(1-tau)."""
    n, K, gamma = 20, 3, 0.4
    tau = (1 / K - gamma / n) / (1 - gamma)
    w = np.ones(n)
    w[0] = factor * tau * (n - 1) / (1 - tau)
    p, capped = exp3m_probabilities(np.log(w), K, gamma)
    assert bool(capped[0]) == expect_cap
    assert capped.sum() == int(expect_cap)
    assert (p[0] == 1.0) == expect_cap and p[0] <= 1.0


@pytest.mark.parametrize(
    ("K", "gamma"), [(0, 0.4), (10, 0.4), (11, 0.4), (3, 0.0), (3, 1.0), (3, -0.1)]
)
def test_exp3m_rejects_bad_arguments(K, gamma):
    with pytest.raises(ValueError):
        exp3m_probabilities(np.zeros(10), K, gamma)


# ----------------------------------------------------------------------------------------------
# 4. Unbiasedness of the importance-weighted estimate
# ----------------------------------------------------------------------------------------------


def _least_squares(n: int = 50, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per-example gradients (n, d) of f_i = (a_i . theta - b_i)^2 / 2 at a fixed theta, and
    the full-batch gradient (d,)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, d)) * rng.lognormal(0.0, 0.5, size=(n, 1))  # (n, d)
    b = rng.normal(size=n)  # (n,)
    theta = np.full(d, 1.5)  # (d,)
    grads = (a @ theta - b)[:, None] * a  # (n, d)
    return grads, grads.mean(axis=0)


def _adamcb_nonuniform(seed: int) -> AdamCBSampler:
    sampler = AdamCBSampler(50, 5, seed)
    sampler.log_weights = np.random.default_rng(100).normal(0.0, 1.0, 50)
    sampler.log_weights[0] = 5.0  # one capped arm
    return sampler


def _corrected_nonuniform(seed: int) -> CorrectedAdamBSSampler:
    sampler = CorrectedAdamBSSampler(50, 5, seed)
    sampler.log_weights = np.random.default_rng(101).normal(0.0, 1.5, 50)
    return sampler


def _adambs_nonuniform(seed: int) -> AdamBSSampler:
    sampler = AdamBSSampler(50, 5, seed)
    p = np.random.default_rng(102).lognormal(0.0, 1.0, 50)
    sampler.p = p / p.sum()
    return sampler


SAMPLERS_50: dict[str, Callable[[int], object]] = {
    "adamcb": _adamcb_nonuniform,
    "corrected_adambs": _corrected_nonuniform,
    "adambs": _adambs_nonuniform,
    "uniform_replace": lambda seed: UniformSampler(50, 5, seed, replace=True),
    "uniform_distinct": lambda seed: UniformSampler(50, 5, seed, replace=False),
}


def _average_estimate(sampler, grads: np.ndarray, use_weights: bool = True) -> np.ndarray:
    total = np.zeros(grads.shape[1])
    for _ in range(N_UNBIASED):
        d = sampler.draw()
        w = d.weights if use_weights else np.ones_like(d.weights)
        total += (w[:, None] * grads[d.indices]).mean(axis=0)  # g-hat, Sec. 3.1 step 3
    return total / N_UNBIASED


@pytest.mark.parametrize("name", list(SAMPLERS_50))
def test_estimate_is_unbiased(name):
    grads, full = _least_squares()
    sampler = SAMPLERS_50[name](0)

    d = sampler.draw()
    assert d.indices.shape == (5,) and d.weights.shape == (5,) and d.probs.shape == (50,)
    assert abs(d.probs.sum() - 1.0) < 1e-12
    np.testing.assert_allclose(d.weights, 1.0 / (50 * d.probs[d.indices]), rtol=1e-12)
    if name in ("adamcb", "corrected_adambs", "adambs"):
        assert d.probs.max() / d.probs.min() > 3  # the test is about a non-uniform p

    avg = _average_estimate(sampler, grads)
    assert np.linalg.norm(avg - full) / np.linalg.norm(full) < REL_TOL_UNBIASED


@pytest.mark.parametrize("name", ["adamcb", "corrected_adambs"])
def test_dropping_the_importance_weights_is_detectably_biased(name):
    """Power check for the unbiasedness test: the unweighted batch mean fails it."""
    grads, full = _least_squares()
    avg = _average_estimate(SAMPLERS_50[name](0), grads, use_weights=False)
    assert np.linalg.norm(avg - full) / np.linalg.norm(full) > REL_TOL_UNBIASED


# ----------------------------------------------------------------------------------------------
# 5. Weight updates
# ----------------------------------------------------------------------------------------------


def test_adamcb_update_exact_and_direction():
    n, K, gamma = 20, 4, 0.4
    sampler = AdamCBSampler(n, K, seed=0, gamma=gamma)
    assert sampler.alpha_p == pytest.approx((gamma / n) ** 3, rel=1e-15)
    sampler.log_weights[0] = np.log(1e6)  # arm 0 is capped, the others share one weight
    d = sampler.draw()
    assert d.capped[0] and d.capped.sum() == 1 and d.indices[0] == 0

    # Norms in draw order: capped arm, then three free arms with g-bar = 0, 1, 0.5.
    norms = np.array([1.0, 0.0, 2.0, 1.0])
    g_bar = np.array([0.5, 0.0, 1.0, 0.5])
    before = sampler.log_weights.copy()
    sampler.update(d, norms)
    change = sampler.log_weights - before  # (n,)

    p_bar = d.probs[d.indices]  # (K,)
    p_min = gamma / n
    expected = -sampler.alpha_p * (1 / p_min**2 - g_bar**2 / p_bar**2) / p_bar  # (K,)
    free = d.indices[1:]
    np.testing.assert_allclose(change[free], expected[1:], rtol=1e-12)
    assert change[0] == 0.0  # capped arm unchanged
    unplayed = np.setdiff1d(np.arange(n), d.indices)
    assert np.all(change[unplayed] == 0.0)
    assert np.all(change[free] < 0)  # the loss is non-negative
    assert change[free[1]] > change[free[0]]  # g-bar = 1 decreases less than g-bar = 0


def test_adamcb_update_magnitude_at_uniform_weights():
    """Sec. 3.1 step 5 magnitude check: at p-bar = 1/n the change is -gamma + gamma^3 g-bar^2."""
    n, K, gamma = 30, 5, 0.4
    sampler = AdamCBSampler(n, K, seed=1, gamma=gamma)
    d = sampler.draw()
    norms = np.array([0.0, 4.0, 1.0, 2.0, 3.0])
    sampler.update(d, norms)
    g_bar = norms / 4.0
    np.testing.assert_allclose(
        sampler.log_weights[d.indices], -gamma + gamma**3 * g_bar**2, rtol=1e-12
    )


def test_no_feedback_update_ignores_the_norms():
    """Issue 51's ablation: g-bar = 0 for every arm, so the change is -alpha_p / (p_min^2 p-bar)
    whatever the norms, and two runs fed different norms stay identical."""
    n, K, gamma = 30, 5, 0.4
    small, large = (AdamCBSampler(n, K, seed=3, gamma=gamma, feedback=False) for _ in range(2))
    for step in range(40):
        d_small, d_large = small.draw(), large.draw()
        np.testing.assert_array_equal(d_small.indices, d_large.indices)
        before = small.log_weights.copy()
        small.update(d_small, np.zeros(K))
        large.update(d_large, np.linspace(1.0, 50.0, K) * (step + 1))
        np.testing.assert_array_equal(small.log_weights, large.log_weights)
        p_bar = d_small.probs[d_small.indices]  # (K,)
        free = ~d_small.capped[d_small.indices]
        expected = -small.alpha_p / ((gamma / n) ** 2 * p_bar)  # (K,)
        change = small.log_weights - before
        np.testing.assert_allclose(change[d_small.indices[free]], expected[free], rtol=1e-12)


def test_no_feedback_weights_are_a_function_of_the_plays():
    """Without capping, every play of an arm at p-bar multiplies its weight by the same
    factor exp(-gamma / (n p-bar)); at uniform weights (the first step) that is exp(-gamma)."""
    n, K, gamma = 30, 5, 0.4
    sampler = AdamCBSampler(n, K, seed=4, gamma=gamma, feedback=False)
    d = sampler.draw()
    sampler.update(d, np.full(K, 7.0))
    np.testing.assert_allclose(sampler.log_weights[d.indices], -gamma, rtol=1e-12)
    unplayed = np.setdiff1d(np.arange(n), d.indices)
    assert np.all(sampler.log_weights[unplayed] == 0.0)


def test_corrected_adambs_update_accumulates_duplicates():
    n, K, gamma = 10, 3, 0.4
    sampler = CorrectedAdamBSSampler(n, K, seed=0, gamma=gamma)
    sampler.log_weights = np.linspace(-1.0, 1.0, n)
    probs = sampler.probabilities()
    d = Draw(
        indices=np.array([2, 5, 2]),
        weights=1.0 / (n * probs[[2, 5, 2]]),
        probs=probs,
        capped=np.zeros(n, dtype=bool),
    )
    before = sampler.log_weights.copy()
    sampler.update(d, np.array([1.0, 3.0, 1.0]))  # g-bar = 0, 1, 0
    p_min = gamma / n
    loss_hat = np.zeros(n)
    loss_hat[2] = 2 * (1 / p_min**2) / (K * probs[2])
    loss_hat[5] = (-1 / probs[5] ** 2 + 1 / p_min**2) / (K * probs[5])
    np.testing.assert_allclose(
        sampler.log_weights - before, -sampler.alpha_p * loss_hat, rtol=1e-12, atol=0
    )


def test_adambs_update_as_coded():
    n, K, gamma, alpha_p = 10, 3, 0.4, 1e-4
    sampler = AdamBSSampler(n, K, seed=0, gamma=gamma, alpha_p=alpha_p, exp_clip=0.5)
    probs = sampler.p.copy()
    d = Draw(
        indices=np.array([4, 4, 7]),
        weights=np.ones(3),
        probs=probs,
        capped=np.zeros(n, dtype=bool),
    )
    norms = np.array([2.0, 2.0, 0.5])  # raw norms; L = 2
    sampler.update(d, norms)
    p_min, L = gamma / n, 2.0
    loss_hat = np.zeros(n)
    loss_hat[4] = 2 * (-(4.0) / probs[4] ** 2 + L**2 / p_min**2) / (K * probs[4])
    loss_hat[7] = (-(0.25) / probs[7] ** 2 + L**2 / p_min**2) / (K * probs[7])
    expected = probs * np.exp(np.clip(-alpha_p * loss_hat, -0.5, 0.5))
    expected /= expected.sum()
    assert alpha_p * loss_hat[7] > 0.5  # the clip is active in this case
    np.testing.assert_allclose(sampler.p, expected, rtol=1e-12)
    assert sampler.max_norm == L


def test_norm_range_guard_and_running_range():
    r = NormRange()
    assert np.all(r.normalise(np.array([1.0, 2.0])) == 0.0)  # empty range
    r.update(np.array([3.0]))
    out = r.normalise(np.array([3.0]))  # max == min on the first step (K = 1)
    assert np.all(np.isfinite(out)) and np.all(out == 0.0)
    r.update(np.array([1.0, 5.0]))
    np.testing.assert_allclose(r.normalise(np.array([1.0, 3.0, 5.0, 9.0])), [0.0, 0.5, 1.0, 1.0])


def test_update_accepts_torch_norms():
    a, b = AdamCBSampler(20, 4, seed=0), AdamCBSampler(20, 4, seed=0)
    da, db = a.draw(), b.draw()
    norms = np.array([0.5, 1.0, 2.0, 0.1])
    a.update(da, norms)
    b.update(db, torch.from_numpy(norms).float().requires_grad_())
    np.testing.assert_allclose(a.log_weights, b.log_weights, rtol=1e-6)


def test_update_rejects_mismatched_norms():
    sampler = AdamCBSampler(20, 4, seed=0)
    d = sampler.draw()
    with pytest.raises(ValueError):
        sampler.update(d, np.ones(3))
    with pytest.raises(ValueError):
        sampler.update(d, -np.ones(4))


# ----------------------------------------------------------------------------------------------
# 7. Per-sample gradients
# ----------------------------------------------------------------------------------------------


def _mlp_batch(seed: int = 0, batch: int = 7):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)
    ).double()
    x = torch.randn(batch, 5, dtype=torch.float64)  # (K, 5)
    y = torch.randint(0, 3, (batch,))  # (K,)
    return model, x, y


def test_per_sample_grads_match_single_example_autograd():
    model, x, y = _mlp_batch()
    grads = per_sample_grads(model, F.cross_entropy, x, y)
    assert set(grads) == {name for name, _ in model.named_parameters()}
    for i in range(x.shape[0]):
        model.zero_grad()
        F.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        for name, param in model.named_parameters():
            torch.testing.assert_close(grads[name][i], param.grad, rtol=1e-12, atol=1e-14)


def test_weighted_per_sample_grads_equal_importance_weighted_loss_grad():
    """Sec. 7 item 7: sum_j g_j / (n p_j) = (1/K) sum_j weights_j g_j = grad of the batch loss."""
    model, x, y = _mlp_batch(seed=1)
    K = x.shape[0]
    weights = torch.from_numpy(np.random.default_rng(0).uniform(0.2, 5.0, K))  # (K,)
    grads = per_sample_grads(model, F.cross_entropy, x, y)

    model.zero_grad()
    per_example = F.cross_entropy(model(x), y, reduction="none")  # (K,)
    importance_weighted_loss(per_example, weights).backward()
    for name, param in model.named_parameters():
        shape = (K,) + (1,) * (grads[name].ndim - 1)
        expected = (weights.view(shape) * grads[name]).sum(dim=0) / K
        torch.testing.assert_close(param.grad, expected, rtol=1e-12, atol=1e-14)


def test_importance_weighted_loss_with_unit_weights_is_the_mean():
    losses = torch.tensor([1.0, 2.0, 6.0])
    assert importance_weighted_loss(losses, torch.ones(3)).item() == pytest.approx(3.0)
    with pytest.raises(ValueError):
        importance_weighted_loss(losses, torch.ones(2))


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 100])
def test_chunked_norms_equal_unchunked(chunk_size):
    model, x, y = _mlp_batch(seed=2)
    model[0].bias.requires_grad_(False)  # frozen parameters are left out
    grads = per_sample_grads(model, F.cross_entropy, x, y)
    assert "0.bias" not in grads
    full = torch.sqrt(sum(g.flatten(1).pow(2).sum(dim=1) for g in grads.values()))  # (K,)

    unchunked = per_sample_grad_norms(model, F.cross_entropy, x, y)
    chunked = per_sample_grad_norms(model, F.cross_entropy, x, y, chunk_size=chunk_size)
    assert chunked.shape == (x.shape[0],) and not chunked.requires_grad
    torch.testing.assert_close(unchunked, full, rtol=1e-12, atol=0.0)
    torch.testing.assert_close(chunked, unchunked, rtol=1e-12, atol=0.0)


def test_chunk_size_must_be_positive():
    model, x, y = _mlp_batch()
    with pytest.raises(ValueError):
        per_sample_grad_norms(model, F.cross_entropy, x, y, chunk_size=0)


# ----------------------------------------------------------------------------------------------
# 8. Determinism and state round trip
# ----------------------------------------------------------------------------------------------

N_DET, K_DET = 30, 6
FACTORIES: dict[str, Callable[[int], object]] = {
    "uniform_replace": lambda seed: UniformSampler(N_DET, K_DET, seed, replace=True),
    "uniform_distinct": lambda seed: UniformSampler(N_DET, K_DET, seed, replace=False),
    "adamcb": lambda seed: AdamCBSampler(N_DET, K_DET, seed),
    "adamcb_no_feedback": lambda seed: AdamCBSampler(N_DET, K_DET, seed, feedback=False),
    "corrected_adambs": lambda seed: CorrectedAdamBSSampler(N_DET, K_DET, seed),
    # a larger alpha_p than the official 1e-16 so that p actually moves at n = 30
    "adambs": lambda seed: AdamBSSampler(N_DET, K_DET, seed, alpha_p=1e-6),
}
NORM_OF_EXAMPLE = np.linspace(0.1, 3.0, N_DET)  # a fixed "gradient norm" per example


def _run(sampler, steps: int) -> list[Draw]:
    draws = []
    for _ in range(steps):
        d = sampler.draw()
        sampler.update(d, NORM_OF_EXAMPLE[d.indices])
        draws.append(d)
    return draws


def _assert_same_draws(a: list[Draw], b: list[Draw]) -> None:
    assert len(a) == len(b)
    for da, db in zip(a, b, strict=True):
        np.testing.assert_array_equal(da.indices, db.indices)
        np.testing.assert_array_equal(da.weights, db.weights)
        np.testing.assert_array_equal(da.probs, db.probs)
        np.testing.assert_array_equal(da.capped, db.capped)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_same_seed_same_sequence(name):
    make = FACTORIES[name]
    _assert_same_draws(_run(make(7), 25), _run(make(7), 25))
    seq_a = np.concatenate([d.indices for d in _run(make(7), 25)])
    seq_b = np.concatenate([d.indices for d in _run(make(8), 25)])
    assert not np.array_equal(seq_a, seq_b)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_state_dict_round_trip_through_weights_only_load(name):
    make = FACTORIES[name]
    original = make(7)
    _run(original, 12)

    buffer = io.BytesIO()
    torch.save(original.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)

    restored = make(12345)  # different seed and fresh weights: everything must come from state
    restored.load_state_dict(state)
    _assert_same_draws(_run(original, 15), _run(restored, 15))


def test_adamcb_weights_move_and_matter_for_the_round_trip():
    sampler = FACTORIES["adamcb"](7)
    _run(sampler, 12)
    assert np.ptp(sampler.log_weights) > 0.1  # the state is non-trivial


def test_load_state_dict_rejects_other_sizes_or_types():
    state = AdamCBSampler(30, 6, seed=0).state_dict()
    with pytest.raises(ValueError):
        AdamCBSampler(31, 6, seed=0).load_state_dict(state)
    with pytest.raises(ValueError):
        CorrectedAdamBSSampler(30, 6, seed=0).load_state_dict(state)
