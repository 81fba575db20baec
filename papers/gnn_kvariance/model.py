"""The GNNs whose bound is measured: phi(G) = the logits (brief Sec. 3.1).

* :class:`GIN`, the toy model (brief Sec. 5): L GINConv layers (sum aggregation, eps = 0),
  each an MLP Linear(d, h) -> ReLU -> Linear(h, h) followed by ReLU; sum pooling; head
  Linear(h, h) -> ReLU -> Linear(h, K).
* :class:`GCN`, the official network (brief Sec. 3.4, ``run/custom_graphgym/network/GCN.py``):
  GCNConv layers without bias, each followed by ReLU; sum pooling; head Linear(h, h) ->
  BatchNorm1d(track_running_stats=False) -> ReLU -> Linear(h, K). The official constructor
  builds max(L, 2) convolutions for ``layers_mp = L`` (one at L = 1 plus one more:
  :func:`gcn_conv_count`); ``gcn_layer_count="exact"`` builds L.

Both are MPNNs: given constant or identical node inputs they cannot separate graphs that
1-WL does not (brief Sec. 3.5). The F-MPNN is the same network on inputs with the rooted
homomorphism counts appended (``train.py``), bounded by F-WL. (A GCN layer normalises by
both endpoints' degrees, so an L-layer GCN reads one round more than L-round WL; the
official code pairs it with L rounds all the same, and so do we at paper scale.)
"""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import GCNConv, GINConv, global_add_pool

from papers.gnn_kvariance.config import ARCHITECTURES, GCN_LAYER_COUNTS


def gcn_conv_count(layers_mp: int, layer_count: str = "official") -> int:
    """Number of GCNConv layers the GCN builds for ``layers_mp`` = L.

    "official" follows ``network/GCN.py`` (l. 26-38): one conv, then for L == 2 one more,
    otherwise L - 2 more (none when L = 1) and one last one, so L = 1 gives 2 and L >= 2
    gives L. "exact": L.
    """
    if layer_count not in GCN_LAYER_COUNTS:
        raise ValueError(
            f"unknown model.gcn_layer_count {layer_count!r}; choose from {list(GCN_LAYER_COUNTS)}"
        )
    if layers_mp < 1:
        raise ValueError(f"need at least one message-passing layer, got {layers_mp}")
    if layer_count == "exact":
        return layers_mp
    return 1 + (1 if layers_mp == 2 else max(layers_mp - 2, 0) + 1)


def graph_head(hidden: int, num_classes: int, batchnorm: bool) -> nn.Sequential:
    """Linear(h, h) -> [BatchNorm1d(h, track_running_stats=False)] -> ReLU -> Linear(h, K);
    the BatchNorm uses batch statistics in eval too (official ``network/GCN.py`` l. 19-24)."""
    norm = [nn.BatchNorm1d(hidden, track_running_stats=False)] if batchnorm else []
    return nn.Sequential(
        nn.Linear(hidden, hidden), *norm, nn.ReLU(), nn.Linear(hidden, num_classes)
    )


class PooledMPNN(nn.Module):
    """Message passing (each conv followed by ReLU), sum pooling, then the head: the forward
    pass both networks share; subclasses set ``convs`` and ``head``."""

    convs: nn.ModuleList
    head: nn.Sequential

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor, num_graphs: int
    ) -> torch.Tensor:
        for conv in self.convs:
            x = torch.relu(conv(x, edge_index))  # (N, h)
        return self.head(global_add_pool(x, batch, size=num_graphs))  # (B, K)


class GIN(PooledMPNN):
    """Toy GIN (brief Sec. 5); ``head_batchnorm`` puts the official head's BatchNorm in."""

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        num_layers: int,
        num_classes: int,
        head_batchnorm: bool = False,
    ) -> None:
        super().__init__()
        self.convs = nn.ModuleList(
            GINConv(
                nn.Sequential(
                    nn.Linear(in_dim if i == 0 else hidden, hidden),
                    nn.ReLU(),
                    nn.Linear(hidden, hidden),
                )
            )
            for i in range(num_layers)
        )
        self.head = graph_head(hidden, num_classes, head_batchnorm)


class GCN(PooledMPNN):
    """Official GCN (brief Sec. 3.4); ``num_layers`` = layers_mp, see :func:`gcn_conv_count`."""

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        num_layers: int,
        num_classes: int,
        layer_count: str = "official",
        head_batchnorm: bool = True,
    ) -> None:
        super().__init__()
        self.convs = nn.ModuleList(
            GCNConv(in_dim if i == 0 else hidden, hidden, bias=False)
            for i in range(gcn_conv_count(num_layers, layer_count))
        )
        self.head = graph_head(hidden, num_classes, head_batchnorm)


def build_model(
    arch: str,
    in_dim: int,
    hidden: int,
    num_layers: int,
    num_classes: int,
    gcn_layer_count: str = "official",
    head_batchnorm: bool | None = None,
) -> nn.Module:
    """The network of ``model.arch``; ``gcn_layer_count`` applies to the GCN only (the toy
    GIN always has ``num_layers`` layers); ``head_batchnorm`` None: the architecture's own
    head (GCN: BatchNorm, GIN: none)."""
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown model.arch {arch!r}; choose from {list(ARCHITECTURES)}")
    gcn_conv_count(num_layers, gcn_layer_count)  # a misspelt count fails for the GIN too
    if arch == "gin":
        return GIN(in_dim, hidden, num_layers, num_classes, bool(head_batchnorm))
    batchnorm = True if head_batchnorm is None else head_batchnorm
    return GCN(in_dim, hidden, num_layers, num_classes, gcn_layer_count, batchnorm)


def margin_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The official "margin" loss (``run/custom_graphgym/loss/example.py``): a multi-class
    hinge, MultiMarginLoss(p=1, margin=1), applied to log-softmax outputs."""
    return nn.functional.multi_margin_loss(torch.log_softmax(logits, dim=-1), y, p=1, margin=1.0)


# keyed by config.LOSSES (tests/papers/gnn_kvariance checks the keys)
LOSSES = {"cross_entropy": nn.functional.cross_entropy, "margin": margin_loss}
