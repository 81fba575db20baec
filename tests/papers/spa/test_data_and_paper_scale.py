"""The toy world, the UltraFeedback reader, preflight, and one paper-scale iteration
(generate, judge, train) on a tiny random causal LM saved to a folder."""

from __future__ import annotations

import json

import pytest
import torch

from papers.spa.config import DataConfig, WorldConfig
from papers.spa.data import (
    alpaca_eval_records,
    behaviour_batch,
    load_preference_rows,
    make_toy_world,
    split_rows,
)
from shared.config import compose, compose_dict
from shared.entry import execute
from shared.preflight import PreflightError
from shared.seeding import numpy_rng
from tests.helpers import save_tiny_llama


def _row(i: int) -> dict:
    return {
        "prompt": f"question {i}: say something",
        "chosen": [{"role": "user", "content": "q"}, {"role": "assistant", "content": f"yes {i}"}],
        "rejected": f"no {i}",
    }


def _write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_toy_world_is_a_pure_function_of_the_seed():
    cfg = WorldConfig()
    a, b, c = make_toy_world(cfg, 0), make_toy_world(cfg, 0), make_toy_world(cfg, 1)
    assert torch.equal(a.w, b.w) and torch.equal(a.b, b.b) and not torch.equal(a.w, c.w)
    prompts, responses = behaviour_batch(a, 64, numpy_rng(0, 1))
    assert prompts.shape == (64, 3) and responses.shape == (64, 4)
    assert responses.max() < cfg.n_tokens
    ids = a.prompt_ids(prompts)
    assert ids.min() >= cfg.n_tokens and ids.max() < a.vocab_size
    assert a.response_tokens.sum() == cfg.n_tokens


def test_preference_file_with_a_missing_field_fails_naming_the_line(tmp_path):
    rows = [_row(0), _row(1), {k: v for k, v in _row(2).items() if k != "rejected"}]
    _write_jsonl(tmp_path / "prefs.jsonl", rows)
    with pytest.raises(ValueError, match=r"prefs.jsonl line 3: missing field 'rejected'"):
        load_preference_rows(tmp_path / "prefs.jsonl")


def test_preference_file_with_an_empty_response_fails_naming_the_line(tmp_path):
    bad = _row(1)
    bad["chosen"] = [{"role": "assistant", "content": "  "}]
    _write_jsonl(tmp_path / "prefs.jsonl", [_row(0), bad])
    with pytest.raises(ValueError, match=r"prefs.jsonl line 2: field 'chosen' is empty"):
        load_preference_rows(tmp_path / "prefs.jsonl")


def test_split_is_seeded_and_disjoint(tmp_path):
    _write_jsonl(tmp_path / "prefs.jsonl", [_row(i) for i in range(20)])
    rows = load_preference_rows(tmp_path / "prefs.jsonl")
    assert rows[0].chosen == "yes 0"  # the assistant's turn of a chat-format response
    cfg = DataConfig(seed_size=4, iteration_sizes=[3, 5], eval_prompts=100)
    split = split_rows(rows, cfg)
    assert [len(p) for p in split.pools] == [3, 5] and len(split.heldout) == 8
    prompts = [r.prompt for r in split.seed] + sum(split.pools, []) + split.heldout
    assert sorted(prompts) == sorted(r.prompt for r in rows)
    assert split_rows(rows, cfg).pools == split.pools
    with pytest.raises(ValueError, match="needs 30"):
        split_rows(rows, DataConfig(seed_size=10, iteration_sizes=[20]))
    records = alpaca_eval_records(["p"], ["o"], "spa")
    assert set(records[0]) >= {"instruction", "output", "generator"}


def test_paper_preflight_names_what_is_missing():
    with pytest.raises(PreflightError, match="model.path is not set.*data.path is not set"):
        execute("spa", compose_dict("spa", "paper"), "/tmp/never-made-spa")


def test_paper_config_holds_the_papers_values():
    cfg = compose("spa", "paper")
    assert cfg.spa.lambdas == [0.5, 0.25, 0.125] and cfg.spa.alpha == 0.1
    assert cfg.spa.flag_fraction == 0.1 and cfg.spa.warmup_fraction == 0.2
    assert cfg.spa.optim.lr == 5e-7 and cfg.seed_dpo.optim.epochs == 3
    assert cfg.data.iteration_sizes == [8000, 20000, 30000] and cfg.spa.temperature == 0.7


@pytest.fixture
def tiny_checkpoint(tmp_path):
    model_dir = tmp_path / "model"
    save_tiny_llama(
        model_dir,
        ["question say something yes no 0123456789 <|user|> <|assistant|>"],
        eos_token="</s>",
        chat_template=(
            "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}"
        ),
    )
    _write_jsonl(tmp_path / "ultrafeedback.jsonl", [_row(i) for i in range(14)])
    return model_dir, tmp_path / "ultrafeedback.jsonl"


def test_one_paper_scale_iteration_on_a_tiny_local_model(tiny_checkpoint, tmp_path, one_thread):
    model_dir, data_path = tiny_checkpoint
    overrides = [
        f"model.path={model_dir}",
        f"data.path={data_path}",
        "model.dtype=float32",
        "methods=[sft,dpo_seed,spa]",
        "data.seed_size=6",
        "data.iteration_sizes=[6]",
        "data.eval_prompts=2",
        "data.max_length=48",
        "data.max_prompt_length=24",
        "spa.lambdas=[0.5]",
        "spa.max_new_tokens=6",
        "spa.temperature=1.0",
        "seed_dpo.optim.batch_size=4",
        "seed_dpo.optim.epochs=1",
        "spa.optim.batch_size=4",
        "spa.optim.lr=1e-3",
        "spa.warmup_fraction=0.0",
        "runtime.progress=false",
    ]
    out = tmp_path / "run"
    record = execute("spa", compose_dict("spa", "paper", overrides), out)
    assert record["metrics"]["spa"]["pairs_it1"]["mean"] > 0
    dumped = json.loads((out / "runs" / "spa-s0" / "alpaca_eval_spa-s0-it1.json").read_text())
    assert len(dumped) == 2 and {"instruction", "output", "generator"} <= set(dumped[0])
    checkpoint = torch.load(out / "runs" / "spa-s0" / "iter1" / "checkpoint.pt", weights_only=True)
    assert checkpoint["step"] >= 1
