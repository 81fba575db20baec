"""Tests of papers/nupa/metrics.py: brief `nupa.md` Sec. 3.8 and Sec. 7 item 6.

Every expected value below was worked out by hand from the definitions in Sec. 3.8.
"""

from __future__ import annotations

import math

import pytest

from papers.nupa.metrics import (
    API_MARKER,
    COT_MARKER,
    METRICS,
    aggregate,
    answer_parts,
    bucket_of,
    digit_diff,
    digit_match,
    dlength,
    exact_match,
    extract_answer,
    infer_max_length,
    mse,
    performance_preserving_digit,
    score,
    well_learned_digit,
)

INTG, F, R, S, INT = "Integer", "Float", "Fraction", "ScientificNotation", "int"


# --- Sec. 7 item 6, one assertion per listed case ---------------------------------------------


def test_exact_match_is_representation_sensitive():
    assert exact_match("9.90", "9.9", F) == 0.0
    assert exact_match("9.9", "9.9", F) == 1.0
    assert exact_match("2/4", "1/2", R) == 0.0  # unreduced fraction: same value, still wrong


def test_digit_match_integer_swap():
    assert digit_match("1234", "1243", INTG) == 0.5


def test_digit_match_float_last_decimal_wrong():
    assert digit_match("12.35", "12.34", F) == 0.75


def test_dlength_two_missing_digits():
    assert dlength("123", "12345", INTG) == 2.0


def test_text_without_answer_scores_as_wrong():
    pred = extract_answer("I cannot compute this.", INTG)
    assert pred == ""
    assert score(pred, "12345", INTG) == {"exact_match": 0.0, "digit_match": 0.0, "dlength": 5.0}
    # the same for a multi-part type: all parts empty, dlength = all ground-truth digits
    assert score(extract_answer("no idea", S), "1.25e3", S) == {
        "exact_match": 0.0,
        "digit_match": 0.0,
        "dlength": 4.0,
    }


def test_extraction_scientific_with_sign_and_capital_e():
    assert extract_answer("Add two numbers: 1.1e3 + 1.0e2 = 1.2E+3 foo", S) == "1.2e3"


# --- extraction ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "type_name", "marker", "expected"),
    [
        ("q = 579", INTG, " = ", "579"),
        ("q = 1 = 2", INTG, " = ", "1"),  # the first marker counts
        ("  42 apples", INTG, " = ", "42"),  # no marker: the whole text, stripped
        ("q = about 42", INTG, " = ", ""),  # the match must be at the start
        ("q = 12", F, " = ", ""),  # a Float needs its decimal part
        ("q = 12.5", INT, " = ", "12"),  # an int stops at the point
        ("q = 3/4.", R, " = ", "3/4"),
        ("q = 1.2e-3", S, " = ", "1.2e3"),  # signs are dropped, as in the official reader
        ("q = -7", INTG, " = ", ""),  # a leading sign is not part of the pattern
        ("x = 5", INTG, None, ""),  # no marker: 'x' starts the text
        ("Sure. The answer is 3/4.", R, API_MARKER, "3/4"),
        ("Step 1 ... So the answer is 12.5", F, COT_MARKER, "12.5"),
        ("Step 1 ..., so the answer is 7.", INT, COT_MARKER, "7"),  # lower-case fallback
        ("q = \u0661\u0662", INTG, " = ", ""),  # non-ASCII digits are not digits of the answer
    ],
)
def test_extract_answer(text, type_name, marker, expected):
    assert extract_answer(text, type_name, marker) == expected


@pytest.mark.parametrize("bad", [None, 5, 1.5, ["1"], b"12"])
def test_extract_answer_non_string_is_empty(bad):
    assert extract_answer(bad, INTG) == ""


def test_unknown_type_is_an_error():
    with pytest.raises(ValueError, match="unknown number type"):
        extract_answer("1", "Complex")


def test_answer_parts_keep_digits_and_empty_when_malformed():
    assert answer_parts("12.34", F) == ["12", "34"]
    assert answer_parts("1.2E3", S) == ["1", "2", "3"]
    assert answer_parts("12", F) == ["", ""]  # no separator
    assert answer_parts("", S) == ["", "", ""]
    assert answer_parts(None, R) == ["", ""]
    assert answer_parts("+1 2", INTG) == ["12"]  # non-digits inside a part are dropped


# --- alignment of parts (hand-computed) ---------------------------------------------------------


def test_float_parts_align_right_then_left():
    # int "12" vs "2": from the right 2=2 -> 1; decimals "345" vs "34": from the left -> 2
    assert digit_match("2.34", "12.345", F) == pytest.approx(3 / 5)
    # the decimal part is read from the left, so a missing *last* decimal loses one digit only
    assert digit_match("12.3", "12.34", F) == pytest.approx(3 / 4)


def test_fraction_parts_both_right_aligned():
    # num "12" vs "2": 2=2 -> 1; den "345" vs "45": 5=5, 4=4 -> 2; over 5 gt digits
    assert digit_match("2/45", "12/345", R) == pytest.approx(3 / 5)
    # num "123" vs "12": reversed 321 / 21 -> 0; den "45" vs "345": 5=5, 4=4 -> 2
    assert digit_match("123/45", "12/345", R) == pytest.approx(2 / 5)


def test_scientific_parts_right_left_right():
    # int 1=1; decimals "23" vs "234" from the left -> 2; exponent "15" vs "5" from right -> 1
    assert digit_match("1.23e15", "1.234e5", S) == pytest.approx(4 / 5)
    assert exact_match("1.234e5", "1.234e5", S) == 1.0
    assert exact_match("1.2340e5", "1.234e5", S) == 0.0


def test_dlength_total_vs_per_part():
    # same total digit count, moved across the separator
    assert dlength("123/45", "12/345", R) == 0.0
    assert dlength("123/45", "12/345", R, mode="per_part") == 2.0
    assert dlength("1.23e15", "1.234e5", S) == 0.0
    assert dlength("1.23e15", "1.234e5", S, mode="per_part") == 2.0
    assert dlength("", "12.34", F, mode="per_part") == 4.0
    with pytest.raises(ValueError, match="dlength mode"):
        dlength("1", "1", INTG, mode="bogus")


def test_score_keys_and_values():
    result = score("12.35", "12.34", F)
    assert tuple(result) == METRICS
    assert result == {"exact_match": 0.0, "digit_match": 0.75, "dlength": 0.0}
    assert score("12.34", "12.34", F, dlength_mode="per_part")["exact_match"] == 1.0


def test_ground_truth_without_digits_is_an_error():
    with pytest.raises(ValueError, match="ground truth"):
        digit_match("1", "", INTG)


# --- number-model extras ------------------------------------------------------------------------


def test_mse_exact_values():
    assert mse("12", "10", INTG) == 4.0
    assert mse("0.5", "0.25", F) == 0.0625
    assert mse("1/3", "1/6", R) == pytest.approx(1 / 36)
    assert mse("1.5e2", "1.0e2", S) == 2500.0
    assert mse("7", "7", INT) == 0.0


def test_mse_without_prediction_is_gt_squared():
    assert mse("", "3/2", R) == 2.25
    assert mse(None, "1.5", F) == 2.25
    assert mse("1/0", "1/2", R) == 0.25  # a zero denominator has no value


def test_mse_overflow_is_inf():
    assert mse("1.0e0", "1.0e198", S) == math.inf


def test_digit_diff_zero_fill():
    # reversed "91" vs "321": |9-3| + |1-2| + |0-1| = 8 over 3 gt digits
    assert digit_diff("19", "123", INTG) == pytest.approx(8 / 3)
    # no prediction: the mean of the gt digits
    assert digit_diff("", "123", INTG) == pytest.approx(2.0)
    # decimals from the left: "3" vs "25" -> |3-2| + |0-5| = 6 over 3 digits
    assert digit_diff("1.3", "1.25", F) == pytest.approx(2.0)
    # surplus predicted digits count too: "321" vs "5" -> 2 + 2 + 1 over 1 digit
    assert digit_diff("123", "5", INTG) == pytest.approx(5.0)
    assert digit_diff("1.25e3", "1.25e3", S) == 0.0


# --- length ranges ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("digit", "expected"),
    [(1, "S"), (4, "S"), (5, "M"), (8, "M"), (9, "L"), (14, "L"), (15, "XL"), (20, "XL")],
)
def test_buckets_20(digit, expected):
    assert bucket_of(digit, 20) == expected


@pytest.mark.parametrize(
    ("digit", "expected"),
    [(1, "S"), (10, "S"), (11, "M"), (20, "M"), (21, "L"), (60, "L"), (61, "XL"), (100, "XL")],
)
def test_buckets_100(digit, expected):
    assert bucket_of(digit, 100) == expected


def test_buckets_outside_and_invalid_scale():
    assert bucket_of(21, 20) is None
    assert bucket_of(101, 100) is None
    with pytest.raises(ValueError, match="max_length"):
        bucket_of(3, 50)


def test_infer_max_length():
    assert infer_max_length([1, 20]) == 20
    assert infer_max_length([3, 21]) == 20  # the official to_float 21-digit samples
    assert infer_max_length([3, 22]) == 100
    assert infer_max_length([]) == 20


# --- well-learned and performance-preserving digits ---------------------------------------------


def test_digit_statistics_exact_match():
    curve = {1: 1.0, 2: 0.95, 3: 0.9, 4: 0.5, 5: 0.92, 6: 0.2, 7: 0.05}
    # the largest passing digit, even after a failure (official statistic)
    assert well_learned_digit(curve, "exact_match") == 5
    assert performance_preserving_digit(curve, "exact_match") == 6


def test_digit_statistics_digit_match_and_dlength():
    dm = {1: 0.95, 2: 0.6, 3: 0.4}
    assert well_learned_digit(dm, "digit_match") == 1
    assert performance_preserving_digit(dm, "digit_match") == 2
    dl = {1: 0.0, 2: 0.1, 3: 0.5, 4: 1.0, 5: 3.0}  # smaller is better; bounds inclusive
    assert well_learned_digit(dl, "dlength") == 2
    assert performance_preserving_digit(dl, "dlength") == 4


def test_digit_statistics_none_and_range_filter():
    assert well_learned_digit({1: 0.0, 2: 0.05}, "exact_match") is None
    assert performance_preserving_digit({1: 0.0, 2: 0.05}, "exact_match") is None
    assert well_learned_digit({}, "digit_match") is None
    curve = {3: 1.0, 21: 1.0}
    assert well_learned_digit(curve, "exact_match") == 21
    assert well_learned_digit(curve, "exact_match", max_length=20) == 3
    # the per_digit layout of aggregate() is accepted as well
    nested = {1: {"n": 2, "exact_match": 1.0}, 2: {"n": 2, "exact_match": 0.0}}
    assert well_learned_digit(nested, "exact_match") == 1
    with pytest.raises(ValueError, match="thresholds"):
        well_learned_digit({1: 1.0}, "mse")


# --- aggregation --------------------------------------------------------------------------------


def _rows(task, digit, values):
    return [{"task": task, "digit": digit, "exact_match": v} for v in values]


def test_aggregate_sample_weighted_ranges():
    t = "add_Integer_Integer_Integer"
    rows = _rows(t, 1, [1, 1, 0]) + _rows(t, 5, [0]) + _rows(t, 10, [1, 1]) + _rows(t, 21, [1])
    out = aggregate(rows, metrics=["exact_match"])[t]
    assert out["max_length"] == 20
    assert out["n"] == 7
    assert list(out["per_digit"]) == [1, 5, 10, 21]
    assert out["per_digit"][1] == {"n": 3, "exact_match": pytest.approx(2 / 3)}
    assert out["per_bucket"]["S"]["n"] == 3
    assert out["per_bucket"]["S"]["digits"] == [0, 4]
    assert out["per_bucket"]["M"]["exact_match"] == 0.0
    assert out["per_bucket"]["L"] == {"digits": [9, 14], "n": 2, "exact_match": 1.0}
    assert out["per_bucket"]["XL"] == {"digits": [15, 20], "n": 0, "exact_match": None}
    # weighted by samples: (2 + 0) / 4, not the mean of digit means (1/3)
    assert out["in_domain"] == {"n": 4, "exact_match": 0.5}
    assert out["out_of_domain"] == {"n": 2, "exact_match": 1.0}  # digit 21 enters no range
    assert out["well_learned_digit"] == {"exact_match": 10}
    assert out["performance_preserving_digit"] == {"exact_match": 10}


def test_aggregate_scale_from_argument_and_inference():
    rows = _rows("a", 3, [1]) + _rows("b", 3, [1]) + _rows("b", 50, [0])
    out = aggregate(rows, metrics=["exact_match"], max_lengths={"a": 100})
    assert out["a"]["max_length"] == 100 and out["a"]["per_bucket"]["S"]["digits"] == [0, 10]
    assert out["b"]["max_length"] == 100
    assert out["b"]["per_bucket"]["L"]["n"] == 1
    assert out["b"]["well_learned_digit"]["exact_match"] == 3
