"""Tests of papers/nupa/evaluate.py: the predictions scorer of brief `nupa.md` Sec. 3.8."""

from __future__ import annotations

import json
import sys
import types

import pytest

from papers.nupa.evaluate import (
    evaluate_records,
    main,
    parse_task_name,
    task_max_length,
)
from tests.helpers import run_cli

ADD_I = "add_Integer_Integer_Integer"
ADD_F = "add_Float_Float_Float"
ADD_S = "add_ScientificNotation_ScientificNotation_ScientificNotation"
MAX_I = "max_Integer_Integer_Integer"
LEN_F = "length_Float_none_int"


def _sample(task, digit, answer, prediction, **extra):
    return {"task": task, "digit": digit, "answer": answer, "prediction": prediction, **extra}


# Line numbers in the comments are the 1-based lines of the file written by _write.
LINES = [
    json.dumps(_sample(ADD_I, 3, "579", "Add two numbers: 123 + 456 = 579")),  # 1: right
    json.dumps(_sample(ADD_I, 3, "1243", "q = 1234", type_out="Integer", split="test")),  # 2
    "{this is not json",  # 3: skipped
    json.dumps(_sample(ADD_I, 6, "123456", None)),  # 4: null prediction
    json.dumps(_sample(ADD_I, 12, "12345", "q = I think it is large")),  # 5: garbage
    json.dumps({"task": ADD_I, "digit": 4, "prediction": "q = 1"}),  # 6: no answer, skipped
    json.dumps(_sample(ADD_F, 2, "12.34", "q = 12.35")),  # 7: type from the name
    json.dumps(_sample(ADD_S, 2, "1.25e3", "q = 1.25E+3 done")),  # 8: no underscore in type
    json.dumps(_sample(MAX_I, 30, "98765", 98765)),  # 9: non-string prediction
    "",  # 10: blank, ignored
    json.dumps([1, 2, 3]),  # 11: not an object, skipped
    json.dumps(_sample(ADD_F, 2, "12.3.4", "q = 1.0")),  # 12: invalid answer, skipped
    json.dumps(_sample(LEN_F, 5, "5", "q = 5")),  # 13: int output type
    json.dumps(_sample(ADD_I, "x", "1", "q = 1")),  # 14: bad digit, skipped
]


def _write(tmp_path):
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def _check_result(result):
    assert result["n_scored"] == 8
    assert [s["line"] for s in result["skipped"]] == [3, 6, 11, 12, 14]
    assert result["n_skipped"] == 5
    tasks = result["tasks"]
    assert set(tasks) == {ADD_I, ADD_F, ADD_S, MAX_I, LEN_F}

    add = tasks[ADD_I]
    assert add["representation"] == "Integer" and add["max_length"] == 20
    assert add["n"] == 4
    digits = {int(d): v for d, v in add["per_digit"].items()}  # str keys once in JSON
    assert digits[3] == {"n": 2, "exact_match": 0.5, "digit_match": 0.75, "dlength": 0.0}
    # null prediction and garbage text: wrong, dlength = number of gt digits
    assert digits[6] == {"n": 1, "exact_match": 0.0, "digit_match": 0.0, "dlength": 6.0}
    assert digits[12] == {"n": 1, "exact_match": 0.0, "digit_match": 0.0, "dlength": 5.0}
    assert add["per_bucket"]["S"]["n"] == 2 and add["per_bucket"]["M"]["n"] == 1
    assert add["per_bucket"]["L"]["dlength"] == 5.0
    assert add["in_domain"]["n"] == 3
    assert add["in_domain"]["exact_match"] == pytest.approx(1 / 3)
    assert add["out_of_domain"] == {"n": 1, "exact_match": 0.0, "digit_match": 0.0, "dlength": 5.0}
    assert add["well_learned_digit"] == {"exact_match": None, "digit_match": None, "dlength": 3}
    assert add["performance_preserving_digit"]["digit_match"] == 3

    assert tasks[ADD_F]["per_bucket"]["S"]["digit_match"] == 0.75
    assert tasks[ADD_S]["type_out"] == "ScientificNotation"
    assert tasks[ADD_S]["in_domain"]["exact_match"] == 1.0
    maxi = tasks[MAX_I]
    assert maxi["max_length"] == 100
    assert maxi["per_bucket"]["L"]["digits"] == [21, 60]
    assert maxi["out_of_domain"]["dlength"] == 5.0  # the integer prediction counts as none
    assert tasks[LEN_F]["representation"] == "Float" and tasks[LEN_F]["type_out"] == "int"
    assert tasks[LEN_F]["in_domain"]["exact_match"] == 1.0

    extracted = {r["line"]: r["extracted"] for r in result["records"]}
    assert extracted[1] == "579" and extracted[4] == "" and extracted[8] == "1.25e3"


def test_main_in_process(tmp_path, capsys):
    path = _write(tmp_path)
    out = tmp_path / "out" / "metrics.json"
    assert main([str(path), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "skipped line 3: invalid JSON" in captured.err
    assert "skipped line 6: missing field(s) answer" in captured.err
    assert "add_Integer_Integer_Integer" in captured.out and "OOD" in captured.out
    assert "scored 8 records, skipped 5 lines" in captured.out
    _check_result(json.loads(out.read_text()))


def test_main_default_output_path(tmp_path):
    path = _write(tmp_path)
    assert main([str(path)]) == 0
    assert (tmp_path / "preds.metrics.json").is_file()


def test_cli_subprocess(tmp_path):
    path = _write(tmp_path)
    out = tmp_path / "metrics.json"
    proc = run_cli(["-m", "papers.nupa.evaluate", str(path), "--out", str(out)], cwd="/work/main")
    assert proc.returncode == 0, proc.stderr
    assert "skipped line 11: not a JSON object" in proc.stderr
    assert "WL EM" in proc.stdout
    _check_result(json.loads(out.read_text()))


def test_main_bad_inputs(tmp_path, capsys):
    assert main([str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    assert main([str(empty), "--out", str(tmp_path / "e.json")]) == 1
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\xff\xfe garbage\n" + json.dumps(_sample(ADD_I, 1, "7", "= 7")).encode())
    assert main([str(junk), "--out", str(tmp_path / "j.json")]) == 0
    with pytest.raises(SystemExit):
        main([str(junk), "--max-length-of-task", "add=30"])


def test_evaluate_records_marker_and_dlength_mode():
    records = [
        _sample(ADD_F, 3, "12.345", "Sure! The answer is 123.45."),
        _sample(ADD_F, 3, "12.345", "= 99.9"),  # no marker: the text starts with '='
    ]
    result = evaluate_records(records, marker="The answer is")
    row = result["records"][0]
    assert row["extracted"] == "123.45" and row["dlength"] == 0.0
    assert result["records"][1]["extracted"] == ""
    per_part = evaluate_records(records, marker="The answer is", dlength_mode="per_part")
    assert per_part["records"][0]["dlength"] == 2.0
    assert per_part["dlength_mode"] == "per_part"
    bad = [
        "text",
        {"task": ADD_I, "digit": True, "answer": "1"},
        _sample(ADD_I, 1, "1", "= 1", type_out=["Integer"]),
        _sample(ADD_I, 1, "1", "= 1", type_out="Complex"),
        _sample("custom_task", 1, "1", "= 1"),
        _sample(ADD_I, -1, "1", "= 1"),
    ]
    skipped = evaluate_records(bad)
    assert [s["line"] for s in skipped["skipped"]] == [1, 2, 3, 4, 5, 6]
    assert skipped["n_scored"] == 0 and skipped["tasks"] == {}


def test_parse_task_name():
    expected = ("digit_max", "Float", "Float", "Float")
    assert parse_task_name("digit_max_Float_Float_Float") == expected
    assert parse_task_name(ADD_S)[3] == "ScientificNotation"
    assert parse_task_name("get_digit_Integer_int_int") == ("get_digit", "Integer", "int", "int")
    assert parse_task_name("custom_Fraction") == ("custom_Fraction", None, None, "Fraction")


def _fake_registry(monkeypatch, function):
    module = types.ModuleType("papers.nupa.tasks")
    module.max_length = function
    monkeypatch.setitem(sys.modules, "papers.nupa.tasks", module)


def test_task_max_length_uses_registry_then_falls_back(monkeypatch):
    def registry(name):
        if name == "wide_Integer_Integer_Integer":
            return 100
        raise KeyError(name)

    _fake_registry(monkeypatch, registry)
    assert task_max_length("wide_Integer_Integer_Integer", [3]) == 100
    assert task_max_length("other_Integer_Integer_Integer", [3, 20]) == 20
    assert task_max_length("other_Integer_Integer_Integer", [3, 40]) == 100
    result = evaluate_records([_sample("wide_Integer_Integer_Integer", 15, "1", "= 1")])
    assert result["tasks"]["wide_Integer_Integer_Integer"]["per_bucket"]["M"]["n"] == 1

    monkeypatch.setitem(sys.modules, "papers.nupa.tasks", None)  # import fails
    assert task_max_length("wide_Integer_Integer_Integer", [3]) == 20


def test_max_length_override(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(_sample(ADD_I, 15, "1", "= 1")) + "\n")
    out = tmp_path / "o.json"
    assert main([str(path), "--out", str(out), "--max-length-of-task", f"{ADD_I}=100"]) == 0
    assert json.loads(out.read_text())["tasks"][ADD_I]["per_bucket"]["M"]["n"] == 1
    assert main([str(path), "--out", str(out), "--max-length-of-task", "100"]) == 0
    assert json.loads(out.read_text())["tasks"][ADD_I]["max_length"] == 100
