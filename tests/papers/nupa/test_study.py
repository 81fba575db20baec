"""The tokenizer study's data, scoring and batches (brief Sec. 5b), and the LLM path (Sec. 6)."""

from __future__ import annotations

import json
import random

import pytest

from papers.nupa.config import MethodConfig, TokenizerConfig
from papers.nupa.data import Problem, check_task, make_test_set, training_batch
from papers.nupa.train import encode_batch, make_tokenizer, score
from shared.config import compose
from tests.helpers import save_tiny_llama

ADD = "add_Integer_Integer_Integer"
TYPES = ("Integer", "Integer", "Integer")


def test_training_batches_follow_the_length_rule_and_are_pure_functions_of_seed_and_step():
    batch = training_batch(ADD, [1, 5], 200, seed=0, step=3)
    assert batch == training_batch(ADD, [1, 5], 200, seed=0, step=3)
    assert batch != training_batch(ADD, [1, 5], 200, seed=0, step=4)
    for p in batch:
        assert 1 <= p.length <= 5
        assert max(len(p.a), len(p.b)) == p.length  # the longer operand has len(a)
        assert int(p.a) + int(p.b) == int(p.answer)
    swapped = sum(len(p.a) < len(p.b) for p in batch)
    assert 40 < swapped < 120  # operands swapped with probability 1/2 when lengths differ


def test_test_set_uses_the_shorter_operand_rule():
    problems = make_test_set(ADD, [4, 6], 100, seed=1000)
    assert [p.length for p in problems] == [4] * 100 + [6] * 100
    for p in problems:
        assert min(len(p.a), len(p.b)) >= max(1, p.length // 2)
    assert problems == make_test_set(ADD, [4, 6], 100, seed=1000)


def test_unknown_study_task_names_the_registry():
    with pytest.raises(ValueError, match="VARIANTS"):
        check_task("add")


def test_labels_cover_the_answer_and_eos_only():
    tokenizer = make_tokenizer(MethodConfig(TokenizerConfig(k=1)))
    batch = encode_batch(tokenizer, [Problem("12", "9", "21", 2)], TYPES, random.Random(0))
    ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
    # BOS 1 2 OP 9 = 2 1 EOS: the loss sees "2", "1" and EOS.
    assert [t for t in labels if t != -100] == ids[-3:]
    assert labels[: len(ids) - 3] == [-100] * (len(ids) - 3)


def test_score_reads_digit_match_per_length_and_the_mismatched_control():
    problems = [Problem("1", "2", "3", 1), Problem("4", "4", "8", 1), Problem("50", "7", "57", 2)]
    metrics = score(problems, ["3", "9", "47"], "Integer", ood_lengths=[], seed=0)
    assert metrics["dm_len1"] == pytest.approx(0.5)
    assert metrics["em_len1"] == pytest.approx(0.5)
    assert metrics["dm_len2"] == pytest.approx(0.5)  # 47 vs 57: the units digit matches
    assert metrics["dm"] == pytest.approx(0.5)  # mean over the three questions
    assert 0.0 <= metrics["dm_mismatched"] <= 1.0
    ood = score(problems, ["3", "9", "47"], "Integer", ood_lengths=[2], seed=0)
    assert ood["dm"] == pytest.approx(0.5) and ood["dm_ood"] == pytest.approx(0.5)
    assert ood["em"] == pytest.approx(0.5) and ood["em_ood"] == 0.0


def test_configs_name_known_tasks_and_settings():
    for scale in ("smoke", "toy", "paper"):
        cfg = compose("nupa", scale)
        check_task(cfg.study.task)
        assert set(cfg.methods) <= {k for k, v in cfg.settings.items() if v is not None}


def test_llm_eval_answers_the_benchmark_with_a_local_model(tmp_path):
    """The paper-scale path on a tiny stand-in: a random Llama and a byte-level tokenizer
    saved to a folder, a 1-task benchmark folder, then predictions the evaluator scores."""
    from papers.nupa import evaluate, llm_eval

    model_dir = tmp_path / "model"
    save_tiny_llama(model_dir, ["0123456789 + = . / e"], eos_token="<eos>")

    bench = tmp_path / "bench"
    bench.mkdir()
    records = [
        {
            "task": ADD,
            "split": "test",
            "digit": 2,
            "a": "12",
            "b": "9",
            "answer": "21",
            "question": "Add two numbers: 12 + 9 = ",
            "type_out": "Integer",
        },
        {
            "task": ADD,
            "split": "train",
            "digit": 1,
            "a": "1",
            "b": "1",
            "answer": "2",
            "question": "Add two numbers: 1 + 1 = ",
            "type_out": "Integer",
        },
    ]
    (bench / f"{ADD}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "preds.jsonl"
    args = ["--model", str(model_dir), "--benchmark", str(bench), "--out", str(out)]
    assert llm_eval.main(args) == 0
    predictions = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(predictions) == 1 and isinstance(predictions[0]["prediction"], str)
    assert evaluate.main([str(out), "--out", str(tmp_path / "scores.json")]) == 0


def test_llm_eval_refuses_a_folder_without_a_model(tmp_path):
    from papers.nupa.llm_eval import load_local_model

    with pytest.raises(FileNotFoundError, match="never downloads"):
        load_local_model(tmp_path)


def test_paper_scale_settings_run_end_to_end(tmp_path):
    """`scale=paper` with a tiny model: every paper method (PE, random split, reversal) and the
    longer-than-trained lengths go through the same code as the toy."""
    from papers.nupa.train import run

    cfg = compose(
        "nupa",
        "paper",
        [
            "model.hidden_size=16",
            "model.intermediate_size=32",
            "model.num_hidden_layers=1",
            "model.num_attention_heads=2",
            "model.num_key_value_heads=2",
            "train.steps=2",
            "train.warmup_steps=1",
            "study.n_test_per_length=2",
            "study.ood_lengths=[9,20]",
            "seeds=[0]",
            "runtime.progress=false",
        ],
    )
    results = run(cfg, tmp_path)
    assert set(results) == set(cfg.methods)
    for metrics in results.values():
        assert {"dm", "em", "dm_ood", "dm_len20"} <= set(metrics)
    assert (tmp_path / "accuracy_by_length.png").exists()
