"""papers/t2v_turbo_v2/benchmark.py runs at its smallest size and writes its rows (structure
only: never wall time)."""

from __future__ import annotations

import json

from tests.helpers import load_benchmark


def test_benchmark_times_every_sampler_and_writes_its_file(tmp_path):
    module = load_benchmark("t2v_turbo_v2")
    out = tmp_path / "benchmark.json"
    argv = ["--toy-batch", "2", "--repeats", "1", "--ddim-steps", "6", "2", "--unet-width", "32"]
    argv += ["--unet-heads", "4", "--unet-frames", "2", "--unet-size", "8", "--out", str(out)]
    results = module.main(argv)
    toy = {r["sampler"]: r for r in results["toy"]["rows"]}
    assert set(toy) == {"student LCM-4", "student LCM-16", "teacher DDIM-6", "teacher DDIM-2"}
    assert results["reference"] == "teacher DDIM-6"
    assert toy["teacher DDIM-6"]["network_calls"] == 12  # CFG: two calls per step
    assert toy["student LCM-4"]["network_calls"] == 4
    ratio = toy["teacher DDIM-6"]["s_per_clip"] / toy["student LCM-4"]["s_per_clip"]
    assert abs(toy["student LCM-4"]["speedup_vs_teacher"] - ratio) < 1e-12
    assert results["unet3d"]["model"]["block_out_channels"] == [32, 64, 128, 128]
    assert set(results["toy"]["quality"]) == {"teacher DDIM-50", "teacher DDIM-4", "student LCM-4"}
    record = json.loads(out.read_text())
    assert record["results"]["toy"]["rows"] == json.loads(json.dumps(results["toy"]["rows"]))
