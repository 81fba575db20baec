"""``python -m papers.conformal_bma.apply`` (issue 53): CBMA's prediction set, each candidate's
and the model weights for every row of a user's test table, in the response's own units,
written to answer.json and answer.csv; bad input stops in one line, nothing written."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest

from papers.conformal_bma import apply
from papers.conformal_bma.config import ApplyConfig
from shared.apply import ANSWER_NAME, ROWS_NAME, run_apply
from tests.helpers import apply_refusal


def write(path, n: int, seed: int, with_target: bool = True) -> None:
    """y = 10 + 5 (1 + 2u - v^2) + noise: a quadratic truth in its own units."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 2)), columns=["u", "v"])
    if with_target:
        frame["y"] = 10 + 5 * (1 + 2 * frame.u - frame.v**2) + 1.5 * rng.normal(size=n)
    frame.to_csv(path, index=False)


def args(tmp_path, *extra: str) -> list[str]:
    return [
        f"train={tmp_path / 'train.csv'}",
        f"test={tmp_path / 'test.csv'}",
        "target=y",
        "grid_size=200",
        f"out={tmp_path / 'answer'}",
        *extra,
    ]


def test_every_test_row_gets_its_sets_in_the_responses_units(tmp_path):
    write(tmp_path / "train.csv", 120, 0)
    write(tmp_path / "test.csv", 30, 1)
    record = run_apply("conformal_bma", ApplyConfig, apply.answer_for, args(tmp_path))
    answer = record["answer"]
    assert answer["weights"]["quadratic"] > 0.99  # the data are quadratic
    assert answer["mean_size"]["cbma"] < answer["mean_size"]["cb_linear"]
    assert answer["coverage"]["cbma"] >= 0.7  # 90 % sets, 30 rows
    rows = list(csv.DictReader((tmp_path / "answer" / ROWS_NAME).open()))
    assert len(rows) == 30 and float(rows[0]["cbma_low"]) < float(rows[0]["cbma_high"])
    assert 0 < float(rows[0]["cbma_size"]) < 30  # y's units: sd of y is about 13
    saved = json.loads((tmp_path / "answer" / ANSWER_NAME).read_text())
    assert [f["key"] for f in saved["user_files"]] == ["train", "test"]


def test_a_test_table_without_the_response_gets_sets_only(tmp_path):
    write(tmp_path / "train.csv", 80, 0)
    write(tmp_path / "test.csv", 5, 1, with_target=False)
    record = run_apply("conformal_bma", ApplyConfig, apply.answer_for, args(tmp_path))
    assert "coverage" not in record["answer"] and len(record["answer"]["rows"]) == 5


def test_prediction_set_reads_ends_size_and_gaps():
    grid = np.linspace(0.0, 9.0, 10)
    found = apply.prediction_set(grid, np.array([0, 0, 1, 1, 0, 1, 0, 0, 0, 0.0]), 0.5)
    assert (found["low"], found["high"], found["size"], found["interval"]) == (2, 5, 3, False)
    assert apply.prediction_set(grid, np.zeros(10), 0.5)["size"] == 0.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("target=z",), "has no column 'z'"),
        (("models=[{name:a,degree:1,columns:[w]}]",), r"model 'a' asks for columns \['w'\]"),
        (("model_prior=[1.0]",), "must hold one weight per model"),
    ],
    ids=["target", "candidate column", "prior"],
)
def test_bad_input_stops_in_one_line_writing_nothing(tmp_path, extra, message):
    write(tmp_path / "train.csv", 60, 0)
    write(tmp_path / "test.csv", 5, 1)
    refusal = apply_refusal(apply, args(tmp_path, *extra), tmp_path / "answer")
    assert message.replace("\\", "") in refusal, refusal
