"""Rooted homomorphism counts hom((F, r), (G, v)) in closed form (brief Sec. 3.1).

The official code counts them with the homlib/DISC tools; on simple undirected graphs the
patterns of the official grid have closed forms, which is all we need:

* ``k-path`` (k edges, rooted at an endpoint): the number of walks of length k from v,
  ``(A^k 1)_v``;
* ``k-cycle`` (``triangle`` = 3-cycle): the number of closed walks of length k at v,
  ``(A^k)_vv`` (for the triangle, 2 x the triangles at v);
* ``k-clique``: a homomorphism of K_k into a simple graph is injective, so the count is
  ``(k - 1)! x`` the number of k-cliques containing v (enumerated with networkx).

Everything is integer arithmetic on sparse matrices, so counts are exact (returned as
float64, exact below 2^53).
"""

from __future__ import annotations

import math
import re

import networkx as nx
import numpy as np
from scipy import sparse

# The official pattern sets (run/grids/hom.txt; brief Sec. 3.1).
PATTERN_SETS = {
    "paths": ["2-path", "3-path", "4-path", "5-path"],
    "cycles": ["triangle", "4-cycle", "5-cycle", "6-cycle"],
    "cliques": ["triangle", "4-clique", "5-clique", "6-clique"],
}
_PATTERN = re.compile(r"^(\d+)-(path|cycle|clique)$")


def parse_pattern(name: str) -> tuple[str, int]:
    """``"4-cycle"`` -> ``("cycle", 4)``; ``"triangle"`` is the 3-cycle."""
    if name == "triangle":
        return "cycle", 3
    match = _PATTERN.match(name)
    if match is None:
        raise ValueError(
            f"unknown pattern {name!r}; use 'triangle', 'k-path', 'k-cycle' or 'k-clique'"
        )
    kind, size = match.group(2), int(match.group(1))
    if (kind == "path" and size < 1) or (kind != "path" and size < 3):
        raise ValueError(f"pattern {name!r} is too small")
    return kind, size


def adjacency_matrix(edge_index: np.ndarray, num_nodes: int) -> sparse.csr_array:
    """Symmetric 0/1 adjacency (int64) of a simple undirected graph given as a (2, E) edge
    list (each edge once or in both directions; self-loops are dropped)."""
    row, col = np.asarray(edge_index, dtype=np.int64)
    keep = row != col
    row, col = row[keep], col[keep]
    A = sparse.coo_array(
        (np.ones(2 * row.size, dtype=np.int64), (np.r_[row, col], np.r_[col, row])),
        shape=(num_nodes, num_nodes),
    ).tocsr()
    A.data[:] = 1  # duplicates summed above: back to 0/1
    return A


def walks_from(A: sparse.csr_array, length: int) -> np.ndarray:
    """(A^length 1)_v: walks of ``length`` edges starting at each v (rooted k-path)."""
    walks = np.ones(A.shape[0], dtype=np.int64)
    for _ in range(length):
        walks = A @ walks
    return walks


def closed_walks(A: sparse.csr_array, length: int) -> np.ndarray:
    """(A^length)_vv without forming A^length: with a + b = length and A symmetric,
    (A^a A^b)_vv = sum_u (A^a)_vu (A^b)_vu, a row sum of an elementwise product."""
    a = length // 2
    b = length - a
    power_a = sparse.eye_array(A.shape[0], dtype=np.int64, format="csr")
    for _ in range(a):
        power_a = power_a @ A
    power_b = power_a @ A if b > a else power_a
    return np.asarray(power_a.multiply(power_b).sum(axis=1)).ravel().astype(np.int64)


def cliques_containing(graph: nx.Graph, sizes: set[int]) -> dict[int, np.ndarray]:
    """For each k in ``sizes``: the number of k-cliques containing each node (nodes 0..n-1)."""
    n = graph.number_of_nodes()
    counts = {k: np.zeros(n, dtype=np.int64) for k in sizes}
    largest = max(sizes)
    for clique in nx.enumerate_all_cliques(graph):  # in order of increasing size
        if len(clique) > largest:
            break
        if len(clique) in counts:
            counts[len(clique)][clique] += 1
    return counts


def rooted_hom_counts(edge_index: np.ndarray, num_nodes: int, patterns: list[str]) -> np.ndarray:
    """(num_nodes, len(patterns)) rooted homomorphism counts, one column per pattern
    (brief Sec. 3.1, closed forms)."""
    parsed = [parse_pattern(p) for p in patterns]
    if not parsed:
        return np.zeros((num_nodes, 0))
    A = adjacency_matrix(edge_index, num_nodes)
    clique_sizes = {k for kind, k in parsed if kind == "clique"}
    cliques = {}
    if clique_sizes:
        graph = nx.Graph()
        graph.add_nodes_from(range(num_nodes))
        graph.add_edges_from(zip(*sparse.triu(A, k=1).nonzero(), strict=True))
        cliques = cliques_containing(graph, clique_sizes)
    columns = []
    for kind, k in parsed:
        if kind == "path":
            columns.append(walks_from(A, k))
        elif kind == "cycle":
            columns.append(closed_walks(A, k))
        else:
            columns.append(math.factorial(k - 1) * cliques[k])
    return np.stack(columns, axis=1).astype(np.float64)
