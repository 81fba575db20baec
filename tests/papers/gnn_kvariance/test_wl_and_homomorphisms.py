"""Colour refinement and rooted homomorphism counts (brief Sec. 7, items 1-2)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import torch

from papers.gnn_kvariance.data import from_networkx_graph
from papers.gnn_kvariance.homomorphism import (
    PATTERN_SETS,
    parse_pattern,
    rooted_hom_counts,
)
from papers.gnn_kvariance.wl import wl_histograms


def graphs_of(*nx_graphs):
    return [from_networkx_graph(nx.convert_node_labels_to_integers(g)) for g in nx_graphs]


def features(graphs, patterns=()):
    """colour_0 inputs as train.node_inputs builds them: [x, rooted hom counts]."""
    return torch.cat(
        [
            torch.cat(
                [
                    g.x.double(),
                    torch.from_numpy(
                        rooted_hom_counts(g.edge_index.numpy(), g.num_nodes, list(patterns))
                    ),
                ],
                dim=1,
            )
            for g in graphs
        ]
    )


def counts_of(g: nx.Graph, patterns):
    g = nx.convert_node_labels_to_integers(g)
    return rooted_hom_counts(np.array(list(g.edges())).T, g.number_of_nodes(), patterns)


# ------------------------------------------------------------------------------- 1. WL
def test_c6_and_two_triangles_are_1wl_equivalent_at_every_round():
    graphs = graphs_of(nx.cycle_graph(6), nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3)))
    for lam in wl_histograms(graphs, features(graphs), rounds=4):
        dense = lam.toarray()
        np.testing.assert_array_equal(dense[0], dense[1])


def test_triangle_fwl_separates_c6_from_two_triangles_at_round_one():
    graphs = graphs_of(nx.cycle_graph(6), nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3)))
    lam_1 = wl_histograms(graphs, features(graphs, ["triangle"]), rounds=1)[0].toarray()
    assert not np.array_equal(lam_1[0], lam_1[1])


def test_path_and_star_differ_at_round_one():
    graphs = graphs_of(nx.path_graph(4), nx.star_graph(3))  # P4 and K_{1,3}
    lam_1 = wl_histograms(graphs, features(graphs), rounds=1)[0].toarray()
    assert not np.array_equal(lam_1[0], lam_1[1])


def test_histograms_are_per_round_and_share_one_vocabulary():
    graphs = graphs_of(nx.path_graph(5), nx.path_graph(5), nx.star_graph(4), nx.cycle_graph(7))
    sizes = np.array([g.num_nodes for g in graphs])
    for lam in wl_histograms(graphs, features(graphs), rounds=3):
        dense = lam.toarray()
        # per round, not cumulative: each graph's counts sum to its node count
        np.testing.assert_array_equal(dense.sum(axis=1), sizes)
        # shared vocabulary: the two copies of P5 have the same histogram, column for column
        np.testing.assert_array_equal(dense[0], dense[1])
        assert (dense > 0).any(axis=0).all()  # no colour is unused by every graph


def test_regular_graphs_have_one_colour_forever():
    rng = np.random.default_rng(0)
    graphs = graphs_of(
        *(nx.random_regular_graph(4, 16, seed=int(s)) for s in rng.integers(99, size=5))
    )
    for lam in wl_histograms(graphs, features(graphs), rounds=3):
        assert lam.shape[1] == 1 and (lam.toarray() == 16).all()


# ------------------------------------------------------------------- 2. hom counts
def test_k4_rooted_triangle_and_clique_counts():
    counts = counts_of(nx.complete_graph(4), ["triangle", "4-clique"])
    np.testing.assert_array_equal(counts[:, 0], 6)  # 2 x 3 triangles at each node
    np.testing.assert_array_equal(counts[:, 1], math.factorial(3))  # one 4-clique


def test_c5_closed_walks():
    counts = counts_of(nx.cycle_graph(5), ["5-cycle", "triangle"])
    np.testing.assert_array_equal(counts[:, 0], 2)  # once round, each direction
    np.testing.assert_array_equal(counts[:, 1], 0)


def test_counts_match_dense_matrix_powers_and_brute_force_cliques():
    g = nx.gnp_random_graph(14, 0.45, seed=3)
    A = nx.to_numpy_array(g, nodelist=range(14), dtype=np.int64)
    patterns = PATTERN_SETS["paths"] + PATTERN_SETS["cycles"] + ["4-clique", "5-clique"]
    counts = counts_of(g, patterns)
    for column, name in enumerate(patterns):
        kind, k = parse_pattern(name)
        power = np.linalg.matrix_power(A, k)
        if kind == "path":
            expected = power.sum(axis=1)
        elif kind == "cycle":
            expected = np.diag(power)
        else:
            expected = np.zeros(14)
            for clique in nx.enumerate_all_cliques(g):
                if len(clique) == k:
                    expected[clique] += math.factorial(k - 1)
        np.testing.assert_array_equal(counts[:, column], expected, err_msg=name)


def test_triangle_count_is_twice_the_triangles_at_each_node():
    g = nx.gnp_random_graph(20, 0.3, seed=1)
    counts = counts_of(g, ["triangle"])[:, 0]
    np.testing.assert_array_equal(counts, 2 * np.array([nx.triangles(g)[v] for v in range(20)]))


@pytest.mark.parametrize("bad", ["square", "2-cycle", "0-path", "4-star"])
def test_unknown_patterns_are_refused(bad):
    with pytest.raises(ValueError, match=bad):
        parse_pattern(bad)
