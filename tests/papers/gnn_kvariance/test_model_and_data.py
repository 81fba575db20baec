"""The MPNNs' 1-WL invariance (brief Sec. 7 item 6), the data sets and the offline loaders."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from sklearn.model_selection import train_test_split
from torch_geometric.data import Batch, Data

from papers.gnn_kvariance import data as D
from papers.gnn_kvariance.model import build_model, gcn_conv_count, margin_loss
from papers.gnn_kvariance.train import colour_inputs, epoch_batches, node_inputs, preflight
from papers.gnn_kvariance.wl import wl_histograms
from shared.config import compose


def logits(model, graphs):
    batch = Batch.from_data_list(graphs)
    model.eval()
    with torch.no_grad():
        return model(batch.x, batch.edge_index, batch.batch, batch.num_graphs)


C6 = D.from_networkx_graph(nx.cycle_graph(6))
TWO_TRIANGLES = D.from_networkx_graph(nx.disjoint_union(nx.cycle_graph(3), nx.cycle_graph(3)))


# --------------------------------------------------------------- 6. MPNN invariance
@pytest.mark.parametrize("arch", ["gin", "gcn"])
def test_mpnn_gives_1wl_equivalent_graphs_the_same_logits(arch, one_thread):
    torch.manual_seed(0)
    model = build_model(arch, in_dim=1, hidden=16, num_layers=3, num_classes=2)
    out = logits(model, [C6, TWO_TRIANGLES])
    assert (out[0] - out[1]).abs().max() < 1e-5


@pytest.mark.parametrize("arch", ["gin", "gcn"])
def test_mpnn_is_invariant_to_node_order(arch, one_thread):
    torch.manual_seed(1)
    g = nx.gnp_random_graph(12, 0.3, seed=4)
    data = D.from_networkx_graph(g)
    data.x = torch.from_numpy(
        np.array([[1.0, float(d)] for _, d in sorted(g.degree())], dtype=np.float32)
    )
    perm = torch.randperm(12)
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(12)
    permuted = Data(x=data.x[perm], edge_index=inverse[data.edge_index], num_nodes=12)
    other = D.from_networkx_graph(nx.star_graph(5))
    other.x = torch.ones(6, 2)
    model = build_model(arch, in_dim=2, hidden=16, num_layers=2, num_classes=3)
    # each in a batch with the same other graph: the GCN's BatchNorm sees the same statistics
    original, reordered = logits(model, [data, other]), logits(model, [permuted, other])
    assert (original - reordered).abs().max() < 1e-5


def test_triangle_counts_let_the_fmpnn_separate_c6_from_two_triangles(one_thread):
    task = D.GraphTask("pair", [C6, TWO_TRIANGLES], np.array([0, 1]), 2, np.arange(2), np.arange(2))
    inputs = node_inputs(task, ["triangle"])
    graphs = [
        Data(x=x.float(), edge_index=g.edge_index) for x, g in zip(inputs, task.graphs, strict=True)
    ]
    torch.manual_seed(0)
    model = build_model("gin", in_dim=2, hidden=16, num_layers=1, num_classes=2)
    out = logits(model, graphs)
    assert (out[0] - out[1]).abs().max() > 1e-3


@pytest.mark.parametrize(
    ("layer_count", "expected"),
    [("official", [2, 2, 3, 4, 5, 6]), ("exact", [1, 2, 3, 4, 5, 6])],
)
def test_official_gcn_builds_two_convs_for_one_layer(layer_count, expected, one_thread):
    """network/GCN.py l. 26-38: layers_mp = 1 appends a first GCNConv and, since L != 2,
    range(L - 2) adds none and the final append a second one."""
    from torch_geometric.nn import GCNConv, GINConv

    for layers_mp, n_convs in zip(range(1, 7), expected, strict=True):
        model = build_model("gcn", 1, 8, layers_mp, 2, gcn_layer_count=layer_count)
        convs = [m for m in model.modules() if isinstance(m, GCNConv)]
        assert len(convs) == n_convs == gcn_conv_count(layers_mp, layer_count), layers_mp
        assert convs[0].in_channels == 1 and all(c.in_channels == 8 for c in convs[1:])
        assert all(c.bias is None for c in convs)
        out = logits(model, [C6, TWO_TRIANGLES, D.from_networkx_graph(nx.path_graph(4))])
        assert out.shape == (3, 2)
    # the toy GIN is not the official network: always L layers
    gin = build_model("gin", 3, 8, 1, 2, gcn_layer_count=layer_count)
    assert sum(isinstance(m, GINConv) for m in gin.modules()) == 1
    with pytest.raises(ValueError, match="gcn_layer_count"):
        build_model("gcn", 3, 8, 1, 2, gcn_layer_count="twice")


def test_margin_loss_on_a_hand_case():
    """log-softmax of (ln 3, 0) is (ln 3/4, ln 1/4), a margin of ln 3 > 1 for class 0: no
    loss; for class 1 the hinge is 1 + ln 3, over K = 2 classes (MultiMarginLoss divides by
    K). Equal logits: the hinge is 1, halved."""
    z = torch.tensor([[np.log(3.0), 0.0], [np.log(3.0), 0.0], [0.0, 0.0]])
    assert margin_loss(z[:1], torch.tensor([0])).item() == pytest.approx(0.0, abs=1e-7)
    assert margin_loss(z[1:2], torch.tensor([1])).item() == pytest.approx((1 + np.log(3)) / 2)
    assert margin_loss(z[2:], torch.tensor([0])).item() == pytest.approx(0.5)
    batch = margin_loss(z, torch.tensor([0, 1, 0])).item()  # the batch mean
    assert batch == pytest.approx((0 + (1 + np.log(3)) / 2 + 0.5) / 3)


@pytest.mark.parametrize(
    ("arch", "head_batchnorm", "expected"),
    [("gcn", None, 1), ("gcn", False, 0), ("gin", None, 0), ("gin", True, 1)],
)
def test_head_batchnorm_knob(arch, head_batchnorm, expected, one_thread):
    """model.head_batchnorm: None is the architecture's own head (official GCN: BatchNorm
    without running statistics; toy GIN: none)."""
    model = build_model(arch, 1, 8, 2, 3, head_batchnorm=head_batchnorm)
    norms = [m for m in model.head.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    assert len(norms) == expected
    assert all(not m.track_running_stats for m in norms)
    assert logits(model, [C6, TWO_TRIANGLES]).shape == (2, 3)


def test_margin_loss_is_multimargin_on_log_softmax():
    z, y = torch.randn(7, 4), torch.randint(0, 4, (7,))
    expected = torch.nn.MultiMarginLoss(p=1, margin=1.0)(torch.log_softmax(z, -1), y)
    assert margin_loss(z, y).item() == pytest.approx(expected.item())


# ----------------------------------------------------------------------------- data
def test_inconsistent_feature_widths_name_the_graph():
    graphs = [
        Data(x=torch.ones(3, 2), edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=3),
        Data(x=torch.ones(4, 2), edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=4),
        Data(x=torch.ones(2, 3), edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=2),
    ]
    with pytest.raises(ValueError, match="graph 2 has 3 node features, graph 0 has 2"):
        D.check_feature_widths(graphs, "broken")
    task = D.GraphTask("broken", graphs, np.zeros(3, dtype=int), 2, np.arange(3), np.arange(3))
    with pytest.raises(ValueError, match="broken: graph 2"):
        node_inputs(task, ["triangle"])


def test_regular_task_is_1wl_blind_and_split_as_asked():
    task = D.make_toy_task(
        "a", "regular", 14, 6, [16, 16], 4, 0.0, "triangles", np.random.default_rng(0)
    )
    assert len(task.train_idx) == 14 and len(task.test_idx) == 6
    assert not set(task.train_idx) & set(task.test_idx)
    for g in task.graphs:
        degrees = torch.bincount(g.edge_index[0], minlength=16)
        assert (degrees == 4).all()


def test_gnp_graphs_are_connected_and_labelled_by_triangle_density():
    rng = np.random.default_rng(1)
    graphs = D.connected_gnp_graphs(30, 12, 20, 0.25, rng)
    assert all(nx.is_connected(g) and 12 <= g.number_of_nodes() <= 20 for g in graphs)
    density = np.array([sum(nx.triangles(g).values()) / 3 / g.number_of_edges() for g in graphs])
    np.testing.assert_array_equal(
        D.label_graphs(graphs, "triangle_density"), density > np.median(density)
    )


def test_epoch_batches_drop_a_single_graph_batch():
    batches = epoch_batches(257, 128, seed=0, epoch=0)
    assert [len(b) for b in batches] == [128, 128]  # the 257th graph would be alone
    assert [len(b) for b in epoch_batches(40, None, 0, 0)] == [40]


# ------------------------------------------------------------ paper-scale loaders
@pytest.fixture
def no_downloads(monkeypatch):
    """Any PyG download attempt fails the test."""
    import torch_geometric.datasets.molecule_net as molecule_net
    import torch_geometric.io.fs as fs

    def refuse(*args, **kwargs):
        raise AssertionError(f"a download was attempted: {args}")

    monkeypatch.setattr(fs, "cp", refuse)
    monkeypatch.setattr(molecule_net, "download_url", refuse)


@pytest.mark.parametrize(
    ("source", "name", "expected"),
    [
        ("tudataset", "ENZYMES", "ENZYMES/raw/ENZYMES_A.txt"),
        ("moleculenet", "SIDER", "sider/raw/sider.csv"),
    ],
)
def test_missing_raw_files_are_named_and_nothing_is_fetched(
    tmp_path, no_downloads, source, name, expected
):
    with pytest.raises(FileNotFoundError, match=expected):
        D.load_paper_task(tmp_path, source, name, 21, 0.1, 41)
    assert not list(tmp_path.iterdir())  # not even a folder was made


def write_tu_files(root, name, n_graphs=20, node_attributes=0, node_labels=False):
    """A tiny TU data set in the official text format: paths and cycles of 3-5 nodes.
    Optionally node j (numbered over the whole set from 0) gets the continuous attributes
    [0.5 j, 1 + j mod 2, ...] (the first ``node_attributes`` of them) and the label
    1 + j mod 3, as ENZYMES and PROTEINS have both."""
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    edges, indicator, labels, offset = [], [], [], 0
    for g in range(n_graphs):
        n = 3 + g % 3
        indicator += [g + 1] * n
        ring = [(i, i + 1) for i in range(n - 1)] + ([(n - 1, 0)] if g % 2 else [])
        for i, j in ring:  # paths, and cycles for odd g
            a, b = offset + i + 1, offset + j + 1
            edges += [(a, b), (b, a)]
        labels.append(g % 2)
        offset += n
    (raw / f"{name}_A.txt").write_text("".join(f"{a}, {b}\n" for a, b in edges))
    (raw / f"{name}_graph_indicator.txt").write_text("".join(f"{i}\n" for i in indicator))
    (raw / f"{name}_graph_labels.txt").write_text("".join(f"{y}\n" for y in labels))
    if node_attributes:
        rows = [[0.5 * j, 1.0 + j % 2, 2.0 + j % 5][:node_attributes] for j in range(offset)]
        text = "".join(", ".join(str(v) for v in row) + "\n" for row in rows)
        (raw / f"{name}_node_attributes.txt").write_text(text)
    if node_labels:
        (raw / f"{name}_node_labels.txt").write_text(
            "".join(f"{1 + j % 3}\n" for j in range(offset))
        )


def test_tu_loader_reads_local_files_with_the_official_split(tmp_path, no_downloads):
    write_tu_files(tmp_path, "TOYTU")
    task = D.load_paper_task(tmp_path, "tudataset", "TOYTU", None, 0.1, 41)
    assert len(task.graphs) == 20 and task.num_classes == 2
    train, test = train_test_split(np.arange(20), test_size=0.1, random_state=41)
    np.testing.assert_array_equal(task.train_idx, train)
    np.testing.assert_array_equal(task.test_idx, test)
    assert all(g.x.shape == (g.num_nodes, 1) for g in task.graphs)  # no labels: constant


def test_tu_loader_with_node_attributes_as_the_official_loader(tmp_path, no_downloads):
    """custom_loader.py l. 74: TUDataset(use_node_attr=True), so the model reads [continuous
    attributes, one-hot labels]; compute_bound.py l. 153 colours lambda from the labels only."""
    write_tu_files(tmp_path, "ATTR", node_attributes=2, node_labels=True)
    official = D.load_paper_task(tmp_path, "tudataset", "ATTR", None, 0.1, 41, use_node_attr=True)
    labels_only = D.load_paper_task(tmp_path, "tudataset", "ATTR", None, 0.1, 41, False)
    # graph 0 is the path on nodes j = 0, 1, 2: attributes (0.5 j, 1 + j mod 2), labels 1, 2, 3
    hand = torch.tensor(
        [[0.0, 1.0, 1.0, 0.0, 0.0], [0.5, 2.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0, 1.0]]
    )
    torch.testing.assert_close(official.graphs[0].x, hand)
    torch.testing.assert_close(official.colour_x[0], hand[:, 2:])
    torch.testing.assert_close(labels_only.graphs[0].x, hand[:, 2:])
    assert labels_only.colour_x is None  # the model and lambda read the same labels
    assert all(g.x.shape == (g.num_nodes, 5) for g in official.graphs)
    np.testing.assert_array_equal(official.train_idx, labels_only.train_idx)

    # the F-MPNN reads [attributes, labels, counts]; lambda's colours are [labels, counts],
    # so lambda is the one the labels-only load gives (the official F-WL features)
    patterns = ["triangle"]
    inputs = node_inputs(official, patterns)
    colours = colour_inputs(official, inputs)
    assert inputs[0].shape[1] == 6 and colours[0].shape[1] == 4
    for ours, theirs in zip(colours, node_inputs(labels_only, patterns), strict=True):
        torch.testing.assert_close(ours, theirs)
    lam = wl_histograms(official.graphs, torch.cat(colours), 2)
    lam_labels = wl_histograms(labels_only.graphs, torch.cat(node_inputs(labels_only, patterns)), 2)
    for ours, theirs in zip(lam, lam_labels, strict=True):
        assert ours.shape == theirs.shape and (ours != theirs).nnz == 0
    # colouring the model's inputs instead would split nodes by their attributes
    assert wl_histograms(official.graphs, torch.cat(inputs), 1)[0].shape[1] > lam[0].shape[1]


def test_moleculenet_loader_reads_local_csv_and_keeps_one_label(tmp_path, no_downloads):
    raw = tmp_path / "bace" / "raw"
    raw.mkdir(parents=True)
    rows = ["mol,CID,Class"] + [
        f"{s},id{i},{i % 2}" for i, s in enumerate(["CCO", "c1ccccc1", "CC(=O)O", "CCN"] * 3)
    ]
    (raw / "bace.csv").write_text("\n".join(rows) + "\n")
    task = D.load_paper_task(tmp_path, "moleculenet", "BACE", None, 0.1, 41)
    assert len(task.graphs) == 12
    np.testing.assert_array_equal(task.y, np.arange(12) % 2)
    assert len({g.x.shape[1] for g in task.graphs}) == 1


def test_preflight_names_every_missing_data_set(tmp_path):
    cfg = compose("gnn_kvariance", "paper", [f"data.root={tmp_path}"])
    problems = preflight(cfg)
    for name in ("ENZYMES", "PROTEINS", "MUTAG", "PTC_MR", "DD"):
        assert any(f"{name}/raw/{name}_A.txt" in p for p in problems), name
    assert any("sider/raw/sider.csv" in p for p in problems)
    assert any("bace/raw/bace.csv" in p for p in problems)
    assert preflight(compose("gnn_kvariance", "paper")) == [
        "data.root is not set (the folder holding <name>/raw/ of every data set)"
    ]


@pytest.mark.parametrize(
    "quirks",
    [
        [],  # paper.yaml: the official values
        ["model.gcn_layer_count=exact", "bound.draw_rng=generator", "data.use_node_attr=false"],
    ],
    ids=["official", "not_official"],
)
def test_paper_scale_runs_end_to_end_on_a_local_tu_set(tmp_path, one_thread, quirks):
    """The paper path (GCN, margin loss, minibatches, the four official families, seed-41
    draws, node attributes) on a tiny local TU set in place of the official ones."""
    from shared.config import compose_dict
    from shared.entry import execute

    write_tu_files(tmp_path / "data", "TOYTU", n_graphs=40, node_attributes=2, node_labels=True)
    others = ["ENZYMES", "PROTEINS", "PTC_MR", "DD", "SIDER", "BACE"]
    overrides = [
        f"data.root={tmp_path / 'data'}",
        *(f"tasks.{name}=null" for name in others),
        "tasks.MUTAG.name=TOYTU",  # the MUTAG task, pointed at the local stand-in
        "tasks.MUTAG.layers=[1,2]",
        "seeds=[1]",
        "train.epochs=2",
        "train.batch_size=16",
        *(f"families.{f}.epochs=2" for f in ("fmpnn_paths", "fmpnn_cycles", "fmpnn_cliques")),
        "runtime.progress=false",
        f"out_root={tmp_path}",
        *quirks,
    ]
    record = execute(
        "gnn_kvariance", compose_dict("gnn_kvariance", "paper", overrides), tmp_path / "run"
    )
    metrics = record["metrics"]
    assert set(metrics) == {
        f"MUTAG_L{d}/{f}"
        for d in (1, 2)
        for f in ("mpnn", "fmpnn_paths", "fmpnn_cycles", "fmpnn_cliques")
    }
    for method, values in metrics.items():
        assert np.isfinite(values["bound"]["mean"]), method
    assert (tmp_path / "run" / "bound_vs_depth.png").is_file()
