r"""Networks of InfoAlign: the GIN molecule encoder, the Gaussian head, the decoders, the probe.

Brief `infoalign.md` Sec. 3.2 (encoder), 3.3 (decoders), 3.6 (frozen probe), 3.7 (init).

* **Input featurisation.** Graphs come from `torch_geometric.utils.from_smiles`: `x` is
  (n, 9) long (one index per categorical atom field), `edge_attr` (E, 3) long. Each field has
  its own `Embedding(n_values, d)` and the field embeddings are summed. As in the official
  OGB-style encoders, the tables use `max_norm=1` (rows are rescaled to norm <= 1 in place when
  they are looked up) and Xavier-uniform init.
* **GIN layer.** message = ReLU(h_j + bond_emb(e_ij)), sum aggregation, update
  = MLP((1 + eps) h_i + sum of messages), MLP = Linear(d, 2d)-BN-ReLU-Linear(2d, d),
  eps learnable (init 0); every layer owns its bond embedding.
* **Encoder.** L GIN layers; after each: BatchNorm, ReLU (not after the last), dropout, then the
  residual (the layer's input is added). JK = last, graph readout = sum (default).
* **Virtual node** (`virtual_node=True`, the paper's "gin-virtual"): a learnable vector, zero at
  init, is added to every node before each layer. After layer l < L, with u_l the *input* of
  layer l (i.e. the node states after the virtual node was added, as in the official code),
  vn <- vn + Dropout(MLP_vn(sum_pool(u_l) + vn)),
  MLP_vn = Linear(d, 2d)-BN-ReLU-Linear(2d, d)-BN-ReLU (without `residual` vn is replaced).
* **Gaussian head.** [mu, s] = Linear(d, 2d)(SiLU(g)), sigma = softplus(s) + 1e-7.
* **Decoders / task head.** Linear(d, h)-BN-GELU-Dropout-Linear(h, out); they read **mu**.
* **Init.** PyTorch defaults for weights, every Linear bias set to 0 (Sec. 3.7).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Batch
from torch_geometric.nn import MessagePassing, global_add_pool, global_max_pool, global_mean_pool
from torch_geometric.utils.smiles import e_map, x_map

# Number of values of each categorical field produced by `from_smiles` (9 atom, 3 bond fields).
ATOM_FIELD_SIZES: tuple[int, ...] = tuple(len(values) for values in x_map.values())
BOND_FIELD_SIZES: tuple[int, ...] = tuple(len(values) for values in e_map.values())

# Official decoder layout (Sec. 3.3): the gene (CRISPR | ORF) and cell (Bray | JUMP) heads are
# two MLPs each whose outputs are concatenated, giving four predictions.
PAPER_DECODER_DIMS: dict[str, int | tuple[int, ...]] = {
    "mol": 1024,
    "gene": (1111, 862),
    "cell": (1783, 966),
    "expr": 978,
}

# keyed by config.READOUTS (a test checks the keys)
READOUTS = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}
SIGMA_FLOOR = 1e-7  # sigma = softplus(s) + 1e-7 (Sec. 3.2, 3.8.8)
EMBEDDING_MAX_NORM = 1.0


def zero_linear_biases(module: nn.Module) -> nn.Module:
    """Set the bias of every `nn.Linear` inside `module` to 0 (official init, Sec. 3.7)."""
    for m in module.modules():
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
    return module


class MaxNormEmbedding(nn.Embedding):
    """`nn.Embedding(max_norm=...)` whose frozen table is never written.

    PyTorch renormalises the looked-up rows *in place* (`embedding_renorm_`: a row with norm
    above `max_norm` is scaled by `max_norm / (norm + 1e-7)`), so even an eval forward of a
    frozen encoder would change its stored weights. While the table trains (`requires_grad`) the
    official in-place semantics are kept; once frozen, the same scaling is applied to the
    looked-up copy instead, which computes the same function without modifying the weights.
    """

    RENORM_EPS = 1e-7  # the constant of PyTorch's embedding_renorm_

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        if self.max_norm is None or self.weight.requires_grad:
            return super().forward(idx)
        rows = F.embedding(idx, self.weight, self.padding_idx)  # no max_norm: no write
        norms = rows.norm(p=self.norm_type, dim=-1, keepdim=True)
        scale = torch.where(
            norms > self.max_norm, self.max_norm / (norms + self.RENORM_EPS), torch.ones_like(norms)
        )
        return rows * scale


class CategoricalEncoder(nn.Module):
    """Sum of one embedding per categorical column: (n, F) long -> (n, d)."""

    def __init__(self, emb_dim: int, field_sizes: Sequence[int]):
        super().__init__()
        self.embeddings = nn.ModuleList()
        for size in field_sizes:
            emb = MaxNormEmbedding(int(size), emb_dim, max_norm=EMBEDDING_MAX_NORM)
            nn.init.xavier_uniform_(emb.weight)
            self.embeddings.append(emb)

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        if codes.dim() != 2 or codes.size(1) != len(self.embeddings):
            raise ValueError(
                f"expected (n, {len(self.embeddings)}) codes, got {tuple(codes.shape)}"
            )
        out = self.embeddings[0](codes[:, 0])
        for i in range(1, len(self.embeddings)):
            out = out + self.embeddings[i](codes[:, i])
        return out


class AtomEncoder(CategoricalEncoder):
    """The 9 atom fields of `from_smiles` -> (n, d)."""

    def __init__(self, emb_dim: int, field_sizes: Sequence[int] | None = None):
        super().__init__(emb_dim, ATOM_FIELD_SIZES if field_sizes is None else field_sizes)


class BondEncoder(CategoricalEncoder):
    """The 3 bond fields of `from_smiles` -> (E, d)."""

    def __init__(self, emb_dim: int, field_sizes: Sequence[int] | None = None):
        super().__init__(emb_dim, BOND_FIELD_SIZES if field_sizes is None else field_sizes)


def _two_layer(d: int, final_bn_relu: bool) -> nn.Sequential:
    """Linear(d, 2d)-BN-ReLU-Linear(2d, d) [-BN-ReLU]."""
    layers: list[nn.Module] = [
        nn.Linear(d, 2 * d),
        nn.BatchNorm1d(2 * d),
        nn.ReLU(),
        nn.Linear(2 * d, d),
    ]
    if final_bn_relu:
        layers += [nn.BatchNorm1d(d), nn.ReLU()]
    return nn.Sequential(*layers)


class GINConv(MessagePassing):
    """GIN with edge features: MLP((1 + eps) h_i + sum_j ReLU(h_j + bond_emb(e_ij)))."""

    def __init__(self, emb_dim: int, bond_field_sizes: Sequence[int] | None = None):
        super().__init__(aggr="add")
        self.mlp = _two_layer(emb_dim, final_bn_relu=False)
        self.eps = nn.Parameter(torch.zeros(1))
        self.bond_encoder = BondEncoder(emb_dim, bond_field_sizes)

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor
    ) -> torch.Tensor:
        edge_emb = self.bond_encoder(edge_attr)
        aggregated = self.propagate(edge_index, x=x, edge_attr=edge_emb)
        return self.mlp((1 + self.eps) * x + aggregated)

    def message(self, x_j: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        return F.relu(x_j + edge_attr)


class GNNEncoder(nn.Module):
    """GIN (optionally with a virtual node) + readout: `Batch` -> graph embeddings g (B, d)."""

    def __init__(
        self,
        num_layers: int = 5,
        emb_dim: int = 300,
        dropout: float = 0.5,
        virtual_node: bool = True,
        residual: bool = True,
        readout: str = "sum",
        atom_field_sizes: Sequence[int] | None = None,
        bond_field_sizes: Sequence[int] | None = None,
    ):
        super().__init__()
        if num_layers < 1:
            raise ValueError("num_layers must be >= 1")
        if readout not in READOUTS:
            raise ValueError(f"readout must be one of {sorted(READOUTS)}, got {readout!r}")
        self.num_layers = num_layers
        self.emb_dim = emb_dim
        self.dropout = float(dropout)
        self.virtual_node = bool(virtual_node)
        self.residual = bool(residual)
        self.readout = readout
        self.atom_encoder = AtomEncoder(emb_dim, atom_field_sizes)
        self.convs = nn.ModuleList(GINConv(emb_dim, bond_field_sizes) for _ in range(num_layers))
        self.norms = nn.ModuleList(nn.BatchNorm1d(emb_dim) for _ in range(num_layers))
        if self.virtual_node:
            self.vn_init = nn.Parameter(torch.zeros(1, emb_dim))  # learnable, zero at init
            self.vn_mlps = nn.ModuleList(
                _two_layer(emb_dim, final_bn_relu=True) for _ in range(num_layers - 1)
            )
        zero_linear_biases(self)

    def node_states(self, batch: Batch) -> torch.Tensor:
        """Node representations after the last layer (JK = last): (n_nodes, d)."""
        x, edge_index, edge_attr, index = batch.x, batch.edge_index, batch.edge_attr, batch.batch
        if index is None:  # a single `Data`
            index = torch.zeros(x.size(0), dtype=torch.long, device=x.device)
        num_graphs = int(batch.num_graphs) if hasattr(batch, "num_graphs") else 1
        h = self.atom_encoder(x)
        vn = self.vn_init.expand(num_graphs, -1) if self.virtual_node else None
        for layer in range(self.num_layers):
            if vn is not None:
                h = h + vn[index]
            out = self.norms[layer](self.convs[layer](h, edge_index, edge_attr))
            if layer < self.num_layers - 1:
                out = F.relu(out)
            out = F.dropout(out, self.dropout, training=self.training)
            if self.residual:
                out = out + h
            if vn is not None and layer < self.num_layers - 1:
                pooled = global_add_pool(h, index, size=num_graphs) + vn
                update = F.dropout(self.vn_mlps[layer](pooled), self.dropout, self.training)
                vn = vn + update if self.residual else update
            h = out
        return h

    def forward(self, batch: Batch) -> torch.Tensor:
        h = self.node_states(batch)
        index = batch.batch
        if index is None:
            index = torch.zeros(h.size(0), dtype=torch.long, device=h.device)
        num_graphs = int(batch.num_graphs) if hasattr(batch, "num_graphs") else 1
        return READOUTS[self.readout](h, index, size=num_graphs)  # (B, d)


class GaussianHead(nn.Module):
    """q(z|x) = N(mu, diag sigma^2): [mu, s] = Linear(d, 2d)(SiLU(g)), sigma = softplus(s)+1e-7."""

    def __init__(self, emb_dim: int):
        super().__init__()
        self.net = nn.Sequential(nn.SiLU(), nn.Linear(emb_dim, 2 * emb_dim))
        zero_linear_biases(self)

    def forward(self, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, s = self.net(g).chunk(2, dim=-1)
        return mu, F.softplus(s) + SIGMA_FLOOR  # (B, d), (B, d)


def mlp_head(in_dim: int, hidden: int, out_dim: int, dropout: float) -> nn.Sequential:
    """Linear(in, hidden)-BN-GELU-Dropout-Linear(hidden, out): decoders and the task head."""
    net = nn.Sequential(
        nn.Linear(in_dim, hidden),
        nn.BatchNorm1d(hidden),
        nn.GELU(),
        nn.Dropout(dropout),
        nn.Linear(hidden, out_dim),
    )
    return zero_linear_biases(net)


class ConcatDecoder(nn.Module):
    """Several independent `mlp_head`s whose outputs are concatenated (official gene/cell heads)."""

    def __init__(self, in_dim: int, hidden: int, out_dims: Sequence[int], dropout: float):
        super().__init__()
        self.parts = nn.ModuleList(mlp_head(in_dim, hidden, int(o), dropout) for o in out_dims)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([part(x) for part in self.parts], dim=-1)


def _decoder(in_dim: int, hidden: int, out: int | Sequence[int], dropout: float) -> nn.Module:
    if isinstance(out, int):
        return mlp_head(in_dim, hidden, out, dropout)
    out = [int(o) for o in out]
    if len(out) == 1:
        return mlp_head(in_dim, hidden, out[0], dropout)
    return ConcatDecoder(in_dim, hidden, out, dropout)


class InfoAlignModel(nn.Module):
    """Encoder + Gaussian head + one decoder per modality (Sec. 3.2-3.3).

    `decoder_dims` maps a modality name to its target width, or to a list of widths for a
    decoder made of several MLPs whose outputs are concatenated (official gene and cell heads;
    see `PAPER_DECODER_DIMS`). `decoder_hidden` defaults to 4 * emb_dim (official).
    """

    def __init__(
        self,
        num_layers: int = 5,
        emb_dim: int = 300,
        dropout: float = 0.5,
        virtual_node: bool = True,
        residual: bool = True,
        readout: str = "sum",
        decoder_dims: Mapping[str, int | Sequence[int]] | None = None,
        decoder_hidden: int | None = None,
        decoder_dropout: float = 0.5,
        atom_field_sizes: Sequence[int] | None = None,
        bond_field_sizes: Sequence[int] | None = None,
    ):
        super().__init__()
        dims = dict(PAPER_DECODER_DIMS if decoder_dims is None else decoder_dims)
        hidden = 4 * emb_dim if not decoder_hidden else int(decoder_hidden)
        self.encoder = GNNEncoder(
            num_layers,
            emb_dim,
            dropout,
            virtual_node,
            residual,
            readout,
            atom_field_sizes,
            bond_field_sizes,
        )
        self.head = GaussianHead(emb_dim)
        self.decoders = nn.ModuleDict(
            {name: _decoder(emb_dim, hidden, out, decoder_dropout) for name, out in dims.items()}
        )
        zero_linear_biases(self)

    def encode(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(mu, sigma) of q(z|x), each (B, d)."""
        return self.head(self.encoder(batch))

    def embed(self, batch: Batch) -> torch.Tensor:
        """The representation used downstream: mu (B, d) (Sec. 3.6)."""
        return self.encode(batch)[0]

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """mu (B, d), sigma (B, d), {modality: logits (B, dim)}; decoders read mu, not a sample."""
        mu, sigma = self.encode(batch)
        decoded = {name: decoder(mu) for name, decoder in self.decoders.items()}
        return mu, sigma, decoded


class ProjectionMLP(nn.Module):
    """Linear(in, hidden)-BN-GELU-Linear(hidden, out): the contrastive baseline's profile encoder.

    Encodes cell-morphology / expression feature vectors into the molecule latent space
    (toy: 64 -> 128 -> 64 and 48 -> 128 -> 64; Sec. 4).
    """

    def __init__(self, in_dim: int, hidden: int, out_dim: int):
        super().__init__()
        self.net = mlp_head(in_dim, hidden, out_dim, dropout=0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def freeze(module: nn.Module) -> nn.Module:
    """Freeze `module` for the frozen-encoder probe (Sec. 3.6, 3.8.10); returns it.

    * every parameter gets `requires_grad=False`; nothing stored is modified, so the frozen
      weights stay bit-identical through any number of forwards;
    * the module is put in eval mode, so BatchNorm uses (and never updates) its running stats
      and dropout is off. A later `.train()` on a *parent* would switch it back: keep the frozen
      module outside the trained one, or wrap it in `FrozenProbe`, which re-freezes it;
    * `max_norm` embeddings are :class:`MaxNormEmbedding`: with a frozen table they rescale the
      looked-up rows out of place, the same values PyTorch's in-place renormalisation would
      give, and keep `max_norm`, so pre-training that continues once `requires_grad` is back on
      behaves exactly as if the module had never been frozen.
    """
    for p in module.parameters():
        p.requires_grad_(False)
    module.eval()
    return module


class FrozenProbe(nn.Module):
    """Frozen backbone (anything with `.embed(batch) -> (B, d)`) + a trainable task head.

    The official `FineTuneGNN` (encoder and Gaussian head frozen, representation = mu). `train()`
    keeps the backbone in eval mode so its BatchNorm statistics stay fixed.
    """

    def __init__(self, backbone: nn.Module, head: nn.Module):
        super().__init__()
        self.backbone = freeze(backbone)
        self.head = head

    def train(self, mode: bool = True) -> FrozenProbe:
        super().train(mode)
        self.backbone.eval()
        return self

    def forward(self, batch: Batch) -> torch.Tensor:
        with torch.no_grad():
            rep = self.backbone.embed(batch)
        return self.head(rep)
