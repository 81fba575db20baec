"""NUPA number representations: canonical strings, parsing, exact arithmetic, generation."""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest

from papers.nupa.numbers import (
    NUMBER_TYPES,
    Float,
    Fraction,
    Integer,
    ScientificNotation,
)


def sci(text: str) -> ScientificNotation:
    return ScientificNotation.parse(text)


# --- brief Sec. 7.1: canonical strings ---------------------------------------------------------
def test_canonical_strings_of_the_brief():
    assert str(Float(2, [0])) == "2.0"
    assert str(Float(1, [2, 0, 0])) == "1.2"
    assert str(Fraction(4, 8)) == "1/2"
    assert str(ScientificNotation(Float(12, [3]), 0)) == "1.23e1"
    assert str(ScientificNotation(Float(0, [0, 5]), 2)) == "5.0e0"


def test_more_canonical_forms():
    assert str(Float(0, [])) == "0.0"
    assert str(Float(7, "050")) == "7.05"
    assert str(Fraction(2, 1)) == "2/1"
    assert str(Fraction(0, 7)) == "0/1"
    assert str(ScientificNotation(Float(0, [0]), 5)) == "0.0e0"  # zero forces exponent 0
    assert str(ScientificNotation(Float(1000, [0]), 0)) == "1.0e3"
    assert str(ScientificNotation(Float(1245, [0]), 0)) == "1.245e3"
    assert str(ScientificNotation("12.3", 0)) == "1.23e1"
    with pytest.raises(ValueError, match="negative exponent"):
        ScientificNotation(Float(0, [0, 5]), 1)


def test_type_names_match_formats():
    assert {name: cls.TYPE_NAME for name, cls in NUMBER_TYPES.items()} == {
        "Integer": "Integer",
        "Float": "Float",
        "Fraction": "Fraction",
        "ScientificNotation": "ScientificNotation",
    }


# --- parsing -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cls", "text", "canonical"),
    [
        (Integer, "0", "0"),
        (Integer, "007", "7"),
        (Float, "12.340", "12.34"),
        (Float, "3.0", "3.0"),
        (Fraction, "4/8", "1/2"),
        (Fraction, "0/5", "0/1"),
        (ScientificNotation, "12.3e0", "1.23e1"),
        (ScientificNotation, "1.20e5", "1.2e5"),
    ],
)
def test_parse_normalises(cls, text, canonical):
    assert str(cls.parse(text)) == canonical
    assert str(cls.parse(canonical, canonical=True)) == canonical


@pytest.mark.parametrize(
    ("cls", "text"),
    [
        (Integer, "-5"),
        (Integer, "1.5"),
        (Integer, " 12"),
        (Integer, ""),
        (Integer, "١٢"),  # non-ASCII digits
        (Float, "12"),
        (Float, "-1.5"),
        (Float, "1.2.3"),
        (Float, ".5"),
        (Fraction, "3/0"),
        (Fraction, "3/-4"),
        (Fraction, "3"),
        (ScientificNotation, "1.2E3"),
        (ScientificNotation, "1.2e-3"),
        (ScientificNotation, "1.2e+3"),
        (ScientificNotation, "12e3"),
        (ScientificNotation, "0.05e0"),  # would need a negative exponent
    ],
)
def test_parse_rejects_malformed_or_negative(cls, text):
    with pytest.raises(ValueError):
        cls.parse(text)


def test_parse_canonical_flag():
    with pytest.raises(ValueError, match="not canonical"):
        Float.parse("9.90", canonical=True)
    with pytest.raises(ValueError, match="not canonical"):
        Fraction.parse("2/4", canonical=True)


# --- metadata ------------------------------------------------------------------------------------
def test_digit_parts_total_digits():
    assert Integer(12345).digit == 5 and Integer(12345).parts() == ["12345"]
    x = Float.parse("12.345")
    assert (x.digit, x.parts(), x.total_digits) == (3, ["12", "345"], 5)
    r = Fraction(123, 45)
    assert (r.digit, r.parts()) == (2, ["41", "15"])  # 123/45 = 41/15
    assert Fraction(7, 1000).digit == 4
    s = sci("1.245e13")
    assert (s.digit, s.parts(), s.total_digits) == (3, ["1", "245", "13"], 6)


def test_values_are_exact():
    assert Float.parse("0.1").value == F(1, 10)
    assert sci("1.5e2").value == 150
    assert sci("1.23456789123456789e0").value == F(123456789123456789, 10**17)
    assert Fraction(6, 4).value == F(3, 2)
    assert Integer(10**30).value == 10**30


# --- comparison ----------------------------------------------------------------------------------
def test_comparisons():
    assert Float.parse("9.11") < Float.parse("9.9")
    assert Float.parse("0.0") < Float.parse("0.01") < Float.parse("0.1")
    assert Float.parse("10.0") > Float.parse("9.99999")
    assert sci("9.9e2") < sci("1.1e3")
    assert sci("0.0e0") < sci("1.0e0")
    assert Fraction(2, 3) > Fraction(3, 5)
    assert Fraction(2, 4) == Fraction(1, 2) and Fraction(2, 4) >= Fraction(1, 2)
    assert max(Integer(7), Integer(12)) == Integer(12)
    assert Integer(3) != Float(3, [0])
    assert len({Fraction(1, 2), Fraction(2, 4), Float(0, [5]), Float(0, [5, 0])}) == 2
    with pytest.raises(TypeError):
        _ = Integer(1) < Float(2, [0])


# --- exact arithmetic ----------------------------------------------------------------------------
def test_arithmetic_within_types():
    assert Integer(999) + Integer(1) == Integer(1000)
    assert str(Float.parse("1.25") + Float.parse("0.75")) == "2.0"
    assert str(Float.parse("10.05") - Float.parse("0.06")) == "9.99"
    assert str(Float.parse("1.5") * Float.parse("2.5")) == "3.75"
    assert str(Float.parse("0.1") + Float.parse("0.2")) == "0.3"  # no binary floats
    assert str(Fraction(1, 2) + Fraction(1, 3)) == "5/6"
    assert str(Fraction(1, 2) - Fraction(1, 2)) == "0/1"
    assert str(Fraction(1, 2) / Fraction(3, 4)) == "2/3"
    assert str(Integer(6) / Integer(4)) == "3/2"
    assert str(sci("1.2e3") + sci("4.5e1")) == "1.245e3"
    assert str(sci("1.2e3") - sci("4.5e1")) == "1.155e3"
    assert str(sci("5.0e3") * sci("4.0e2")) == "2.0e6"
    assert str(sci("5.0e98") * sci("4.0e98")) == "2.0e197"  # products may pass e99
    assert str(sci("1.5e0") - sci("1.5e0")) == "0.0e0"
    assert (Integer(17) // Integer(5), Integer(17) % Integer(5)) == (Integer(3), Integer(2))


def test_conversions():
    assert str(Fraction(3, 8).to_float()) == "0.375"
    assert str(Fraction(7, 1).to_float()) == "7.0"
    with pytest.raises(ValueError):
        Fraction(1, 3).to_float()
    assert str(sci("1.234e2").to_float()) == "123.4"
    assert str(sci("1.2e3").to_float()) == "1200.0"
    assert str(Integer(120300).to_scient()) == "1.203e5"
    assert str(Float.parse("12.34").to_scient()) == "1.234e1"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (Integer(3), Integer(70)),
        (Float.parse("0.5"), Float.parse("0.51")),
        (Fraction(1, 3), Fraction(1, 2)),
        (sci("9.9e2"), sci("1.0e3")),
    ],
)
def test_negative_subtraction_raises(a, b):
    with pytest.raises(ValueError, match="negative"):
        _ = a - b


def test_constructors_validate():
    with pytest.raises(ValueError):
        Integer(-1)
    with pytest.raises(ValueError):
        Float(1, [10])
    with pytest.raises(ZeroDivisionError):
        Fraction(1, 0)
    with pytest.raises(TypeError):
        ScientificNotation(1.5, 0)  # never Python floats


# --- brief Sec. 3.2 / 7.7: random generation -----------------------------------------------------
@pytest.mark.parametrize("length", [1, 2, 5, 20])
def test_random_float_has_exactly_length_decimals(length):
    rng = random.Random(length)
    for _ in range(300):
        x = Float.random(length, rng)
        assert x.digit == length and len(x.dec) == length
        assert x.dec[-1] != "0" and x.int_part >= 1
        assert len(str(x.int_part)) <= length


@pytest.mark.parametrize("length", [1, 2, 3, 8])
def test_random_fraction_is_reduced_with_length_digit_denominator(length):
    rng = random.Random(100 + length)
    for _ in range(300):
        r = Fraction.random(length, rng)
        assert len(str(r.den)) == length and r.digit == length
        assert F(r.num, r.den).denominator == r.den  # reduced
        assert r.num < 10**length


def test_random_integer_and_scientific():
    rng = random.Random(0)
    ones = {Integer.random(1, rng).n for _ in range(500)}
    assert ones == set(range(10))  # L = 1 includes 0
    for _ in range(200):
        assert Integer.random(6, rng).digit == 6
        s = ScientificNotation.random(4, rng)
        assert s.digit == 4 and 1 <= s.mantissa.int_part <= 9 and 0 <= s.exponent <= 99


def test_random_call_order_is_the_official_one():
    # Float(L): randint(1, L) int digits, the int part, L-1 digits in 0..9, one in 1..9.
    rng = random.Random(42)
    u = rng.randint(1, 3)
    int_part = rng.randint(10 ** (u - 1), 10**u - 1)
    digits = [rng.randint(0, 9) for _ in range(2)] + [rng.randint(1, 9)]
    assert Float.random(3, random.Random(42)) == Float(int_part, digits)
    # Scientific(L): mantissa digit, then a whole Float(L) draw (decimals kept), then exponent.
    rng = random.Random(7)
    lead = rng.randint(1, 9)
    dec = Float.random(2, rng).dec
    exponent = rng.randint(0, 99)
    assert ScientificNotation.random(2, random.Random(7)) == ScientificNotation(
        Float(lead, dec), exponent
    )


def test_random_is_deterministic():
    draws = [[cls.random(5, random.Random(3)) for cls in NUMBER_TYPES.values()] for _ in range(2)]
    assert draws[0] == draws[1]
