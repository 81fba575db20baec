r"""Synthetic linear non-Gaussian models with latent variables for ETCD (brief Sec. 5).

A :class:`LatentGraph` holds ``B[child, parent]`` over all variables ordered
[latents..., observed...], as the official ``SimulationData.py`` does. The structure
functions return weights 0/1; :func:`sample_weights` draws the official random weights
(random sign times U(0.5, 2), redrawn until faithful) and :func:`simulate` draws data
$V = (I - B)^{-1} e$ with strongly non-Gaussian noise $u^7$, $u \sim U(-1, 1)$, and returns
only the observed rows, shape (p_obs, n).

The real rung reads two data sets from the pinned asset cache (never downloading):
:func:`load_holzinger_swineford` (301 pupils x 9 test scores, three known ability clusters)
and :func:`load_sachs` (11 proteins in single cells, observational rows, and the 18-edge
consensus graph); :func:`prepare` rescales them once.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

HS_FILE = "holzinger_swineford39_data.csv"  # file names inside the assets (shared/assets.py)
SACHS_DATA_FILE = "cyto_full_data.csv"
SACHS_TARGET_FILE = "cyto_full_target.csv"


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


def indicator_graph(n_latent: int = 3, indicators: int = 3) -> LatentGraph:
    """A measurement model shaped like Holzinger-Swineford's (issue 51's sample-size sweep):
    ``n_latent`` latents, each with ``indicators`` pure observed children, and every earlier
    latent a parent of every later one (L1 -> L2, L1 -> L3, L2 -> L3 for three), so the
    factors are all correlated, as the three abilities are. It satisfies ETCD's pure-children
    assumption (each indicator's only parent is its latent).

    Returns:
        The 0/1 structure, ordered [L1..Lm, x1..x(m * indicators)]; the indicators of L_k
        are x(k * indicators + 1) .. x((k + 1) * indicators), the order of Holzinger-
        Swineford's three tests per ability.
    """
    if n_latent < 1 or indicators < 2:
        raise ValueError("need n_latent >= 1 and indicators >= 2 (the pure-children assumption)")
    latents = [f"L{k + 1}" for k in range(n_latent)]
    observed = [f"x{i + 1}" for i in range(n_latent * indicators)]
    edges = [(latents[a], latents[b]) for a, b in combinations(range(n_latent), 2)]
    edges += [(latents[i // indicators], x) for i, x in enumerate(observed)]
    return _structure(latents + observed, n_latent, edges)


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


# ------------------------------------------------------------------------------------------
# Real data (the real rung): files that packages ship, read from the pinned asset cache
# ------------------------------------------------------------------------------------------
HS_FACTORS = {  # Holzinger & Swineford (1939): three abilities, three tests each
    "visual": ("x1", "x2", "x3"),  # visual perception, cubes, lozenges
    "textual": ("x4", "x5", "x6"),  # paragraph comprehension, sentence completion, word meaning
    "speed": ("x7", "x8", "x9"),  # speeded addition, counting dots, straight-curved capitals
}
HS_ROWS = 301  # pupils (Pasteur and Grant-White schools)

SACHS_PROTEINS = (
    "praf",
    "pmek",
    "plcg",
    "PIP2",
    "PIP3",
    "p44/42",
    "pakts473",
    "PKA",
    "PKC",
    "P38",
    "pjnk",
)
# The nine "general perturbation" conditions of Sachs et al. (2005), cells per condition, in
# the order the pooled file concatenates them (verified: a mean-shift scan of the log data
# finds a change point at each cumulative boundary, and the first row is the first cell of
# the CD3/CD28 file). Only the first condition, CD3/CD28 stimulation alone, intervenes on no
# protein of the network: it is the observational data set (853 cells).
SACHS_CONDITIONS = (
    ("cd3cd28", 853),
    ("cd3cd28+icam2", 902),
    ("cd3cd28+aktinhib", 911),
    ("cd3cd28+g0076", 723),
    ("cd3cd28+psitect", 810),
    ("cd3cd28+u0126", 799),
    ("cd3cd28+ly", 848),
    ("pma", 913),
    ("b2camp", 707),
)
SACHS_ROWS = sum(size for _, size in SACHS_CONDITIONS)  # 7,466
SACHS_OBSERVATIONAL_ROWS = SACHS_CONDITIONS[0][1]  # 853
SACHS_ROW_SETS = ("observational", "all")
SACHS_CONSENSUS_EDGES = 18  # the consensus graph of cyto_full_target.csv


@dataclass
class RealDataset:
    """A real data set and what is known about its structure.

    Attributes:
        name: the data set's name (a ``graphs`` entry of the config).
        X: data, shape (p, n), one row per variable, as read (no transformation).
        names: one name per variable (row of ``X``).
        clusters: for a measurement model, the known cluster of each variable (one label per
            row, e.g. the ability a test measures); ``None`` if not known.
        cluster_names: the label of each cluster id in ``clusters``.
        edges: a known (cause, effect) graph over ``names``; ``None`` if not known.
        source: where the file came from (package, version, file).
    """

    name: str
    X: np.ndarray
    names: list[str]
    clusters: np.ndarray | None = None
    cluster_names: list[str] | None = None
    edges: list[tuple[str, str]] | None = None
    source: str = ""

    def adjacency(self) -> np.ndarray:
        """The known graph as a (p, p) 0/1 matrix, ``[effect, cause] = 1``."""
        if self.edges is None:
            raise ValueError(f"{self.name} has no known graph")
        index = {name: i for i, name in enumerate(self.names)}
        A = np.zeros((len(self.names), len(self.names)))
        for cause, effect in self.edges:
            A[index[effect], index[cause]] = 1.0
        return A


def read_csv_table(path: Path, columns: tuple[str, ...] | list[str], rows: int | None = None):
    """A CSV file as a ``pandas.DataFrame``, refusing anything unexpected with one clear error
    that names the file.

    Args:
        path: the file.
        columns: columns that must be present (others are kept but not checked).
        rows: the exact number of data rows expected, if known.

    Returns:
        The table.

    Raises:
        ValueError: the file is unreadable or not CSV, lacks a column, has the wrong number
            of rows, or has a missing or non-numeric value in a numeric ``columns`` entry.
    """
    import pandas as pd

    path = Path(path)
    try:
        table = pd.read_csv(path)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(f"{path}: not a readable CSV file ({type(err).__name__}: {err})") from err
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; found {list(table.columns)}")
    if rows is not None and len(table) != rows:
        raise ValueError(f"{path}: expected {rows} data rows, found {len(table)} (truncated?)")
    return table


def _numeric_block(table, path: Path, columns: tuple[str, ...] | list[str]) -> np.ndarray:
    """The ``columns`` of ``table`` as a finite float array (n, len(columns))."""
    import pandas as pd

    block = table[list(columns)].apply(pd.to_numeric, errors="coerce").to_numpy(np.float64)
    bad = np.argwhere(~np.isfinite(block))
    if bad.size:
        row, col = bad[0]
        raise ValueError(
            f"{path}: column {columns[col]!r} has a missing or non-numeric value in data row "
            f"{int(row) + 1} ({len(bad)} bad cell(s) in all)"
        )
    return block


def read_edges(path: Path, names, rows: int | None = None) -> list[tuple[str, str]]:
    """A known graph's (cause, effect) edges from a CSV with columns Cause and Effect; an edge
    naming a variable outside ``names`` is refused, naming the file."""
    target = read_csv_table(path, ("Cause", "Effect"), rows=rows)
    edges = [(str(c), str(e)) for c, e in zip(target["Cause"], target["Effect"], strict=True)]
    unknown = sorted({v for edge in edges for v in edge} - set(names))
    if unknown:
        raise ValueError(f"{path}: edges name unknown variable(s) {unknown}")
    return edges


def _asset_files(name: str) -> dict[str, Path]:
    from shared.assets import require

    return require(name)  # verified paths, or AssetError naming the fetch command


def load_holzinger_swineford(path: Path | None = None) -> RealDataset:
    """Holzinger & Swineford (1939): 301 pupils x 9 test scores x1..x9.

    The known measurement structure: x1-x3 measure a visual, x4-x6 a textual and x7-x9 a
    speed ability (the classic three-factor model; the abilities are correlated, their
    causal order is not known).

    Args:
        path: the CSV (default: the ``holzinger_swineford`` asset, semopy 2.3.11).

    Returns:
        The data set, X of shape (9, 301), clusters 0/1/2 = visual/textual/speed.
    """
    path = Path(path) if path is not None else _asset_files("holzinger_swineford")[HS_FILE]
    names = [x for indicators in HS_FACTORS.values() for x in indicators]
    table = read_csv_table(path, names, rows=HS_ROWS)
    X = _numeric_block(table, path, names).T  # (9, 301)
    clusters = np.array([k for k, tests in enumerate(HS_FACTORS.values()) for _ in tests])
    return RealDataset(
        name="holzinger_swineford",
        X=X,
        names=names,
        clusters=clusters,
        cluster_names=list(HS_FACTORS),
        source=f"semopy 2.3.11: semopy/examples/{HS_FILE}",
    )


def load_sachs(
    rows: str = "observational",
    data_path: Path | None = None,
    target_path: Path | None = None,
) -> RealDataset:
    """Sachs et al. (2005): flow cytometry of 11 phosphorylated proteins and phospholipids in
    single human T cells, and the 18-edge consensus signalling graph.

    Args:
        rows: ``"observational"``: the first 853 cells (CD3/CD28 stimulation, no intervention
            on the network); ``"all"``: all 7,466 cells of the nine conditions pooled.
        data_path: the data CSV (default: the ``sachs`` asset, cdt 0.6.0).
        target_path: the consensus graph CSV (columns Cause, Effect).

    Returns:
        The data set, X of shape (11, n) in raw intensities, with the consensus edges.
    """
    if rows not in SACHS_ROW_SETS:
        raise ValueError(f"Sachs rows must be one of {SACHS_ROW_SETS}, got {rows!r}")
    if data_path is None or target_path is None:
        files = _asset_files("sachs")
        data_path = data_path or files[SACHS_DATA_FILE]
        target_path = target_path or files[SACHS_TARGET_FILE]
    data_path, target_path = Path(data_path), Path(target_path)
    table = read_csv_table(data_path, SACHS_PROTEINS, rows=SACHS_ROWS)
    X = _numeric_block(table, data_path, SACHS_PROTEINS).T  # (11, 7466)
    if np.any(X <= 0):
        raise ValueError(f"{data_path}: intensities must be positive (the rung takes logs)")
    if rows == "observational":
        X = X[:, :SACHS_OBSERVATIONAL_ROWS]
    edges = read_edges(target_path, SACHS_PROTEINS, rows=SACHS_CONSENSUS_EDGES)
    return RealDataset(
        name="sachs",
        X=X,
        names=list(SACHS_PROTEINS),
        edges=edges,
        source=f"cdt 0.6.0: cdt/data/resources/{SACHS_DATA_FILE}, {SACHS_TARGET_FILE}",
    )


def load_own(
    path: str | Path,
    columns: list[str] | None = None,
    clusters: list[str] | None = None,
    edges: str | Path | None = None,
    log: bool = False,
) -> RealDataset:
    """A user's data set (``graphs: [own]``): one CSV, a column per observed variable.

    Args:
        path: the CSV (a header row; numbers only, no gaps).
        columns: the variables to read, by name (default: every column).
        clusters: the known cluster of each variable, in ``columns`` order (optional).
        edges: a CSV of known edges, columns ``Cause`` and ``Effect`` (optional).
        log: the rung takes logs: every value must be positive.

    Returns:
        The data set, X of shape (p, n), with its clusters and edges where given.

    Raises:
        ValueError: one line naming the file and the column (a missing column, a gap or a
            value that is not a number, a value a log needs positive) or the key (a cluster
            list of the wrong length, an edge naming an unknown variable).
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    table = read_csv_table(path, columns or [])
    names = [str(c) for c in (columns or table.columns)]
    if len(names) < 2:
        raise ValueError(f"{path}: ETCD needs at least two variables, got {names}")
    X = _numeric_block(table, path, names).T  # (p, n)
    constant = [names[i] for i in range(len(names)) if np.ptp(X[i]) == 0]
    if constant:  # z-scoring divides by the spread; a constant carries no signal
        raise ValueError(f"{path}: column(s) {constant} hold one value only")
    if log:
        nonpositive = [names[i] for i in range(len(names)) if np.any(X[i] <= 0)]
        if nonpositive:
            raise ValueError(
                f"{path}: own.log takes logs, column(s) {nonpositive} hold values <= 0"
            )
    labels, cluster_names = None, None
    if clusters is not None:
        if len(clusters) != len(names):
            raise ValueError(
                f"own.clusters: {len(clusters)} labels for the {len(names)} variables of {path}"
            )
        cluster_names = list(dict.fromkeys(str(c) for c in clusters))
        labels = np.array([cluster_names.index(str(c)) for c in clusters])
    known_edges = None
    if edges is not None:
        edges = Path(edges).expanduser()
        if not edges.is_file():
            raise ValueError(f"{edges}: no such file (own.edges)")
        known_edges = read_edges(edges, names)
    return RealDataset(
        name="own",
        X=X,
        names=names,
        clusters=labels,
        cluster_names=cluster_names,
        edges=known_edges,
        source=str(path),
    )


def prepare(X: np.ndarray, log: bool = False, standardize: bool = True) -> np.ndarray:
    """The transformation applied once before any method runs.

    Args:
        X: data (p, n).
        log: take natural logarithms first (positive intensities, e.g. Sachs).
        standardize: z-score each variable (mean 0, variance 1). ETCD's HSIC uses a fixed
            kernel width 1 on its inputs (brief Sec. 3.1), which the simulated data's unit
            noise scale matches; real variables come in arbitrary units (Sachs intensities
            run to thousands), so each variable is put on that scale once. This is a
            per-variable rescaling of the data, which keeps a linear SEM linear, not the
            per-test z-scoring the brief warns against (Sec. 3.4).

    Returns:
        The transformed data, (p, n).
    """
    X = np.asarray(X, dtype=np.float64)
    if log:
        if np.any(X <= 0):
            raise ValueError("log transform needs positive data")
        X = np.log(X)
    if standardize:
        X = (X - X.mean(axis=1, keepdims=True)) / X.std(axis=1, keepdims=True)
    return X
