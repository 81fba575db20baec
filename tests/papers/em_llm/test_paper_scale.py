"""The paper-scale path on a tiny saved Llama: from_pretrained(local_dir), the extended passkey
and a LongBench-style jsonl task, through every variant (nothing is downloaded)."""

from __future__ import annotations

import json

import pytest

from papers.em_llm.data import PASSKEY_FILLER, format_prompt, passkey_prompt, truncate_middle
from papers.em_llm.train import PASSKEY_METHODS
from shared.config import compose_dict
from shared.entry import execute
from tests.helpers import save_tiny_llama


def test_paper_scale_runs_every_variant_on_a_tiny_saved_llama(tmp_path):
    model_dir, data_dir = tmp_path / "model", tmp_path / "data"
    save_tiny_llama(model_dir, [PASSKEY_FILLER * 4, "The pass key is 12345. Remember it."], "</s>")
    data_dir.mkdir()
    rows = [
        {"context": PASSKEY_FILLER * 8, "input": "What colour is the sky?", "answers": ["blue"]}
    ]
    (data_dir / "hotpotqa.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    methods = ",".join(PASSKEY_METHODS)
    cfg = compose_dict(
        "em_llm",
        "paper",
        [
            f"model.path={model_dir}",
            "model.dtype=float32",
            f"methods=[{methods}]",
            f"benchmark.root={data_dir}",
            "benchmark.tasks=[hotpotqa]",
            "benchmark.passkey_lengths=[300]",
            "benchmark.passkey_trials=2",
            "+benchmark.max_lengths.hotpotqa=400",
            "benchmark.max_new_tokens.hotpotqa=3",
            "memory.chunk=16",
            "memory.n_init=4",
            "memory.n_local=32",
            "memory.n_mem=48",
            "memory.min_block=4",
            "memory.max_block=16",
            "memory.threshold_window=16",
            "memory.refine_from_layer=0",
            "infllm_block=8",
            "runtime.progress=false",
        ],
    )
    record = execute("em_llm", cfg, tmp_path / "run")
    assert set(record["metrics"]) == set(PASSKEY_METHODS)
    for method in PASSKEY_METHODS:
        assert set(record["metrics"][method]) == {"score_passkey_300", "score_hotpotqa"}
        assert (tmp_path / "run" / "predictions" / f"{method}-hotpotqa.jsonl").is_file()


def test_paper_scale_without_a_model_names_it(tmp_path):
    from shared.preflight import PreflightError

    cfg = compose_dict("em_llm", "paper", ["benchmark.tasks=[hotpotqa]"])
    with pytest.raises(PreflightError, match="model.path is not set.*benchmark.root is not set"):
        execute("em_llm", cfg, tmp_path / "run")


def test_prompt_helpers():
    prompt, answer = passkey_prompt(10, 0.5, 4242)
    assert "The pass key is 4242" in prompt and answer == "4242"
    assert format_prompt("{context}|{input}", {"context": "c", "input": "q"}) == "c|q"
    assert truncate_middle(list(range(10)), 4) == [0, 1, 8, 9]
    with pytest.raises(KeyError, match="input"):
        format_prompt("{input}", {"context": "c"})
