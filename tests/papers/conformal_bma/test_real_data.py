"""CBMA's real rung: the diabetes loader on the real files, the CSV loader (any numeric table
with a named target), their errors on bad input, feature-subset candidates, the candidate
comparison metrics, and the real path end to end on the smoke overrides."""

from __future__ import annotations

import gzip
import shutil

import numpy as np
import pandas as pd
import pytest

from papers.conformal_bma import claims
from papers.conformal_bma.config import CandidateConfig, SettingConfig
from papers.conformal_bma.data import (
    DIABETES_COLUMNS,
    DIABETES_DATA,
    DIABETES_TARGET,
    RealDataError,
    load_csv,
    load_diabetes_files,
    load_real,
)
from papers.conformal_bma.method import ModelSpec
from papers.conformal_bma.train import candidate_comparison, candidate_specs, preflight
from shared.assets import sha256_of
from shared.config import compose, compose_dict
from shared.entry import execute
from tests.helpers import refused_at_start, require_assets


@pytest.fixture
def diabetes_files():
    return require_assets("diabetes")["diabetes"]


def test_diabetes_loader_on_the_real_files(diabetes_files):
    table = load_real(SettingConfig(source="diabetes"), None)
    assert table.X.shape == (442, 10) and table.y.shape == (442,)
    assert table.columns == DIABETES_COLUMNS
    assert table.X.dtype == np.float64 and np.all(np.isfinite(table.X))
    # raw covariates: age in years, sex coded 1/2, the first row as the file has it
    assert set(np.unique(table.X[:, 1])) == {1.0, 2.0}
    np.testing.assert_allclose(table.X[0, :3], [59.0, 2.0, 32.1])
    assert table.y[:3].tolist() == [151.0, 75.0, 141.0]
    assert 25.0 <= table.y.min() and table.y.max() <= 346.0
    # the same table scikit-learn serves (it centres and scales the covariates per column)
    from sklearn.datasets import load_diabetes

    ref = load_diabetes()
    np.testing.assert_allclose(table.y, ref.target)
    corr = [np.corrcoef(table.X[:, j], ref.data[:, j])[0, 1] for j in range(10)]
    np.testing.assert_allclose(corr, 1.0, atol=1e-9)


def test_diabetes_loader_names_a_truncated_or_corrupted_file(diabetes_files, tmp_path):
    data, target = diabetes_files[DIABETES_DATA], diabetes_files[DIABETES_TARGET]
    truncated = tmp_path / DIABETES_DATA
    truncated.write_bytes(data.read_bytes()[:3000])  # a gzip stream cut short
    with pytest.raises(RealDataError, match=DIABETES_DATA):
        load_diabetes_files(truncated, target)
    garbage = tmp_path / "garbage" / DIABETES_TARGET
    garbage.parent.mkdir()
    garbage.write_bytes(b"\x1f\x8b not gzip at all")
    with pytest.raises(RealDataError, match=DIABETES_TARGET):
        load_diabetes_files(data, garbage)
    rows = gzip.decompress(data.read_bytes()).decode().splitlines()
    short = tmp_path / "short" / DIABETES_DATA  # valid gzip, rows missing
    short.parent.mkdir()
    short.write_bytes(gzip.compress("\n".join(rows[:400]).encode()))
    with pytest.raises(RealDataError, match=rf"{DIABETES_DATA} has shape \(400, 10\)"):
        load_diabetes_files(short, target)
    text = tmp_path / "text" / DIABETES_DATA  # a value that is not a number
    text.parent.mkdir()
    text.write_bytes(gzip.compress("\n".join(["59 two 32.1", *rows[1:]]).encode()))
    with pytest.raises(RealDataError, match=DIABETES_DATA):
        load_diabetes_files(text, target)
    with pytest.raises(RealDataError, match="does not exist"):
        load_diabetes_files(tmp_path / "absent.csv.gz", target)


def _write_csv(path, table):
    frame = pd.DataFrame(table.X, columns=list(table.columns))
    frame.insert(3, "progression", table.y)  # the target need not be the last column
    frame.to_csv(path, index=False)
    return frame


def test_csv_loader_reads_any_numeric_table(diabetes_files, tmp_path):
    table = load_real(SettingConfig(source="diabetes"), None)
    path = tmp_path / "diabetes.csv"
    _write_csv(path, table)
    setting = SettingConfig(source="csv", path=str(path), target="progression")
    again = load_real(setting, None)
    assert again.columns == table.columns
    np.testing.assert_array_equal(again.X, table.X)
    np.testing.assert_array_equal(again.y, table.y)


def test_csv_loader_names_the_file_and_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n1,2,3\n4,5,6\n7,8,9\n")
    with pytest.raises(RealDataError, match=r"t\.csv has no column 'target'.*\['a', 'b', 'y'\]"):
        load_csv(path, "target")
    path.write_text("a,b,y\n1,2,3\n4,five,6\n7,8,9\n")
    with pytest.raises(RealDataError, match=r"t\.csv, column 'b', line 3: value 'five'"):
        load_csv(path, "y")
    path.write_text("a,b,y\n1,2,3\n4,,6\n7,8,9\n")
    with pytest.raises(RealDataError, match=r"t\.csv, column 'b', line 3"):
        load_csv(path, "y")
    path.write_text("y\n1\n2\n")
    with pytest.raises(RealDataError, match="at least one input column"):
        load_csv(path, "y")
    with pytest.raises(RealDataError, match="absent.csv does not exist"):
        load_csv(tmp_path / "absent.csv", "y")
    with pytest.raises(RealDataError, match="needs settings.<name>.path"):
        load_real(SettingConfig(source="csv", target="y"), None)
    # preflight names an absent file before any work
    csv = ["settings.diabetes.source=csv", f"settings.diabetes.path={tmp_path}/no.csv"]
    problems = preflight(compose("conformal_bma", "real", csv))
    assert len(problems) == 1 and "needs path (the file) and target" in problems[0]
    problems = preflight(compose("conformal_bma", "real", [*csv, "settings.diabetes.target=y"]))
    assert len(problems) == 1 and "no.csv does not exist" in problems[0]


def test_feature_subset_candidates(tmp_path):
    path = tmp_path / "t.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(20, 4)), columns=["y", "u", "v", "w"]).to_csv(path, index=False)
    table = load_csv(path, "y")
    setting = SettingConfig(
        source="csv",
        models=[
            CandidateConfig(name="w_only", degree=2, columns=["w"]),
            CandidateConfig(name="all", degree=1),
        ],
    )
    subset, full = candidate_specs(setting, table)
    assert subset.columns == (2,) and full.columns is None
    phi = subset.features(table.X)
    np.testing.assert_array_equal(phi, np.c_[np.ones(20), table.X[:, 2], table.X[:, 2] ** 2])
    assert subset.n_params(3) == 3 and full.n_params(3) == 4
    assert ModelSpec("toy", 2).features(np.arange(3.0)).shape == (3, 3)  # toy path unchanged
    setting.models[0].columns = ["nope"]
    with pytest.raises(RealDataError, match=r"\['nope'\].*\['u', 'v', 'w'\]"):
        candidate_specs(setting, table)
    with pytest.raises(ValueError, match="only a real table"):
        candidate_specs(setting, None)


def test_candidate_comparison_divides_by_the_shortest_and_longest_cb():
    metrics = {
        "cb_a.length": 2.0,
        "cb_b.length": 4.0,
        "cbma.length": 2.2,
        "cbma.coverage": 0.9,
    }
    out = candidate_comparison(metrics, ["a", "b"])
    assert out["cbma.length_over_best_cb"] == pytest.approx(1.1)
    assert out["cbma.length_over_worst_cb"] == pytest.approx(0.55)
    assert out["cb_a.length_over_best_cb"] == 1.0 and out["cb_b.length_over_worst_cb"] == 1.0
    assert "cbma.coverage_over_best_cb" not in out
    with pytest.raises(ValueError, match="needs the cb method"):
        candidate_comparison({"cbma.length": 1.0}, ["a"])


@pytest.mark.smoke
def test_real_path_end_to_end_on_the_smoke_overrides(diabetes_files, tmp_path):
    cfg = compose_dict(
        "conformal_bma", "real", [*claims.REAL_SMOKE_OVERRIDES, "runtime.progress=false"]
    )
    record = execute("conformal_bma", cfg, tmp_path)
    metrics = record["metrics"]
    for method in ("cb_demographic", "cb_linear", "cb_quadratic", "cbma", "split_conformal"):
        m = metrics[f"diabetes/{method}"]
        assert 0.0 <= m["coverage"]["mean"] <= 1.0 and m["length"]["mean"] > 0
    weights = [metrics["diabetes/cbma"][f"weight_{k}"]["mean"] for k in ("demographic", "linear")]
    assert all(0.0 <= w <= 1.0 for w in weights)
    assert [a["name"] for a in record["assets"]] == ["diabetes"]
    assert {v["name"] for v in record["claims"]} == {c.name for c in claims.REAL_CLAIMS}
    assert (tmp_path / claims.REAL_PLOT).is_file()
    shutil.rmtree(tmp_path)


def _user_table(tmp_path):
    """A user's numeric table: y = 1 + 2 u - v + noise, 60 rows."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(60, 3)), columns=["u", "v", "w"])
    frame["y"] = 1.0 + 2.0 * frame.u - frame.v + 0.3 * rng.normal(size=60)
    path = tmp_path / "mine.csv"
    frame.to_csv(path, index=False)
    return path


def _own(path, *extra: str) -> list[str]:
    """The real rung on a user's table (issue 53): the diabetes slot's source switched to csv,
    its candidates named after the table's header."""
    return [
        "settings.diabetes.source=csv",
        f"settings.diabetes.path={path}",
        "settings.diabetes.target=y",
        "settings.diabetes.models=[{name:u_only,degree:1,columns:[u]},{name:linear,degree:1}]",
        *extra,
    ]


def test_a_candidate_column_the_table_lacks_is_refused_at_start(tmp_path):
    path = _user_table(tmp_path)
    overrides = _own(path, "settings.diabetes.models=[{name:age_only,degree:1,columns:[age]}]")
    message = refused_at_start("conformal_bma", "real", overrides, tmp_path / "run")
    assert message.startswith("papers.conformal_bma scale=real cannot start: settings.diabetes: ")
    assert f"model 'age_only' asks for columns ['age']; {path} has input columns" in message
    text = tmp_path / "text.csv"
    text.write_text("u,y\n1,2\nmany,3\n4,5\n")
    message = refused_at_start("conformal_bma", "real", _own(text), tmp_path / "run")
    assert "text.csv, column 'u', line 3: value 'many'" in message


def test_one_run_on_a_users_table_needs_no_asset_and_records_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_ASSETS", str(tmp_path / "empty_cache"))  # diabetes absent
    path = _user_table(tmp_path)
    overrides = [*_own(path), *claims.REAL_SMOKE_OVERRIDES, "n_train=40", "runtime.progress=false"]
    record = execute("conformal_bma", compose_dict("conformal_bma", "real", overrides), tmp_path)
    metrics = record["metrics"]
    for method in ("cb_u_only", "cb_linear", "cbma", "split_conformal"):
        assert metrics[f"diabetes/{method}"]["length"]["mean"] > 0
    assert "assets" not in record and record["claims"] == []
    [recorded] = record["user_files"]
    assert recorded["key"] == "settings.diabetes.path" and recorded["sha256"] == sha256_of(path)
    assert record["labels"]["diabetes/cb_u_only"] == "CB u_only (mine.csv)"
