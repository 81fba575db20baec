"""MatryoshkaKV's pure-torch pieces: Cayley maps, PCA, compressed-attention algebra, rank tables,
loss and greedy search (brief Sec. 3, tests of Sec. 7)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from papers.matryoshka_kv.method import (
    KVProjections,
    budget,
    cayley,
    check_budget,
    check_rank,
    compress,
    compressed_attention,
    compressed_logits,
    distillation_loss,
    fix_determinant,
    greedy_rank_search,
    inverse_cayley,
    pca_basis,
    sample_ranks,
    uniform_ranks,
)

pytestmark = pytest.mark.usefixtures("one_thread")
F64 = torch.float64


def random_rotation(*shape: int, d: int, seed: int = 0, dtype=F64) -> torch.Tensor:
    """Random orthogonal matrices (..., d, d) with det +1 (QR of a Gaussian, det fixed)."""
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(*shape, d, d, generator=g, dtype=F64))
    return fix_determinant(q).to(dtype)


def reference_attention(q, k, v, bias, scaling):
    """Standard softmax attention with HF-style GQA (repeat_kv)."""
    groups = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(groups, dim=1)
    v = v.repeat_interleave(groups, dim=1)
    logits = q @ k.transpose(-1, -2) * scaling
    if bias is not None:
        logits = logits + bias
    return torch.softmax(logits, dim=-1) @ v, logits


def causal_bias(t, dtype=F64):
    allowed = torch.ones(t, t, dtype=torch.bool).tril()
    return torch.zeros(t, t, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)


def qkv(b=2, hq=4, h=2, t=7, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, hq, t, d, generator=g, dtype=F64)
    k = torch.randn(b, h, t, d, generator=g, dtype=F64) + 0.7  # nonzero mean
    v = torch.randn(b, h, t, d, generator=g, dtype=F64) - 0.3
    return q, k, v


# --------------------------------------------------------------------------- Cayley (items 1, 2)


def test_cayley_is_orthogonal_with_determinant_one():
    x = torch.randn(3, 5, 16, 16, generator=torch.Generator().manual_seed(1), dtype=F64)
    u = cayley(x)
    eye = torch.eye(16, dtype=F64)
    assert u.dtype == F64
    assert (u.transpose(-1, -2) @ u - eye).abs().max() < 1e-12
    torch.testing.assert_close(torch.linalg.det(u), torch.ones(3, 5, dtype=F64))
    u32 = cayley(x.float())  # float32 in, float32 compute
    assert u32.dtype == torch.float32
    assert (u32.transpose(-1, -2) @ u32 - eye.float()).abs().max() < 1e-5
    assert cayley(x.bfloat16()).dtype == torch.float32  # never below float32


def test_cayley_depends_only_on_the_skew_part():
    x = torch.randn(8, 8, dtype=F64)
    symmetric = torch.randn(8, 8, dtype=F64)
    torch.testing.assert_close(cayley(x), cayley(x + symmetric + symmetric.T))


def test_inverse_cayley_round_trip_and_is_strictly_lower_triangular():
    q = random_rotation(4, 3, d=16, seed=2)
    x0 = inverse_cayley(q)
    assert x0.shape == q.shape
    assert torch.count_nonzero(torch.triu(x0)) == 0  # strictly lower-triangular
    assert (cayley(x0) - q).abs().max() < 1e-4
    assert (cayley(x0) - q).abs().max() < 1e-9  # float64 all the way
    assert inverse_cayley(q.float()).dtype == torch.float32


def test_inverse_cayley_handles_an_eigenvalue_at_minus_one():
    q = torch.eye(6, dtype=F64)
    q[0, 0] = q[1, 1] = -1.0  # rotation by pi in a plane: det +1 but I + Q singular
    with pytest.warns(UserWarning, match="eigenvalue at -1"):
        x0 = inverse_cayley(q)
    assert torch.isfinite(x0).all()
    assert (cayley(x0) - q).abs().max() < 1e-2  # a rotation within ~1e-3 of q


def test_inverse_cayley_refuses_a_reflection():
    q = torch.eye(4, dtype=F64)
    q[0, 0] = -1.0
    with pytest.raises(ValueError, match="det"):
        inverse_cayley(q)
    assert torch.linalg.det(fix_determinant(q)) > 0


def test_kv_projections_from_bases_reproduces_the_bases():
    uk, uv = random_rotation(2, 3, d=8, seed=3), random_rotation(2, 3, d=8, seed=4)
    mk, mv = torch.randn(2, 3, 8, dtype=F64), torch.randn(2, 3, 8, dtype=F64)
    proj = KVProjections.from_bases(uk, uv, mk, mv, dtype=F64)
    assert (proj.n_layers, proj.n_heads, proj.head_dim) == (2, 3, 8)
    assert proj.x_key.shape == (2, 3, 8, 8) and proj.mu_value.shape == (2, 3, 8)
    for layer in range(2):
        bk, bv = proj.bases(layer)
        assert (bk - uk[layer]).abs().max() < 1e-9 and (bv - uv[layer]).abs().max() < 1e-9
    torch.testing.assert_close(proj.mu_key.detach(), mk)
    # a det -1 basis is sign-fixed (first column flipped) rather than refused
    flipped = uk.clone()
    flipped[0, 0, :, 0] *= -1
    bk = KVProjections.from_bases(flipped, uv, mk, mv, dtype=F64).bases(0)[0]
    assert (bk[0] - uk[0, 0]).abs().max() < 1e-9
    assert KVProjections(1, 2, 4).bases(0)[0].equal(torch.eye(4).expand(2, 4, 4))


# --------------------------------------------------------------------------- PCA (item 5)


def test_pca_basis_sorted_descending_with_positive_determinant():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 3, 500, 6, generator=g, dtype=F64) * torch.arange(1, 7, dtype=F64)
    mean = x.mean(-2)
    second = torch.einsum("lhnd,lhne->lhde", x, x) / x.shape[-2]
    u, evals = pca_basis(mean, second)
    assert u.shape == (2, 3, 6, 6) and evals.shape == (2, 3, 6)
    assert (evals[..., :-1] >= evals[..., 1:]).all()
    assert (torch.linalg.det(u) > 0).all()
    cov = second - mean[..., :, None] * mean[..., None, :]
    torch.testing.assert_close(cov @ u, u * evals[..., None, :])  # eigenvectors as columns


def test_pca_reconstruction_error_is_the_sum_of_the_smallest_eigenvalues():
    d, n = 16, 100_000
    g = torch.Generator().manual_seed(6)
    true_evals = 4.0 * 0.75 ** torch.arange(d, dtype=F64)
    rot = random_rotation(d=d, seed=7)
    mu = torch.randn(d, generator=g, dtype=F64)
    x = mu + (torch.randn(n, d, generator=g, dtype=F64) * true_evals.sqrt()) @ rot.T
    u, _ = pca_basis(x.mean(0), x.T @ x / n)
    centred = x - x.mean(0)

    def error(basis, r):
        kept = basis[:, :r]
        return ((centred - centred @ kept @ kept.T) ** 2).sum(-1).mean().item()

    randoms = random_rotation(20, d=d, seed=8)
    for r in (2, 4, 8, 12):
        expected = true_evals[r:].sum().item()
        got = error(u, r)
        assert abs(got - expected) <= 0.02 * expected, (r, got, expected)
        assert all(got <= error(randoms[i], r) for i in range(20))


# --------------------------------------------------------------------------- algebra (3, 4, 6)


def test_full_rank_compressed_attention_is_exact_gqa():
    q, k, v = qkv()
    d, h, scaling = 8, 2, 8**-0.5
    uk, uv = random_rotation(h, d=d, seed=9), random_rotation(h, d=d, seed=10)
    mk, mv = torch.randn(h, d, dtype=F64), torch.randn(h, d, dtype=F64)
    full = torch.full((h,), d)
    kc, vc = compress(k, uk, mk, full), compress(v, uv, mv, full)
    bias = causal_bias(7)
    out, probs = compressed_attention(q, kc, vc, uk, uv, mk, mv, bias, scaling)
    ref, _ = reference_attention(q, k, v, bias, scaling)
    assert (out - ref).abs().max() < 1e-12  # spec: < 1e-5 in float64
    # logits equal q.k / sqrt(d) only with the q . mu_K term
    logits = compressed_logits(q, kc, uk, mk, scaling)
    _, plain = reference_attention(q, k, v, None, scaling)  # q.k / sqrt(d), unmasked
    assert (logits.reshape(plain.shape) - plain).abs().max() < 1e-12
    without_mu = compressed_logits(q, kc, uk, torch.zeros_like(mk), scaling)
    assert (without_mu.reshape(plain.shape) - plain).abs().max() > 1e-3
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, 4, 7, dtype=F64))


def test_zeroed_value_basis_outputs_the_value_mean():
    q, k, v = qkv(seed=1)
    h, d = 2, 8
    uk = random_rotation(h, d=d, seed=11)
    uv = torch.zeros(h, d, d, dtype=F64)  # every U_V column zeroed (r_V = 0)
    mk, mv = torch.randn(h, d, dtype=F64), torch.randn(h, d, dtype=F64)
    full = torch.full((h,), d)
    out, _ = compressed_attention(
        q, compress(k, uk, mk, full), compress(v, uv, mv, full), uk, uv, mk, mv, None, 0.3
    )
    expected = mv.repeat_interleave(2, dim=0)[None, :, None, :].expand_as(out)  # per query head
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-14)


def test_rank_mask_equals_a_per_head_loop():
    q, k, v = qkv(b=3, hq=6, h=3, t=9, d=8, seed=2)
    h, d, groups, scaling = 3, 8, 2, 0.35
    uk, uv = random_rotation(h, d=d, seed=12), random_rotation(h, d=d, seed=13)
    mk, mv = torch.randn(h, d, dtype=F64), torch.randn(h, d, dtype=F64)
    rk, rv = torch.tensor([2, 8, 5]), torch.tensor([7, 1, 3])
    bias = causal_bias(9)
    kc, vc = compress(k, uk, mk, rk), compress(v, uv, mv, rv)
    assert kc.shape[-1] == 8 and vc.shape[-1] == 7  # computed at r_max
    assert kc[:, 0, :, 2:].abs().max() == 0 and vc[:, 1, :, 1:].abs().max() == 0
    out, _ = compressed_attention(q, kc, vc, uk, uv, mk, mv, bias, scaling)
    for qh in range(6):
        hh = qh // groups
        ukr, uvr = uk[hh, :, : rk[hh]], uv[hh, :, : rv[hh]]
        kt = (k[:, hh] - mk[hh]) @ ukr
        vt = (v[:, hh] - mv[hh]) @ uvr
        logits = ((q[:, qh] @ ukr) @ kt.transpose(-1, -2) + (q[:, qh] @ mk[hh])[..., None]) * (
            scaling
        )
        ref = torch.softmax(logits + bias, -1) @ vt @ uvr.T + mv[hh]
        assert (out[:, qh] - ref).abs().max() < 1e-12


def test_compress_is_differentiable_in_basis_and_mean():
    _, k, _ = qkv(seed=3)
    x = torch.randn(2, 8, 8, dtype=F64, requires_grad=True)
    mu = torch.randn(2, 8, dtype=F64, requires_grad=True)
    compress(k, cayley(x), mu, torch.tensor([3, 6])).square().sum().backward()
    assert x.grad.abs().sum() > 0 and mu.grad.abs().sum() > 0


# --------------------------------------------------------------------------- ranks and budget


def test_budget_and_uniform_ranks():
    rk, rv = uniform_ranks(2, 4, 6)
    assert rk.dtype == torch.long and rk.shape == (2, 4) and rk.eq(6).all()
    assert budget(rk, rv, 16) == pytest.approx(6 / 16)
    rk[0, 0] = 16
    assert budget(rk, rv, 16) == pytest.approx((6 * 7 + 16 + 6 * 8) / (2 * 8 * 16))


@pytest.mark.parametrize("bad", [0, 17, -1])
def test_invalid_rank_raises(bad):
    with pytest.raises(ValueError, match="rank"):
        check_rank(bad, 16)
    with pytest.raises(ValueError, match="rank"):
        check_rank(torch.tensor([[4, bad]]), 16)
    with pytest.raises(ValueError):
        uniform_ranks(2, 4, bad, head_dim=16)
    check_rank(torch.tensor([1, 16]), 16)


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.2])
def test_invalid_budget_raises(bad):
    with pytest.raises(ValueError, match="budget"):
        check_budget(bad)
    check_budget(1.0)
    check_budget(0.01)


def test_sample_ranks_independent_per_head_and_for_keys_and_values():
    schedule = [2, 4, 6, 8, 10, 12, 14, 16]
    rk, rv = sample_ranks(schedule, 64, 8, torch.Generator().manual_seed(0))
    assert rk.shape == rv.shape == (64, 8) and rk.dtype == torch.long
    assert set(rk.unique().tolist()) == set(schedule) == set(rv.unique().tolist())
    assert (rk != rv).float().mean() > 0.7  # K and V drawn independently
    assert (rk != rk[:1]).any() and (rk != rk[:, :1]).any()  # per layer and per head
    counts = torch.bincount(rk.flatten() // 2 - 1, minlength=8).float()
    assert (counts / counts.sum() - 1 / 8).abs().max() < 0.05  # uniform over the schedule
    again = sample_ranks(schedule, 64, 8, torch.Generator().manual_seed(0))
    assert again[0].equal(rk) and again[1].equal(rv)


# --------------------------------------------------------------------------- loss


def test_distillation_loss_kl_and_ce():
    g = torch.Generator().manual_seed(0)
    student = torch.randn(2, 5, 11, generator=g, requires_grad=True)
    teacher = torch.randn(2, 5, 11, generator=g)
    labels = torch.randint(0, 11, (2, 5), generator=g)
    loss, parts = distillation_loss(student, teacher, labels, kl_weight=0.25, ce_weight=0.75)
    p_t = teacher.softmax(-1)
    kl = (p_t * (p_t.log() - student.log_softmax(-1))).sum(-1).mean()  # vocab sum, position mean
    ce = F.cross_entropy(student[:, :-1].reshape(-1, 11), labels[:, 1:].reshape(-1))
    torch.testing.assert_close(loss, 0.25 * kl + 0.75 * ce)
    assert parts["kl"] == pytest.approx(kl.item(), rel=1e-5)
    assert parts["ce"] == pytest.approx(ce.item(), rel=1e-5)
    loss.backward()
    assert student.grad.abs().sum() > 0
    zero, parts = distillation_loss(teacher, teacher, None, kl_weight=1.0, ce_weight=0.0)
    assert abs(zero.item()) < 1e-6 and parts["ce"] == 0.0
    with pytest.raises(ValueError, match="labels"):
        distillation_loss(student, teacher, None, kl_weight=1.0, ce_weight=0.5)
    hot, _ = distillation_loss(student, teacher, None, 1.0, 0.0, temperature=2.0)
    p2 = (teacher / 2).softmax(-1)
    kl2 = (p2 * (p2.log() - (student / 2).log_softmax(-1))).sum(-1).mean() * 4
    torch.testing.assert_close(hot, kl2)


# --------------------------------------------------------------------------- greedy search


def weighted_hidden_fn(weights_k, weights_v, d):
    """Synthetic last hidden state: lowering entry (l, h, K/V) by s changes it by weight x s."""

    def hidden_fn(rank_key, rank_value):
        base = torch.ones(weights_k.numel() * 2, dtype=F64) * 100.0
        delta_k = (weights_k * (d - rank_key)).flatten()
        delta_v = (weights_v * (d - rank_value)).flatten()
        return (base + torch.cat([delta_k, delta_v]))[None]

    return hidden_fn


def test_greedy_search_lowers_cheapest_entries_and_stops_at_the_budget():
    d, step = 16, 4
    wk = torch.tensor([[1.0, 5.0], [6.0, 7.0]], dtype=F64)
    wv = torch.tensor([[8.0, 2.0], [9.0, 10.0]], dtype=F64)
    calls = []
    fn = weighted_hidden_fn(wk, wv, d)

    def counting(rk, rv):
        calls.append(1)
        return fn(rk, rv)

    # one round of 2 updates: the two cheapest entries are (0, 0, K) and (0, 1, V)
    rk, rv = greedy_rank_search(counting, 2, 2, d, budget=0.94, step=step, updates_per_round=2)
    assert rk.tolist() == [[12, 16], [16, 16]] and rv.tolist() == [[16, 12], [16, 16]]
    assert len(calls) == 1 + 2 * 2 * 2
    # stopping rule: stop right after the update reaching the target (overshoot < 1 decrement)
    rk, rv = greedy_rank_search(fn, 2, 2, d, budget=0.97, step=step, updates_per_round=5)
    assert budget(rk, rv, d) == pytest.approx(1 - 4 / 128)
    assert rk.tolist() == [[12, 16], [16, 16]] and rv.eq(16).all()
    for target in (0.7, 0.5, 0.3):
        rk, rv = greedy_rank_search(fn, 2, 2, d, budget=target, step=step, updates_per_round=3)
        got = budget(rk, rv, d)
        assert target - step / (2 * 2 * 2 * d) < got <= target + 1e-12
        assert rk.min() >= step and rv.min() >= step and (rk % step == 0).all()


def test_greedy_search_skips_entries_at_step_and_rejects_unreachable_budgets():
    d, step = 8, 4
    fn = weighted_hidden_fn(torch.tensor([[1.0]], dtype=F64), torch.tensor([[100.0]]), d)
    rk, rv = greedy_rank_search(fn, 1, 1, d, budget=0.5, step=step, updates_per_round=1)
    assert (rk.item(), rv.item()) == (4, 4)  # K first (cheap), then V once K is at the floor
    with pytest.raises(ValueError, match="smallest reachable"):
        greedy_rank_search(fn, 1, 1, d, budget=0.4, step=step, updates_per_round=1)
    with pytest.raises(ValueError, match="budget"):
        greedy_rank_search(fn, 1, 1, d, budget=1.5, step=step, updates_per_round=1)
    with pytest.raises(ValueError, match="budget"):
        greedy_rank_search(fn, 1, 1, d, budget=0.0, step=step, updates_per_round=1)
    assert math.isclose(budget(rk, rv, d), 0.5)
