"""ETCD on a user's own data set (issue 53): ``graphs: [own]`` reads one CSV of observed
variables (columns chosen in the config), scored against the user's known clusters or edges
where given; a bad file stops the run at start in one line naming the file and the column,
before the run folder exists; the run records the file's sha256 and needs no shipped asset."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from papers.etcd.data import indicator_graph, load_own, sample_weights, simulate
from papers.etcd.train import real_assets, user_files
from shared.assets import sha256_of
from shared.config import ConfigError, compose, compose_dict
from shared.entry import execute
from tests.helpers import refused_at_start

VARIABLES = [f"x{i + 1}" for i in range(6)]
CLUSTERS = ["a", "a", "a", "b", "b", "b"]  # two latents, three pure indicators each


def write_measurements(path, n: int = 300) -> pd.DataFrame:
    """Two correlated latents with three pure indicators each (ETCD's assumptions hold), plus
    a text column the config leaves out."""
    rng = np.random.default_rng(0)
    X = simulate(sample_weights(indicator_graph(2, 3), rng), n, rng)  # (6, n)
    frame = pd.DataFrame(X.T, columns=VARIABLES)
    frame.insert(0, "subject", [f"s{i}" for i in range(n)])
    frame.to_csv(path, index=False)
    return frame


def own(path, *extra: str) -> list[str]:
    columns = ",".join(VARIABLES)
    return ["graphs=[own]", "seeds=[0]", f"own.path={path}", f"own.columns=[{columns}]", *extra]


def test_the_loader_reads_the_chosen_columns_clusters_and_edges(tmp_path):
    frame = write_measurements(tmp_path / "m.csv")
    edges = tmp_path / "edges.csv"
    pd.DataFrame({"Cause": ["x1"], "Effect": ["x2"]}).to_csv(edges, index=False)
    data = load_own(tmp_path / "m.csv", VARIABLES, CLUSTERS, edges)
    np.testing.assert_array_equal(data.X, frame[VARIABLES].to_numpy().T)
    assert data.names == VARIABLES and data.cluster_names == ["a", "b"]
    np.testing.assert_array_equal(data.clusters, [0, 0, 0, 1, 1, 1])
    assert data.edges == [("x1", "x2")] and data.adjacency()[1, 0] == 1.0


@pytest.mark.parametrize(
    ("spoil", "extra", "message"),
    [
        (lambda f: f.drop(columns="x4"), (), r"missing column\(s\) \['x4'\]"),
        (lambda f: f.assign(x2=f.x2.astype(object).where(f.index != 7, "high")), (), "'x2' has a"),
        (lambda f: f.assign(x5=f.x5.where(f.index != 9)), (), "column 'x5' has a missing"),
        (lambda f: f.iloc[:60], (), "60 rows, ETCD's independence tests need at least"),
        (lambda f: f.assign(x3=1.0), (), r"column\(s\) \['x3'\] hold one value only"),
        (lambda f: f, ("own.log=true",), r"own.log takes logs, column\(s\) \['x1'"),
        (lambda f: f, ("own.edges=/nowhere/edges.csv",), "edges.csv: no such file"),
    ],
    ids=["missing column", "text", "gap", "too few rows", "constant", "log", "edges file"],
)
def test_a_bad_file_is_refused_at_start_naming_file_and_column(tmp_path, spoil, extra, message):
    path = tmp_path / "m.csv"
    spoil(write_measurements(path)).to_csv(path, index=False)
    refusal = refused_at_start("etcd", "real", own(path, *extra), tmp_path / "run")
    assert refusal.startswith("papers.etcd scale=real cannot start: own.path")
    assert re.search(message, refusal), refusal


def test_unknown_edge_variables_and_a_latin1_file_are_refused(tmp_path):
    path = tmp_path / "m.csv"
    write_measurements(path)
    edges = tmp_path / "edges.csv"
    pd.DataFrame({"Cause": ["x1"], "Effect": ["protein"]}).to_csv(edges, index=False)
    refusal = refused_at_start("etcd", "real", own(path, f"own.edges={edges}"), tmp_path / "run")
    assert f"{edges}: edges name unknown variable(s) ['protein']" in refusal
    latin = tmp_path / "latin.csv"
    latin.write_bytes("x1,x2\n1,caf\xe9\n".encode("latin-1"))
    refusal = refused_at_start("etcd", "real", own(latin), tmp_path / "run")
    assert f"{latin}: not a readable CSV file (UnicodeDecodeError" in refusal


def test_the_config_checks_the_own_section_and_refuses_it_unread(tmp_path):
    with pytest.raises(ConfigError, match=r"^own\.path=None: graphs=own needs"):
        compose("etcd", "real", ["graphs=[own]"])
    with pytest.raises(ConfigError, match=r"^own\.clusters=.*one cluster per variable"):
        compose("etcd", "real", own("m.csv", "own.clusters=[a,b]"))
    with pytest.raises(ConfigError, match=r"^own\.path='m\.csv': .* does not read it"):
        compose("etcd", "real", ["own.path=m.csv"])  # graphs do not name own
    assert real_assets(compose("etcd", "real")) == ("holzinger_swineford", "sachs")
    assert real_assets(compose("etcd", "real", own("m.csv"))) == ()


def test_one_run_on_a_users_file_needs_no_asset_and_records_it(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))  # no shipped data set
    path = tmp_path / "m.csv"
    write_measurements(path)
    clusters = "own.clusters=[" + ",".join(CLUSTERS) + "]"
    cfg = compose_dict("etcd", "real", [*own(path, clusters), "runtime.progress=false"])
    assert user_files(compose("etcd", "real", own(path))) == {"own.path": str(path)}
    record = execute("etcd", cfg, tmp_path / "run")
    m = record["metrics"]
    assert m["own/etcd"]["raised"]["mean"] + m["own/etcd"]["returned"]["mean"] == 1.0
    assert 0.0 <= m["own/etcd_no_error"]["cluster_ari"]["mean"] <= 1.0
    assert "assets" not in record and record["claims"] == []
    [recorded] = record["user_files"]
    assert recorded["key"] == "own.path" and recorded["sha256"] == sha256_of(path)
    assert (tmp_path / "run" / "real_graphs.png").is_file()
