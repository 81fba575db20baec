"""An independent answer checker for the NUPA text benchmark (brief Sec. 5a, 7.9).

It re-derives every answer from the *strings* of a record with Python's ``fractions.Fraction``
and ``decimal`` only: it has its own parser of the four text forms, its own reading of the task
name and its own arithmetic, and shares no code with ``numbers.py`` or ``tasks.py``. A record
agrees when

* its inputs are canonical strings of the task's input types and satisfy the task's
  preprocessing guarantees (e.g. ``a >= b`` for sub, a non-zero divisor, ``sig >= 2``),
* the answer's value equals the recomputed value, and
* the answer is written canonically: an int without leading zeros, a float without trailing
  decimal zeros (``9.9`` not ``9.90``), a reduced fraction, a mantissa in [1, 10) with no
  trailing zeros -- except for ``sig``, whose mantissa has exactly ``sig - 1`` decimals;
* the question ends with the inputs and ``" = "``, and the "digit" key matches the inputs.
"""

from __future__ import annotations

import decimal
import math
import re
from fractions import Fraction

_CANONICAL = {
    "int": r"(0|[1-9][0-9]*)",
    "Integer": r"(0|[1-9][0-9]*)",
    "Float": r"(0|[1-9][0-9]*)\.(0|[0-9]*[1-9])",
    "Fraction": r"(0|[1-9][0-9]*)/([1-9][0-9]*)",
    "ScientificNotation": r"([1-9])\.(0|[0-9]*[1-9])e(0|[1-9][0-9]*)|(0)\.(0)e(0)",
}
_CANONICAL_RE = {k: re.compile(v) for k, v in _CANONICAL.items()}
_TYPES_IN = ("Integer", "Float", "Fraction", "ScientificNotation")
_TITLES = {
    "add": 2,
    "add_easy": 2,
    "sub": 2,
    "multiply_easy": 2,
    "multiply_hard": 2,
    "truediv": 2,
    "floordiv": 2,
    "mod": 2,
    "mod_easy": 2,
    "max": 2,
    "max_hard": 2,
    "min": 2,
    "digit_max": 2,
    "digit_min": 2,
    "digit_add": 2,
    "get_digit": 2,
    "count": 2,
    "sig": 2,
    "length": 1,
    "to_float": 1,
    "to_scient": 1,
}
_SEPARATORS = {"Integer": "", "int": "", "Float": ".", "Fraction": "/", "ScientificNotation": ".e"}
_EXACT = decimal.Context(prec=5000, traps=[decimal.Inexact])  # any rounding would raise
_ROUNDING = decimal.Context(prec=5000, rounding=decimal.ROUND_HALF_EVEN)


class Disagreement(Exception):
    """Raised internally with the reason a record does not check out."""


def split_name(name: str) -> tuple[str, str, str, str]:
    """``"add_easy_Fraction_Fraction_Fraction"`` -> ``("add_easy", "Fraction", ...)``."""
    pieces = name.split("_")
    if len(pieces) < 4:
        raise Disagreement(f"malformed task name {name!r}")
    title, type_a, type_b, type_out = "_".join(pieces[:-3]), *pieces[-3:]
    if title not in _TITLES or type_a not in _TYPES_IN:
        raise Disagreement(f"unknown task {name!r}")
    return title, type_a, type_b, type_out


def _fields(text: str, type_name: str) -> tuple[str, ...]:
    """The digit fields of a canonical string, or Disagreement."""
    if not isinstance(text, str):
        raise Disagreement(f"expected a {type_name} string, got {text!r}")
    m = _CANONICAL_RE[type_name].fullmatch(text)
    if m is None:
        raise Disagreement(f"{text!r} is not a canonical {type_name}")
    fields = tuple(g for g in m.groups() if g is not None)
    if type_name == "Fraction" and math.gcd(int(fields[0]), int(fields[1])) != 1:
        raise Disagreement(f"fraction {text!r} is not reduced")
    return fields


def _value(fields: tuple[str, ...], type_name: str) -> Fraction:
    if type_name in ("Integer", "int"):
        return Fraction(int(fields[0]))
    if type_name == "Float":
        return Fraction(f"{fields[0]}.{fields[1]}")
    if type_name == "Fraction":
        return Fraction(int(fields[0]), int(fields[1]))
    mantissa = Fraction(f"{fields[0]}.{fields[1]}")
    return mantissa * 10 ** int(fields[2])


def _length_key(fields: tuple[str, ...], type_name: str) -> int:
    if type_name == "Integer":
        return len(fields[0])
    if type_name == "Fraction":
        return max(len(fields[0]), len(fields[1]))
    return len(fields[1])  # decimals of a Float or of a mantissa


def _digitwise(a: tuple[str, ...], b: tuple[str, ...], type_name: str, op) -> Fraction:
    """Digit-wise op on aligned parts; integer-like parts right-aligned, decimals left-aligned."""
    out = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        width = max(len(x), len(y))
        decimal_part = type_name == "Float" and i == 1
        if decimal_part:
            x, y = x + "0" * (width - len(x)), y + "0" * (width - len(y))
        else:
            x, y = "0" * (width - len(x)) + x, "0" * (width - len(y)) + y
        out.append("".join(str(op(int(p), int(q))) for p, q in zip(x, y, strict=True)))
    return _value(tuple(out), type_name)


def _rounded(x: Fraction, sig: int) -> Fraction:
    """``x`` rounded to ``sig`` significant digits, half to even (decimal module)."""
    if x == 0:
        return Fraction(0)
    d = _EXACT.divide(decimal.Decimal(x.numerator), decimal.Decimal(x.denominator))
    exponent = d.adjusted()
    quantum = decimal.Decimal(1).scaleb(exponent - sig + 1)
    r = d.quantize(quantum, rounding=decimal.ROUND_HALF_EVEN, context=_ROUNDING)
    return Fraction(r)


def _parameter(text, low: int, high: int | None, what: str) -> int:
    if not isinstance(text, str) or _CANONICAL_RE["int"].fullmatch(text) is None:
        raise Disagreement(f"{what} {text!r} is not an int")
    p = int(text)
    if p < low or (high is not None and p > high):
        raise Disagreement(f"{what} {p} outside [{low}, {high}]")
    return p


def _expected(title: str, type_a: str, a: tuple[str, ...], b, sig: int | None) -> Fraction:
    """The exact value of the answer; checks the preprocessing guarantees on the way."""
    va = _value(a, type_a)
    if title in ("length", "to_float", "to_scient"):
        if title == "length":
            return Fraction(len("".join(a)))
        if title == "to_float":
            if type_a == "Fraction" and not _finite_decimal(va):
                raise Disagreement("to_float input has no finite decimal")
            return va
        if type_a == "Float" and va < 1:
            raise Disagreement("to_scient input below 1")
        return va
    if title == "get_digit":
        digits = "".join(a)
        return Fraction(int(digits[_parameter(b, 0, len(digits) - 1, "position")]))
    if title == "count":
        return Fraction("".join(a).count(str(_parameter(b, 0, 9, "digit"))))
    if title == "sig":
        if type_a == "Float" and va < 1:
            raise Disagreement("sig input below 1")
        return _rounded(va, sig)
    vb = _value(b, type_a)
    if title in ("add", "add_easy"):
        return va + vb
    if title == "sub":
        if va < vb:
            raise Disagreement("sub with a < b")
        return va - vb
    if title in ("multiply_easy", "multiply_hard"):
        return va * vb
    if title in ("truediv", "floordiv", "mod", "mod_easy"):
        if vb == 0:
            raise Disagreement("division by zero")
        if title == "truediv":
            return va / vb
        if va < vb and not (va == 0 and vb == 1):  # a zero divisor of 0 becomes 1
            raise Disagreement(f"{title} with a < b")
        if title == "mod" and len(b[0]) > int(0.7 * len(a[0])) + 1:
            raise Disagreement("mod divisor longer than int(0.7 len(a)) + 1")
        if title == "mod_easy" and len(b[0]) > 3:
            raise Disagreement("mod_easy divisor longer than 3 digits")
        return Fraction(va // vb) if title == "floordiv" else va % vb
    if title in ("max", "max_hard", "min"):
        if type_a == "Fraction" and (va > 1 or vb > 1):
            raise Disagreement("max/min fractions must be proper")
        return min(va, vb) if title == "min" else max(va, vb)
    ops = {"digit_max": max, "digit_min": min, "digit_add": lambda x, y: (x + y) % 10}
    return _digitwise(a, b, type_a, ops[title])


def _finite_decimal(x: Fraction) -> bool:
    den = x.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    return den == 1


def check_sample(record: dict) -> str | None:
    """None when the record agrees with the oracle, else the reason it does not."""
    try:
        _check(record)
    except Disagreement as exc:
        return str(exc)
    except (KeyError, TypeError, ValueError, IndexError, decimal.DecimalException) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _check(record: dict) -> None:
    title, type_a, type_b, type_out = split_name(record["task"])
    if record.get("type_out", type_out) != type_out:
        raise Disagreement(f"type_out {record.get('type_out')!r} != {type_out!r}")
    a_text, b_text, answer = record["a"], record.get("b"), record["answer"]
    a = _fields(a_text, type_a)
    sig = None
    if _TITLES[title] == 1 or type_b == "none":
        if b_text is not None:
            raise Disagreement("a one-input task has a second input")
        b, digit = None, _length_key(a, type_a)
        tail = f"{a_text} = "
    elif type_b == "int":
        b, digit = b_text, _length_key(a, type_a)
        tail = f"{b_text} = "
        if title == "sig":
            sig = _parameter(b_text, 2, None, "significant figures")
    else:
        if type_b != type_a:
            raise Disagreement("input types differ")
        b = _fields(b_text, type_b)
        digit = max(_length_key(a, type_a), _length_key(b, type_b))
        tail = f"({b_text}) = " if (title == "truediv" and type_a == "Fraction") else f"{b_text} = "
    question = record.get("question")
    if question is not None and (not question.endswith(tail) or a_text not in question):
        raise Disagreement("question does not end with the inputs and ' = '")
    if "digit" in record and record["digit"] != digit:
        raise Disagreement(f"digit {record['digit']} != {digit}")

    expected = _expected(title, type_a, a, b, sig)
    if sig is None:
        fields = _fields(answer, type_out)
    else:  # a mantissa with exactly sig - 1 decimals, trailing zeros kept
        fields = _sig_fields(answer, sig)
    if _value(fields, type_out) != expected:
        raise Disagreement(f"answer {answer!r} != expected value {expected}")


def _sig_fields(text: str, sig: int) -> tuple[str, ...]:
    """Fields of a significant-figures answer: ``[1-9].<sig-1 digits>e<exp>`` or zero."""
    n = sig - 1
    pattern = rf"([1-9])\.([0-9]{{{n}}})e(0|[1-9][0-9]*)|(0)\.(0{{{n}}})e(0)"
    m = re.fullmatch(pattern, text) if isinstance(text, str) else None
    if m is None:
        raise Disagreement(f"{text!r} is not a scientific notation with {sig} significant digits")
    return tuple(g for g in m.groups() if g is not None)


def verify_sample(record: dict) -> bool:
    """True when the record's answer agrees with the independent recomputation."""
    return check_sample(record) is None


def verify_benchmark(records) -> tuple[int, int, list[dict]]:
    """``(n_checked, n_agree, failures)``; each failure is ``{"record": ..., "reason": ...}``."""
    checked = agree = 0
    failures: list[dict] = []
    for record in records:
        checked += 1
        reason = check_sample(record)
        if reason is None:
            agree += 1
        else:
            failures.append({"record": record, "reason": reason})
    return checked, agree, failures
