"""Tests of papers/etcd/data.py: the Case-4 and violating structures, weight sampling with
faithfulness, the u^7 simulator, and the random pure-children graphs of the benchmark
(including what ETCD recovers on them, as measured).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from papers.etcd.data import (
    LatentGraph,
    case4_graph,
    random_pure_children_graph,
    sample_weights,
    simulate,
    violating_graph,
)
from papers.etcd.method import ETCDSettings, etcd


def edge_names(graph: LatentGraph) -> set[tuple[str, str]]:
    return {
        (graph.names[parent], graph.names[child])
        for child, parent in zip(*np.nonzero(graph.B), strict=True)
    }


def pure_children(graph: LatentGraph, parent: int) -> list[int]:
    """Children of ``parent`` whose only parent it is."""
    kids = np.flatnonzero(graph.B[:, parent])
    return [int(k) for k in kids if np.count_nonzero(graph.B[k]) == 1]


def as_digraph(graph: LatentGraph) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(graph.names)
    g.add_edges_from(edge_names(graph))
    return g


def test_case4_structure():
    graph = case4_graph()
    assert graph.n_latent == 2 and graph.n_observed == 9
    assert graph.names[:2] == ["L1", "L2"]
    assert np.count_nonzero(graph.B) == 13
    assert set(np.unique(graph.B)) == {0.0, 1.0}
    edges = edge_names(graph)
    assert {("x1", "L1"), ("x1", "L2"), ("L2", "x6"), ("x3", "x6"), ("x4", "x9")} <= edges
    assert [graph.names[k] for k in pure_children(graph, 0)] == ["x4", "x5"]
    assert [graph.names[k] for k in pure_children(graph, 1)] == ["x7", "x8"]
    assert nx.is_directed_acyclic_graph(as_digraph(graph))


def test_violating_graph_has_one_pure_child():
    graph = violating_graph()
    assert graph.n_latent == 1 and graph.n_observed == 3
    assert np.count_nonzero(graph.B) == 5
    assert [graph.names[k] for k in pure_children(graph, 0)] == ["x1"]


@pytest.mark.parametrize("seed", range(5))
def test_sample_weights_are_in_range_and_faithful(seed):
    structure = case4_graph()
    graph = sample_weights(structure, np.random.default_rng(seed))
    mask = structure.B != 0
    np.testing.assert_array_equal(graph.B != 0, mask)
    magnitudes = np.abs(graph.B[mask])
    assert np.all((magnitudes >= 0.5) & (magnitudes <= 2.0))
    mixing = np.linalg.inv(np.eye(len(mask)) - graph.B)
    ancestral = nx.transitive_closure_dag(as_digraph(structure))
    for parent, child in ancestral.edges:
        i, j = structure.names.index(child), structure.names.index(parent)
        assert abs(mixing[i, j]) > 0.25


def test_sample_weights_draws_both_signs_and_raises_when_impossible():
    signs = np.concatenate(
        [np.sign(sample_weights(case4_graph(), np.random.default_rng(s)).B) for s in range(5)]
    )
    assert (signs > 0).any() and (signs < 0).any()
    with pytest.raises(RuntimeError, match="no weights"):
        sample_weights(case4_graph(), np.random.default_rng(0), faithfulness_min=10.0, max_tries=5)


def test_simulate_shape_noise_standardisation_and_determinism():
    rng = np.random.default_rng(0)
    graph = sample_weights(case4_graph(), rng)
    X = simulate(graph, 3000, np.random.default_rng(1))
    assert X.shape == (9, 3000)
    np.testing.assert_array_equal(X, simulate(graph, 3000, np.random.default_rng(1)))
    # with no edges each row is one noise: mean 0 and standard deviation = its scale
    empty = LatentGraph(B=np.zeros((4, 4)), n_latent=1, names=["L", "a", "b", "c"])
    noise = simulate(empty, 3000, np.random.default_rng(2), noise_scale_range=(0.5, 1.0))
    assert noise.shape == (3, 3000)
    np.testing.assert_allclose(noise.mean(axis=1), 0.0, atol=1e-12)
    assert np.all((noise.std(axis=1) >= 0.5) & (noise.std(axis=1) <= 1.0))
    # u^7 is strongly non-Gaussian: kurtosis E[u^28] / E[u^14]^2 = 225 / 29 (Gaussian: 3)
    z = noise / noise.std(axis=1, keepdims=True)
    np.testing.assert_allclose(np.mean(z**4, axis=1), 225 / 29, rtol=0.15)


def test_simulate_follows_the_structural_equations():
    graph = LatentGraph(B=np.array([[0.0, 0.0], [2.0, 0.0]]), n_latent=0, names=["a", "b"])
    X = simulate(graph, 5000, np.random.default_rng(3))
    slope = np.cov(X[1], X[0])[0, 1] / np.var(X[0], ddof=1)
    assert slope == pytest.approx(2.0, abs=0.05)


@pytest.mark.parametrize("n_latent", [1, 2, 3, 5])
@pytest.mark.parametrize("seed", range(4))
def test_random_pure_children_graph_satisfies_the_assumption(n_latent, seed):
    graph = random_pure_children_graph(n_latent, np.random.default_rng(seed), pure_children=2)
    assert graph.n_latent == n_latent
    assert graph.n_observed >= 2 * n_latent
    g = as_digraph(graph)
    assert nx.is_directed_acyclic_graph(g)
    assert nx.is_weakly_connected(g)
    for latent in range(n_latent):
        kids = pure_children(graph, latent)
        assert len([k for k in kids if k >= n_latent]) >= 2  # observed pure children
    # deterministic given the generator
    again = random_pure_children_graph(n_latent, np.random.default_rng(seed))
    np.testing.assert_array_equal(graph.B, again.B)


def test_random_pure_children_graph_grows_with_the_number_of_latents():
    sizes = [
        np.mean(
            [random_pure_children_graph(m, np.random.default_rng(s)).n_observed for s in range(5)]
        )
        for m in (2, 4, 8)
    ]
    assert sizes[0] < sizes[1] < sizes[2]
    with pytest.raises(ValueError):
        random_pure_children_graph(2, np.random.default_rng(0), pure_children=1)


def test_etcd_finds_the_latent_count_on_small_random_graphs():
    # measured (n = 2000, 2 latents, error=False): seeds 0, 1, 2, 4, 5 find 2 latents, seed 3
    # finds 1 (L2 is a strong child of L1; at n = 10000 it finds 2); none crashes
    exact = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        graph = sample_weights(random_pure_children_graph(2, rng), rng)
        X = simulate(graph, 2000, rng)
        result = etcd(X, ETCDSettings(error=False), np.random.default_rng(seed))
        assert result.adjacency.shape == (X.shape[0] + result.n_latent,) * 2
        exact += result.n_latent == 2
    assert exact >= 4


@pytest.mark.paper
def test_gin_adapter_maps_latents_and_edges():
    """Paper-scale baseline (needs causal-learn, the `paper` extra; never in CI)."""
    pytest.importorskip("causallearn")
    from papers.etcd.train import run_gin

    rng = np.random.default_rng(0)
    n = 1000
    latent = rng.uniform(-1, 1, n) ** 7
    latent /= latent.std()
    noise = [(rng.uniform(-1, 1, n) ** 7) / 0.2 for _ in range(3)]
    X = np.stack([w * latent + 0.5 * e for w, e in zip((1.0, 1.5, -1.2), noise, strict=True)])
    A = run_gin(X, alpha=0.05)
    assert A.shape[0] >= 3 and np.all(A[:3, :3] == 0)  # no observed -> observed edges
