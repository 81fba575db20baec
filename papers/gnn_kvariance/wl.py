"""The expressivity upper bound lambda: colour-refinement histograms (brief Sec. 3.1).

lambda_L(G) is the histogram of node colours of G after L rounds of colour refinement

    colour_{t+1}(v) = hash(colour_t(v), sorted multiset {colour_t(u) : u in N(v)}),

with colour_0(v) = the node-feature vector (1-WL) or the node features together with the
rooted homomorphism counts of the patterns F at v (F-WL, which bounds the F-MPNN that reads
the same counts as inputs). Two details the brief stresses (Sec. 3.5):

* the colour vocabulary of round t is shared by **all graphs of the data set**: one PyG
  ``WLConv`` per round, applied once to the disjoint union of every graph, owns that round's
  hash map, so equal colours get equal columns in every graph;
* the histogram of round t counts only round-t colours (not cumulative over rounds).

``WLConv`` expresses F-WL as well: the initial colours are integer ids of the distinct
(features, counts) rows. Only its ``histogram`` is not used: it is dense
(graphs x colours), which at paper scale (DD: ~10^5 colours) does not fit; ours is a sparse
(graphs x colours) count matrix with the same entries.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy import sparse
from torch_geometric.data import Batch, Data
from torch_geometric.nn import WLConv


def disjoint_union(graphs: list[Data]) -> tuple[torch.Tensor, torch.Tensor]:
    """Edge index (2, E) of the disjoint union of ``graphs`` and each node's graph id (N,)."""
    batch = Batch.from_data_list(
        [Data(edge_index=g.edge_index, num_nodes=g.num_nodes) for g in graphs]
    )
    return batch.edge_index, batch.batch


def initial_colours(node_features: torch.Tensor) -> torch.Tensor:
    """colour_0: one integer per distinct feature row over the whole data set (N,)."""
    if node_features.dim() != 2:
        raise ValueError(f"node features must be (N, F), got shape {tuple(node_features.shape)}")
    _, inverse = torch.unique(node_features, dim=0, return_inverse=True)
    return inverse.long()


def colour_histogram(
    colours: torch.Tensor, batch: torch.Tensor, num_graphs: int, num_colours: int
) -> sparse.csr_array:
    """(num_graphs, num_colours) int64 counts: entry (g, c) = nodes of graph g with colour c."""
    counts = np.ones(colours.numel(), dtype=np.int64)
    return sparse.coo_array(
        (counts, (batch.numpy(), colours.numpy())), shape=(num_graphs, num_colours)
    ).tocsr()  # duplicates are summed


def wl_histograms(
    graphs: list[Data], node_features: torch.Tensor, rounds: int
) -> list[sparse.csr_array]:
    """lambda_t for t = 1..rounds (brief Sec. 3.1): per-round colour histograms of every graph.

    Args:
        graphs: the whole data set (train and test), so the vocabulary is shared.
        node_features: (N, F) initial-colour features of all nodes, graphs concatenated in
            order (node features, plus the rooted hom counts for F-WL).
        rounds: L, the number of message-passing layers of the model it bounds.

    Returns:
        ``rounds`` sparse int64 matrices; element t-1 is lambda_t, shape (len(graphs), C_t).
    """
    edge_index, batch = disjoint_union(graphs)
    if node_features.shape[0] != batch.numel():
        raise ValueError(
            f"{node_features.shape[0]} feature rows for {batch.numel()} nodes in the graphs"
        )
    colours = initial_colours(node_features)
    histograms = []
    for _ in range(rounds):
        refine = WLConv()  # a fresh hash map: round t's own vocabulary, shared by all graphs
        colours = refine(colours, edge_index)
        histograms.append(colour_histogram(colours, batch, len(graphs), len(refine.hashmap)))
    return histograms
