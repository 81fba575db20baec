r"""Synthetic linear non-Gaussian models with latent variables for ETCD (brief Sec. 5).

A :class:`LatentGraph` holds ``B[child, parent]`` over all variables ordered
[latents..., observed...], as the official ``SimulationData.py`` does. The structure
functions return weights 0/1; :func:`sample_weights` draws the official random weights
(random sign times U(0.5, 2), redrawn until faithful) and :func:`simulate` draws data
$V = (I - B)^{-1} e$ with strongly non-Gaussian noise $u^7$, $u \sim U(-1, 1)$, and returns
only the observed rows, shape (p_obs, n).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class LatentGraph:
    """A linear SEM over latent and observed variables.

    Attributes:
        B: (p_total, p_total) weights, ``B[child, parent]``; rows/columns ordered
            [latents..., observed...].
        n_latent: number of leading latent variables.
        names: one name per variable, same order.
    """

    B: np.ndarray
    n_latent: int
    names: list[str]

    @property
    def n_observed(self) -> int:
        return self.B.shape[0] - self.n_latent


def _structure(names: list[str], n_latent: int, edges: list[tuple[str, str]]) -> LatentGraph:
    """A 0/1 :class:`LatentGraph` from (parent, child) name pairs."""
    index = {name: i for i, name in enumerate(names)}
    B = np.zeros((len(names), len(names)))
    for parent, child in edges:
        B[index[child], index[parent]] = 1.0
    return LatentGraph(B=B, n_latent=n_latent, names=list(names))


CASE4_EDGES = [
    ("x1", "L1"),
    ("x1", "L2"),
    ("x1", "x2"),
    ("x1", "x3"),
    ("L1", "x3"),
    ("L1", "x4"),
    ("L1", "x5"),
    ("L1", "x6"),
    ("L2", "x6"),
    ("x3", "x6"),
    ("L2", "x7"),
    ("L2", "x8"),
    ("x4", "x9"),
]


def case4_graph() -> LatentGraph:
    """The official "Case 4" structure (Sec. 5): latents L1, L2, observed x1..x9, 13 edges.

    L1's pure children are x4, x5; L2's are x7, x8. Observed x1 causes both latents, x3 has
    an observed and a latent parent, x6 has three parents, x9 hangs below the pure child x4.
    """
    names = ["L1", "L2"] + [f"x{i}" for i in range(1, 10)]
    return _structure(names, 2, CASE4_EDGES)


def violating_graph() -> LatentGraph:
    """A graph that violates the pure-children assumption (Sec. 5, trust claim).

    L -> x1, L -> x2, L -> x3, x1 -> x2, x2 -> x3: L has only one pure child (x1).
    """
    edges = [("L", "x1"), ("L", "x2"), ("L", "x3"), ("x1", "x2"), ("x2", "x3")]
    return _structure(["L", "x1", "x2", "x3"], 1, edges)


def _ancestral_support(B: np.ndarray) -> np.ndarray:
    """Boolean (p, p): ``[i, j]`` when j is i or an ancestor of i; raises if B is cyclic."""
    edges = B != 0
    reach = edges.copy()
    for k in range(len(B)):  # Warshall's transitive closure
        reach |= reach[:, k : k + 1] & reach[k : k + 1, :]
    if np.any(np.diag(reach)):
        raise ValueError("the graph has a directed cycle")
    return reach | np.eye(len(B), dtype=bool)


def sample_weights(
    structure: LatentGraph,
    rng: np.random.Generator,
    weight_range: tuple[float, float] = (0.5, 2.0),
    faithfulness_min: float = 0.25,
    max_tries: int = 1000,
) -> LatentGraph:
    """Random edge weights on a structure (Sec. 5).

    Each edge gets a random sign (±1 with probability 1/2) times U(weight_range). The draw
    is repeated until every structurally nonzero entry of the mixing matrix (I - B)^{-1}
    (every ancestor-descendant pair) has magnitude above ``faithfulness_min``, so no total
    effect nearly cancels.

    Args:
        structure: the graph; its nonzero entries are the edges.
        rng: random generator.
        weight_range: range of the weight magnitudes.
        faithfulness_min: the smallest total effect accepted.
        max_tries: draws before giving up.

    Returns:
        A copy of ``structure`` with the drawn weights.

    Raises:
        RuntimeError: no faithful draw within ``max_tries`` tries.
    """
    mask = structure.B != 0  # (p, p)
    support = _ancestral_support(structure.B)  # (p, p)
    eye = np.eye(len(mask))
    n_edges = int(mask.sum())
    for _ in range(max_tries):
        signs = np.where(rng.random(n_edges) < 0.5, -1.0, 1.0)  # (n_edges,)
        magnitudes = rng.uniform(weight_range[0], weight_range[1], n_edges)  # (n_edges,)
        B = np.zeros_like(structure.B, dtype=np.float64)
        B[mask] = signs * magnitudes
        mixing = np.linalg.inv(eye - B)  # (p, p)
        if np.all(np.abs(mixing[support]) > faithfulness_min):
            return LatentGraph(B=B, n_latent=structure.n_latent, names=list(structure.names))
    raise RuntimeError(
        f"no weights with every total effect above {faithfulness_min} in {max_tries} tries; "
        "lower faithfulness_min or use a shallower graph"
    )


def simulate(
    graph: LatentGraph,
    n: int,
    rng: np.random.Generator,
    noise_power: int = 7,
    noise_scale_range: tuple[float, float] = (0.5, 1.0),
) -> np.ndarray:
    """Data from the linear SEM ``V = B V + e`` (Sec. 5); only the observed rows.

    Noise: ``u ** noise_power`` with u ~ U(-1, 1), standardised to mean 0 and variance 1 per
    variable, then multiplied by a per-variable scale ~ U(noise_scale_range).

    Args:
        graph: weighted graph, ordered [latents..., observed...].
        n: number of samples.
        rng: random generator.
        noise_power: exponent of the uniform draws (7: strongly non-Gaussian, heavy-tailed).
        noise_scale_range: range of the per-variable noise scales.

    Returns:
        Observed data, shape (p_observed, n).
    """
    p = graph.B.shape[0]
    noise = rng.uniform(-1.0, 1.0, (p, n)) ** noise_power  # (p, n)
    noise = (noise - noise.mean(axis=1, keepdims=True)) / noise.std(axis=1, keepdims=True)
    noise *= rng.uniform(noise_scale_range[0], noise_scale_range[1], (p, 1))
    V = np.linalg.solve(np.eye(p) - graph.B, noise)  # (p, n) = (I - B)^{-1} e
    return V[graph.n_latent :]


def random_pure_children_graph(
    n_latent: int,
    rng: np.random.Generator,
    pure_children: int = 2,
    extra_edge_prob: float = 0.3,
) -> LatentGraph:
    """A random structure (weights 0/1) that satisfies the pure-children assumption, for
    timing ETCD at growing sizes.

    Construction, in a topological order:

    1. With probability ``extra_edge_prob``, an observed root ``r`` (like Case 4's x1).
    2. Latents L1..Lm in index order. L_j (j > 1) gets one parent drawn uniformly among
       L1..L_{j-1} (so the latents form a connected DAG) and each other earlier latent as an
       extra parent with probability ``extra_edge_prob``; each latent gets ``r`` as a parent
       with probability ``extra_edge_prob`` (L1 always, when ``r`` exists).
    3. Every latent gets ``pure_children`` observed children whose only parent it is.
    4. For every latent, with probability ``extra_edge_prob`` each: an observed child of its
       first pure child (like x4 -> x9), and, if m > 1, an observed "impure" child of this
       latent and another random latent (like x6).

    Why the assumption holds: the pure children of step 3 keep exactly one parent, since
    steps 1, 2 and 4 only add parents to latents or create new variables (a child below a
    pure child adds a child, not a parent). Every latent therefore has ``pure_children`` >= 2
    pure children. The graph is acyclic by construction and connected (every latent hangs
    below L1; a FindIP instrument uncorrelated with a pair would make the pseudo-residual
    blow up, Sec. 3.4).

    Args:
        n_latent: number of latents m >= 1.
        rng: random generator.
        pure_children: observed pure children per latent (at least 2).
        extra_edge_prob: probability of each optional variable or edge.

    Returns:
        The structure, ordered [latents..., observed...]; draw weights with
        :func:`sample_weights`.
    """
    if n_latent < 1 or pure_children < 2:
        raise ValueError("need n_latent >= 1 and pure_children >= 2 (the assumption)")
    latents = [f"L{j + 1}" for j in range(n_latent)]
    observed: list[str] = []
    edges: list[tuple[str, str]] = []

    def new_observed() -> str:
        observed.append(f"x{len(observed) + 1}")
        return observed[-1]

    root = new_observed() if rng.random() < extra_edge_prob else None
    for j, latent in enumerate(latents):
        if j > 0:
            first = int(rng.integers(j))
            edges.append((latents[first], latent))
            edges += [
                (latents[k], latent)
                for k in range(j)
                if k != first and rng.random() < extra_edge_prob
            ]
        if root is not None and (j == 0 or rng.random() < extra_edge_prob):
            edges.append((root, latent))
    pure = {latent: [new_observed() for _ in range(pure_children)] for latent in latents}
    for latent, kids in pure.items():
        edges += [(latent, kid) for kid in kids]
    for j, latent in enumerate(latents):
        if rng.random() < extra_edge_prob:
            edges.append((pure[latent][0], new_observed()))
        if n_latent > 1 and rng.random() < extra_edge_prob:
            other = latents[(j + 1 + int(rng.integers(n_latent - 1))) % n_latent]
            child = new_observed()
            edges += [(latent, child), (other, child)]
    return _structure(latents + observed, n_latent, edges)
