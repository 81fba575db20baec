"""The real rung of gnn_kvariance: the solubility SDF loader on the real files (shapes,
classes, atoms, bonds, both splits), its errors on truncated or corrupted copies, the split
option's validation, and the real claims' comparators (median ratio, depth-wise Spearman).
The real path end to end runs in tests/test_real.py (REAL_SMOKE_OVERRIDES)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from papers.gnn_kvariance import claims
from papers.gnn_kvariance.data import (
    ATOM_TYPES,
    SOLUBILITY_FILES,
    atom_features,
    load_mutag_task,
    load_solubility_task,
    read_solubility_sdf,
    read_tu_text,
)
from shared.config import ConfigError, compose
from tests.helpers import require_assets

TRAIN, TEST = SOLUBILITY_FILES["train"], SOLUBILITY_FILES["test"]


@pytest.fixture
def files():
    return require_assets("solubility")["solubility"]


def test_solubility_loader_on_the_real_files(files):
    task = load_solubility_task("solubility", files, "shipped", 0.1, 41)
    assert len(task.graphs) == 1282 and task.num_classes == 3
    assert task.train_idx.tolist() == list(range(1025))
    assert task.test_idx.tolist() == list(range(1025, 1282))
    # classes: 0 = (A) low, 1 = (B) medium, 2 = (C) high
    assert np.bincount(task.y[task.train_idx]).tolist() == [417, 402, 206]
    assert np.bincount(task.y[task.test_idx]).tolist() == [102, 115, 40]
    train = [task.graphs[i] for i in task.train_idx]
    x = torch.cat([g.x for g in train])
    assert x.shape == (13323, len(ATOM_TYPES) + 1)  # heavy atoms of the train file
    assert torch.equal(x.sum(dim=1), torch.ones(len(x)))  # one-hot
    assert x.sum(dim=0)[:3].tolist() == [9999.0, 831.0, 1643.0]  # C, N, O
    assert x[:, -1].sum() == 1  # the single tin atom: "other"
    assert sum(g.edge_index.shape[1] for g in train) == 2 * 13703  # bonds, both directions
    for g in task.graphs[:50]:
        edges = set(map(tuple, g.edge_index.T.tolist()))
        assert edges == {(b, a) for a, b in edges}
    first = task.graphs[0]  # n-pentane, "(A) low"
    assert first.num_nodes == 5 and first.edge_index.shape[1] == 8 and task.y[0] == 0
    assert first.x[:, 0].tolist() == [1.0] * 5
    pooled = load_solubility_task("solubility", files, "random", 0.1, 41)
    assert len(pooled.train_idx) == 1153 and len(pooled.test_idx) == 129
    assert sorted(np.r_[pooled.train_idx, pooled.test_idx].tolist()) == list(range(1282))


def test_loader_names_a_truncated_or_corrupted_file(files, tmp_path):
    data = files[TEST].read_bytes()
    cases = {
        "half.sdf": (data[: len(data) // 2], "not a readable molecule|has no SOL_classification"),
        "empty.sdf": (b"", "no molecules"),
        "text.sdf": (b"hello\nworld\n", "not a readable molecule"),
        "nolabel.sdf": (data.replace(b"<SOL_classification>", b"<SOL_class>", 1), "has no SOL"),
        "badlabel.sdf": (data.replace(b"(A) low", b"(Z) unknown", 1), "expected one of"),
        # the counts line of the first record mangled
        "counts.sdf": (data.replace(b"999 V2000", b"999 V9999", 1), "not a readable molecule"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(ValueError, match=re.escape(str(path)) + ".*" + f"({message})"):
            read_solubility_sdf(path)
    # cut at a record boundary: every record parses, the count gives it away
    ends = [m.end() for m in re.finditer(rb"\$\$\$\$\r?\n", data)]
    assert len(ends) == 257
    folder = tmp_path / "cut"
    folder.mkdir()
    (folder / TEST).write_bytes(data[: ends[99]])  # the first 100 records, intact
    cut = {TRAIN: files[TRAIN], TEST: folder / TEST}
    with pytest.raises(ValueError, match=re.escape(str(folder / TEST)) + ".*truncated"):
        load_solubility_task("solubility", cut, "shipped", 0.1, 41)
    with pytest.raises(FileNotFoundError, match="missing.sdf"):
        read_solubility_sdf(tmp_path / "missing.sdf")
    with pytest.raises(ValueError, match="unknown split"):
        load_solubility_task("solubility", files, "stratified", 0.1, 41)


def test_atom_features_one_hot_with_an_other_column():
    x = atom_features(["C", "Cl", "Sn", "I"])
    assert x.shape == (4, len(ATOM_TYPES) + 1)
    assert x.argmax(dim=1).tolist() == [0, ATOM_TYPES.index("Cl"), len(ATOM_TYPES), 8]


def test_a_shipped_split_is_refused_where_no_file_ships_one():
    # refused when the config becomes its dataclass (Config.validate), before any work
    with pytest.raises(ConfigError, match=r"^tasks\.gnp\.split=.*only solubility ship a split"):
        compose("gnn_kvariance", "toy", ["tasks.gnp.split=shipped"])
    compose("gnn_kvariance", "real")  # solubility's shipped split: accepted


def results_of(values: dict[str, dict[str, list[float]]]):
    return {m: {k: np.asarray(v, dtype=float) for k, v in d.items()} for m, d in values.items()}


def test_median_ratio_is_robust_to_one_inflated_seed():
    results = results_of(
        {"deep": {"bound": [4.0, 5.0, 6.0, 500.0, 5.5]}, "shallow": {"bound": [2.0] * 5}}
    )
    ratio = claims.MedianRatioAtLeast("bound", "deep", "shallow", 2.0)
    assert ratio.measure(results) == pytest.approx(5.5 / 2.0)  # median 5.5, not the mean 104
    assert ratio.holds(ratio.measure(results))
    swapped = claims.MedianRatioAtLeast("bound", "shallow", "deep", 2.0)
    assert not swapped.holds(swapped.measure(results))
    assert ratio.methods_needed() == {"deep", "shallow"} and ratio.threshold == 2.0


def test_depth_spearman_uses_seed_medians_of_x_and_seed_means_of_y():
    # depth 3's bound has one inflated seed: its mean would rank it first, its median third
    runs = {
        "L1": {"bound": [1.0, 1.0, 1.0], "gap": [0.0, 0.1, 0.2]},
        "L2": {"bound": [2.0, 2.0, 2.0], "gap": [0.2, 0.2, 0.2]},
        "L3": {"bound": [3.0, 3.0, 900.0], "gap": [0.3, 0.3, 0.3]},
        "L4": {"bound": [40.0, 40.0, 40.0], "gap": [0.4, 0.4, 0.4]},
    }
    rho = claims.DepthSpearmanAtLeast("bound", "gap", ("L1", "L2", "L3", "L4"), 0.5)
    assert rho.measure(results_of(runs)) == pytest.approx(1.0)
    runs["L4"]["gap"] = [0.0, 0.0, 0.0]  # ranks 1, 2, 3, 4 against 2, 3, 4, 1
    assert rho.measure(results_of(runs)) == pytest.approx(-0.2)
    assert not rho.holds(-0.2) and not rho.holds(float("nan"))


def test_real_claims_name_the_real_runs():
    runs = {
        f"{task}_L{d}/{f}"
        for task in claims.REAL_TASKS
        for d in claims.REAL_DEPTHS
        for f in claims.REAL_METHODS
    }
    for claim in claims.REAL_CLAIMS:
        assert claim.comparator.methods_needed() <= runs, claim.name
    assert set(claims.REAL_FAMILY_NAMES) == set(claims.REAL_METHODS)
    assert not claims.REAL_CI and claims.REAL_CPU_BUDGET_UNITS <= 4000.0
    mutag = [c.name for c in claims.REAL_CLAIMS if c.name.startswith("MUTAG: ")]
    assert len(mutag) == 8 and all(
        "mutag_L" in c.comparator.describe()
        for c in claims.REAL_CLAIMS
        if c.name.startswith("MUTAG: ")
    )


# ------------------------------------------------------------------------------- MUTAG
@pytest.fixture
def mutag_files():
    return require_assets("mutag")["mutag"]


def test_mutag_loader_on_the_real_files(mutag_files):
    """188 graphs, 3,371 nodes, 7,442 directed edges (3,721 bonds), 7 atom labels one-hot,
    labels -1 / 1 -> 0 / 1 (63 / 125), the official 90/10 split with seed 41 (169 / 19)."""
    task = load_mutag_task("mutag", mutag_files, 0.1, 41)
    assert len(task.graphs) == 188 and task.num_classes == 2
    assert sum(g.num_nodes for g in task.graphs) == 3371
    assert sum(g.edge_index.shape[1] for g in task.graphs) == 7442
    assert np.bincount(task.y).tolist() == [63, 125]
    assert (len(task.train_idx), len(task.test_idx)) == (169, 19)
    first = task.graphs[0]
    assert first.num_nodes == 17 and first.edge_index.shape == (2, 38)
    assert first.x.shape == (17, 7) and torch.all(first.x.sum(dim=1) == 1)
    for g in task.graphs:  # undirected, within the graph
        assert g.edge_index.min() >= 0 and g.edge_index.max() < g.num_nodes
        edges = set(map(tuple, g.edge_index.T.tolist()))
        assert edges == {(b, a) for a, b in edges}


def test_tu_reader_names_a_broken_file(mutag_files, tmp_path):
    copy = {name: tmp_path / name for name in mutag_files}
    for name, path in mutag_files.items():
        copy[name].write_bytes(path.read_bytes())
    labels = copy["MUTAG_node_labels.txt"]
    labels.write_text("\n".join(labels.read_text().splitlines()[:-5]) + "\n")
    with pytest.raises(ValueError, match=r"MUTAG_node_labels\.txt: 3366 node labels for 3371"):
        read_tu_text(copy, "MUTAG")
    labels.write_bytes(mutag_files["MUTAG_node_labels.txt"].read_bytes())
    adjacency = copy["MUTAG_A.txt"]
    adjacency.write_text(adjacency.read_text().replace("2, 1\n", "2; 1\n", 1))
    with pytest.raises(ValueError, match=r"MUTAG_A\.txt: line 1 is not 2 integer"):
        read_tu_text(copy, "MUTAG")
    with pytest.raises(ValueError, match="lacks"):
        load_mutag_task("mutag", {}, 0.1, 41)


def test_max_epochs_caps_every_family(one_thread, tmp_path, monkeypatch):
    """tasks.<name>.max_epochs caps the family's epochs (the F-MPNN's 500 too)."""
    from papers.gnn_kvariance import train
    from papers.gnn_kvariance.config import FamilyConfig
    from shared.logger import MetricsLogger
    from shared.runtime import make_accelerator

    steps = []
    monkeypatch.setattr(train, "fit", lambda **kwargs: steps.append(kwargs["max_steps"]))
    cfg = compose("gnn_kvariance", "real")
    task = load_mutag_task("mutag", require_assets("mutag")["mutag"], 0.1, 41)
    inputs = train.node_inputs(task, [])
    logger = MetricsLogger(tmp_path / "metrics.jsonl", enabled=False)
    accelerator = make_accelerator(cfg.runtime)
    for cap in (2, None):
        train.train_family(
            cfg,
            FamilyConfig(epochs=500),
            task,
            inputs,
            1,
            1,
            tmp_path,
            accelerator,
            logger,
            {},
            cap,
        )
    # two batches an epoch (128 + 41 of 169 graphs): 2 epochs when capped, else the 500
    assert steps == [2 * 2, 500 * 2]
