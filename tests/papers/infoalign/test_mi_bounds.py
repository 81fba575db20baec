"""Tests of papers/infoalign/mi_bounds.py: the secondary claim (brief `infoalign.md` Sec. 5, 2)."""

from __future__ import annotations

import math

import torch

from papers.infoalign.mi_bounds import (
    barber_agakov_bound,
    compare_bounds,
    gaussian_pair,
    infonce_bound,
    infonce_estimate,
    optimal_critic,
    true_mi,
)

TRUE_MI = 4 * math.log(1 + 1 / 0.09)  # 9.976 nats for dim 8, noise 0.3


def test_true_mi_and_pair_statistics():
    assert math.isclose(true_mi(), TRUE_MI) and abs(true_mi() - 9.976) < 1e-3
    x, y = gaussian_pair(50_000, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (50_000, 8)
    assert abs((y - x).std().item() - 0.3) < 0.01 and abs(x.std().item() - 1.0) < 0.01


def test_decoder_bound_reaches_the_truth():
    ba = barber_agakov_bound(seed=0)
    assert 0.95 * TRUE_MI <= ba <= TRUE_MI + 0.1, ba  # + Monte-Carlo error of the evaluation


def test_infonce_is_capped_by_log_batch_size():
    est = infonce_estimate(batch=128, n_batches=50, seed=0)
    assert 4.5 < est <= math.log(128) < TRUE_MI, est
    # the cap holds for every critic and batch, e.g. an absurdly confident one
    gen = torch.Generator().manual_seed(1)
    x, y = gaussian_pair(16, generator=gen)
    sharp = optimal_critic(0.01)
    assert infonce_bound(sharp, x, y) <= math.log(16)
    assert infonce_bound(lambda a, b: a @ b.T, x, y) <= math.log(16)


def test_compare_bounds_reports_the_claim_numbers():
    out = compare_bounds(seed=1)
    assert set(out) == {"true_mi", "barber_agakov", "infonce", "log_batch"}
    assert out["infonce"] <= out["log_batch"] < 0.95 * out["true_mi"] <= out["barber_agakov"]
