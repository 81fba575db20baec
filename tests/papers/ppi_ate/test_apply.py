"""``python -m papers.ppi_ate.apply`` (issue 53): PPI's interval for one user's D1 and D2 with
AIPW's beside it and the covariate-shift check's verdict, written to answer.json; a bad key or
file stops in one line before anything is written (shared/apply.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from papers.ppi_ate import apply
from papers.ppi_ate.config import ApplyConfig
from shared.apply import ANSWER_NAME, run_apply
from shared.assets import sha256_of
from tests.helpers import apply_refusal


def write(path, n: int, seed: int, confounding: float = 0.0, shift: float = 0.0) -> None:
    """Y = 1 + x1 + (1 + x2) A + noise (ATE 1 + E[x2]); A confounded by x1 when asked."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(shift, 1.0, n), rng.uniform(-1, 1, n)
    a = (rng.uniform(size=n) < 1 / (1 + np.exp(-confounding * x1))).astype(int)
    y = 1 + x1 + (1 + x2) * a + 0.5 * rng.normal(size=n)
    frame = pd.DataFrame({"arm": a, "y": y, "x1": x1, "x2": x2})
    frame.sort_values("arm").to_csv(path, index=False)  # sorted: D2's halves must be drawn


def args(tmp_path, *extra: str) -> list[str]:
    return [
        f"d1={tmp_path / 'd1.csv'}",
        f"d2={tmp_path / 'd2.csv'}",
        "treatment=arm",
        "outcome=y",
        "covariates=[x1,x2]",
        f"out={tmp_path / 'answer'}",
        *extra,
    ]


def test_one_answer_for_one_pair_of_data_sets(tmp_path, capsys):
    write(tmp_path / "d1.csv", 400, 0)
    write(tmp_path / "d2.csv", 4000, 1, confounding=1.5)
    record = run_apply("ppi_ate", ApplyConfig, apply.answer_for, args(tmp_path))
    answer = record["answer"]
    for method in ("aipw", "ppi", "d2_only"):
        iv = answer[method]
        assert iv["low"] < iv["estimate"] < iv["high"]
        assert iv["half_width"] == pytest.approx((iv["high"] - iv["low"]) / 2)
    assert answer["aipw"]["low"] < 1.0 < answer["aipw"]["high"]  # the true ATE is 1
    assert answer["ppi"]["low"] < 1.0 < answer["ppi"]["high"]
    assert answer["ppi_over_aipw_half_width"] < 1.0  # D2's CATE model explains x2's effect
    assert answer["shift_check"]["flagged"] is False and answer["n_d2"] == 4000
    saved = json.loads((tmp_path / "answer" / ANSWER_NAME).read_text())
    assert saved["answer"] == answer
    files = {f["key"]: f["sha256"] for f in saved["user_files"]}
    assert files == {"d1": sha256_of(tmp_path / "d1.csv"), "d2": sha256_of(tmp_path / "d2.csv")}
    assert "PPI (D1 + D2)" in capsys.readouterr().out


def test_a_shifted_d2_is_flagged_with_a_note(tmp_path):
    write(tmp_path / "d1.csv", 400, 0)
    write(tmp_path / "d2.csv", 4000, 1, shift=1.0)
    record = run_apply("ppi_ate", ApplyConfig, apply.answer_for, args(tmp_path))
    assert record["answer"]["shift_check"]["flagged"] is True
    assert any("may be biased" in note for note in record["notes"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("outcome=yy",), r"d1\.csv: missing column\(s\) \['yy'\]"),
        (("alpha=1.5",), r"alpha=1\.5: must be < 1"),
        (("covariates=[x1,y]",), "each column plays one part"),
        (("colour=red",), "colour: Key 'colour' not in 'ApplyConfig'"),
    ],
    ids=["missing column", "bound", "roles", "unknown key"],
)
def test_a_bad_key_or_file_stops_in_one_line_writing_nothing(tmp_path, extra, message):
    write(tmp_path / "d1.csv", 400, 0)
    write(tmp_path / "d2.csv", 4000, 1)
    refusal = apply_refusal(apply, args(tmp_path, *extra), tmp_path / "answer")
    assert re.search(message, refusal), refusal
