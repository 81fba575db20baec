"""NUPA's real rung on the real model (SmolLM2-135M, the ``smollm2`` fixture): the official
prompt, batched greedy answers equal to the ones decoded alone, the settled-answer stop leaving
every score unchanged, and the three metrics on the model's answers as ``evaluate.py`` scores
them; plus the question ladder, the results rows and the config errors (no model)."""

from __future__ import annotations

import pytest

from papers.nupa.claims import LONG, REAL_LABELS, REAL_METHODS, SHORT
from papers.nupa.evaluate import evaluate_records
from papers.nupa.real import (
    answer_questions,
    answer_settled,
    batched_agreement,
    greedy_continuations,
    range_rows,
    real_questions,
    score_answers,
)
from papers.nupa.tasks import instruction
from papers.nupa.train import real_preflight
from shared.config import compose_dict, to_object

ADD = "add_Integer_Integer_Integer"


@pytest.fixture(scope="module")
def cfg():
    return to_object(
        compose_dict(
            "nupa",
            "real",
            [f"real.tasks=[{ADD},max_Float_Float_Float]", "real.digits=[1,2,12]"],
        )
    )


@pytest.fixture(scope="module")
def questions(cfg):
    return real_questions(cfg, list(cfg.real.tasks))


def test_questions_follow_the_ladder_and_the_official_prompt(cfg, questions):
    cells = {}
    for q in questions:
        cells[(q["task"], q["digit"])] = cells.get((q["task"], q["digit"]), 0) + 1
    assert {d for _, d in cells} == {1, 2, 12}
    # the claim task gets its own (larger) count, the others questions_per_cell
    assert cells[(ADD, 12)] == cfg.real.claim_questions_per_cell == 30
    assert cells[("max_Float_Float_Float", 12)] == cfg.real.questions_per_cell == 5
    q = next(q for q in questions if q["task"] == ADD)
    # instruction + "<a> + <b>" + " = ", no chat template (the paper's raw-prompt LLM protocol)
    assert q["question"] == f"{instruction(ADD)}{q['a']} + {q['b']} = "
    assert q["question"].startswith("Directly return the answer as an integer")


def test_answer_settled_only_after_a_blank_follows_text():
    assert not answer_settled("")
    assert not answer_settled("  ")
    assert not answer_settled(" 12")  # leading blanks are stripped before matching
    assert not answer_settled("1.2e")
    assert answer_settled("12\n")
    assert answer_settled("12.\n\nThe")


def test_batched_answers_equal_unbatched_and_the_stop_changes_no_score(smollm2, cfg, questions):
    model, tokenizer = smollm2
    # prompts of different lengths: left padding must not change any answer
    probe = [
        next(q for q in questions if (q["task"], q["digit"]) == cell)
        for cell in ((ADD, 1), (ADD, 2), ("max_Float_Float_Float", 2))
    ]
    assert len({len(tokenizer(q["question"])["input_ids"]) for q in probe}) > 1
    assert batched_agreement(model, tokenizer, probe, cfg.real) == 1.0
    settled = answer_questions(model, tokenizer, probe, cfg.real)
    full = greedy_continuations(
        model, tokenizer, [q["question"] for q in probe], 4, stop_when_settled=False
    )
    assert [s["extracted"] for s in score_answers(probe, settled)] == [
        s["extracted"] for s in score_answers(probe, full)
    ]


def test_metrics_on_the_models_answers_match_the_scorer(smollm2, cfg, questions):
    model, tokenizer = smollm2
    short = [q for q in questions if q["task"] == ADD and q["digit"] == 1][:4]
    texts = answer_questions(model, tokenizer, short, cfg.real)
    scored = score_answers(short, texts)
    # the command-line scorer reads the whole text after the prompt's " = "
    records = [{**q, "prediction": q["question"] + t} for q, t in zip(short, texts, strict=True)]
    reference = evaluate_records(records)["records"]
    for mine, theirs in zip(scored, reference, strict=True):
        for metric in ("exact_match", "digit_match", "dlength"):
            assert mine[metric] == theirs[metric]
    # SmolLM2 adds one-digit numbers right ("4 + 3 = " -> "7.")
    assert sum(s["exact_match"] for s in scored) >= 3
    for s, q in zip(scored, short, strict=True):
        if s["exact_match"] == 1.0:
            assert s["extracted"] == q["answer"] and s["digit_match"] == 1.0
            assert s["dlength"] == 0.0


def test_range_rows_pool_the_cells_by_length():
    rows = [
        {"task": ADD, "digit": d, "exact_match": em, "digit_match": dm, "dlength": dl}
        for d, em, dm, dl in ((1, 1.0, 1.0, 0.0), (2, 0.0, 0.5, 1.0), (12, 0.0, 0.25, 3.0))
    ]
    out = range_rows(rows, [[1, 4], [12, 20]])
    assert set(out) == {SHORT, LONG}
    assert out[SHORT]["dm"] == 0.75 and out[SHORT]["n"] == 2.0 and out[SHORT]["dm_d2"] == 0.5
    assert out[LONG]["dlen"] == 3.0 and out[LONG]["em"] == 0.0
    assert SHORT in REAL_LABELS and LONG in REAL_LABELS


def test_real_config_errors_are_one_line():
    bad = to_object(
        compose_dict("nupa", "real", ["real.tasks=[add_Octal]", "methods=[gpt4]", "seeds=[1]"])
    )
    problems = real_preflight(bad)
    assert any("add_Octal" in p for p in problems)
    assert any("gpt4" in p and REAL_METHODS[0] in p for p in problems)
    assert any("seeds" in p for p in problems)
    assert all("\n" not in p for p in problems)
    good = to_object(compose_dict("nupa", "real"))
    assert real_preflight(good) == []
