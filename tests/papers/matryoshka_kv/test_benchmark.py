"""The cache-memory and speed benchmark runs and confirms bytes/token = r / d x full."""

from __future__ import annotations

from tests.helpers import load_benchmark


def test_benchmark_measures_exact_cache_ratios(capsys):
    benchmark = load_benchmark("matryoshka_kv")
    assert benchmark.main(["--prompt", "8", "--new", "4", "--batch", "2", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "bytes per token equal r / d of the full cache at every rank: True" in out
