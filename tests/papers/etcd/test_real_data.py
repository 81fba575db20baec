"""ETCD's real rung: the Holzinger-Swineford and Sachs loaders on the real files (skipped,
naming the fetch command, when the assets are absent), their errors on bad copies, the
preparation, the new metrics (ARI, indicator clusters, pair F1, edge scores, latent order)
and one real run end to end."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

from papers.etcd import claims
from papers.etcd.data import (
    HS_FACTORS,
    HS_FILE,
    SACHS_CONDITIONS,
    SACHS_DATA_FILE,
    SACHS_OBSERVATIONAL_ROWS,
    SACHS_PROTEINS,
    SACHS_ROWS,
    SACHS_TARGET_FILE,
    load_holzinger_swineford,
    load_sachs,
    prepare,
)
from papers.etcd.method import (
    adjusted_rand_index,
    cluster_pair_f1,
    edge_scores,
    indicator_clusters,
)
from papers.etcd.train import HS_ORDERS, REAL_GRAPH_FILE, hs_latent_order, run_real_seed
from shared.config import compose
from tests.helpers import require_assets


@pytest.fixture(scope="module")
def hs_file():
    return require_assets("holzinger_swineford")["holzinger_swineford"][HS_FILE]


@pytest.fixture(scope="module")
def sachs_files():
    files = require_assets("sachs")["sachs"]
    return files[SACHS_DATA_FILE], files[SACHS_TARGET_FILE]


# ---------------------------------------------------------------- loaders on the real files
def test_holzinger_swineford_shapes_clusters_and_values(hs_file):
    ds = load_holzinger_swineford(hs_file)
    assert ds.X.shape == (9, 301)
    assert ds.names == [f"x{i}" for i in range(1, 10)]
    assert ds.cluster_names == list(HS_FACTORS) == ["visual", "textual", "speed"]
    assert ds.clusters.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert ds.X[0, 0] == pytest.approx(3.3333333) and ds.X[8, 0] == pytest.approx(6.3611111)
    assert np.all(np.isfinite(ds.X)) and ds.edges is None
    assert load_holzinger_swineford().X.tobytes() == ds.X.tobytes()  # default: the asset


def test_sachs_observational_rows_and_consensus_graph(sachs_files):
    data, target = sachs_files
    ds = load_sachs("observational", data, target)
    assert ds.X.shape == (11, SACHS_OBSERVATIONAL_ROWS) == (11, 853)
    assert ds.names == list(SACHS_PROTEINS)
    assert ds.X[:, 0].tolist() == [
        26.4,
        13.2,
        8.82,
        18.3,
        58.8,
        6.61,
        17.0,
        414.0,
        17.0,
        44.9,
        40.0,
    ]
    assert len(ds.edges) == 18 and ("praf", "pmek") in ds.edges and ("PKA", "pjnk") in ds.edges
    A = ds.adjacency()
    assert A.sum() == 18 and A[SACHS_PROTEINS.index("pmek"), SACHS_PROTEINS.index("praf")] == 1
    pooled = load_sachs("all", data, target)
    assert pooled.X.shape == (11, SACHS_ROWS) == (11, 7466)
    assert np.array_equal(pooled.X[:, :853], ds.X)


def test_sachs_condition_blocks_are_where_the_sizes_put_them(sachs_files):
    """The verification behind "first 853 rows = CD3/CD28": a mean shift of the log data
    between 100 rows before and after a row peaks at each cumulative condition size."""
    L = np.log(load_sachs("all", *sachs_files).X.T)  # (7466, 11)
    bounds = np.cumsum([size for _, size in SACHS_CONDITIONS])[:-1]
    for b in bounds:
        ts = np.arange(b - 60, b + 61)
        shift = [
            np.sum(
                (L[t - 100 : t].mean(0) - L[t : t + 100].mean(0)) ** 2 / L[t - 100 : t + 100].var(0)
            )
            for t in ts
        ]
        assert abs(int(ts[int(np.argmax(shift))]) - b) <= 10, b


# ---------------------------------------------------------------- bad input
def test_truncated_or_corrupted_holzinger_swineford_copy_names_the_file(hs_file, tmp_path):
    lines = hs_file.read_text().splitlines(keepends=True)
    truncated = tmp_path / "truncated.csv"
    truncated.write_text("".join(lines[:150]))
    with pytest.raises(ValueError, match=r"truncated\.csv.*expected 301 data rows, found 149"):
        load_holzinger_swineford(truncated)
    corrupted = tmp_path / "corrupted.csv"
    corrupted.write_bytes(b"\x00\xff\xfe garbage \x89PNG\r\n" * 3)
    with pytest.raises(ValueError, match=r"corrupted\.csv"):
        load_holzinger_swineford(corrupted)
    bad_cell = tmp_path / "bad_cell.csv"
    bad_cell.write_text("".join(lines[:5]).replace("3.3333333", "n/a", 1) + "".join(lines[5:]))
    with pytest.raises(ValueError, match=r"bad_cell\.csv: column 'x1'.*data row 1"):
        load_holzinger_swineford(bad_cell)


def test_missing_column_and_empty_file_name_the_file(hs_file, tmp_path):
    import pandas as pd

    table = pd.read_csv(hs_file).drop(columns=["x5"])
    no_x5 = tmp_path / "no_x5.csv"
    table.to_csv(no_x5, index=False)
    with pytest.raises(ValueError, match=r"no_x5\.csv: missing column\(s\) \['x5'\]"):
        load_holzinger_swineford(no_x5)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty\.csv: not a readable CSV"):
        load_holzinger_swineford(empty)


def test_bad_sachs_copies_name_the_file(sachs_files, tmp_path):
    data, target = sachs_files
    truncated = tmp_path / "cyto_truncated.csv"
    truncated.write_bytes(data.read_bytes()[:200_000])  # cut mid-line
    with pytest.raises(ValueError, match=r"cyto_truncated\.csv"):
        load_sachs("observational", truncated, target)
    odd_target = tmp_path / "target.csv"
    odd_target.write_text(target.read_text().replace('"PKA","pjnk"', '"PKA","JNK"'))
    with pytest.raises(
        ValueError, match=r"target\.csv: edges name unknown variable\(s\) \['JNK'\]"
    ):
        load_sachs("observational", data, odd_target)
    short_target = tmp_path / "short_target.csv"
    short_target.write_text("".join(target.read_text().splitlines(keepends=True)[:10]))
    with pytest.raises(ValueError, match=r"short_target\.csv: expected 18 data rows"):
        load_sachs("observational", data, short_target)
    with pytest.raises(ValueError, match="rows must be one of"):
        load_sachs("interventional", data, target)


def test_copy_of_the_real_file_reads_the_same(hs_file, tmp_path):
    copy = tmp_path / HS_FILE
    shutil.copy(hs_file, copy)
    assert np.array_equal(load_holzinger_swineford(copy).X, load_holzinger_swineford(hs_file).X)


# ---------------------------------------------------------------- preparation and metrics
def test_prepare_logs_and_standardises():
    X = np.array([[1.0, np.e, np.e**2], [2.0, 4.0, 9.0]])
    Z = prepare(X, log=True, standardize=True)
    assert np.allclose(Z.mean(axis=1), 0) and np.allclose(Z.std(axis=1), 1)
    assert np.allclose(prepare(X, log=True, standardize=False)[0], [0, 1, 2])
    assert np.array_equal(prepare(X, standardize=False), X)
    with pytest.raises(ValueError, match="positive"):
        prepare(-X, log=True)


def test_adjusted_rand_index_known_values():
    truth = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert adjusted_rand_index(truth, truth) == 1.0
    assert adjusted_rand_index(truth, [5, 5, 5, 7, 7, 7, 1, 1, 1]) == 1.0  # labels are names
    assert adjusted_rand_index(truth, list(range(9))) == 0.0  # all singletons
    assert adjusted_rand_index(truth, [0] * 9) == 0.0  # one cluster
    # hand computed: table [[2,1],[0,3]] on (0,0,0,1,1,1) vs (0,0,1,1,1,1)
    # index = 1 + 3 = 4, sums 6 and 1 + 6 = 7, expected 6*7/15 = 2.8, max 6.5
    assert adjusted_rand_index([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1]) == pytest.approx(
        (4 - 2.8) / (6.5 - 2.8)
    )
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    for _ in range(50):
        a, b = rng.integers(0, 3, 12), rng.integers(0, 5, 12)
        assert adjusted_rand_index(a, b) == pytest.approx(sklearn_metrics.adjusted_rand_score(a, b))


def test_indicator_clusters_follow_the_nearest_latent_ancestor():
    # observed 0..4, latents 5, 6: L5 -> 0, 1; 1 -> 2 (2 inherits L5); L6 -> 3; 4 alone;
    # L5 -> L6 (a latent's own latent parent does not matter)
    A = np.zeros((7, 7))
    for parent, child in [(5, 0), (5, 1), (1, 2), (6, 3), (5, 6)]:
        A[child, parent] = 1.0
    assert indicator_clusters(A, 5).tolist() == [5, 5, 5, 6, 4]
    A[3, 5] = 0.7  # two latent parents: the smallest id
    assert indicator_clusters(A, 5)[3] == 5


def test_cluster_pair_f1_and_edge_scores():
    assert cluster_pair_f1([0, 0, 1, 1], [0, 0, 1, 1]) == 1.0
    assert cluster_pair_f1([0, 0, 1, 1], [0, 0, 0, 0]) == pytest.approx(2 * 2 / (6 + 2))
    assert cluster_pair_f1([0, 1, 2], [0, 1, 2]) == 1.0  # no pairs on either side
    true = np.zeros((3, 3))
    true[1, 0] = true[2, 1] = 1  # 0 -> 1 -> 2
    est = np.zeros((3, 3))
    est[1, 0] = est[1, 2] = est[0, 2] = 1  # 0 -> 1 right, 2 -> 1 reversed, 2 -> 0 extra
    s = edge_scores(true, est)
    assert s["directed_precision"] == pytest.approx(1 / 3) and s["directed_recall"] == 0.5
    assert s["directed_f1"] == pytest.approx(2 / 5)
    assert s["skeleton_precision"] == pytest.approx(2 / 3) and s["skeleton_recall"] == 1.0
    assert s["skeleton_f1"] == pytest.approx(4 / 5)
    assert edge_scores(true, np.zeros((3, 3)))["directed_precision"] == 0.0


def test_hs_latent_order_codes():
    truth = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    labels = np.array([10, 10, 10, 9, 9, 9, 11, 11, 11])  # textual under L9, visual L10, ...
    assert HS_ORDERS[int(hs_latent_order(labels, truth, [3, 11, 9, 10]))] == (2, 1, 0)
    assert math.isnan(hs_latent_order(np.arange(9), truth, [0]))  # clusters not recovered


# ---------------------------------------------------------------- one real run
def test_real_run_records_graphs_and_trust(hs_file, tmp_path):
    cfg = compose("etcd", "real", ["seeds=[0]", "graphs=[holzinger_swineford]"])
    output = run_real_seed("holzinger_swineford", 0, cfg, tmp_path)
    m = output.metrics
    assert m["data.n_samples"] == 301 and m["data.n_variables"] == 9
    assert m["etcd.raised"] + m["etcd.returned"] == 1.0
    assert m["etcd_no_error.returned"] == 1.0 and math.isfinite(m["etcd_no_error.cluster_ari"])
    assert m["etcd.trustworthy"] == float(m["etcd.raised"] == 1 or m["etcd_no_error.correct"] == 1)
    assert m["direct_lingam.cluster_ari"] == 0.0  # no latents: every test is its own cluster
    assert (tmp_path / REAL_GRAPH_FILE).is_file()


def test_real_claims_are_declared():
    assert claims.REAL_CI and claims.REAL_CPU_BUDGET_UNITS <= 80
    assert {c.role for c in claims.REAL_CLAIMS} == {"claim", "negative_control", "diagnostic"}
    needed = {m for c in claims.REAL_CLAIMS for m in c.comparator.methods_needed()}
    assert {m.split("/")[1] for m in needed} <= {*claims.REAL_METHODS, "data"}
