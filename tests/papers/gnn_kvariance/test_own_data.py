"""The k-variance bound on a user's own graphs (issue 53): real.yaml's ``own`` task reads a CSV
of SMILES and labels (RDKit builds the graphs, as for solubility) or a folder of TU text files
(read as MUTAG's); a bad file stops the run at start in one line naming the file and the
column, SMILES RDKit cannot parse are counted and refused past ``max_unparsed_share``, and a
run records the files' sha256 and needs no shipped asset."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from papers.gnn_kvariance.data import read_smiles_csv, read_tu_folder
from papers.gnn_kvariance.train import real_assets, user_files
from shared.assets import sha256_of
from shared.config import ConfigError, compose, compose_dict
from shared.entry import execute
from tests.helpers import refused_at_start

SHIPPED_OFF = ["tasks.solubility=null", "tasks.mutag=null"]
CHAINS = ["CC", "CCC", "CCO", "CCN", "CC(=O)O", "CCCl", "CCCC", "CC(C)O", "OCCO", "NCCN"]
RINGS = ["c1ccccc1", "C1CCCCC1", "c1ccncc1", "C1CCOC1", "c1ccoc1", "Oc1ccccc1", "C1CC1", "c1ccsc1"]


def write_molecules(path, repeat: int = 2, extra: list[tuple[str, str]] = ()) -> pd.DataFrame:
    """Chains (label "acyclic") and rings ("ring"), each listed ``repeat`` times."""
    rows = [(s, "acyclic") for s in CHAINS] + [(s, "ring") for s in RINGS]
    frame = pd.DataFrame(rows * repeat + list(extra), columns=["smiles", "label"])
    frame.to_csv(path, index=False)
    return frame


def write_tu_folder(folder, name: str = "TINY") -> None:
    """Two triangles (label 1) and two 3-paths (label -1), node labels 0/1, TU text format."""
    folder.mkdir(parents=True, exist_ok=True)
    edges, graph_of, labels = [], [], []
    for g, closed in enumerate([True, False, True, False]):
        base = 3 * g + 1  # 1-based node ids
        pairs = [(0, 1), (1, 2)] + ([(2, 0)] if closed else [])
        edges += [(base + a, base + b) for a, b in pairs] + [(base + b, base + a) for a, b in pairs]
        graph_of += [g + 1] * 3
        labels.append(1 if closed else -1)
    (folder / f"{name}_A.txt").write_text("".join(f"{a}, {b}\n" for a, b in edges))
    (folder / f"{name}_graph_indicator.txt").write_text("".join(f"{g}\n" for g in graph_of))
    (folder / f"{name}_graph_labels.txt").write_text("".join(f"{y}\n" for y in labels))
    (folder / f"{name}_node_labels.txt").write_text("".join(f"{i % 2}\n" for i in graph_of))


def own(path, *extra: str) -> list[str]:
    return [*SHIPPED_OFF, f"tasks.own.path={path}", *extra]


def test_smiles_become_molecular_graphs_with_sorted_classes(tmp_path):
    write_molecules(tmp_path / "m.csv", repeat=1)
    graphs, labels, dropped = read_smiles_csv(tmp_path / "m.csv", "smiles", "label", 0.0)
    assert dropped == 0 and len(graphs) == len(CHAINS) + len(RINGS)
    np.testing.assert_array_equal(labels, [0] * len(CHAINS) + [1] * len(RINGS))
    benzene = graphs[len(CHAINS)]  # six carbons, six bonds listed both ways
    assert benzene.num_nodes == 6 and benzene.edge_index.shape == (2, 12)
    assert torch.equal(benzene.x[:, 0], torch.ones(6))  # column 0: carbon


def test_unparsable_smiles_are_counted_then_refused_past_the_share(tmp_path):
    path = tmp_path / "m.csv"
    write_molecules(path, extra=[("C1CC", "ring")])  # an unclosed ring: 1 of 37
    graphs, _, dropped = read_smiles_csv(path, "smiles", "label", 0.05)
    assert dropped == 1 and len(graphs) == 36
    with pytest.raises(ValueError, match=r"column 'smiles': RDKit cannot parse 1 of 37 .*line 38"):
        read_smiles_csv(path, "smiles", "label", 0.0)


def test_a_tu_folder_reads_as_mutag(tmp_path):
    write_tu_folder(tmp_path / "tu")
    graphs, labels = read_tu_folder(tmp_path / "tu", "TINY")
    assert [g.edge_index.shape[1] for g in graphs] == [6, 4, 6, 4]
    np.testing.assert_array_equal(labels, [1, 0, 1, 0])  # -1, 1 -> 0, 1 as MUTAG's


@pytest.mark.parametrize(
    ("write", "extra", "message"),
    [
        (
            lambda p: write_molecules(p).rename(columns={"label": "y"}).to_csv(p, index=False),
            (),
            r"missing column\(s\) \['label'\]",
        ),
        (
            lambda p: write_molecules(p).assign(label="ring").to_csv(p, index=False),
            (),
            "one class only",
        ),
        (lambda p: write_molecules(p, extra=[("C1CC", "ring")] * 5), (), "cannot parse 5 of 41"),
        (
            lambda p: write_molecules(p, repeat=1).iloc[:11].to_csv(p, index=False),
            (),
            "needs 2 per class",
        ),
        (
            lambda p: p.write_bytes("smiles,label\nC\xe9,1\n".encode("latin-1")),
            (),
            "cannot read it as a CSV",
        ),
    ],
    ids=["missing column", "one class", "unparsable", "too few", "latin-1"],
)
def test_a_bad_smiles_file_is_refused_at_start(tmp_path, write, extra, message):
    path = tmp_path / "m.csv"
    write(path)
    refusal = refused_at_start("gnn_kvariance", "real", own(path, *extra), tmp_path / "run")
    assert refusal.startswith("papers.gnn_kvariance scale=real cannot start: tasks.own.path")
    assert message.replace("\\", "") in refusal or pytest.fail(refusal)


def test_a_bad_tu_folder_is_refused_at_start(tmp_path):
    folder = tmp_path / "tu"
    write_tu_folder(folder)
    (folder / "TINY_node_labels.txt").unlink()
    overrides = own(folder, "tasks.own.source=tu_folder", "tasks.own.name=TINY")
    refusal = refused_at_start("gnn_kvariance", "real", overrides, tmp_path / "run")
    assert f"{folder}: missing ['TINY_node_labels.txt'] (the TU text format)" in refusal


def test_the_config_names_the_columns_and_refuses_what_it_would_ignore():
    cfg = compose("gnn_kvariance", "real")
    assert "own" in cfg.tasks and real_assets(cfg) == ("solubility", "mutag")
    with pytest.raises(ConfigError, match=r"^tasks\.own\.name=None: .*<name>_A\.txt"):
        compose("gnn_kvariance", "real", own("d", "tasks.own.source=tu_folder"))
    with pytest.raises(ConfigError, match=r"^tasks\.own\.layers=.* does not read it"):
        compose("gnn_kvariance", "real", ["tasks.own.layers=[1]"])  # off: no path
    with pytest.raises(ConfigError, match=r"^tasks\.mutag\.smiles='s': .* does not read it"):
        compose("gnn_kvariance", "real", ["tasks.mutag.smiles=s"])
    assert real_assets(compose("gnn_kvariance", "real", own("m.csv"))) == ()


@pytest.mark.smoke
def test_one_run_on_a_users_molecules_needs_no_asset_and_records_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))
    path = tmp_path / "m.csv"
    write_molecules(path)
    overrides = own(path, "tasks.own.layers=[1,2]", "tasks.own.max_epochs=2", "seeds=[1]")
    assert user_files(compose("gnn_kvariance", "real", overrides)) == {"tasks.own.path": str(path)}
    cfg = compose_dict("gnn_kvariance", "real", [*overrides, "runtime.progress=false"])
    record = execute("gnn_kvariance", cfg, tmp_path / "run")
    for setting in ("own_L1", "own_L2"):
        bound = record["metrics"][f"{setting}/mpnn"]["bound"]["mean"]
        assert np.isfinite(bound) and bound > 0
    assert "assets" not in record and record["claims"] == []
    [recorded] = record["user_files"]
    assert recorded["sha256"] == sha256_of(path)
