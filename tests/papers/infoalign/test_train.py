"""Tests of papers/infoalign/train.py's evaluation helpers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score
from torch_geometric.data import Batch

from papers.infoalign.data import featurise
from papers.infoalign.model import InfoAlignModel
from papers.infoalign.train import PackedGraphs, roc_auc


@pytest.mark.parametrize("tied", [False, True])
def test_roc_auc_matches_sklearn_bit_for_bit(tied):
    """The probe's fast AUC is sklearn's roc_auc_score to the last bit (toy.json depends on it),
    with and without tied scores, on float32 scores as the probe makes them."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(2, 200))
        labels = (rng.random(n) < rng.uniform(0.05, 0.95)).astype(np.float64)
        if len(np.unique(labels)) < 2:
            continue
        raw = rng.integers(0, 6, n) if tied else rng.standard_normal(n)
        scores = raw.astype(np.float32)
        assert roc_auc(labels, scores) == float(roc_auc_score(labels, scores))


def test_roc_auc_extremes():
    labels = np.array([0.0, 0.0, 1.0, 1.0])
    assert roc_auc(labels, np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)) == 1.0
    assert roc_auc(labels, np.array([0.4, 0.3, 0.2, 0.1], dtype=np.float32)) == 0.0
    assert roc_auc(labels, np.zeros(4, dtype=np.float32)) == 0.5


def test_packed_graphs_batch_is_from_data_list():
    """PackedGraphs.batch gives Batch.from_data_list's tensors, so the encoder's bits too."""
    smiles = ["CCO", "c1ccccc1O", "C", "CC(=O)Nc1ccc(O)cc1", "O=C=O", "CCN(CC)CC", "C#N"]
    graphs = [featurise(s) for s in smiles]
    packed = PackedGraphs(graphs)
    ids = np.array([3, 0, 6, 2, 3, 1])  # any order, repeats allowed
    got, want = packed.batch(ids), Batch.from_data_list([graphs[i] for i in ids])
    for key in ("x", "edge_index", "edge_attr", "batch", "ptr"):
        assert torch.equal(got[key], want[key]), key
    assert got.num_graphs == want.num_graphs == len(ids)
    torch.manual_seed(0)
    model = InfoAlignModel(num_layers=2, emb_dim=16, dropout=0.0, decoder_dims={}).eval()
    assert torch.equal(model.embed(got), model.embed(want))
