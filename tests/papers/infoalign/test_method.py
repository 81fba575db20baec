"""Tests of papers/infoalign/method.py: brief `infoalign.md` Sec. 7 items 1-5, and the InfoNCE."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from papers.infoalign.method import (
    csr_adjacency,
    info_nce,
    infoalign_loss,
    masked_weighted_bce,
    prior_term,
    random_walks,
    walk_targets,
)

A, B, C = 0, 1, 2


pytestmark = pytest.mark.usefixtures("one_thread")


def path_graph() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Undirected a - b - c with weights 0.5 (a-b) and 0.4 (b-c)."""
    return csr_adjacency(3, np.array([A, B]), np.array([B, C]), np.array([0.5, 0.4]))


# ----------------------------------------------------------------------------------------------
# CSR helper
# ----------------------------------------------------------------------------------------------


def test_csr_adjacency_stores_both_directions_sorted_by_source():
    indptr, indices, weights = path_graph()
    np.testing.assert_array_equal(indptr, [0, 1, 3, 4])
    np.testing.assert_array_equal(indices, [B, C, A, B])  # b's row: a->b's reverse comes second
    np.testing.assert_allclose(weights, [0.5, 0.4, 0.5, 0.4])
    directed = csr_adjacency(3, np.array([A, B]), np.array([B, C]), np.ones(2), undirected=False)
    np.testing.assert_array_equal(directed[0], [0, 1, 2, 2])
    with pytest.raises(ValueError):
        csr_adjacency(2, np.array([0]), np.array([2]), np.ones(1))


# ----------------------------------------------------------------------------------------------
# 1. Path weights
# ----------------------------------------------------------------------------------------------


def test_forced_walk_path_weights():
    # Directed a -> b -> c: the walk a, b, c is the only one.
    indptr, indices, weights = csr_adjacency(
        3, np.array([A, B]), np.array([B, C]), np.array([0.5, 0.4]), undirected=False
    )
    nodes, pw = random_walks(indptr, indices, weights, np.full(7, A), 2, np.random.default_rng(0))
    np.testing.assert_array_equal(nodes, np.tile([A, B, C], (7, 1)))
    np.testing.assert_allclose(pw, np.tile([1.0, 0.5, 0.2], (7, 1)), rtol=1e-6)
    assert nodes.dtype == np.int64 and pw.dtype == np.float32


def test_path_weights_on_undirected_path_conditioned_on_outcome():
    indptr, indices, weights = path_graph()
    nodes, pw = random_walks(indptr, indices, weights, np.full(400, A), 2, np.random.default_rng(1))
    to_c = (nodes == [A, B, C]).all(axis=1)
    back = (nodes == [A, B, A]).all(axis=1)
    assert to_c.any() and back.any() and (to_c | back).all()
    np.testing.assert_allclose(pw[to_c], np.tile([1.0, 0.5, 0.2], (to_c.sum(), 1)), rtol=1e-6)
    np.testing.assert_allclose(pw[back], np.tile([1.0, 0.5, 0.25], (back.sum(), 1)), rtol=1e-6)


def test_walk_length_zero_returns_starts_with_unit_weight():
    indptr, indices, weights = path_graph()
    starts = np.array([C, A, B, A])
    nodes, pw = random_walks(indptr, indices, weights, starts, 0, np.random.default_rng(0))
    np.testing.assert_array_equal(nodes, starts[:, None])
    np.testing.assert_array_equal(pw, np.ones((4, 1), dtype=np.float32))


# ----------------------------------------------------------------------------------------------
# 2. Dead ends
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("isolated", [0, 2, 4])  # first, middle, last row of the CSR
def test_dead_end_stays_with_zero_weight(isolated):
    others = [v for v in range(5) if v != isolated]
    src, dst = np.array(others[:-1]), np.array(others[1:])  # a path over the other nodes
    indptr, indices, weights = csr_adjacency(5, src, dst, np.full(3, 0.7))
    nodes, pw = random_walks(
        indptr, indices, weights, np.array([isolated] * 3), 4, np.random.default_rng(0)
    )
    np.testing.assert_array_equal(nodes, np.full((3, 5), isolated))
    np.testing.assert_array_equal(pw, np.tile([1.0, 0, 0, 0, 0], (3, 1)).astype(np.float32))


def test_graph_without_edges_and_walk_into_a_sink():
    empty = csr_adjacency(3, np.array([], dtype=int), np.array([], dtype=int), np.array([]))
    nodes, pw = random_walks(*empty, np.array([0, 2]), 3, np.random.default_rng(0))
    np.testing.assert_array_equal(nodes, [[0] * 4, [2] * 4])
    np.testing.assert_array_equal(pw[:, 1:], 0.0)
    # a -> b -> c with c a sink: the walker reaches c, then stays with weight 0 afterwards.
    sink = csr_adjacency(3, np.array([A, B]), np.array([B, C]), np.array([0.5, 0.4]), False)
    nodes, pw = random_walks(*sink, np.array([A]), 4, np.random.default_rng(0))
    np.testing.assert_array_equal(nodes, [[A, B, C, C, C]])
    np.testing.assert_allclose(pw, [[1.0, 0.5, 0.2, 0.0, 0.0]], rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# 3. Walk validity and uniform transitions
# ----------------------------------------------------------------------------------------------


def test_every_step_follows_an_edge_or_stays_at_an_isolated_node():
    rng = np.random.default_rng(0)
    n = 60
    src, dst = rng.integers(0, 50, 120), rng.integers(0, 50, 120)  # nodes 50..59 isolated
    keep = src != dst
    indptr, indices, weights = csr_adjacency(n, src[keep], dst[keep], rng.random(keep.sum()))
    edges = {(u, v) for u in range(n) for v in indices[indptr[u] : indptr[u + 1]]}
    degree = np.diff(indptr)
    nodes, pw = random_walks(indptr, indices, weights, rng.integers(0, n, 500), 6, rng)
    for walk in nodes:
        for u, v in zip(walk[:-1], walk[1:], strict=True):
            assert (u, v) in edges or (u == v and degree[u] == 0)
    assert np.all(np.diff(pw, axis=1) <= 0)  # all edge weights < 1: path weights never grow


def test_transitions_are_uniform_not_weighted():
    # Node 0 has neighbours 1 (weight 0.9) and 2 (weight 0.1).
    indptr, indices, weights = csr_adjacency(3, np.array([0, 0]), np.array([1, 2]), [0.9, 0.1])
    n = 10_000
    nodes, pw = random_walks(indptr, indices, weights, np.zeros(n), 1, np.random.default_rng(3))
    frac_to_1 = np.mean(nodes[:, 1] == 1)
    assert abs(frac_to_1 - 0.5) < 0.05, frac_to_1
    np.testing.assert_allclose(pw[:, 1], np.where(nodes[:, 1] == 1, 0.9, 0.1), rtol=1e-6)


def test_walks_are_reproducible_and_vectorised():
    rng = np.random.default_rng(0)
    n = 5_000
    src, dst = rng.integers(0, n, 20_000), rng.integers(0, n, 20_000)
    graph = csr_adjacency(n, src, dst, rng.random(20_000))
    starts = rng.integers(0, n, 100_000)
    first = random_walks(*graph, starts, 4, np.random.default_rng(7))
    second = random_walks(*graph, starts, 4, np.random.default_rng(7))
    np.testing.assert_array_equal(first[0], second[0])
    third = random_walks(*graph, starts, 4, np.random.default_rng(8))
    assert third[0].shape == first[0].shape  # 100k walkers at once, vectorised over walkers


def test_walk_targets_gathers_with_nans():
    mol = np.array([[1.0, 0.0], [np.nan, np.nan], [0.0, 1.0]], dtype=np.float32)
    cell = np.array([[np.nan] * 3, [0.1, 0.2, 0.3], [np.nan] * 3], dtype=np.float32)
    nodes = np.array([[0, 1, 2], [2, 2, 1]])
    out = walk_targets({"mol": mol, "cell": cell}, nodes)
    assert out["mol"].shape == (2, 3, 2) and out["cell"].shape == (2, 3, 3)
    assert out["mol"].dtype == torch.float32
    torch.testing.assert_close(out["mol"][0, 2], torch.tensor([0.0, 1.0]))
    assert torch.isnan(out["mol"][1, 2]).all() and torch.isnan(out["cell"][0, 0]).all()
    torch.testing.assert_close(out["cell"][1, 2], torch.tensor([0.1, 0.2, 0.3]))


# ----------------------------------------------------------------------------------------------
# 4. Masked weighted BCE
# ----------------------------------------------------------------------------------------------


def test_masked_loss_single_valid_element_is_exact():
    logits = torch.tensor([[0.3, -1.2], [2.0, 0.5]], requires_grad=True)
    targets = torch.full((2, 3, 2), float("nan"))
    targets[1, 2, 0] = 0.7
    weights = torch.tensor([[1.0, 0.5, 0.2], [1.0, 0.6, 0.24]])
    loss = masked_weighted_bce(logits, targets, weights)
    expected = 0.24 * F.binary_cross_entropy_with_logits(torch.tensor(2.0), torch.tensor(0.7))
    torch.testing.assert_close(loss, expected, rtol=1e-6, atol=0)
    loss.backward()
    assert torch.isfinite(logits.grad).all()
    # only logits[1, 0] receives gradient: weight * (sigmoid(2) - 0.7)
    grad = torch.zeros(2, 2)
    grad[1, 0] = 0.24 * (torch.sigmoid(torch.tensor(2.0)) - 0.7)
    torch.testing.assert_close(logits.grad, grad)


def test_masked_loss_empty_is_zero_with_finite_gradient():
    logits = torch.randn(4, 5, requires_grad=True)
    targets = torch.full((4, 3, 5), float("nan"))
    loss = masked_weighted_bce(logits, targets, torch.ones(4, 3))
    assert loss.item() == 0.0
    loss.backward()
    assert torch.equal(logits.grad, torch.zeros(4, 5))


def test_zero_weight_elements_count_in_the_denominator():
    logits = torch.tensor([[0.4]])
    targets = torch.tensor([[[1.0], [0.0]]])  # positions 0 and 1 both valid
    loss = masked_weighted_bce(logits, targets, np.array([[1.0, 0.0]], dtype=np.float32))
    bce = F.binary_cross_entropy_with_logits(torch.tensor(0.4), torch.tensor(1.0))
    torch.testing.assert_close(loss, bce / 2)


def test_masked_loss_matches_boolean_indexing_reference():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 7, generator=gen)
    targets = torch.rand(6, 5, 7, generator=gen)
    targets[torch.rand(6, 5, 1, generator=gen).expand(-1, -1, 7) < 0.5] = float("nan")
    weights = torch.rand(6, 5, generator=gen)
    mask = ~torch.isnan(targets)
    ref = F.binary_cross_entropy_with_logits(
        logits.unsqueeze(1).expand_as(targets)[mask],
        targets[mask],
        weight=weights.unsqueeze(-1).expand_as(targets)[mask],
    )
    torch.testing.assert_close(masked_weighted_bce(logits, targets, weights), ref)


# ----------------------------------------------------------------------------------------------
# 5. Prior term
# ----------------------------------------------------------------------------------------------


def test_prior_is_exactly_zero_at_standard_normal():
    z = torch.randn(64, 16) * 5
    assert prior_term(torch.zeros(64, 16), torch.ones(64, 16), z).item() == 0.0


def test_prior_mc_average_matches_closed_form_kl():
    d, n = 8, 20_000
    gen = torch.Generator().manual_seed(0)
    mu, sigma = torch.ones(n, d), torch.ones(n, d)
    z = mu + sigma * torch.randn(n, d, generator=gen)
    estimate = prior_term(mu, sigma, z).item()  # mean over the n single-sample estimates
    assert abs(estimate - d / 2) < 0.02 * d / 2, estimate


def test_prior_matches_torch_distributions():
    gen = torch.Generator().manual_seed(1)
    mu = torch.randn(10, 4, generator=gen)
    sigma = torch.rand(10, 4, generator=gen) + 0.1
    z = torch.randn(10, 4, generator=gen)
    q = torch.distributions.Normal(mu, sigma).log_prob(z).sum(-1)
    p = torch.distributions.Normal(0.0, 1.0).log_prob(z).sum(-1)
    torch.testing.assert_close(prior_term(mu, sigma, z), (q - p).mean())


# ----------------------------------------------------------------------------------------------
# Total loss
# ----------------------------------------------------------------------------------------------


def test_infoalign_loss_sums_terms_and_reaches_sigma_through_the_prior():
    gen = torch.Generator().manual_seed(0)
    mu = torch.randn(3, 4, generator=gen, requires_grad=True)
    sigma = (torch.rand(3, 4, generator=gen) + 0.5).requires_grad_()
    decoded = {"mol": torch.randn(3, 6, generator=gen), "cell": torch.randn(3, 2, generator=gen)}
    targets = {
        "mol": torch.rand(3, 2, 6, generator=gen),
        "cell": torch.full((3, 2, 2), float("nan")),  # modality absent from the batch
    }
    pw = torch.tensor([[1.0, 0.5]] * 3)
    beta = 0.1
    loss, parts = infoalign_loss(
        mu, sigma, decoded, targets, pw, beta, torch.Generator().manual_seed(5)
    )
    z = mu + sigma * torch.randn(3, 4, generator=torch.Generator().manual_seed(5))
    expected = beta * prior_term(mu, sigma, z) + masked_weighted_bce(
        decoded["mol"], targets["mol"], pw
    )
    torch.testing.assert_close(loss, expected)
    assert parts["cell"] == 0.0 and math.isclose(parts["total"], loss.item(), rel_tol=1e-6)
    assert set(parts) == {"prior", "mol", "cell", "total"}
    loss.backward()
    assert sigma.grad.abs().sum() > 0 and torch.isfinite(mu.grad).all()
    with pytest.raises(KeyError):
        infoalign_loss(mu, sigma, {"mol": decoded["mol"]}, targets, pw, beta)


# ----------------------------------------------------------------------------------------------
# Contrastive baseline
# ----------------------------------------------------------------------------------------------


def test_info_nce_prefers_aligned_pairs_and_is_symmetric():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(32, 16, generator=gen)
    b = a + 0.1 * torch.randn(32, 16, generator=gen)
    shuffled = b[torch.randperm(32, generator=gen)]
    aligned = info_nce(a, b, 0.1)
    assert aligned < info_nce(a, shuffled, 0.1)
    assert aligned < math.log(32) < info_nce(a, shuffled, 0.1)
    torch.testing.assert_close(aligned, info_nce(b, a, 0.1))
    torch.testing.assert_close(info_nce(3 * a, b, 0.1), aligned)  # cosine: scale invariant
