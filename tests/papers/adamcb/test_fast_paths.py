"""The vectorised DepRound and the hook-based per-sample norms against the implementations they
replaced: a plain-loop DepRound (Sec. 3.1 step 2, Sec. 3.3) and vmap over full per-sample
gradients (Sec. 3.4)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from papers.adamcb.method import (
    _linear_pass,
    dep_round,
    exp3m_probabilities,
    per_sample_grad_norms,
    per_sample_grads,
)
from papers.adamcb.model import build_model

Z_MAX = 4.5  # as test_method.py: bound on |z| of every empirical inclusion frequency


# ----------------------------------------------------------------------------------------------
# DepRound
# ----------------------------------------------------------------------------------------------


def _dep_round_loop(p: np.ndarray, rng: np.random.Generator, tol: float = 1e-9) -> np.ndarray:
    """The pairing chain of Sec. 3.3 as a plain loop: the carrier meets each next fractional
    entry in index order, one coin per fractional entry (the previous implementation)."""
    q = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0).tolist()

    def fractional(v: float) -> bool:
        return tol < v < 1.0 - tol

    def snap(v: float) -> float:
        return 0.0 if v <= tol else 1.0 if v >= 1.0 - tol else v

    order = [i for i, v in enumerate(q) if fractional(v)]
    coins = rng.random(len(order)).tolist()
    current = -1
    for k, j in enumerate(order):
        if current < 0:
            current = j
            continue
        pi, pj = q[current], q[j]
        a, b = min(1.0 - pi, pj), min(pi, 1.0 - pj)
        if coins[k] * (a + b) < b:
            pi, pj = pi + a, pj - a
        else:
            pi, pj = pi - b, pj + b
        q[current], q[j] = snap(pi), snap(pj)
        if fractional(q[current]):
            continue
        current = j if fractional(q[j]) else -1
    if current >= 0:
        q[current] = 1.0 if q[current] > 0.5 else 0.0
    return np.flatnonzero(np.asarray(q) > 0.5).astype(np.int64)


def _with_integral_sum(values: np.ndarray) -> np.ndarray:
    """Drop trailing entries until the sum is an integer (exact on dyadic grids)."""
    while abs(values.sum() - round(values.sum())) > 1e-12:
        values = values[:-1]
    return values


def _cases(rng: np.random.Generator) -> list[np.ndarray]:
    """Probability vectors of every shape the sampler meets, and the awkward ones."""
    cases = []
    for n, K in ((2, 1), (7, 3), (300, 150), (1000, 37), (5000, 128)):
        cases.append(np.full(n, K / n))  # uniform: partial sums hit integers (chain restarts)
        for spread in (0.5, 3.0, 40.0):  # Exp3.M with and without capping
            cases.append(exp3m_probabilities(rng.normal(0.0, spread, n), K, 0.4)[0])
    for grid in (2, 4, 8):  # dyadic values: many exact ties and restarts
        values = rng.integers(0, grid + 1, 400) / grid
        cases.append(_with_integral_sum(values))
    near = np.concatenate([[0.5e-9, 1 - 0.5e-9, 2e-9, 1 - 2e-9], np.full(10, 0.25)])
    cases.append(_with_integral_sum(near))  # entries at and just beyond the tolerance
    cases.append(np.full(10, 0.5 - 3e-13))  # sum off by round-off (Sec. 3.6)
    cases.append(np.array([0.0, 1.0, 0.0, 1.0, 1.0]))  # nothing fractional
    return cases


def test_dep_round_draws_what_the_loop_draws():
    """Same coins, same pairing order: the vectorised chain returns the loop's indices."""
    rng = np.random.default_rng(0)
    for case, p in enumerate(_cases(rng)):
        for seed in range(20):
            expected = _dep_round_loop(p, np.random.default_rng(seed))
            generator = np.random.default_rng(seed)
            got = dep_round(p, generator)
            np.testing.assert_array_equal(got, expected, err_msg=f"case {case}, seed {seed}")
            # and it consumed the same coins: the streams continue identically
            reference = np.random.default_rng(seed)
            reference.random(int(((p > 1e-9) & (p < 1 - 1e-9)).sum()))
            assert generator.random() == reference.random()


@pytest.mark.parametrize("kind", ["exp3m", "dyadic"])
def test_dep_round_count_capping_and_marginals(kind):
    """Exactly K every draw, p = 1 always drawn, p = 0 never, inclusion frequencies = p."""
    rng = np.random.default_rng(3)
    if kind == "exp3m":  # a spread of fractional entries, plus a few set to 0 and to 1
        p = exp3m_probabilities(rng.normal(0.0, 1.0, 200), 20, 0.4)[0]
        p[:3], p[3:5] = 0.0, 1.0
        p = _renormalise_fractional(p, 20)
    else:
        p = _with_integral_sum(rng.integers(0, 5, 240) / 4)
    K, n_draws = round(p.sum()), 20_000
    draws = np.stack([dep_round(p, rng) for _ in range(n_draws)])  # (n_draws, K)
    assert draws.shape == (n_draws, K) and np.all(np.diff(draws, axis=1) > 0)  # K distinct
    counts = np.bincount(draws.ravel(), minlength=p.size)
    assert (p == 1.0).any() and np.all(counts[p == 1.0] == n_draws)
    assert (p == 0.0).any() and counts[p == 0.0].sum() == 0
    frac = (p > 0) & (p < 1)
    z = (counts[frac] / n_draws - p[frac]) / np.sqrt(p[frac] * (1 - p[frac]) / n_draws)
    assert np.abs(z).max() < Z_MAX


def _renormalise_fractional(p: np.ndarray, K: int) -> np.ndarray:
    """Scale the fractional entries so that the sum is K again, keeping 0s and 1s."""
    frac = (p > 0) & (p < 1)
    p = p.copy()
    p[frac] *= (K - (p == 1.0).sum()) / p[frac].sum()
    assert p.max() <= 1.0 and abs(p.sum() - K) < 1e-9
    return p


# ----------------------------------------------------------------------------------------------
# Per-sample gradient norms
# ----------------------------------------------------------------------------------------------


def _vmap_norms(model: nn.Module, loss_fn, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The previous implementation: norms of the full per-sample gradients from vmap."""
    grads = per_sample_grads(model, loss_fn, x, y)
    return torch.sqrt(sum(g.flatten(1).pow(2).sum(dim=1) for g in grads.values()))


class _Reused(nn.Module):
    """A layer applied twice per example, and one applied per token: the shortcut must leave
    both to vmap."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(6, 6)
        self.token = nn.Linear(3, 2)
        self.head = nn.Linear(6 + 4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        twice = self.inner(torch.tanh(self.inner(x)))  # (B, 6)
        tokens = self.token(x.view(-1, 2, 3)).flatten(1)  # (B, 4)
        return self.head(torch.cat([twice, tokens], dim=1))


def _models(seed: int) -> dict[str, tuple[nn.Module, tuple[int, ...], int]]:
    torch.manual_seed(seed)
    frozen = build_model("mlp", (9,), 5, [11, 7], [], 3, [])
    frozen.net[1].bias.requires_grad_(False)
    frozen.net[3].weight.requires_grad_(False)
    return {
        "toy mlp": (build_model("mlp", (64,), 10, [64], [], 3, []), (64,), 10),
        "paper mlp (narrow)": (
            build_model("mlp", (1, 28, 28), 10, [32, 16], [], 3, []),
            (1, 28, 28),
            10,
        ),
        "frozen parts": (frozen, (9,), 5),
        "convnet": (
            build_model("convnet", (1, 12, 12), 10, [], [[4], [6]], 5, [8]),
            (1, 12, 12),
            10,
        ),
        "reused and per-token": (_Reused(), (6,), 4),
    }


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_norms_match_vmap(seed, dtype):
    rtol = 1e-10 if dtype == torch.float64 else 1e-5
    for name, (model, in_shape, classes) in _models(seed).items():
        model = model.to(dtype)
        generator = torch.Generator().manual_seed(seed)
        K = 13
        x = torch.randn(K, *in_shape, generator=generator, dtype=dtype)
        y = torch.randint(0, classes, (K,), generator=generator)
        expected = _vmap_norms(model, F.cross_entropy, x, y)
        for chunk in (None, 4):
            got = per_sample_grad_norms(model, F.cross_entropy, x, y, chunk)
            assert got.shape == (K,) and got.dtype == dtype and not got.requires_grad
            torch.testing.assert_close(got, expected, rtol=rtol, atol=0.0, msg=name)


def test_norms_match_vmap_for_a_regression_loss():
    torch.manual_seed(4)
    model = build_model("mlp", (5,), 3, [8], [], 3, []).double()
    x, y = torch.randn(9, 5, dtype=torch.float64), torch.randn(9, 3, dtype=torch.float64)
    expected = _vmap_norms(model, F.mse_loss, x, y)
    torch.testing.assert_close(per_sample_grad_norms(model, F.mse_loss, x, y), expected)


def test_shortcut_covers_exactly_the_linear_layers_used_once():
    models = _models(0)
    x = torch.randn(3, 64)
    mlp = models["toy mlp"][0]
    _, covered = _linear_pass(mlp, F.cross_entropy, x, torch.zeros(3, dtype=torch.long))
    assert covered == {name for name, _ in mlp.named_parameters()}
    conv = models["convnet"][0]
    x = torch.randn(3, 1, 12, 12)
    _, covered = _linear_pass(conv, F.cross_entropy, x, torch.zeros(3, dtype=torch.long))
    assert covered == {name for name, _ in conv.named_parameters() if name.startswith("head.")}
    reused = models["reused and per-token"][0]
    x = torch.randn(3, 6)
    _, covered = _linear_pass(reused, F.cross_entropy, x, torch.zeros(3, dtype=torch.long))
    assert covered == {"head.weight", "head.bias"}
    frozen = models["frozen parts"][0]
    x = torch.randn(3, 9)
    _, covered = _linear_pass(frozen, F.cross_entropy, x, torch.zeros(3, dtype=torch.long))
    assert covered == {name for name, p in frozen.named_parameters() if p.requires_grad}


def test_norms_leave_the_model_as_they_found_it():
    """No hooks left behind, no gradients accumulated, the same output afterwards."""
    model = _models(0)["toy mlp"][0]
    x, y = torch.randn(5, 64), torch.randint(0, 10, (5,))
    before = model(x).detach()
    per_sample_grad_norms(model, F.cross_entropy, x, y)
    assert all(p.grad is None for p in model.parameters())
    assert all(not m._forward_hooks for m in model.modules())
    torch.testing.assert_close(model(x).detach(), before, rtol=0.0, atol=0.0)


def test_exp3m_no_cap_shortcut_equals_the_sorted_scan_bit_for_bit():
    """The O(n) shortcut taken when no arm is capped gives the scan's p exactly, and capped
    cases still go through the scan."""
    from papers.adamcb.method import _exp3m_scan

    rng = np.random.default_rng(0)
    shortcut = capped_cases = 0
    for _ in range(400):
        n = int(rng.integers(5, 300))
        K, gamma = int(rng.integers(1, n)), float(rng.uniform(0.05, 0.95))
        log_weights = rng.normal(0.0, float(rng.choice([0.01, 0.5, 3.0, 30.0])), n)
        tau = (1.0 / K - gamma / n) / (1.0 - gamma)
        p, capped = exp3m_probabilities(log_weights, K, gamma)
        p_scan, capped_scan = _exp3m_scan(log_weights - log_weights.max(), K, gamma, tau)
        np.testing.assert_array_equal(p, p_scan)
        np.testing.assert_array_equal(capped, capped_scan)
        shortcut += not capped.any()
        capped_cases += capped.any()
    assert shortcut > 50 and capped_cases > 50  # both paths exercised
