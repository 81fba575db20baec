"""papers/adamcb/benchmark.py runs and reports its rows (structure only: never wall time)."""

from __future__ import annotations

import json

from tests.helpers import load_benchmark


def test_benchmark_rows_have_the_reported_fields(capsys, tmp_path):
    module = load_benchmark("adamcb")
    out = tmp_path / "benchmark.json"
    argv = ["--n", "120", "--batch-size", "16", "--hidden", "8", "--repeats", "2", "--warmup", "1"]
    rows = module.main([*argv, "--out", str(out)])
    assert len(rows) == 1
    row = rows[0]
    assert (row["n"], row["K"], row["model"]) == (120, 16, "784-8-10")
    assert row["adamcb_s"] > 0 and row["adam_s"] > 0
    assert row["ratio"] == row["adamcb_s"] / row["adam_s"]
    assert row["meets_target"] == (row["ratio"] <= module.TARGET_RATIO)
    assert set(row["parts"]) == {"draw", "norms", "update"}
    assert "AdamCB step (s)" in capsys.readouterr().out
    record = json.loads(out.read_text())
    assert record["results"]["rows"] == json.loads(json.dumps(rows))
    assert record["results"]["target_ratio"] == module.TARGET_RATIO
    assert record["machine"]["cpu"] and record["float_path"]["mode"]
