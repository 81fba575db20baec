"""The cache-memory and decode-speed benchmark runs at its smallest size, confirms bytes = budget
x full, and writes its results (structure only: never wall time)."""

from __future__ import annotations

import json

from tests.helpers import load_benchmark

SMALLEST = ["--prompt", "8", "--new", "4", "--batch", "2", "--repeats", "1", "--decode", "2"]


def test_benchmark_measures_exact_cache_ratios(capsys, tmp_path):
    benchmark = load_benchmark("matryoshka_kv")
    out = tmp_path / "benchmark.json"
    argv = [*SMALLEST, "--models", "tiny", "--contexts", "16", "32", "--sweep-repeats", "1"]
    argv.append("--no-real")  # the real model's row: test_real_model_row
    assert benchmark.main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "bytes per token equal r / d of the full cache at every rank: True" in printed
    assert "cache bytes = budget x full at every context and budget: True" in printed
    record = json.loads(out.read_text())["results"]
    rows = record["sweeps"][0]["rows"]
    assert {(r["context"], r["budget"]) for r in rows if r["cache"] == "matryoshka"} == {
        (s, b) for s in (16, 32) for b in benchmark.PAPER_BUDGETS
    }
    assert all(r["kv_ratio"] == r["budget"] for r in rows)
    assert (tmp_path / "benchmark.png").is_file()


def test_real_model_row(smollm2, capsys):
    """The real pretrained LM's row: bytes per token exactly budget x the full cache's."""
    benchmark = load_benchmark("matryoshka_kv")
    model, tokenizer = smollm2
    rows, exact = benchmark.real_model_rows(model, tokenizer, 16, 2, 1, [0.25, 1.0])
    assert exact and [r["cache"] for r in rows] == ["full (sdpa)", "matryoshka", "matryoshka"]
    full = rows[0]["bytes_per_token"]
    assert full == 2 * 30 * 3 * 64 * 4  # 2 L H_kv d float32 numbers
    assert [r["bytes_per_token"] for r in rows[1:]] == [full // 4, full]
    assert all(r["tokens_per_s"] > 0 for r in rows)
    assert "| matryoshka | 0.25 | 16 |" in capsys.readouterr().out
