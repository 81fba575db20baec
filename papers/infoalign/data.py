r"""Data for InfoAlign (brief ``infoalign.md``): molecules, hidden biology, splits, context graphs.

Toy scale (brief Sec. 5)
    :func:`load_nci_molecules` reads the NCI SMILES shipped inside the rdkit wheel,
    :func:`hidden_biology` draws the synthetic mechanism latent, "cell morphology", "gene
    expression" and 8 binary tasks from fixed seed 1234, :func:`scaffold_split` makes the
    Murcko-scaffold splits, and :func:`build_toy_context_graph` builds one run seed's context
    graph (molecule, cell and expression nodes; similarity and measurement edges).

Paper scale (brief Secs. 3.1 and 6)
    :func:`load_context_graph` builds the full context graph (molecule, gene, cell and
    expression nodes) from a local folder holding the official pre-training files, and
    :func:`load_assays` reads an official downstream ``assays.csv.gz``. Nothing is ever
    downloaded: a missing file raises :class:`FileNotFoundError` naming it.

Both scales return a :class:`ContextGraph`: node types, a symmetric weighted CSR adjacency
and one NaN-filled target matrix per modality (brief Sec. 3.1 item 5).
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from rdkit import Chem, RDConfig, rdBase
from rdkit.Chem import Fragments, rdFingerprintGenerator
from rdkit.Chem.MolStandardize import rdMolStandardize
from rdkit.Chem.Scaffolds import MurckoScaffold
from torch_geometric.data import Data
from torch_geometric.utils.smiles import e_map, from_rdmol, x_map

from papers.infoalign.method import csr_adjacency
from papers.infoalign.model import ATOM_FIELD_SIZES, BOND_FIELD_SIZES  # noqa: F401 (re-export)

# ----------------------------------------------------------------------------------------------
# Constants
# ----------------------------------------------------------------------------------------------
MODALITIES = ("mol", "gene", "cell", "expr")
"""Node types / target blocks, in node-type-code order (brief Sec. 3.1)."""
MOL, GENE, CELL, EXPR = 0, 1, 2, 3

ATOM_FIELDS = tuple(x_map)
"""The 9 categorical atom fields of ``torch_geometric.utils.from_smiles`` (brief Sec. 3.2)."""
BOND_FIELDS = tuple(e_map)
"""The 3 categorical bond fields (type, stereo, conjugated)."""

NCI_PATH = os.path.join(RDConfig.RDDataDir, "NCI", "first_5K.smi")
"""The 4 999 NCI SMILES shipped with rdkit (brief Sec. 5)."""

FRAGMENTS = (
    "fr_benzene",
    "fr_halogen",
    "fr_ether",
    "fr_Al_OH",
    "fr_ketone",
    "fr_ester",
    "fr_amide",
    "fr_NH2",
    "fr_nitro",
    "fr_COO",
    "fr_phenol",
    "fr_aniline",
    "fr_pyridine",
    "fr_bicyclic",
    "fr_NH1",
    "fr_sulfonamd",
    "fr_aldehyde",
    "fr_alkyl_halide",
    "fr_methoxy",
    "fr_furan",
    "fr_Ar_N",
    "fr_C_S",
    "fr_nitrile",
    "fr_urea",
)
"""The 24 ``rdkit.Chem.Fragments`` counters of the hidden biology, in order (brief Sec. 5)."""

# keyed by config.DOWNSTREAM_NAMES, as DOWNSTREAM_TASKS (a test checks the keys)
DOWNSTREAM = {"chembl2k": 4, "broad6k": 2, "biogenadme": 4, "moltoxcast": 2}
"""First label column of each official ``assays.csv.gz`` (brief Sec. 6)."""
DOWNSTREAM_TASKS = {"chembl2k": 41, "broad6k": 32, "biogenadme": 6, "moltoxcast": 617}
"""Number of tasks of each downstream set (brief Secs. 2 and 6)."""
REGRESSION = frozenset({"biogenadme"})
"""Downstream sets evaluated by mean MAE (L1 loss) instead of mean ROC-AUC (brief Sec. 3.6)."""

SKIP_REASONS = ("unparseable", "empty", "too_small", "too_large", "duplicate", "unfeaturisable")
_NOT_DOWNLOADED = "nothing is downloaded by this code; place the official file there (brief Sec. 6)"


# ----------------------------------------------------------------------------------------------
# Molecules
# ----------------------------------------------------------------------------------------------
def _parse(smiles: object) -> Chem.Mol | None:
    """An rdkit molecule, or None; rdkit's error log is blocked while parsing."""
    if not isinstance(smiles, str):
        return None
    with rdBase.BlockLogs():
        try:
            return Chem.MolFromSmiles(smiles)
        except Exception:  # rdkit may raise on pathological input instead of returning None
            return None


def featurise(smiles: str) -> Data | None:
    """The 9-field atom / 3-field bond graph of ``torch_geometric.utils.from_smiles``
    (brief Secs. 3.2 and 5), or None for an unparseable SMILES or one without atoms.

    Uses ``from_rdmol``, the featuriser behind ``from_smiles``, on our own (log-blocked) parse:
    ``from_smiles`` would return an *empty* graph for a bad SMILES and switch rdkit's log off
    for the whole process. ``x``: (n, 9) long, ``edge_index``: (2, 2 * bonds) long,
    ``edge_attr``: (2 * bonds, 3) long, ``smiles``: the input. Atoms whose value is outside
    torch_geometric's vocabularies (e.g. a degree above 10) give None, never an exception.
    """
    mol = _parse(smiles)
    if mol is None or mol.GetNumAtoms() == 0:
        return None
    try:
        data = from_rdmol(mol)
    except (ValueError, AssertionError):
        return None
    data.smiles = smiles
    return data


@dataclass
class Molecules:
    """Parsed molecules (brief Sec. 5).

    Attributes:
        smiles: canonical SMILES of each kept molecule.
        graphs: ``featurise(smiles[i])`` of each kept molecule.
        n_skipped: input lines dropped (unparseable, filtered or duplicate).
        skipped_reasons: count per reason (keys: :data:`SKIP_REASONS`).
        source_index: index of each kept molecule in the input list.
    """

    smiles: list[str]
    graphs: list[Data]
    n_skipped: int
    skipped_reasons: dict[str, int]
    source_index: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.smiles)


def parse_molecules(
    smiles_list: Sequence[str],
    min_atoms: int | None = None,
    max_atoms: int | None = None,
    largest_fragment: bool = True,
    *,
    deduplicate: bool = True,
    max_molecules: int | None = None,
) -> Molecules:
    """Parse, clean, filter and featurise SMILES; bad input is skipped and counted, never fatal.

    For each SMILES in order: parse (None/empty -> skipped), keep the largest fragment
    (``rdMolStandardize.LargestFragmentChooser``) if asked, keep ``min_atoms``..``max_atoms``
    heavy atoms (bounds inclusive; None = no bound), canonicalise, drop repeated canonical
    SMILES if ``deduplicate``, featurise the canonical SMILES; stop once ``max_molecules`` are
    kept (later lines are neither read nor counted).
    """
    chooser = rdMolStandardize.LargestFragmentChooser() if largest_fragment else None
    reasons = dict.fromkeys(SKIP_REASONS, 0)
    kept_smiles: list[str] = []
    graphs: list[Data] = []
    source: list[int] = []
    seen: set[str] = set()
    for index, smiles in enumerate(smiles_list):
        if max_molecules is not None and len(kept_smiles) >= max_molecules:
            break
        mol = _parse(smiles.strip() if isinstance(smiles, str) else smiles)
        if mol is None:
            reasons["unparseable"] += 1
            continue
        if chooser is not None and mol.GetNumAtoms() > 0:
            with rdBase.BlockLogs():
                mol = chooser.choose(mol)
        n_atoms = mol.GetNumAtoms()
        if n_atoms == 0:
            reasons["empty"] += 1
            continue
        if min_atoms is not None and n_atoms < min_atoms:
            reasons["too_small"] += 1
            continue
        if max_atoms is not None and n_atoms > max_atoms:
            reasons["too_large"] += 1
            continue
        canonical = Chem.MolToSmiles(mol)
        if deduplicate and canonical in seen:
            reasons["duplicate"] += 1
            continue
        graph = featurise(canonical)
        if graph is None:
            reasons["unfeaturisable"] += 1
            continue
        seen.add(canonical)
        kept_smiles.append(canonical)
        graphs.append(graph)
        source.append(index)
    return Molecules(kept_smiles, graphs, sum(reasons.values()), reasons, source)


def load_nci_molecules(
    max_molecules: int = 2400, min_atoms: int = 6, max_atoms: int = 40
) -> Molecules:
    """The toy molecules (brief Sec. 5): rdkit's ``Data/NCI/first_5K.smi`` (``SMILES<TAB>id``)
    in file order, largest fragment, ``min_atoms``..``max_atoms`` heavy atoms, unique canonical
    SMILES, the first ``max_molecules`` kept."""
    if not os.path.isfile(NCI_PATH):
        raise FileNotFoundError(f"{NCI_PATH} not found; it ships with the rdkit wheel")
    with open(NCI_PATH) as handle:
        lines = [line.split("\t")[0].strip() for line in handle if line.strip()]
    return parse_molecules(
        lines, min_atoms, max_atoms, largest_fragment=True, max_molecules=max_molecules
    )


def morgan_fingerprints(smiles: Sequence[str], radius: int, n_bits: int) -> np.ndarray:
    """(N, n_bits) float32 0/1 Morgan bit vectors (``rdFingerprintGenerator``; identical to the
    official ``GetMorganFingerprintAsBitVect``). Raises ValueError on an unparseable SMILES."""
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    out = np.zeros((len(smiles), n_bits), dtype=np.float32)
    for i, s in enumerate(smiles):
        mol = _parse(s)
        if mol is None:
            raise ValueError(f"unparseable SMILES at index {i}: {s!r}")
        out[i] = generator.GetFingerprintAsNumPy(mol)
    return out


# ----------------------------------------------------------------------------------------------
# Hidden biology (toy)
# ----------------------------------------------------------------------------------------------
@dataclass
class Biology:
    """Synthetic biology of the toy (brief Sec. 5), one row per molecule, all float32.

    Attributes:
        h: (N, 8) mechanism latent.
        cell: (N, 64) "cell morphology" profile.
        expr: (N, 48) "gene expression" profile.
        labels: (N, 8) binary (0/1) downstream labels.
    """

    h: np.ndarray
    cell: np.ndarray
    expr: np.ndarray
    labels: np.ndarray


def fragment_presence(smiles: Sequence[str]) -> np.ndarray:
    """(N, 24) 0/1: presence (count > 0) of each :data:`FRAGMENTS` group (brief Sec. 5 step 1)."""
    counters = [getattr(Fragments, name) for name in FRAGMENTS]
    out = np.zeros((len(smiles), len(FRAGMENTS)))
    for i, s in enumerate(smiles):
        mol = _parse(s)
        if mol is None:
            raise ValueError(f"unparseable SMILES at index {i}: {s!r}")
        out[i] = [counter(mol) > 0 for counter in counters]
    return out


def hidden_biology(
    smiles: Sequence[str],
    seed: int = 1234,
    *,
    n_latent: int = 8,
    n_cell: int = 64,
    n_expr: int = 48,
    n_tasks: int = 8,
    mask_prob: float = 0.4,
    latent_noise: float = 0.1,
    feature_noise: float = 0.5,
    label_percentile: float = 60.0,
) -> Biology:
    r"""Brief Sec. 5 "Hidden biology", steps 1-5, from one ``np.random.RandomState(seed)``.

    $b \in \{0,1\}^{24}$ fragment presence; $W_{kj} = N(0,1)\,[U < 0.4]$;
    $h = \tanh(bW^\top - \overline{bW^\top}) + 0.1\,\epsilon$ (column means over molecules);
    cell $= hA^\top + 0.5\,\epsilon$, expr $= hB^\top + 0.5\,\epsilon$;
    label$_t$ = [$(hV^\top)_t$ > its 60th percentile over molecules].
    Draw order: W normals, W mask uniforms, h noise, A, B, cell noise, expression noise, V.
    """
    b = fragment_presence(smiles)
    n = len(smiles)
    rs = np.random.RandomState(seed)
    normals = rs.standard_normal((n_latent, b.shape[1]))
    mask = rs.random_sample((n_latent, b.shape[1])) < mask_prob
    w = normals * mask
    z = b @ w.T
    h = np.tanh(z - z.mean(axis=0, keepdims=True)) + latent_noise * rs.standard_normal(
        (n, n_latent)
    )
    a = rs.standard_normal((n_cell, n_latent))
    b_expr = rs.standard_normal((n_expr, n_latent))
    cell = h @ a.T + feature_noise * rs.standard_normal((n, n_cell))
    expr = h @ b_expr.T + feature_noise * rs.standard_normal((n, n_expr))
    v = rs.standard_normal((n_tasks, n_latent))
    logits = h @ v.T
    labels = logits > np.percentile(logits, label_percentile, axis=0, keepdims=True)
    f32 = np.float32
    return Biology(h.astype(f32), cell.astype(f32), expr.astype(f32), labels.astype(f32))


# ----------------------------------------------------------------------------------------------
# Scaffolds and splits
# ----------------------------------------------------------------------------------------------
def murcko_scaffold(smiles: str) -> str | None:
    """Canonical SMILES of the Murcko scaffold (``""`` for acyclic molecules), None if the
    SMILES does not parse (official ``get_scaffold``)."""
    mol = _parse(smiles)
    if mol is None:
        return None
    return Chem.MolToSmiles(MurckoScaffold.GetScaffoldForMol(mol))


def scaffold_groups(smiles: Sequence[str]) -> list[list[int]]:
    """Indices grouped by Murcko scaffold, groups in order of first appearance, singletons
    included; an unparseable SMILES is a group of its own."""
    groups: dict[object, list[int]] = {}
    for i, s in enumerate(smiles):
        scaffold = murcko_scaffold(s)
        key: object = ("unparseable", i) if scaffold is None else scaffold
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def scaffold_split(
    smiles: Sequence[str],
    fractions: tuple[float, ...],
    shuffle_seed: int,
    *,
    whole_groups: bool = True,
) -> list[np.ndarray]:
    """Murcko-scaffold split (brief Secs. 3.6 and 5): one int64 index array per fraction.

    As the official ``scaffold_split``: scaffold groups (first-appearance order, singletons
    kept) are shuffled with ``np.random.RandomState(shuffle_seed).shuffle`` (the same
    permutation as the official ``np.random.seed(3); np.random.shuffle``) and filled in that
    order; partition k's cut-off is ``sum(int(f_j * N) for j <= k)`` and the last partition
    takes the rest. Indices keep the fill order.

    ``whole_groups=True`` (default, brief Sec. 7.9): a whole group goes to the first partition
    whose cut-off the running count has not reached, so no scaffold is in two partitions and
    each partition is within one group of its target size (the group that crosses a cut-off
    stays whole, so a large group can move a partition well off its fraction).
    ``whole_groups=False``: the official rule, molecule by molecule, so sizes are exactly the
    cut-offs but the group that crosses a cut-off is cut in two.
    """
    fractions = tuple(float(f) for f in fractions)
    if not fractions or min(fractions) < 0 or abs(sum(fractions) - 1.0) > 1e-6:
        raise ValueError(f"fractions must be non-negative and sum to 1, got {fractions}")
    n = len(smiles)
    cutoffs = np.cumsum([int(f * n) for f in fractions[:-1]])
    groups = scaffold_groups(smiles)
    np.random.RandomState(shuffle_seed).shuffle(groups)
    parts: list[list[int]] = [[] for _ in fractions]
    count = 0
    for group in groups:
        members = [group] if whole_groups else [[i] for i in group]
        for chunk in members:
            parts[int(np.searchsorted(cutoffs, count, side="right"))].extend(chunk)
            count += len(chunk)
    return [np.asarray(p, dtype=np.int64) for p in parts]


# ----------------------------------------------------------------------------------------------
# Context graph container and graph utilities
# ----------------------------------------------------------------------------------------------
@dataclass
class ContextGraph:
    """The context graph (brief Sec. 3.1) as arrays.

    Attributes:
        node_type: (n_nodes,) int64 codes :data:`MOL`, :data:`GENE`, :data:`CELL`, :data:`EXPR`.
        molecule_node: node index of each context molecule, in the order of the molecules
            given to the builder (both builders put molecules first, so this is ``arange``).
        indptr, indices: int64 CSR of the symmetric adjacency (no self-loops; sorted columns).
        weights: float32 edge weight of each CSR entry (symmetric; may exceed 1 for
            expression-derived molecule-gene edges).
        targets: modality -> (n_nodes, dim) float32, NaN except on that modality's nodes.
            Only modalities with nodes are present (the toy has no "gene").
        meta: edge counts per kind, similarity thresholds, skipped inputs, build parameters.
    """

    node_type: np.ndarray
    molecule_node: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    targets: dict[str, np.ndarray]
    meta: dict = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        return int(self.node_type.shape[0])

    @property
    def n_edges(self) -> int:
        """Number of undirected edges (each is stored twice in the CSR)."""
        return int(self.indices.shape[0]) // 2

    @property
    def degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    def neighbours(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node] : self.indptr[node + 1]]

    def save(self, path: str) -> None:
        """Write the graph to one ``.npz`` file (meta as JSON)."""
        arrays = {f"target_{m}": t for m, t in self.targets.items()}
        np.savez(
            path,
            node_type=self.node_type,
            molecule_node=self.molecule_node,
            indptr=self.indptr,
            indices=self.indices,
            weights=self.weights,
            meta=np.array(json.dumps(self.meta, default=_json_default)),
            **arrays,
        )

    @classmethod
    def load(cls, path: str) -> ContextGraph:
        """Read a graph written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as z:
            targets = {k[len("target_") :]: z[k] for k in z.files if k.startswith("target_")}
            return cls(
                node_type=z["node_type"],
                molecule_node=z["molecule_node"],
                indptr=z["indptr"],
                indices=z["indices"],
                weights=z["weights"],
                targets=targets,
                meta=json.loads(str(z["meta"])),
            )


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in ContextGraph.meta")


def csr_from_edges(
    n_nodes: int, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetric CSR ``(indptr, indices, weights)`` from undirected edge lists.

    Each (row, col, w) is stored in both directions; self-loops are dropped; repeated pairs
    (in either orientation) are merged by taking the maximum weight. Deviation: the official
    networkx build keeps the *last* weight added for a repeated pair (e.g. an expression
    weight replacing a Hetionet 1), which depends on insertion order.
    """
    rows = np.asarray(rows, dtype=np.int64).ravel()
    cols = np.asarray(cols, dtype=np.int64).ravel()
    weights = np.asarray(weights, dtype=np.float64).ravel()
    if not rows.shape == cols.shape == weights.shape:
        raise ValueError("rows, cols and weights must have the same length")
    if rows.size and (min(rows.min(), cols.min()) < 0 or max(rows.max(), cols.max()) >= n_nodes):
        raise ValueError(f"edge endpoints must lie in [0, {n_nodes})")
    if np.isnan(weights).any():
        raise ValueError("edge weights must not be NaN")
    keep = rows != cols
    src = np.concatenate([rows[keep], cols[keep]])
    dst = np.concatenate([cols[keep], rows[keep]])
    w = np.concatenate([weights[keep], weights[keep]])
    key = src * n_nodes + dst
    order = np.argsort(key, kind="stable")
    key, w = key[order], w[order]
    if key.size:
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        w = np.maximum.reduceat(w, starts)
        key = key[starts]
    indptr, indices, merged = csr_adjacency(
        n_nodes, key // n_nodes, key % n_nodes, w, undirected=False
    )  # both directions are listed already
    return indptr, indices, merged.astype(np.float32)


def minmax_normalise(features: np.ndarray) -> np.ndarray:
    """Per-feature min-max scaling to [0, 1] over the rows (brief Secs. 3.1 item 5, 3.8.6).

    NaN-aware (min/max ignore NaN; NaN stays NaN). As the official ``minmax_normalize``, a
    constant feature has its min and max nudged by -/+1e-6, so it maps to 0.5. Computed in
    float64 (so the nudge survives), returned as float32; an all-NaN feature stays NaN.
    """
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"features must be 2-D (rows x features), got shape {x.shape}")
    if x.shape[0] == 0:
        return x.astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        low = np.nanmin(x, axis=0)
        high = np.nanmax(x, axis=0)
    equal = low == high
    low[equal] -= 1e-6
    high[equal] += 1e-6
    span = high - low
    out = (x - low) / np.where(span == 0, 1.0, span)
    out[:, span == 0] = 0.0  # only if the nudge vanished in float64 (|value| > ~1e9)
    return out.astype(np.float32)


def sparsity_threshold(
    similarities: np.ndarray,
    min_threshold: float,
    target_sparsity: float,
    *,
    high_threshold: float = 0.99,
    n_total: int | None = None,
) -> float:
    """Similarity threshold by bisection (brief Sec. 3.1 item 4; official
    ``determine_threshold``).

    Sparsity(t) = 1 - #(s > t) / n_total over the computed (within-cluster, non-zero)
    similarities. Start at t = (low + high) / 2 with low = ``min_threshold``, high = 0.99; while
    low < high - 0.001: if sparsity(t) > target, high = t, else low = t; t = midpoint. The last
    midpoint is returned, so the result lies in (min_threshold, 0.99). ``n_total`` lets a
    caller pass only the similarities above ``min_threshold`` (all that the counts need)
    together with the total number of similarities; by default it is ``similarities.size``.
    With no similarities at all the result is ``min_threshold``.
    """
    values = np.sort(np.asarray(similarities, dtype=np.float64).ravel())
    total = values.size if n_total is None else int(n_total)
    if total == 0:
        return float(min_threshold)

    def sparsity(t: float) -> float:
        above = values.size - np.searchsorted(values, t, side="right")
        return 1.0 - above / total

    low, high = float(min_threshold), float(high_threshold)
    threshold = (low + high) / 2.0
    current = sparsity(threshold)
    while low < high - 0.001:
        if current > target_sparsity:
            high = threshold
        else:
            low = threshold
        threshold = (low + high) / 2.0
        current = sparsity(threshold)
    return float(threshold)


# ----------------------------------------------------------------------------------------------
# Similarities (vectorised)
# ----------------------------------------------------------------------------------------------
def tanimoto_matrix(fa: np.ndarray, fb: np.ndarray) -> np.ndarray:
    """Tanimoto similarity of 0/1 fingerprint rows, (len(fa), len(fb)) float64; 0 where both
    fingerprints are empty. Equal to rdkit's ``BulkTanimotoSimilarity`` (exact integer counts)."""
    fa = np.asarray(fa, dtype=np.float32)
    fb = np.asarray(fb, dtype=np.float32)
    inter = (fa @ fb.T).astype(np.float64)
    union = fa.sum(1, dtype=np.float64)[:, None] + fb.sum(1, dtype=np.float64)[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def standardised_unit_rows(features: np.ndarray) -> np.ndarray:
    """Rows z-scored across their own features (NaN -> 0, std + 1e-10, official
    ``pairwise_cosine_similarity``) then scaled to unit length (zero rows stay zero), so
    ``Z @ Z.T`` is the cosine similarity of the row-standardised features (float64)."""
    x = np.nan_to_num(np.asarray(features, dtype=np.float64))
    if x.shape[1] == 0:
        return x
    z = (x - x.mean(axis=1, keepdims=True)) / (x.std(axis=1, keepdims=True) + 1e-10)
    norm = np.linalg.norm(z, axis=1, keepdims=True)
    return np.divide(z, norm, out=np.zeros_like(z), where=norm > 0)


def _upper_pairs(
    n: int, block: Callable[[int, int], np.ndarray], keep_above: float, chunk: int = 1024
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Pairs i < j whose similarity is >= ``keep_above``, plus the number of non-zero
    similarities among all i < j. ``block(a, b)`` returns rows a:b against rows a:n."""
    rows, cols, sims, nonzero = [], [], [], 0
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        s = block(a, b)
        upper = np.arange(a, n)[None, :] > np.arange(a, b)[:, None]
        nonzero += int(np.count_nonzero(s[upper]))
        i, j = np.nonzero(upper & (s >= keep_above))
        rows.append(i + a)
        cols.append(j + a)
        sims.append(s[i, j])
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0), 0
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(sims), nonzero


def _top_fraction_pairs(
    sim: np.ndarray, top_fraction: float, min_threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Pairs i < j of a dense similarity matrix in the top ``top_fraction`` of all pairs, but
    never below ``min_threshold``; returns rows, cols, similarities, threshold used."""
    n = sim.shape[0]
    iu, ju = np.triu_indices(n, k=1)
    values = sim[iu, ju]
    if values.size == 0:
        return iu, ju, values, float(min_threshold)
    k = max(1, int(top_fraction * values.size))
    kth = float(np.partition(values, values.size - k)[values.size - k])
    threshold = max(kth, float(min_threshold))
    keep = values >= threshold
    return iu[keep], ju[keep], values[keep], threshold


# ----------------------------------------------------------------------------------------------
# Toy context graph (brief Sec. 5)
# ----------------------------------------------------------------------------------------------
def _nan_targets(n_nodes: int, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.full((n_nodes, values.shape[1]), np.nan, dtype=np.float32)
    out[rows] = values
    return out


def build_toy_context_graph(
    mol_smiles: Sequence[str],
    cell: np.ndarray,
    expr: np.ndarray,
    seed: int,
    *,
    p_cell: float = 0.6,
    p_expr: float = 0.4,
    mol_threshold: float = 0.6,
    feature_top_fraction: float = 0.005,
    feature_min_threshold: float = 0.6,
    fp_radius: int = 2,
    fp_bits: int = 1024,
) -> ContextGraph:
    """One run seed's toy context graph (brief Sec. 5 "Context graph (per run seed)").

    ``cell`` / ``expr`` hold one profile row per molecule of ``mol_smiles``. With
    ``rng = np.random.default_rng(seed)``: ``rng.random(n) < p_cell`` picks the molecules that
    get a cell node, then ``rng.random(n) < p_expr`` those that get an expression node (edge
    weight 1 to their molecule). Nodes: molecules ``0..n-1`` (in input order), then cell nodes,
    then expression nodes (each in molecule order).
    Edges: molecule-molecule where the Tanimoto of Morgan(``fp_radius``, ``fp_bits``) bits is
    >= ``mol_threshold`` over all pairs; cell-cell and expression-expression where the cosine of
    row-standardised features is in the top ``feature_top_fraction`` of all pairs of that type
    and >= ``feature_min_threshold``. Similarity weights are rounded to 2 decimals (the
    threshold is applied before rounding, as officially).
    Targets: "mol" = the same fingerprints; "cell" / "expr" = min-max-normalised features over
    that type's nodes; NaN elsewhere. No "gene" target (the toy has no gene nodes).
    """
    n = len(mol_smiles)
    cell = np.asarray(cell, dtype=np.float64)
    expr = np.asarray(expr, dtype=np.float64)
    if cell.ndim != 2 or expr.ndim != 2 or cell.shape[0] != n or expr.shape[0] != n:
        raise ValueError(
            f"cell and expr need one row per molecule ({n}); got {cell.shape}, {expr.shape}"
        )
    rng = np.random.default_rng(seed)
    cell_mols = np.flatnonzero(rng.random(n) < p_cell)
    expr_mols = np.flatnonzero(rng.random(n) < p_expr)
    n_cell, n_expr = len(cell_mols), len(expr_mols)
    cell_nodes = n + np.arange(n_cell)
    expr_nodes = n + n_cell + np.arange(n_expr)
    n_nodes = n + n_cell + n_expr
    node_type = np.concatenate(
        [np.full(n, MOL), np.full(n_cell, CELL), np.full(n_expr, EXPR)]
    ).astype(np.int64)

    fps = morgan_fingerprints(mol_smiles, fp_radius, fp_bits)
    tanimoto = tanimoto_matrix(fps, fps)
    mi, mj = np.triu_indices(n, k=1)
    mol_sims = tanimoto[mi, mj]
    keep = mol_sims >= mol_threshold
    mi, mj, mol_w = mi[keep], mj[keep], np.round(mol_sims[keep], 2)

    zc = standardised_unit_rows(cell[cell_mols])
    ci, cj, cell_sims, cell_thr = _top_fraction_pairs(
        zc @ zc.T, feature_top_fraction, feature_min_threshold
    )
    ze = standardised_unit_rows(expr[expr_mols])
    ei, ej, expr_sims, expr_thr = _top_fraction_pairs(
        ze @ ze.T, feature_top_fraction, feature_min_threshold
    )

    rows = np.concatenate([cell_mols, expr_mols, mi, cell_nodes[ci], expr_nodes[ei]])
    cols = np.concatenate([cell_nodes, expr_nodes, mj, cell_nodes[cj], expr_nodes[ej]])
    weights = np.concatenate(
        [
            np.ones(n_cell + n_expr),
            mol_w,
            np.round(cell_sims, 2),
            np.round(expr_sims, 2),
        ]
    )
    indptr, indices, csr_w = csr_from_edges(n_nodes, rows, cols, weights)
    targets = {
        "mol": _nan_targets(n_nodes, np.arange(n), fps),
        "cell": _nan_targets(n_nodes, cell_nodes, minmax_normalise(cell[cell_mols])),
        "expr": _nan_targets(n_nodes, expr_nodes, minmax_normalise(expr[expr_mols])),
    }
    meta = {
        "scale": "toy",
        "seed": int(seed),
        "edges": {
            "mol-cell": n_cell,
            "mol-expr": n_expr,
            "mol-mol": int(mi.size),
            "cell-cell": int(ci.size),
            "expr-expr": int(ei.size),
        },
        "thresholds": {"mol": mol_threshold, "cell": cell_thr, "expr": expr_thr},
    }
    return ContextGraph(
        node_type=node_type,
        molecule_node=np.arange(n, dtype=np.int64),
        indptr=indptr,
        indices=indices,
        weights=csr_w,
        targets=targets,
        meta=meta,
    )


# ----------------------------------------------------------------------------------------------
# Paper scale: official files (brief Sec. 6)
# ----------------------------------------------------------------------------------------------
CONTEXT_FILES = {
    "structure": "structure.csv.gz",
    "bray": "CP-Bray.csv.gz",
    "bray_feature": "CP-Bray_feature.npz",
    "jump": "CP-JUMP.csv.gz",
    "jump_feature": "CP-JUMP_feature.npz",
    "crispr": "G-CRISPR.csv.gz",
    "crispr_feature": "G-CRISPR_feature.npz",
    "orf": "G-ORF.csv.gz",
    "orf_feature": "G-ORF_feature.npz",
    "express": "GE.csv.gz",
    "express_feature": "GE_feature.npz",
    "l1k": "L1k_idmaps.csv",
}
"""Required pre-training files (official layout, brief Sec. 6)."""
OPTIONAL_CONTEXT_FILES = {"gene_gene": "G-G.csv.gz"}
"""Hetionet gene-gene relations; the edges are skipped if the file is absent."""

_MISSING = {"", "nan", "NaN", "NA", "N/A", "None", "null"}


def _require_file(path: str) -> None:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found; {_NOT_DOWNLOADED}")


def _open_text(path: str):
    if path.endswith(".gz"):
        return gzip.open(path, "rt", newline="")
    return open(path, newline="")


def read_csv_columns(
    path: str, required: Sequence[str], optional: Sequence[str] = ()
) -> dict[str, list[str]]:
    """The named columns of a (gzipped) CSV file as lists of strings (stdlib ``csv``).

    Raises FileNotFoundError for a missing file and ValueError naming the file and column for
    a missing required column; absent optional columns are left out of the result.
    """
    _require_file(path)
    with _open_text(path) as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{path} is empty (no header line)")
        header = [h.strip() for h in header]
        missing = [c for c in required if c not in header]
        if missing:
            raise ValueError(f"{path} lacks column(s) {missing}; its header is {header[:12]}")
        index = {c: header.index(c) for c in (*required, *optional) if c in header}
        columns: dict[str, list[str]] = {c: [] for c in index}
        for row in reader:
            for c, i in index.items():
                columns[c].append(row[i].strip() if i < len(row) else "")
    return columns


def _load_features(path: str, n_rows: int, table: str) -> np.ndarray:
    """The ``data`` array of an official ``*_feature.npz``, float32, one row per table row."""
    _require_file(path)
    with np.load(path, allow_pickle=False) as z:
        if "data" not in z.files:
            raise ValueError(f"{path} has no 'data' array (it has {z.files})")
        features = np.asarray(z["data"], dtype=np.float32)
    if features.ndim != 2 or features.shape[0] != n_rows:
        raise ValueError(f"{path} has shape {features.shape}; expected {n_rows} rows ({table})")
    return features


def _id_key(value: str) -> str | None:
    """A table id as a string key; None when missing."""
    value = value.strip()
    return None if value in _MISSING else value


def _gene_key(value: str) -> str | None:
    """An NCBI gene id as a canonical string ("7157.0" -> "7157"); None when missing."""
    value = value.strip()
    if value in _MISSING:
        return None
    if value[:1] in "gG" and value[1:].replace(".", "", 1).isdigit():  # official "g" prefix
        value = value[1:]
    try:
        number = float(value)
    except ValueError:
        return value
    return str(int(number)) if number.is_integer() else value


def _cluster_rows(features: np.ndarray, n_clusters: int, seed: int) -> list[np.ndarray]:
    """Row groups from K-means (``random_state=seed``) on a 2-component PCA of the
    NaN-zeroed features (official ``perform_pca_and_kmeans``); only groups of >= 2 rows."""
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    n = features.shape[0]
    if n < 2:
        return []
    x = np.nan_to_num(features.astype(np.float64))
    n_components = min(2, n, x.shape[1])
    reduced = PCA(n_components=n_components).fit_transform(x) if n_components else x
    k = min(n_clusters, n)
    labels = KMeans(n_clusters=k, random_state=seed, n_init="auto").fit(reduced).labels_
    groups = [np.flatnonzero(labels == c) for c in range(k)]
    return [g for g in groups if g.size > 1]


def _grouped_similarity_pairs(
    groups: Sequence[np.ndarray],
    block_factory: Callable[[np.ndarray], Callable[[int, int], np.ndarray]],
    min_threshold: float,
    target_sparsity: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
    """Within-group similarity edges with the bisection threshold (brief Sec. 3.1 item 4).

    Returns global rows, cols, weights rounded to 2 decimals, the threshold, and the number of
    non-zero within-group similarities it was found on.
    """
    rows, cols, sims, nonzero = [], [], [], 0
    for group in groups:
        i, j, s, nz = _upper_pairs(len(group), block_factory(group), min_threshold)
        rows.append(group[i])
        cols.append(group[j])
        sims.append(s)
        nonzero += nz
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0), float(min_threshold), 0
    r, c, s = np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)
    threshold = sparsity_threshold(s, min_threshold, target_sparsity, n_total=nonzero)
    keep = s >= threshold
    return r[keep], c[keep], np.round(s[keep], 2), threshold, nonzero


def _cosine_blocks(features: np.ndarray) -> Callable[[np.ndarray], Callable]:
    z_all = standardised_unit_rows(features).astype(np.float32)

    def factory(group: np.ndarray) -> Callable[[int, int], np.ndarray]:
        z = z_all[group]
        return lambda a, b: z[a:b] @ z[a:].T

    return factory


def _tanimoto_blocks(fps: np.ndarray) -> Callable[[np.ndarray], Callable]:
    def factory(group: np.ndarray) -> Callable[[int, int], np.ndarray]:
        f = fps[group]
        return lambda a, b: tanimoto_matrix(f[a:b], f[a:])

    return factory


def _group_rows(keys: Sequence[str | None]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        if key is not None:
            groups.setdefault(key, []).append(i)
    return groups


def _merge_cell_rows(
    bray_mols: list[str | None], jump_mols: list[str | None]
) -> tuple[list[int], list[int], list[str | None]]:
    """Outer merge of Bray and JUMP rows on ``mol_id`` (official
    ``merge_features_and_dataframes(connect_col="mol_id")``): one cell node per (Bray row,
    JUMP row) pair of the same molecule, or per unmatched row; -1 = no row from that source.
    Molecules in order of first appearance (Bray, then JUMP); rows without a mol_id follow,
    one node each, linked to no molecule."""
    bray_groups, jump_groups = _group_rows(bray_mols), _group_rows(jump_mols)
    bray_idx: list[int] = []
    jump_idx: list[int] = []
    mols: list[str | None] = []
    for mol in list(bray_groups) + [m for m in jump_groups if m not in bray_groups]:
        for b in bray_groups.get(mol, [-1]):
            for j in jump_groups.get(mol, [-1]):
                bray_idx.append(b)
                jump_idx.append(j)
                mols.append(mol)
    for i, key in enumerate(bray_mols):
        if key is None:
            bray_idx.append(i)
            jump_idx.append(-1)
            mols.append(None)
    for i, key in enumerate(jump_mols):
        if key is None:
            bray_idx.append(-1)
            jump_idx.append(i)
            mols.append(None)
    return bray_idx, jump_idx, mols


def _concat_by_index(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Concatenate feature blocks row-wise by index arrays (-1 -> NaN block)."""
    n = len(parts[0][1])
    out = np.full((n, sum(f.shape[1] for f, _ in parts)), np.nan, dtype=np.float32)
    start = 0
    for features, index in parts:
        index = np.asarray(index, dtype=np.int64)
        present = index >= 0
        out[present, start : start + features.shape[1]] = features[index[present]]
        start += features.shape[1]
    return out


def load_context_graph(
    root: str,
    *,
    fp_radius: int = 4,
    fp_bits: int = 1024,
    sim_fp_radius: int = 2,
    threshold: float = 0.8,
    target_sparsity: float = 0.995,
    top_compound_gene_express: float = 0.01,
    kmeans_clusters: int = 100,
    seed: int = 0,
    cache_path: str | None = None,
) -> tuple[ContextGraph, list[str]]:
    """The paper-scale context graph (brief Sec. 3.1) from the official files in ``root``.

    Returns the graph and the canonical SMILES of its molecule nodes (``molecule_node[i]``
    is the node of ``smiles[i]``). Nothing is downloaded; a missing file raises
    FileNotFoundError naming it, a missing column raises ValueError naming file and column.

    File layout (official ``create_nx_graph``; column names checked against the official
    downstream folders where the pre-training files are not public):

    - ``structure.csv.gz``: ``mol_id``, ``smiles``; the first row of each ``mol_id`` is kept,
      unparseable / unfeaturisable SMILES are skipped and counted (their edges dropped).
      No largest-fragment step (as officially).
    - ``CP-Bray.csv.gz`` / ``CP-JUMP.csv.gz``: ``mol_id`` per row; ``*_feature.npz``: array
      ``data`` with one row per table row. Cell nodes = outer merge on ``mol_id`` (one node per
      Bray x JUMP row pair of a molecule), features Bray || JUMP with NaN for a missing source;
      edge molecule-cell (1).
    - ``G-CRISPR.csv.gz`` / ``G-ORF.csv.gz``: ``ncbi_gene_id`` and optionally ``mol_id`` (the
      Hetionet compound of the pair); ``*_feature.npz`` as above. One gene node per gene id
      (first appearance, CRISPR then ORF); features = first CRISPR row || first ORF row of
      that gene (NaN for a missing source). Edges gene-molecule (1) for rows with a known
      ``mol_id``. (Officially nodes are (gene, molecule) pairs that networkx later merges by
      gene id, keeping the last pair's features.)
    - ``GE.csv.gz``: ``mol_id`` per row (one expression node each); ``GE_feature.npz`` as
      above (978 landmark genes); edge molecule-expression (1).
    - ``L1k_idmaps.csv``: ``ncbi_gene_id``, one row per ``GE_feature`` column. The top
      ``top_compound_gene_express`` fraction (at least 1000) of |expression| entries add
      molecule-gene edges with weight |value| (NaN entries are never selected).
    - ``G-G.csv.gz`` (optional): ``source_id``, ``target_id`` gene ids; gene-gene edges (1)
      between known genes.

    Similarity edges (weights rounded to 2 decimals, threshold by :func:`sparsity_threshold`
    from ``threshold`` to 0.99 at ``target_sparsity``, per type): molecule-molecule Tanimoto
    (Morgan ``sim_fp_radius``, ``fp_bits``) within Murcko-scaffold groups of >= 2; gene-gene
    and cell-cell (JUMP columns only) cosine of row-standardised features within K-means
    clusters (``kmeans_clusters``, ``random_state=seed``) of a 2-component PCA; expression
    cosine over all pairs. Repeated pairs keep the maximum weight (:func:`csr_from_edges`).
    Targets: molecule Morgan(``fp_radius``, ``fp_bits``) bits; gene (CRISPR || ORF), cell
    (Bray || JUMP) and expression features min-max normalised over their nodes.

    ``cache_path`` (optional ``.npz``): reuse a graph cached with the same parameters, or
    build and write it there.
    """
    params = {
        "fp_radius": fp_radius,
        "fp_bits": fp_bits,
        "sim_fp_radius": sim_fp_radius,
        "threshold": threshold,
        "target_sparsity": target_sparsity,
        "top_compound_gene_express": top_compound_gene_express,
        "kmeans_clusters": kmeans_clusters,
        "seed": seed,
    }
    if not os.path.isdir(root):
        raise FileNotFoundError(f"context-graph folder {root} not found; {_NOT_DOWNLOADED}")
    paths = {k: os.path.join(root, v) for k, v in CONTEXT_FILES.items()}
    missing = [p for p in paths.values() if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(f"missing pre-training file(s) {missing}; {_NOT_DOWNLOADED}")
    if cache_path is not None and os.path.isfile(cache_path):
        cached = ContextGraph.load(cache_path)
        if cached.meta.get("params") == params:
            return cached, list(cached.meta["smiles"])

    # Molecules.
    structure = read_csv_columns(paths["structure"], ("mol_id", "smiles"))
    first_row: dict[str, int] = {}
    for i, mol_id in enumerate(structure["mol_id"]):
        key = _id_key(mol_id)
        if key is not None:
            first_row.setdefault(key, i)
    mol_ids = list(first_row)
    molecules = parse_molecules(
        [structure["smiles"][first_row[m]] for m in mol_ids],
        largest_fragment=False,
        deduplicate=False,
    )
    mol_node = {mol_ids[src]: node for node, src in enumerate(molecules.source_index)}
    n_mol = len(molecules)
    smiles = molecules.smiles

    # Genes: CRISPR || ORF.
    gene_tables, gene_features = [], []
    for name in ("crispr", "orf"):
        table = read_csv_columns(paths[name], ("ncbi_gene_id",), ("mol_id",))
        gene_tables.append(table)
        n_rows = len(table["ncbi_gene_id"])
        gene_features.append(_load_features(paths[f"{name}_feature"], n_rows, CONTEXT_FILES[name]))
    gene_keys = [[_gene_key(g) for g in t["ncbi_gene_id"]] for t in gene_tables]
    gene_ids = list(dict.fromkeys(k for keys in gene_keys for k in keys if k is not None))
    gene_index = {g: i for i, g in enumerate(gene_ids)}
    first_of = []
    for keys in gene_keys:
        first = np.full(len(gene_ids), -1, dtype=np.int64)
        for row in range(len(keys) - 1, -1, -1):
            if keys[row] is not None:
                first[gene_index[keys[row]]] = row
        first_of.append(first)
    gene_feature = _concat_by_index(list(zip(gene_features, first_of, strict=True)))
    n_gene = len(gene_ids)

    # Cells: Bray || JUMP merged on mol_id.
    bray = read_csv_columns(paths["bray"], ("mol_id",))
    jump = read_csv_columns(paths["jump"], ("mol_id",))
    bray_feature = _load_features(paths["bray_feature"], len(bray["mol_id"]), "CP-Bray.csv.gz")
    jump_feature = _load_features(paths["jump_feature"], len(jump["mol_id"]), "CP-JUMP.csv.gz")
    bray_idx, jump_idx, cell_mols = _merge_cell_rows(
        [_id_key(m) for m in bray["mol_id"]], [_id_key(m) for m in jump["mol_id"]]
    )
    cell_feature = _concat_by_index([(bray_feature, bray_idx), (jump_feature, jump_idx)])
    n_cell = len(cell_mols)

    # Expression.
    express = read_csv_columns(paths["express"], ("mol_id",))
    express_mols = [_id_key(m) for m in express["mol_id"]]
    express_feature = _load_features(paths["express_feature"], len(express_mols), "GE.csv.gz")
    n_expr = len(express_mols)
    l1k = read_csv_columns(paths["l1k"], ("ncbi_gene_id",))
    if len(l1k["ncbi_gene_id"]) != express_feature.shape[1]:
        raise ValueError(
            f"{paths['l1k']} has {len(l1k['ncbi_gene_id'])} rows but GE_feature.npz has "
            f"{express_feature.shape[1]} columns; they must match one to one"
        )

    # Node numbering: molecules, genes, cells, expression profiles.
    gene_base, cell_base, expr_base = n_mol, n_mol + n_gene, n_mol + n_gene + n_cell
    n_nodes = expr_base + n_expr
    node_type = np.concatenate(
        [np.full(n_mol, MOL), np.full(n_gene, GENE), np.full(n_cell, CELL), np.full(n_expr, EXPR)]
    ).astype(np.int64)

    edges: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    dropped: dict[str, int] = {}

    def pair_edges(kind: str, pairs: Sequence[tuple[int | None, int | None]]) -> None:
        good = [(a, b) for a, b in pairs if a is not None and b is not None]
        dropped[kind] = len(pairs) - len(good)
        r = np.array([a for a, _ in good], dtype=np.int64)
        c = np.array([b for _, b in good], dtype=np.int64)
        edges[kind] = (r, c, np.ones(len(good)))

    gene_mol_pairs = []
    for table, keys in zip(gene_tables, gene_keys, strict=True):
        if "mol_id" not in table:  # no Hetionet compound column in this file
            continue
        for g, m in zip(keys, map(_id_key, table["mol_id"]), strict=True):
            if g is not None and m is not None:
                gene_mol_pairs.append((gene_base + gene_index[g], mol_node.get(m)))
    pair_edges("mol-gene (Hetionet)", gene_mol_pairs)
    pair_edges(
        "mol-cell",
        [(mol_node.get(m), cell_base + i) for i, m in enumerate(cell_mols) if m is not None],
    )
    pair_edges(
        "mol-expr",
        [(mol_node.get(m), expr_base + i) for i, m in enumerate(express_mols) if m is not None],
    )
    gg_path = os.path.join(root, OPTIONAL_CONTEXT_FILES["gene_gene"])
    if os.path.isfile(gg_path):
        gg = read_csv_columns(gg_path, ("source_id", "target_id"))
        pairs = []
        for s, t in zip(gg["source_id"], gg["target_id"], strict=True):
            a, b = gene_index.get(_gene_key(s) or ""), gene_index.get(_gene_key(t) or "")
            pairs.append(
                (None if a is None else gene_base + a, None if b is None else gene_base + b)
            )
        pair_edges("gene-gene (Hetionet)", pairs)

    # Molecule-gene from the top |expression| entries (brief Sec. 3.1 item 3).
    magnitude = np.abs(express_feature).ravel()
    finite = np.flatnonzero(np.isfinite(magnitude))
    n_top = magnitude.size - int(magnitude.size * (1 - top_compound_gene_express))
    n_top = min(max(n_top, 1000), finite.size)
    top = finite[np.argpartition(magnitude[finite], finite.size - n_top)[finite.size - n_top :]]
    top_rows, top_cols = np.unravel_index(top, express_feature.shape)
    l1k_gene = [gene_index.get(_gene_key(g) or "") for g in l1k["ncbi_gene_id"]]
    expr_mol_node = [mol_node.get(m) if m is not None else None for m in express_mols]
    er, ec, ew = [], [], []
    for r, c in zip(top_rows, top_cols, strict=True):
        m, g = expr_mol_node[r], l1k_gene[c]
        if m is not None and g is not None:
            er.append(m)
            ec.append(gene_base + g)
            ew.append(abs(float(express_feature[r, c])))
    edges["mol-gene (expression)"] = (np.array(er, np.int64), np.array(ec, np.int64), np.array(ew))
    dropped["mol-gene (expression)"] = int(n_top - len(er))

    # Similarity edges within clusters (brief Sec. 3.1 item 4).
    thresholds: dict[str, float] = {}
    computed: dict[str, int] = {}
    sim_fps = morgan_fingerprints(smiles, sim_fp_radius, fp_bits)
    mol_groups = [np.asarray(g) for g in scaffold_groups(smiles) if len(g) > 1]
    jump_part = cell_feature[:, bray_feature.shape[1] :]
    similarity_specs = (  # kind, row groups, block similarity, first node of the kind
        ("mol", mol_groups, _tanimoto_blocks(sim_fps), 0),
        (
            "gene",
            _cluster_rows(gene_feature, kmeans_clusters, seed),
            _cosine_blocks(gene_feature),
            gene_base,
        ),
        (
            "cell",
            _cluster_rows(jump_part, kmeans_clusters, seed),
            _cosine_blocks(jump_part),
            cell_base,
        ),
        (
            "expr",
            [np.arange(n_expr)] if n_expr > 1 else [],
            _cosine_blocks(express_feature),
            expr_base,
        ),
    )
    for kind, groups, factory, base in similarity_specs:
        r, c, w, thr, nz = _grouped_similarity_pairs(groups, factory, threshold, target_sparsity)
        edges[f"{kind}-{kind} (similarity)"] = (r + base, c + base, w)
        thresholds[kind], computed[kind] = thr, nz

    rows = np.concatenate([e[0] for e in edges.values()])
    cols = np.concatenate([e[1] for e in edges.values()])
    weights = np.concatenate([e[2] for e in edges.values()])
    indptr, indices, csr_w = csr_from_edges(n_nodes, rows, cols, weights)

    targets = {
        "mol": _nan_targets(
            n_nodes, np.arange(n_mol), morgan_fingerprints(smiles, fp_radius, fp_bits)
        ),
        "gene": _nan_targets(
            n_nodes, gene_base + np.arange(n_gene), minmax_normalise(gene_feature)
        ),
        "cell": _nan_targets(
            n_nodes, cell_base + np.arange(n_cell), minmax_normalise(cell_feature)
        ),
        "expr": _nan_targets(
            n_nodes, expr_base + np.arange(n_expr), minmax_normalise(express_feature)
        ),
    }
    meta = {
        "scale": "paper",
        "params": params,
        "nodes": {"mol": n_mol, "gene": n_gene, "cell": n_cell, "expr": n_expr},
        "edges": {k: int(len(e[0])) for k, e in edges.items()},
        "dropped_edges": dropped,
        "thresholds": thresholds,
        "similarities_computed": computed,
        "molecules_skipped": molecules.skipped_reasons,
        "gene_gene_file": os.path.isfile(gg_path),
        "smiles": smiles,
    }
    graph = ContextGraph(
        node_type=node_type,
        molecule_node=np.arange(n_mol, dtype=np.int64),
        indptr=indptr,
        indices=indices,
        weights=csr_w,
        targets=targets,
        meta=meta,
    )
    if cache_path is not None:
        graph.save(cache_path)
    return graph, list(smiles)


# ----------------------------------------------------------------------------------------------
# Downstream assays (brief Sec. 6)
# ----------------------------------------------------------------------------------------------
def _iter_rows(path: str) -> Iterator[list[str]]:
    with _open_text(path) as handle:
        yield from csv.reader(handle)


def load_assays(path: str, label_start_col: int) -> tuple[list[str], np.ndarray]:
    """An official downstream ``assays.csv.gz``: the ``smiles`` column and the label columns
    from index ``label_start_col`` on (:data:`DOWNSTREAM`), float32 with NaN for empty cells.
    SMILES are returned as written (parse them with :func:`featurise` and skip failures).
    """
    _require_file(path)
    rows = _iter_rows(path)
    header = [h.strip() for h in next(rows, [])]
    lowered = [h.lower() for h in header]
    if "smiles" not in lowered:
        raise ValueError(f"{path} has no 'smiles' column; its header is {header[:12]}")
    if not 0 <= label_start_col < len(header):
        raise ValueError(f"{path} has {len(header)} columns; no labels from {label_start_col}")
    smiles_col = lowered.index("smiles")
    n_tasks = len(header) - label_start_col
    smiles: list[str] = []
    labels: list[list[float]] = []
    for line, row in enumerate(rows, start=2):
        if not row:
            continue
        row = row + [""] * (len(header) - len(row))
        values = []
        for value in row[label_start_col : label_start_col + n_tasks]:
            value = value.strip()
            try:
                values.append(float("nan") if value in _MISSING else float(value))
            except ValueError as error:
                raise ValueError(f"{path} line {line}: non-numeric label {value!r}") from error
        smiles.append(row[smiles_col].strip())
        labels.append(values)
    return smiles, np.asarray(labels, dtype=np.float32).reshape(len(smiles), n_tasks)


def downstream_assays_path(root: str, name: str) -> str:
    """Path of a downstream set's ``assays.csv.gz`` under ``root`` (official
    ``raw_data/<name>/raw/assays.csv.gz``; ``<root>/<name>/assays.csv.gz`` also accepted)."""
    if name not in DOWNSTREAM:
        raise ValueError(f"unknown downstream set {name!r}; choose from {sorted(DOWNSTREAM)}")
    candidates = [
        os.path.join(root, name, "raw", "assays.csv.gz"),
        os.path.join(root, name, "assays.csv.gz"),
    ]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"none of {candidates} exists; {_NOT_DOWNLOADED}")
