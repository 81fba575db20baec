"""NUPA task registry: the 41 combinations / 50 names, preprocessing, ground truth, text."""

from __future__ import annotations

import random

import pytest

from papers.nupa.numbers import Float, Fraction, Integer, ScientificNotation
from papers.nupa.oracle import check_sample
from papers.nupa.tasks import (
    COMBINATIONS,
    KNOWN_DEVIATIONS,
    OFFICIAL_VARIANTS,
    TASKS,
    VARIANTS,
    get_variant,
    ground_truth,
    max_length,
    preprocess,
    question_text,
    sample_digit,
    sample_text,
    significant_figures,
)

INT, FL, R, S = Integer.parse, Float.parse, Fraction.parse, ScientificNotation.parse
PARSERS = {"Integer": INT, "Float": FL, "Fraction": R, "ScientificNotation": S}


def name(title: str, rep: str, b: str | None = None, out: str | None = None) -> str:
    return f"{title}_{rep}_{b or rep}_{out or rep}"


def answer(variant: str, a, b) -> str:
    """Ground truth of already-preprocessed inputs, cross-checked by the oracle."""
    v = get_variant(variant)
    result = ground_truth(v, a, b)
    record = {
        "task": v.name,
        "a": str(a),
        "b": None if b is None else str(b),
        "answer": result,
        "type_out": v.type_out,
    }
    assert check_sample(record) is None, check_sample(record)
    return result


# --- registry (Sec. 3.4) -------------------------------------------------------------------------
def test_seventeen_tasks_and_41_combinations():
    assert len(TASKS) == 17
    assert len(COMBINATIONS) == 41
    per_rep = {rep: sum(1 for _, r in COMBINATIONS if r == rep) for rep in PARSERS}
    assert per_rep == {"Integer": 16, "Float": 12, "Fraction": 7, "ScientificNotation": 6}
    assert ("truediv", "Float") not in COMBINATIONS and ("count", "Float") not in COMBINATIONS


def test_fifty_task_names_44_official():
    assert len(VARIANTS) == 50 and len(OFFICIAL_VARIANTS) == 44
    extra = sorted(set(VARIANTS) - set(OFFICIAL_VARIANTS))
    assert extra == sorted(
        [name("min", r) for r in PARSERS] + [name("digit_min", r) for r in ("Integer", "Float")]
    )
    assert {v.combination for v in VARIANTS.values()} == COMBINATIONS
    assert not any(n.startswith("multiply_Integer") for n in VARIANTS)  # only easy / hard
    for n, v in VARIANTS.items():
        assert n == f"{v.title}_{v.type_a}_{v.type_b}_{v.type_out}"
    assert VARIANTS["truediv_Integer_Integer_Fraction"].type_out == "Fraction"
    assert VARIANTS["length_Float_none_int"].type_b == "none"
    assert VARIANTS["sig_Float_int_ScientificNotation"].type_b == "int"
    v = VARIANTS["multiply_easy_Float_Float_Float"]
    assert (v.task, v.difficulty, v.title) == ("multiply", "easy", "multiply_easy")


def test_datasets_and_max_length():
    assert VARIANTS[name("max", "Fraction")].dataset == "add"
    assert VARIANTS[name("max_hard", "Integer")].dataset == "compare_harder"
    assert VARIANTS["to_float_ScientificNotation_none_Float"].dataset == "compare"
    assert VARIANTS["to_float_Fraction_none_Float"].dataset == "add"
    assert max_length(name("add", "Integer")) == 20
    assert max_length("to_float_Fraction_none_Float") == 20
    assert max_length(name("max", "Float")) == 100
    assert max_length(name("max_hard", "ScientificNotation")) == 100
    assert max_length("sig_Integer_int_ScientificNotation") == 100
    with pytest.raises(KeyError):
        max_length("add_Float_Float_Fraction")


# --- brief Sec. 7.2: hand-computed tasks ---------------------------------------------------------
def test_hand_computed_arithmetic_and_comparison():
    assert answer(name("add", "Integer"), INT("999"), INT("1")) == "1000"
    assert answer(name("add", "Float"), FL("1.25"), FL("0.75")) == "2.0"
    assert answer(name("sub", "Float"), FL("10.05"), FL("0.06")) == "9.99"
    assert answer(name("multiply_hard", "Float"), FL("1.5"), FL("2.5")) == "3.75"
    assert answer(name("add", "Fraction"), R("1/2"), R("1/3")) == "5/6"
    assert answer(name("add", "ScientificNotation"), S("1.2e3"), S("4.5e1")) == "1.245e3"
    assert answer(name("sub", "ScientificNotation"), S("1.2e3"), S("4.5e1")) == "1.155e3"
    assert answer(name("multiply_hard", "ScientificNotation"), S("5.0e3"), S("4.0e2")) == "2.0e6"
    assert answer(name("max", "Float"), FL("9.11"), FL("9.9")) == "9.9"
    assert answer(name("max", "ScientificNotation"), S("9.9e2"), S("1.1e3")) == "1.1e3"
    assert answer("truediv_Integer_Integer_Fraction", INT("6"), INT("4")) == "3/2"
    assert answer(name("truediv", "Fraction"), R("1/2"), R("3/4")) == "2/3"
    assert answer(name("floordiv", "Integer"), INT("17"), INT("5")) == "3"
    assert answer(name("mod", "Integer"), INT("17"), INT("5")) == "2"
    assert answer(name("min", "Fraction"), R("1/3"), R("2/5")) == "1/3"
    assert answer(name("min", "Integer"), INT("9"), INT("12")) == "9"


# --- brief Sec. 7.3: digit tasks -----------------------------------------------------------------
def test_hand_computed_digit_tasks():
    assert answer(name("digit_max", "Integer"), INT("123"), INT("4567")) == "4567"
    assert answer(name("digit_min", "Integer"), INT("123"), INT("4567")) == "123"
    assert answer(name("digit_add", "Integer"), INT("987"), INT("345")) == "222"
    assert answer(name("digit_add", "Float"), FL("12.34"), FL("5.678")) == "17.918"
    assert answer(name("digit_max", "Float"), FL("12.34"), FL("5.678")) == "15.678"
    assert answer(name("digit_min", "Float"), FL("12.34"), FL("5.678")) == "2.34"
    assert answer(name("digit_add", "Integer"), INT("55"), INT("55")) == "0"
    assert answer("get_digit_Integer_int_int", INT("12345"), 3) == "4"
    assert answer("get_digit_Float_int_int", FL("12.34"), 2) == "3"
    assert answer("length_Float_none_int", FL("12.345"), None) == "5"
    assert answer("length_Integer_none_int", INT("1001001"), None) == "7"
    assert answer("count_Integer_int_int", INT("1001001"), 0) == "4"


# --- brief Sec. 7.4: conversions and significant figures -----------------------------------------
def test_hand_computed_conversions():
    assert answer("to_float_Fraction_none_Float", R("3/8"), None) == "0.375"
    assert answer("to_float_ScientificNotation_none_Float", S("1.234e2"), None) == "123.4"
    assert answer("to_float_ScientificNotation_none_Float", S("1.2e3"), None) == "1200.0"
    assert answer("to_scient_Integer_none_ScientificNotation", INT("120300"), None) == "1.203e5"
    assert answer("to_scient_Float_none_ScientificNotation", FL("12.34"), None) == "1.234e1"
    sig_i, sig_f = "sig_Integer_int_ScientificNotation", "sig_Float_int_ScientificNotation"
    assert answer(sig_i, INT("123456"), 3) == "1.23e5"
    assert answer(sig_i, INT("120345"), 3) == "1.20e5"
    assert answer(sig_i, INT("996"), 2) == "1.0e3"
    assert answer(sig_f, FL("3.14169"), 4) == "3.142e0"
    assert answer(sig_i, INT("12"), 2) == "1.2e1"
    assert answer(sig_i, INT("5"), 2) == "5.0e0"
    assert answer(sig_i, INT("10"), 2) == "1.0e1"
    assert answer(sig_f, FL("9.99"), 2) == "1.0e1"
    assert answer(sig_i, INT("0"), 2) == "0.0e0"


def test_sig_rounds_half_to_even_on_all_remaining_digits():
    assert significant_figures(FL("1.25"), 2) == "1.2e0"
    assert significant_figures(FL("1.35"), 2) == "1.4e0"
    assert significant_figures(FL("1.251"), 2) == "1.3e0"
    assert significant_figures(FL("6.55"), 2) == "6.6e0"  # official: 6.5e0 (bug i)
    assert significant_figures(INT("99999"), 3) == "1.00e5"
    assert significant_figures(INT("12"), 5) == "1.2000e1"
    with pytest.raises(ValueError):
        significant_figures(INT("12"), 1)


def test_known_deviations_are_documented():
    assert set(KNOWN_DEVIATIONS) == {"sig_half_digit", "sig_carry", "sig_trailing_zero"}
    assert "1.000e2" in KNOWN_DEVIATIONS["sig_carry"]
    assert "5.00e0" in KNOWN_DEVIATIONS["sig_trailing_zero"]


# --- brief Sec. 7.5: preprocessing ---------------------------------------------------------------
def pre(variant: str, a, b):
    out_a, out_b = preprocess(variant, a, b)
    return str(out_a), None if out_b is None else str(out_b)


def test_preprocessing_cases_of_the_brief():
    assert pre(name("mod", "Integer"), INT("123456789"), INT("987654")) == ("123456789", "987654")
    assert pre(name("mod_easy", "Integer"), INT("123456789"), INT("987654")) == ("123456789", "654")
    assert pre(name("multiply_easy", "Integer"), INT("1234"), INT("98765")) == ("98765", "234")
    assert pre(name("max", "Fraction"), R("7/3"), R("2/5")) == ("3/7", "2/5")
    assert pre(name("sub", "Integer"), INT("3"), INT("70")) == ("70", "3")


def test_more_preprocessing():
    # mod: b longer than int(0.7 len(a)) + 1 keeps its last digits; larger first; zero -> 1.
    assert pre(name("mod", "Integer"), INT("12345"), INT("99999")) == ("99999", "2345")
    assert pre(name("mod", "Integer"), INT("1000"), INT("123000")) == ("123000", "1000")
    assert pre(name("floordiv", "Integer"), INT("0"), INT("0")) == ("0", "1")
    assert pre(name("truediv", "Fraction"), R("3/4"), R("0/1")) == ("3/4", "1/1")
    assert pre("truediv_Integer_Integer_Fraction", INT("5"), INT("0")) == ("5", "1")
    # multiply_easy truncation per type.
    assert pre(name("multiply_easy", "Float"), FL("12345.6789"), FL("1.23456")) == (
        "1.23456",
        "345.678",
    )
    assert pre(name("multiply_easy", "Float"), FL("1.5"), FL("12345.67891")) == (
        "12345.67891",
        "1.5",
    )
    assert pre(name("multiply_easy", "Float"), FL("1.5"), FL("1.5")) == ("1.5", "1.5")
    assert pre(name("multiply_easy", "Fraction"), R("1/3"), R("12345/67891")) == (
        "12345/67891",
        "1/3",
    )
    assert pre(name("multiply_easy", "ScientificNotation"), S("1.5e3"), S("7.12345e9")) == (
        "7.12345e9",
        "1.5e3",
    )
    assert pre(name("multiply_easy", "ScientificNotation"), S("7.12345e9"), S("1.5e3"))[0] == (
        "7.12345e9"
    )
    # add_easy: the shorter fraction (a on ties) keeps the last 3 digits of num and den.
    assert pre(name("add_easy", "Fraction"), R("12345/67891"), R("1/3")) == (
        "12345/67891",
        "1/3",
    )
    assert pre(name("add_easy", "Fraction"), R("1235/5678"), R("12347/67891")) == (
        "235/678",
        "12347/67891",
    )
    assert pre(name("add_easy", "Fraction"), R("1234/5677"), R("5/3")) == ("1234/5677", "5/3")
    # max/min: improper fractions are inverted; other types unchanged.
    assert pre(name("min", "Fraction"), R("5/5"), R("9/2")) == ("1/1", "2/9")
    assert pre(name("max", "Integer"), INT("3"), INT("70")) == ("3", "70")
    # length drops b; larger-digit first.
    assert pre("length_Float_none_int", FL("1.5"), FL("2.25")) == ("2.25", None)


def test_seeded_parameters_use_a_fresh_rng_from_b0():
    a, b = INT("12345"), INT("678")
    pos = random.Random(678).randint(0, 4)
    assert preprocess("get_digit_Integer_int_int", a, b) == (a, pos)
    assert preprocess("get_digit_Integer_int_int", b, a) == (a, pos)  # larger-digit first
    assert preprocess("get_digit_Integer_int_int", a, b) == (a, pos)  # reproducible
    x, y = FL("12.345"), FL("7.25")
    assert preprocess("get_digit_Float_int_int", x, y)[1] == random.Random(7).randint(0, 4)
    assert preprocess("count_Integer_int_int", a, b)[1] == random.Random(678).randint(0, 9)
    assert preprocess("sig_Integer_int_ScientificNotation", a, b)[1] == random.Random(678).randint(
        2, 5
    )
    # sig on a Float: M = digits of the integer representation without outer zeros.
    sig_a, sig = preprocess("sig_Float_int_ScientificNotation", FL("0.0500"), FL("3.1"))
    assert sig == random.Random(3).randint(2, 2) and str(sig_a) == "1.05"  # int part 0 -> 1
    # add Scientific: exponent 99 lowered to 98, b.exp = clip(a.exp + U{-5..5}, 0, 98).
    sa, sb = preprocess(name("add", "ScientificNotation"), S("1.5e99"), S("2.5e3"))
    assert sa.exponent == 98
    assert sb.exponent == min(98 + random.Random(2).randint(-5, 5), 98)
    assert str(sb.mantissa) == "2.5"
    # sub Scientific: larger first, b.exp = a.exp + U{-5..-1}; a bumped by 1 when too close.
    sa, sb = preprocess(name("sub", "ScientificNotation"), S("1.0e0"), S("9.5e0"))
    d = random.Random(1).randint(-5, -1)  # seed: b's mantissa digit after ordering (1.0e0)
    assert str(sa) == "9.5e1" and sb.exponent == max(1 + d, 0)  # a.exp 0 -> 1
    sa, sb = preprocess(name("sub", "ScientificNotation"), S("1.0e1"), S("9.5e0"))
    assert (str(sa), str(sb)) == ("1.1e1", "9.5e0")  # 10 <= 9.5 + 1: a + 1
    # to_float Fraction: 2^e2 5^e5 with seeds b.num and b.den.
    fa, fb = preprocess("to_float_Fraction_none_Float", R("12/35"), R("3/7"))
    e2, e5 = random.Random(3).randint(0, 2), random.Random(7).randint(0, 2)
    assert fb is None and fa == Fraction(35, 2**e2 * 5**e5)
    # to_float Scientific: exponent in [0, min(a.exp, a.digit)].
    ta, _ = preprocess("to_float_ScientificNotation_none_Float", S("1.234e50"), S("4.5e1"))
    assert ta.exponent == random.Random(4).randint(0, 3) and str(ta.mantissa) == "1.234"
    # to_scient Integer: up to int(0.5 digit) trailing zeros.
    za, _ = preprocess("to_scient_Integer_none_ScientificNotation", INT("123456"), INT("78"))
    z = random.Random(78).randint(0, 3)
    assert za == Integer(123456 - 123456 % 10**z)
    fa, _ = preprocess("to_scient_Float_none_ScientificNotation", FL("0.25"), FL("0.5"))
    assert str(fa) == "1.25"


def test_preprocess_rejects_wrong_types():
    with pytest.raises(TypeError):
        preprocess(name("add", "Integer"), FL("1.5"), FL("2.5"))


# --- brief Sec. 3.7: text ------------------------------------------------------------------------
def test_sample_text_layout():
    q = question_text(name("add", "Integer"), INT("12"), INT("34"))
    assert q == (
        "Directly return the answer as an integer without any comma separator, like 123 . "
        "Add two numbers: 12 + 34 = "
    )
    assert sample_text(name("add", "Integer"), INT("12"), INT("34")) == q + "46"
    q = question_text(name("truediv", "Fraction"), R("1/2"), R("3/4"))
    assert q.endswith("(1/2) / (3/4) = ") and "**irreducible** fraction" in q
    q = question_text("length_Float_none_int", FL("12.345"), None)
    assert q.endswith("The total number of digits of 12.345 = ")
    q = question_text("sig_Integer_int_ScientificNotation", INT("123456"), 3)
    assert q.endswith(
        "Convert the number to scientific notation: 123456 and keep significant figures as 3 = "
    )
    assert "The float part should be in the range [1, 10). " in q
    q = question_text(name("max", "Float"), FL("9.11"), FL("9.9"))
    assert q.endswith("Get the maximal number: 9.11 and 9.9 = ") and "like 10.4 . " in q
    assert question_text(name("digit_add", "Float"), FL("1.5"), FL("2.5")).endswith(
        "treating any missing digits as 0. 1.5 digit add 2.5 = "
    )
    assert question_text("count_Integer_int_int", INT("100"), 0).endswith(
        "100 count the occurrence time of digit 0 = "
    )
    assert question_text("get_digit_Integer_int_int", INT("100"), 2).endswith(
        "100 at position 2 = "
    )


def test_sample_digit():
    assert sample_digit(name("add", "Float"), FL("1.25"), FL("100.5")) == 2
    assert sample_digit(name("add", "Fraction"), R("1/3"), R("10/99")) == 2
    assert sample_digit("get_digit_Integer_int_int", INT("12345"), 3) == 5
    assert sample_digit("length_Float_none_int", FL("12.345"), None) == 3
    assert sample_digit(name("add", "ScientificNotation"), S("1.25e30"), S("1.5e2")) == 2
