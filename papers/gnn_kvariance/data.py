"""Graph classification data: the toy generators (brief Sec. 5) and the paper's data sets
read from local files (brief Sec. 6).

Toy (generated in memory, one draw per seed):

* ``regular`` (Part A): random d-regular graphs on n nodes, all 1-WL-indistinguishable;
  label 1 iff the graph's triangle count is above the median.
* ``gnp`` (Part B): connected G(n, p) graphs with n ~ U{n_min..n_max}; label 1 iff
  triangles / edges is above the median.

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

TOY_SOURCES = ("regular", "gnp")
PAPER_SOURCES = ("tudataset", "moleculenet")
LABEL_RULES = ("triangles", "triangle_density")


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
        colour_x=colour_x if n_attributes else None,
    )
