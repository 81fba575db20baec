"""Tests of papers/infoalign/model.py: brief `infoalign.md` Sec. 3.2-3.3, Sec. 7 items 7 and 8."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Batch
from torch_geometric.utils import from_smiles

from papers.infoalign.method import infoalign_loss
from papers.infoalign.model import (
    ATOM_FIELD_SIZES,
    BOND_FIELD_SIZES,
    PAPER_DECODER_DIMS,
    SIGMA_FLOOR,
    FrozenProbe,
    GaussianHead,
    GINConv,
    GNNEncoder,
    InfoAlignModel,
    ProjectionMLP,
    freeze,
    mlp_head,
)

D = 16
TOY_DIMS = {"mol": 32, "cell": 6, "expr": 5}


pytestmark = pytest.mark.usefixtures("one_thread")


def batch_of(*smiles: str) -> Batch:
    return Batch.from_data_list([from_smiles(s) for s in smiles])


def small_model(virtual_node: bool = False, **kw) -> InfoAlignModel:
    torch.manual_seed(0)
    args = dict(
        num_layers=3,
        emb_dim=D,
        dropout=0.1,
        virtual_node=virtual_node,
        residual=True,
        readout="sum",
        decoder_dims=TOY_DIMS,
        decoder_hidden=4 * D,
        decoder_dropout=0.2,
    )
    args.update(kw)
    return InfoAlignModel(**args)


def test_field_sizes_match_from_smiles():
    assert len(ATOM_FIELD_SIZES) == 9 and len(BOND_FIELD_SIZES) == 3
    data = from_smiles("CC(=O)Nc1ccc(O)cc1")
    assert (data.x.max(0).values < torch.tensor(ATOM_FIELD_SIZES)).all()
    assert (data.edge_attr.max(0).values < torch.tensor(BOND_FIELD_SIZES)).all()


def test_gin_conv_matches_its_formula():
    torch.manual_seed(0)
    conv = GINConv(D).eval()
    with torch.no_grad():
        conv.eps.fill_(0.25)
    x = torch.randn(3, D)
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])  # 0 - 1 - 2
    edge_attr = torch.tensor([[1, 0, 0], [1, 0, 0], [2, 0, 1], [2, 0, 1]])
    e = conv.bond_encoder(edge_attr)
    agg = torch.stack(
        [
            F.relu(x[1] + e[1]),
            F.relu(x[0] + e[0]) + F.relu(x[2] + e[3]),
            F.relu(x[1] + e[2]),
        ]
    )
    torch.testing.assert_close(conv(x, edge_index, edge_attr), conv.mlp(1.25 * x + agg))


@pytest.mark.parametrize("virtual_node", [False, True])
@pytest.mark.parametrize("readout", ["sum", "mean", "max"])
def test_encoder_gives_one_vector_per_graph(virtual_node, readout):
    enc = GNNEncoder(3, D, 0.1, virtual_node, True, readout)
    g = enc(batch_of("c1ccccc1", "CCO"))
    assert g.shape == (2, D) and torch.isfinite(g).all()
    enc.eval()
    assert enc(batch_of("C", "CCO", "c1ccncc1")).shape == (3, D)  # "C": a graph without bonds


def test_virtual_node_connects_disconnected_fragments():
    # Node states of the ethanol fragment ignore the other fragment unless a virtual node links
    # them (eval mode: BatchNorm uses running stats, so graphs do not interact through it).
    for virtual_node in (False, True):
        enc = GNNEncoder(3, D, 0.0, virtual_node, True, "sum").eval()
        with torch.no_grad():
            h1 = enc.node_states(batch_of("CCO.c1ccccc1"))[:3]
            h2 = enc.node_states(batch_of("CCO.ClCCl"))[:3]
        assert torch.allclose(h1, h2) != virtual_node


def test_residual_off_and_single_data_input():
    enc = GNNEncoder(2, D, 0.0, True, residual=False).eval()
    assert enc(batch_of("CCO", "CN")).shape == (2, D)
    assert enc(from_smiles("CCO")).shape == (1, D)


def test_gaussian_head_sigma():
    head = GaussianHead(D)
    g = torch.randn(5, D) * 10
    mu, sigma = head(g)
    assert mu.shape == sigma.shape == (5, D)
    _, s = head.net(g).chunk(2, dim=-1)
    torch.testing.assert_close(sigma, F.softplus(s) + SIGMA_FLOOR)
    assert (sigma > 0).all()


def test_model_outputs_and_zero_biases():
    model = small_model(virtual_node=True)
    for m in model.modules():
        if isinstance(m, nn.Linear):
            assert torch.equal(m.bias, torch.zeros_like(m.bias))
    mu, sigma, decoded = model(batch_of("c1ccccc1", "CCO"))
    assert mu.shape == sigma.shape == (2, D)
    assert {k: tuple(v.shape) for k, v in decoded.items()} == {
        k: (2, d) for k, d in TOY_DIMS.items()
    }
    assert model.embed(batch_of("c1ccccc1", "CCO")).shape == (2, D)


def test_paper_decoder_layout_concatenates_split_heads():
    model = small_model(decoder_dims=None, decoder_hidden=None)
    assert model.decoders["mol"][0].out_features == 4 * D  # hidden defaults to 4 * emb_dim
    _, _, decoded = model(batch_of("c1ccccc1", "CCO"))
    widths = {k: v if isinstance(v, int) else sum(v) for k, v in PAPER_DECODER_DIMS.items()}
    assert (
        {k: v.shape[1] for k, v in decoded.items()}
        == widths
        == {
            "mol": 1024,
            "gene": 1973,
            "cell": 2749,
            "expr": 978,
        }
    )


@pytest.mark.parametrize("virtual_node", [False, True])
def test_gradients_reach_every_parameter(virtual_node):
    model = small_model(virtual_node=virtual_node)
    batch = batch_of("c1ccccc1", "CCO", "CC(=O)O")
    mu, sigma, decoded = model(batch)
    targets = {k: torch.rand(3, 2, v) for k, v in TOY_DIMS.items()}
    loss, _ = infoalign_loss(mu, sigma, decoded, targets, torch.ones(3, 2), beta=1.0)
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_decoders_read_mu_not_a_sample():
    # Sec. 7 item 7: forcing sigma huge leaves the decoded outputs unchanged.
    model = small_model().eval()
    batch = batch_of("c1ccccc1", "CCO")
    with torch.no_grad():
        mu, sigma, decoded = model(batch)
        linear = model.head.net[1]
        linear.bias[D:] = 1e6  # the s half -> sigma ~ 1e6
        mu2, sigma2, decoded2 = model(batch)
        _, _, decoded3 = model(batch)
    assert sigma2.min() > 1e5 > sigma.max()
    assert torch.equal(mu, mu2)
    for k in decoded:
        assert torch.equal(decoded[k], decoded2[k]) and torch.equal(decoded2[k], decoded3[k])
        assert torch.equal(decoded2[k], model.decoders[k](mu2))


def test_mlp_heads():
    head = mlp_head(D, 32, 8, 0.2)
    assert [type(m) for m in head] == [nn.Linear, nn.BatchNorm1d, nn.GELU, nn.Dropout, nn.Linear]
    assert head(torch.randn(4, D)).shape == (4, 8)
    proj = ProjectionMLP(64, 128, 64)
    assert proj(torch.randn(4, 64)).shape == (4, 64)


def _snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def test_frozen_probe_keeps_encoder_bit_identical():
    # Sec. 7 item 8: one optimizer step on the task head leaves encoder + Gaussian head (weights
    # and BatchNorm running stats) bit-identical, for a never-trained (max_norm) encoder too.
    model = small_model(virtual_node=True)
    before = _snapshot(model)  # before freezing: freezing itself must not write either
    probe = FrozenProbe(model, mlp_head(D, 4 * D, 3, 0.2))
    head_before = _snapshot(probe.head)
    opt = torch.optim.Adam([p for p in probe.parameters() if p.requires_grad], lr=1e-2)
    probe.train()
    assert not model.training and probe.head.training
    batch = batch_of("c1ccccc1", "CCO", "CC(=O)O", "c1ccncc1")
    labels = torch.tensor([[1.0, 0.0, float("nan")]] * 4)
    for _ in range(2):
        logits = probe(batch)
        mask = ~torch.isnan(labels)
        loss = F.binary_cross_entropy_with_logits(logits[mask], labels[mask])
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = _snapshot(model)
    assert before.keys() == after.keys()
    for k in before:
        assert torch.equal(before[k], after[k]), k
    assert all(not p.requires_grad for p in model.parameters())
    assert any(not torch.equal(v, probe.head.state_dict()[k]) for k, v in head_before.items())


def test_freeze_without_probe_and_control():
    # Control: an unfrozen encoder in train mode does change its BN statistics on a forward.
    batch = batch_of("c1ccccc1", "CCO")
    live = small_model()
    before = _snapshot(live)
    live.train()(batch)
    assert not torch.equal(
        before["encoder.norms.0.running_mean"], live.encoder.norms[0].running_mean
    )
    frozen = freeze(copy.deepcopy(live))
    snap = _snapshot(frozen)
    out1 = frozen.embed(batch)
    out2 = frozen.embed(batch)
    assert torch.equal(out1, out2) and not out1.requires_grad
    for k, v in _snapshot(frozen).items():
        assert torch.equal(v, snap[k]), k
    # freezing does not change the function: renormalised embeddings equal what max_norm gives
    live.eval()
    np.testing.assert_allclose(
        live.embed(batch).detach().numpy(), frozen.embed(batch).numpy(), rtol=1e-5, atol=1e-5
    )


def _oversized_rows(model: nn.Module) -> nn.Module:
    """Scale every max_norm table so its rows exceed max_norm: renormalisation must act."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Embedding) and m.max_norm is not None:
                m.weight.mul_(10.0)
                assert (m.weight.norm(dim=1) > m.max_norm).all()
    return model


def test_freeze_never_writes_the_stored_weights_and_keeps_the_function():
    batch = batch_of("c1ccccc1", "CCO", "CC(=O)O")
    model = _oversized_rows(small_model())
    reference = copy.deepcopy(model).eval()  # unfrozen: PyTorch's in-place max_norm lookups
    before = _snapshot(model)
    frozen = freeze(model)
    outs = [frozen.embed(batch) for _ in range(3)]
    for k, v in _snapshot(frozen).items():
        assert torch.equal(v, before[k]), f"freeze or a frozen forward changed {k}"
    assert all(m.max_norm is not None for m in frozen.modules() if isinstance(m, nn.Embedding))
    with torch.no_grad():
        expected = reference.embed(batch)  # renormalises reference's rows in place
    for out in outs:
        torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)


def test_pretraining_continued_after_freezing_is_pretraining_without_it():
    batch = batch_of("c1ccccc1", "CCO", "CC(=O)O", "c1ccncc1")
    never_frozen = _oversized_rows(small_model())
    was_frozen = copy.deepcopy(never_frozen)
    freeze(was_frozen).embed(batch)  # a frozen probe forward, then back to pre-training
    for p in was_frozen.parameters():
        p.requires_grad_(True)
    for model in (never_frozen, was_frozen):
        torch.manual_seed(0)  # the same dropout masks for both
        model.train()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(3):
            loss = model.embed(batch).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    for (name, a), b in zip(
        never_frozen.state_dict().items(), was_frozen.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name
