"""Tests of papers/infoalign/data.py: featuriser, toy data, splits, context graphs, paper files
(brief ``infoalign.md`` Secs. 3.1, 3.6, 5, 6 and 7.6, 7.9, 7.10)."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
import scipy.sparse as sp
from rdkit import Chem, DataStructs
from rdkit.Chem import rdFingerprintGenerator
from torch_geometric.utils.smiles import e_map, x_map

from papers.infoalign import data as D


@pytest.fixture(scope="module")
def nci():
    return D.load_nci_molecules(max_molecules=200)


@pytest.fixture(scope="module")
def toy(nci):
    bio = D.hidden_biology(nci.smiles)
    graph = D.build_toy_context_graph(nci.smiles, bio.cell, bio.expr, seed=0)
    return nci, bio, graph


# ----------------------------------------------------------------------------------------------
# Featuriser and molecule parsing
# ----------------------------------------------------------------------------------------------
def test_benzene_featurisation():  # Sec. 7.10
    g = D.featurise("c1ccccc1")
    assert g.x.shape == (6, 9) and g.edge_index.shape == (2, 12) and g.edge_attr.shape == (12, 3)
    aromatic = D.ATOM_FIELDS.index("is_aromatic")
    in_ring = D.ATOM_FIELDS.index("is_in_ring")
    assert (g.x[:, aromatic] == x_map["is_aromatic"].index(True)).all()
    assert (g.x[:, in_ring] == x_map["is_in_ring"].index(True)).all()
    assert (g.edge_attr[:, 0] == e_map["bond_type"].index("AROMATIC")).all()
    assert len(D.ATOM_FIELD_SIZES) == 9 and len(D.BOND_FIELD_SIZES) == 3
    for column, size in enumerate(D.ATOM_FIELD_SIZES):
        assert int(g.x[:, column].max()) < size


def test_unparseable_smiles_are_skipped_and_counted(capfd):
    bad = ["C1CC", "not a smiles", ""]
    assert all(D.featurise(s) is None for s in bad)
    mols = D.parse_molecules([*bad, "CCO", "OCC", "[Na+].CC(=O)[O-]"])
    assert mols.smiles == ["CCO", "CC(=O)[O-]"]  # largest fragment kept
    assert mols.source_index == [3, 5]
    assert mols.n_skipped == 4
    assert mols.skipped_reasons["unparseable"] == 2
    assert mols.skipped_reasons["empty"] == 1
    assert mols.skipped_reasons["duplicate"] == 1
    assert "Parse Error" not in capfd.readouterr().err  # rdkit's log is blocked


def test_nci_molecules(nci):
    assert len(nci) == 200 == len(nci.graphs) and len(set(nci.smiles)) == 200
    for s, g in zip(nci.smiles, nci.graphs, strict=True):
        mol = Chem.MolFromSmiles(s)
        assert 6 <= mol.GetNumAtoms() <= 40 and g.num_nodes == mol.GetNumAtoms()
        assert "." not in s
    assert nci.n_skipped == sum(nci.skipped_reasons.values())


def test_morgan_fingerprints_match_rdkit():
    smiles = ["c1ccccc1O", "CCN(CC)CC"]
    fps = D.morgan_fingerprints(smiles, radius=2, n_bits=1024)
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=1024)
    assert fps.dtype == np.float32 and fps.shape == (2, 1024)
    for row, s in zip(fps, smiles, strict=True):
        expected = np.array(list(gen.GetFingerprint(Chem.MolFromSmiles(s))))
        np.testing.assert_array_equal(row, expected)


# ----------------------------------------------------------------------------------------------
# Hidden biology
# ----------------------------------------------------------------------------------------------
def test_hidden_biology_shapes_determinism_and_label_rate(nci):
    bio = D.hidden_biology(nci.smiles)
    assert bio.h.shape == (200, 8) and bio.cell.shape == (200, 64)
    assert bio.expr.shape == (200, 48) and bio.labels.shape == (200, 8)
    assert all(a.dtype == np.float32 for a in (bio.h, bio.cell, bio.expr, bio.labels))
    assert set(np.unique(bio.labels)) == {0.0, 1.0}
    np.testing.assert_allclose(bio.labels.mean(0), 0.4, atol=1 / 200)
    again = D.hidden_biology(nci.smiles)
    for a, b in zip((bio.h, bio.cell, bio.expr, bio.labels), vars(again).values(), strict=True):
        np.testing.assert_array_equal(a, b)
    other = D.hidden_biology(nci.smiles, seed=1)
    assert not np.allclose(bio.h, other.h)


def test_fragment_presence():
    b = D.fragment_presence(["c1ccccc1O"])[0]
    assert b.shape == (24,)
    assert b[D.FRAGMENTS.index("fr_benzene")] == 1 and b[D.FRAGMENTS.index("fr_phenol")] == 1
    assert b[D.FRAGMENTS.index("fr_Al_OH")] == 0 and b[D.FRAGMENTS.index("fr_nitro")] == 0


# ----------------------------------------------------------------------------------------------
# Normalisation, thresholds, CSR
# ----------------------------------------------------------------------------------------------
def test_minmax_normalise():  # Secs. 3.8.6 and 7.6
    x = np.array([[1.0, 5.0, np.nan], [2.0, 5.0, 0.0], [3.0, 5.0, 4.0], [1.5, 5.0, 1.0]])
    out = D.minmax_normalise(x)
    assert out.dtype == np.float32
    assert out[0, 0] == 0 and out[2, 0] == 1 and out[3, 0] == pytest.approx(0.25)
    np.testing.assert_allclose(out[:, 1], 0.5, atol=1e-6)
    assert np.isnan(out[0, 2]) and out[1, 2] == 0 and out[2, 2] == 1
    assert np.nanmin(out) >= 0 and np.nanmax(out) <= 1


def test_sparsity_threshold_on_a_known_array():
    sims = np.arange(1, 1001) / 1000.0  # 0.001 .. 1.000
    t = D.sparsity_threshold(sims, 0.5, 0.9)
    assert abs(t - 0.9) < 2e-3 and 0.5 < t < 0.99
    # at most ~0.5 % kept: pushed to the 0.99 ceiling
    t_high = D.sparsity_threshold(sims, 0.5, 0.995)
    assert 0.989 < t_high < 0.99
    # a minimum that already gives the sparsity: stays just above it
    assert 0.95 < D.sparsity_threshold(sims, 0.95, 0.5) < 0.952
    # only the values above the minimum plus the total count give the same answer
    assert D.sparsity_threshold(sims[sims >= 0.5], 0.5, 0.9, n_total=sims.size) == t
    assert D.sparsity_threshold(np.zeros(0), 0.8, 0.995) == 0.8


def test_csr_from_edges_symmetrises_and_merges_by_max():
    indptr, indices, weights = D.csr_from_edges(
        4, np.array([0, 1, 2, 2, 3]), np.array([1, 0, 2, 3, 2]), np.array([0.5, 0.7, 1, 2.5, 0.1])
    )
    a = sp.csr_matrix((weights, indices, indptr), shape=(4, 4)).toarray()
    expected = np.zeros((4, 4))
    expected[0, 1] = expected[1, 0] = 0.7
    expected[2, 3] = expected[3, 2] = 2.5  # self-loop (2, 2) dropped
    np.testing.assert_allclose(a, expected)
    assert indptr.dtype == indices.dtype == np.int64 and weights.dtype == np.float32


# ----------------------------------------------------------------------------------------------
# Scaffold split
# ----------------------------------------------------------------------------------------------
def test_scaffold_split(nci):  # Sec. 7.9
    fractions = (0.6, 0.15, 0.25)
    parts = D.scaffold_split(nci.smiles, fractions, shuffle_seed=3)
    assert sorted(np.concatenate(parts).tolist()) == list(range(200))
    scaffolds = [{D.murcko_scaffold(nci.smiles[i]) for i in p} for p in parts]
    for a in range(3):
        for b in range(a + 1, 3):
            assert not scaffolds[a] & scaffolds[b]
    largest = max(len(g) for g in D.scaffold_groups(nci.smiles))
    for part, f in zip(parts, fractions, strict=True):
        assert abs(len(part) - f * 200) <= largest
    again = D.scaffold_split(nci.smiles, fractions, shuffle_seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))
    official = D.scaffold_split(nci.smiles, fractions, shuffle_seed=3, whole_groups=False)
    assert [len(p) for p in official] == [120, 30, 50]


# ----------------------------------------------------------------------------------------------
# Toy context graph
# ----------------------------------------------------------------------------------------------
def _dense(graph: D.ContextGraph) -> np.ndarray:
    n = graph.n_nodes
    return sp.csr_matrix((graph.weights, graph.indices, graph.indptr), shape=(n, n)).toarray()


def test_toy_graph_nodes_and_targets(toy):
    nci, _, g = toy
    n = len(nci)
    np.testing.assert_array_equal(g.molecule_node, np.arange(n))
    assert (g.node_type[:n] == D.MOL).all() and np.all(np.diff(g.node_type) >= 0)
    n_cell, n_expr = (g.node_type == D.CELL).sum(), (g.node_type == D.EXPR).sum()
    assert 0.45 * n < n_cell < 0.75 * n and 0.25 * n < n_expr < 0.55 * n
    assert set(g.targets) == {"mol", "cell", "expr"}
    dims = {"mol": 1024, "cell": 64, "expr": 48}
    for modality, code in (("mol", D.MOL), ("cell", D.CELL), ("expr", D.EXPR)):
        t = g.targets[modality]
        assert t.shape == (g.n_nodes, dims[modality]) and t.dtype == np.float32
        own = g.node_type == code
        assert np.isfinite(t[own]).all() and np.isnan(t[~own]).all()
        assert t[own].min() >= 0 and t[own].max() <= 1
    np.testing.assert_array_equal(
        g.targets["mol"][:n], D.morgan_fingerprints(nci.smiles, radius=2, n_bits=1024)
    )


def test_toy_graph_edges(toy):
    nci, _, g = toy
    n = len(nci)
    a = _dense(g)
    np.testing.assert_array_equal(a, a.T)  # symmetric, weights matched
    assert np.all(np.diag(a) == 0) and g.n_edges == np.count_nonzero(a) // 2
    np.testing.assert_array_equal(g.degree, np.count_nonzero(a, axis=1))
    for node in np.flatnonzero(g.node_type != D.MOL):  # each profile hangs on one molecule
        mol_neighbours = np.flatnonzero(a[node, :n])
        assert len(mol_neighbours) == 1 and a[node, mol_neighbours[0]] == 1.0
    # molecule-molecule: rdkit Tanimoto >= 0.6, weight rounded to 2 decimals
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=1024)
    fps = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in nci.smiles]
    mol_block = a[:n, :n]
    for i in range(n):
        sims = np.round(DataStructs.BulkTanimotoSimilarity(fps[i], fps), 2)
        sims[i] = 0
        expected = np.where(
            np.array(DataStructs.BulkTanimotoSimilarity(fps[i], fps)) >= 0.6, sims, 0
        )
        expected[i] = 0
        np.testing.assert_allclose(mol_block[i], expected, atol=1e-6)
    assert np.count_nonzero(mol_block) > 0
    same_type = g.node_type[:, None] == g.node_type[None, :]
    profile = (g.node_type[:, None] != D.MOL) & same_type
    sims = a[profile & (a > 0)]
    assert sims.size > 0 and sims.min() >= 0.6
    np.testing.assert_allclose(sims * 100, np.round(sims * 100), atol=1e-3)


def test_toy_graph_seed_dependence(toy):
    nci, bio, g = toy
    again = D.build_toy_context_graph(nci.smiles, bio.cell, bio.expr, seed=0)
    np.testing.assert_array_equal(g.node_type, again.node_type)
    np.testing.assert_array_equal(g.indices, again.indices)
    other = D.build_toy_context_graph(nci.smiles, bio.cell, bio.expr, seed=1)
    assert other.n_nodes != g.n_nodes or not np.array_equal(other.indices, g.indices)


# ----------------------------------------------------------------------------------------------
# Paper scale: a tiny stand-in of the official folder
# ----------------------------------------------------------------------------------------------
def _write_csv(path, header, rows):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt") as handle:
        handle.write(",".join(header) + "\n")
        for row in rows:
            handle.write(",".join(str(v) for v in row) + "\n")


STRUCTURE = [
    ("m1", "CCCCCCCCc1ccccc1"),
    ("m1", "CCO"),  # repeated mol_id: first row wins
    ("m2", "CCCCCCCCCc1ccccc1"),
    ("m3", "Oc1ccccc1"),
    ("m4", "c1ccncc1C"),
    ("m5", "CC(=O)Nc1ccc(O)cc1"),
    ("m6", "CCN(CC)CC"),
    ("m7", "C1CC"),  # unparseable: skipped, its edges dropped
]


@pytest.fixture
def paper_root(tmp_path):
    root = str(tmp_path / "pretrain")
    os.makedirs(root)
    rng = np.random.default_rng(0)

    def table(name, header, rows, dim):
        _write_csv(os.path.join(root, f"{name}.csv.gz"), header, rows)
        np.savez(os.path.join(root, f"{name}_feature.npz"), data=rng.normal(size=(len(rows), dim)))

    _write_csv(os.path.join(root, "structure.csv.gz"), ("mol_id", "smiles"), STRUCTURE)
    table("CP-Bray", ("cell_bid", "mol_id"), [("cb1", "m1"), ("cb2", "m1"), ("cb3", "m2")], 5)
    table("CP-JUMP", ("cell_jid", "mol_id"), [("cj1", "m1"), ("cj2", "m4"), ("cj3", "m7")], 6)
    gene_rows = [(101, "m1"), (102, ""), (103, "m2")]
    table("G-CRISPR", ("ncbi_gene_id", "mol_id"), gene_rows, 4)
    table("G-ORF", ("ncbi_gene_id", "mol_id"), [("101.0", "m3"), (104, "")], 3)
    _write_csv(
        os.path.join(root, "GE.csv.gz"), ("express_id", "mol_id"), [("e1", "m1"), ("e2", "m5")]
    )
    express = np.array([[0.1, -3.5, 0.2, 0.0, 0.3], [0.5, 0.4, -0.2, 0.1, 0.05]])
    np.savez(os.path.join(root, "GE_feature.npz"), data=express)
    _write_csv(
        os.path.join(root, "L1k_idmaps.csv"), ("ncbi_gene_id",), [[101], [102], [103], [104], [999]]
    )
    _write_csv(
        os.path.join(root, "G-G.csv.gz"), ("source_id", "target_id"), [(101, 102), (103, 555)]
    )
    return root


def test_load_context_graph_on_a_stand_in_folder(paper_root, tmp_path):
    g, smiles = D.load_context_graph(paper_root, kmeans_clusters=2)
    assert len(smiles) == 6 and smiles[0] == "CCCCCCCCc1ccccc1"
    assert g.meta["nodes"] == {"mol": 6, "gene": 4, "cell": 5, "expr": 2}
    assert g.meta["molecules_skipped"]["unparseable"] == 1
    types = np.repeat([D.MOL, D.GENE, D.CELL, D.EXPR], [6, 4, 5, 2])
    np.testing.assert_array_equal(g.node_type, types)
    dims = {"mol": 1024, "gene": 7, "cell": 11, "expr": 5}
    for modality, code in zip(D.MODALITIES, (D.MOL, D.GENE, D.CELL, D.EXPR), strict=True):
        t = g.targets[modality]
        assert t.shape == (g.n_nodes, dims[modality])
        assert np.isnan(t[g.node_type != code]).all()
        assert (np.nan_to_num(t[g.node_type == code]) >= 0).all()
    np.testing.assert_array_equal(
        g.targets["mol"][:6], D.morgan_fingerprints(smiles, radius=4, n_bits=1024)
    )
    # gene 101 has CRISPR and ORF rows; gene 102 only CRISPR (ORF block NaN)
    assert np.isfinite(g.targets["gene"][6]).all()
    assert np.isnan(g.targets["gene"][7, 4:]).all() and np.isfinite(g.targets["gene"][7, :4]).all()
    a = _dense(g)
    np.testing.assert_array_equal(a, a.T)
    mol, gene, cell, expr = 0, 6, 10, 15  # first node of each type
    assert a[gene + 0, mol + 0] >= 1 and a[gene + 2, mol + 1] >= 1  # Hetionet gene-molecule
    assert a[gene + 0, gene + 1] >= 1  # Hetionet gene-gene (103-555 dropped: unknown gene)
    assert a[mol + 0, gene + 1] == pytest.approx(3.5)  # |expression| edge, may exceed 1
    assert a[cell : cell + 2, mol + 0].tolist() == [1, 1]  # Bray x JUMP pairs of m1
    assert a[expr + 1, mol + 4] == 1
    assert g.meta["dropped_edges"]["mol-cell"] == 1  # the JUMP row of unparseable m7
    assert a[mol + 0, mol + 1] > 0.8  # octyl- vs nonylbenzene, same scaffold
    assert np.all(np.diag(a) == 0)
    for kind, t in g.meta["thresholds"].items():
        assert 0.8 < t < 0.99, kind
    cache = str(tmp_path / "graph.npz")
    first, _ = D.load_context_graph(paper_root, kmeans_clusters=2, cache_path=cache)
    cached, cached_smiles = D.load_context_graph(paper_root, kmeans_clusters=2, cache_path=cache)
    assert cached_smiles == smiles
    np.testing.assert_array_equal(cached.weights, first.weights)
    np.testing.assert_array_equal(cached.targets["gene"], first.targets["gene"])


def test_missing_files_and_columns(paper_root, tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing is downloaded"):
        D.load_context_graph(str(tmp_path / "absent"))
    os.remove(os.path.join(paper_root, "GE_feature.npz"))
    with pytest.raises(FileNotFoundError, match="GE_feature.npz"):
        D.load_context_graph(paper_root)
    np.savez(os.path.join(paper_root, "GE_feature.npz"), data=np.zeros((2, 5)))
    _write_csv(os.path.join(paper_root, "GE.csv.gz"), ("express_id", "mol"), [("e1", "m1")])
    with pytest.raises(ValueError, match="mol_id"):
        D.load_context_graph(paper_root)
    with pytest.raises(FileNotFoundError, match="assays.csv.gz"):
        D.load_assays(str(tmp_path / "assays.csv.gz"), 2)


def test_load_assays(tmp_path):
    path = str(tmp_path / "assays.csv.gz")
    rows = [("CCO", "AAA", 1.0, ""), ("c1ccccc1", "BBB", "", 0.0), ("C1CC", "CCC", 0.0, 1.0)]
    _write_csv(path, ("smiles", "inchikey", "t1", "t2"), rows)
    smiles, labels = D.load_assays(path, D.DOWNSTREAM["broad6k"])
    assert smiles == ["CCO", "c1ccccc1", "C1CC"]
    assert labels.shape == (3, 2) and labels.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(labels), [[0, 1], [1, 0], [0, 0]])
    assert labels[0, 0] == 1 and labels[2, 1] == 1
    assert D.REGRESSION == {"biogenadme"} and set(D.DOWNSTREAM) == set(D.DOWNSTREAM_TASKS)


def test_paper_scale_experiment_runs_on_the_stand_in_folder(paper_root, tmp_path):
    """`scale=paper` end to end on local files: the official pre-training layout (above) and
    an assays table, every method, a tiny encoder; nothing is downloaded."""
    from papers.infoalign.train import run
    from shared.config import compose

    assays = str(tmp_path / "assays.csv.gz")
    smiles = [f"{'C' * n}{ring}" for n in range(1, 9) for ring in ("c1ccccc1", "c1ccncc1", "O")]
    rng = np.random.default_rng(0)
    rows = [
        (s, f"KEY{i}", "", "", int(rng.integers(2)), int(rng.integers(2)))
        for i, s in enumerate(smiles)
    ]
    rows.append(("C1CC", "BAD", "", "", 1, 0))  # unparseable: skipped and counted
    _write_csv(assays, ("smiles", "inchikey", "a", "b", "t1", "t2"), rows)
    cfg = compose(
        "infoalign",
        "paper",
        [
            f"data.root={paper_root}",
            f"data.downstream_path={assays}",
            "data.kmeans_clusters=2",
            "encoder.num_layers=2",
            "encoder.emb_dim=16",
            "pretrain.epochs=2",
            "probe.epochs=3",
            "seeds=[0]",
            "runtime.progress=false",
            "runtime.num_threads=1",
        ],
    )
    results = run(cfg, tmp_path / "run")
    assert set(results) == {"infoalign", "structure_only", "random", "contrastive"}
    for metrics in results.values():
        assert len(metrics["test_auc"]) == 1
    assert (tmp_path / "run" / "test_auc.png").exists()


def test_paper_scale_preflight_names_what_is_missing(paper_root, tmp_path):
    from papers.infoalign.train import preflight
    from shared.config import compose

    assays = tmp_path / "assays.csv.gz"
    assays.write_bytes(b"")
    ok = compose(
        "infoalign", "paper", [f"data.root={paper_root}", f"data.downstream_path={assays}"]
    )
    assert preflight(ok) == []
    unset = preflight(compose("infoalign", "paper"))
    assert [p.split(" ")[0] for p in unset] == ["data.root", "data.downstream_path"]
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "structure.csv.gz").write_bytes(b"")
    problems = preflight(
        compose("infoalign", "paper", [f"data.root={partial}", f"data.downstream_path={assays}"])
    )
    assert len(problems) == 1 and "lacks CP-Bray.csv.gz" in problems[0]
    assert "structure.csv.gz" not in problems[0]
