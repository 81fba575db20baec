"""papers/limac/benchmark.py runs at the tiny size and reports its rows (structure only:
never wall time)."""

from __future__ import annotations

import json

from tests.helpers import load_benchmark


def test_tiny_benchmark_counts_gated_calls_and_writes_rows(capsys, tmp_path):
    module = load_benchmark("limac")
    out = tmp_path / "benchmark.json"
    results = module.main(["--tiny", "--episodes", "2", "--new-tokens", "3", "--out", str(out)])
    assert results["sizes"] == "tiny" and results["steps"] == 10
    assert [r["vlm"] for r in results["rows"]] == ["florence2", "qwen2vl"]
    episodes = module.toydroid.make_episodes(2, 0)
    gated = sum(s.action.type in module.TEXT_TYPES for e in episodes for s in e.steps)
    for row in results["rows"]:
        assert row["steps"] == 10 and row["new_tokens"] == 3
        assert row["vlm_calls_every_step"] == 10  # the baseline calls the VLM on every step
        assert row["vlm_calls_limac"] == gated  # LiMAC only on input-text and open-app
        assert row["vlm_call_share"] == gated / 10 == results["episode_gated_share"]
        assert len(row["per_step"]["limac_s"]) == len(row["per_step"]["vlm_s"]) == 10
        assert row["limac_s_per_step"] > 0 and row["vlm_s_per_step"] > 0
        assert row["ratio"] == row["limac_s_per_step"] / row["vlm_s_per_step"]
        paper_limac, paper_vlm = module.PAPER_SECONDS[row["vlm"]]
        assert row["paper_ratio"] == paper_limac / paper_vlm
    implied = results["paper_implied"]
    assert 0 < implied["share"] < 1 and implied["act_s"] > 0
    assert 0 < results["toy_gated_share"] < 1
    assert "VLM every step (s/step)" in capsys.readouterr().out
    record = json.loads(out.read_text())
    assert record["results"]["rows"] == json.loads(json.dumps(results["rows"]))
    assert record["machine"]["cpu"] and record["float_path"]["mode"]


def test_prompt_tokens_counts_words_and_marks():
    module = load_benchmark("limac")
    assert module.prompt_tokens("Goal: send 'hi' to bob.") == 9
