"""The four exact number representations of NUPA (brief Sec. 3.1-3.2).

Every number is non-negative and is stored with Python integers only (never floats):

* :class:`Integer` -- one int, printed ``str(n)``.
* :class:`Float` -- an int part and a string of decimal digits, printed ``"<int>.<dec>"`` with the
  trailing zeros of ``dec`` removed but at least one digit kept (``2.0``, ``0.0``, ``1.25``).
* :class:`Fraction` -- numerator and denominator, always reduced (``4/8`` -> ``1/2``,
  ``0/7`` -> ``0/1``, ``2/1`` stays ``2/1``).
* :class:`ScientificNotation` -- a :class:`Float` mantissa in [1, 10) (or ``0.0``) and an
  exponent >= 0, printed ``"<mantissa>e<exp>"`` (``1.245e3``).

The "digit" of a number is its length key used for bucketing (Sec. 3.1): characters of an
Integer, decimals of a Float, the longer of numerator/denominator of a Fraction, decimals of the
mantissa of a ScientificNotation. ``parts()`` gives the digit strings separated by ``.``, ``/``,
``e`` (see :mod:`papers.nupa.formats`).

``random(length, rng)`` draws a number of a given length exactly as the official generator does
(same ``random.Random`` call order), so one seeded stream reproduces the official number pairs.
"""

from __future__ import annotations

import abc
import fractions
import math
import random as _random
import re
from typing import ClassVar

from papers.nupa.formats import FLOAT, FRACTION, INTEGER, SCIENTIFIC

_DIGITS = re.compile(r"[0-9]+")
_FLOAT_TEXT = re.compile(r"([0-9]+)\.([0-9]+)")
_FRACTION_TEXT = re.compile(r"([0-9]+)/([0-9]+)")
_SCIENTIFIC_TEXT = re.compile(r"([0-9]+)\.([0-9]+)e([0-9]+)")


def _strip_decimals(dec: str) -> str:
    """Decimal digits without trailing zeros, but at least one digit (``"500"`` -> ``"5"``)."""
    return dec.rstrip("0") or "0"


class Number(abc.ABC):
    """Common interface of the four representations (all instances are immutable)."""

    TYPE_NAME: ClassVar[str] = ""
    _TEXT_FORM: ClassVar[str] = ""  # shown in parse errors
    __slots__ = ()

    # --- text ---------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, *, canonical: bool = False) -> Number:
        """Read a number written in this type's text form (Sec. 3.1).

        The syntax is strict (ASCII digits and the type's separators only; no sign, spaces,
        ``E`` or ``+``); non-canonical but well-formed text such as ``4/8`` or ``12.30`` is
        normalised unless ``canonical=True``, which also requires ``str(result) == text``.
        """
        if not isinstance(text, str):
            raise TypeError(f"{cls.__name__}.parse expects a str, got {type(text).__name__}")
        if text.startswith("-"):
            raise ValueError(f"negative numbers are not supported: {text!r}")
        if not text.isascii():
            raise ValueError(f"{text!r} is not a {cls.TYPE_NAME} (non-ASCII characters)")
        number = cls._parse(text)
        if number is None:
            raise ValueError(f"{text!r} is not a {cls.TYPE_NAME}; expected {cls._TEXT_FORM}")
        if canonical and str(number) != text:
            raise ValueError(f"{text!r} is not canonical; the canonical form is {str(number)!r}")
        return number

    @classmethod
    @abc.abstractmethod
    def _parse(cls, text: str) -> Number | None:
        """The number written as ``text``, or None when it is not of this type's form."""

    @abc.abstractmethod
    def __str__(self) -> str:
        """The canonical text form (Sec. 3.1)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.parse({str(self)!r})"

    # --- metadata -----------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def digit(self) -> int:
        """The length key of Sec. 3.1."""

    @abc.abstractmethod
    def parts(self) -> list[str]:
        """The digit strings between the type's separators (``12.34`` -> ``["12", "34"]``)."""

    @property
    def total_digits(self) -> int:
        """Number of digits over all parts (``12.345`` -> 5)."""
        return sum(len(p) for p in self.parts())

    @property
    @abc.abstractmethod
    def value(self) -> fractions.Fraction:
        """The exact value."""

    # --- comparison ---------------------------------------------------------------------------
    @abc.abstractmethod
    def _key(self):
        """A tuple that orders numbers of this type by value (and identifies them)."""

    def _same_type(self, other: object) -> bool:
        return type(other) is type(self)

    def __eq__(self, other: object) -> bool:
        if not self._same_type(other):
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.TYPE_NAME, self._key()))

    def __lt__(self, other: Number) -> bool:
        if not self._same_type(other):
            return NotImplemented
        return self._key() < other._key()

    def __le__(self, other: Number) -> bool:
        if not self._same_type(other):
            return NotImplemented
        return self._key() <= other._key()

    def __gt__(self, other: Number) -> bool:
        if not self._same_type(other):
            return NotImplemented
        return self._key() > other._key()

    def __ge__(self, other: Number) -> bool:
        if not self._same_type(other):
            return NotImplemented
        return self._key() >= other._key()

    # --- generation ---------------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def random(cls, length: int, rng: _random.Random) -> Number:
        """A random number of the given length (Sec. 3.2)."""


def _check_length(length: int) -> None:
    if not isinstance(length, int) or length < 1:
        raise ValueError(f"a number length must be an int >= 1, got {length!r}")


def _check_nonnegative_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{what} must be non-negative, got {value}")
    return value


def _negative(a: Number, b: Number) -> ValueError:
    return ValueError(f"{a} - {b} is negative; only non-negative numbers are supported")


# ================================================================================================
class Integer(Number):
    """A non-negative integer."""

    TYPE_NAME = INTEGER
    _TEXT_FORM = "digits like 123"
    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = _check_nonnegative_int(n, "an Integer")

    @classmethod
    def _make(cls, n: int) -> Integer:
        obj = object.__new__(cls)
        obj.n = n
        return obj

    @classmethod
    def _parse(cls, text: str) -> Integer | None:
        if _DIGITS.fullmatch(text) is None:
            return None
        return cls._make(int(text))

    def __str__(self) -> str:
        return str(self.n)

    @property
    def digit(self) -> int:
        return len(str(self.n))

    def parts(self) -> list[str]:
        return [str(self.n)]

    @property
    def value(self) -> fractions.Fraction:
        return fractions.Fraction(self.n)

    def _key(self):
        return self.n

    def __add__(self, other: Integer) -> Integer:
        if not self._same_type(other):
            return NotImplemented
        return Integer._make(self.n + other.n)

    def __sub__(self, other: Integer) -> Integer:
        if not self._same_type(other):
            return NotImplemented
        if other.n > self.n:
            raise _negative(self, other)
        return Integer._make(self.n - other.n)

    def __mul__(self, other: Integer) -> Integer:
        if not self._same_type(other):
            return NotImplemented
        return Integer._make(self.n * other.n)

    def __floordiv__(self, other: Integer) -> Integer:
        if not self._same_type(other):
            return NotImplemented
        return Integer._make(self.n // other.n)

    def __mod__(self, other: Integer) -> Integer:
        if not self._same_type(other):
            return NotImplemented
        return Integer._make(self.n % other.n)

    def __truediv__(self, other: Integer) -> Fraction:
        if not self._same_type(other):
            return NotImplemented
        return Fraction(self.n, other.n)

    def to_scient(self) -> ScientificNotation:
        """Exact scientific notation, trailing zeros dropped (``120300`` -> ``1.203e5``)."""
        return ScientificNotation._from_coefficient(self.n, 0)

    @classmethod
    def random(cls, length: int, rng: _random.Random) -> Integer:
        """Uniform in [10^(L-1), 10^L - 1]; for L = 1 uniform in [0, 9]."""
        _check_length(length)
        low = 10 ** (length - 1) if length > 1 else 0
        return cls._make(rng.randint(low, 10**length - 1))


# ================================================================================================
class Float(Number):
    """A non-negative decimal: an int part and decimal digits (trailing zeros stripped)."""

    TYPE_NAME = FLOAT
    _TEXT_FORM = "<digits>.<digits> like 10.4"
    __slots__ = ("int_part", "dec")

    def __init__(self, int_part: int, dec_part=(0,)):
        """``Float(2, [0])`` is ``2.0``; ``dec_part`` is a sequence of digits 0-9 or a digit str."""
        _check_nonnegative_int(int_part, "the int part of a Float")
        if isinstance(dec_part, str):
            dec = dec_part
            if dec and _DIGITS.fullmatch(dec) is None:
                raise ValueError(f"decimal part {dec_part!r} must contain only digits")
        else:
            digits = list(dec_part)
            bad = [
                d
                for d in digits
                if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= 9
            ]
            if bad:
                raise ValueError(f"decimal part {digits!r} must contain only digits 0-9")
            dec = "".join(map(str, digits))
        self.int_part = int_part
        self.dec = _strip_decimals(dec)

    @classmethod
    def _make(cls, int_part: int, dec: str) -> Float:
        """Build without validation; ``dec`` must already be canonical."""
        obj = object.__new__(cls)
        obj.int_part = int_part
        obj.dec = dec
        return obj

    @classmethod
    def from_scaled(cls, scaled: int, decimals: int) -> Float:
        """The Float equal to ``scaled * 10**-decimals`` (exact)."""
        _check_nonnegative_int(scaled, "a scaled Float value")
        if decimals <= 0:
            return cls._make(scaled * 10 ** (-decimals), "0")
        int_part, rest = divmod(scaled, 10**decimals)
        return cls._make(int_part, _strip_decimals(str(rest).zfill(decimals)))

    def scaled(self) -> tuple[int, int]:
        """``(m, k)`` with value ``m * 10**-k``, k = number of decimals (1.0 -> (10, 1))."""
        k = len(self.dec)
        return self.int_part * 10**k + int(self.dec), k

    @classmethod
    def _parse(cls, text: str) -> Float | None:
        m = _FLOAT_TEXT.fullmatch(text)
        if m is None:
            return None
        return cls._make(int(m.group(1)), _strip_decimals(m.group(2)))

    def __str__(self) -> str:
        return f"{self.int_part}.{self.dec}"

    @property
    def dec_part(self) -> list[int]:
        return [int(c) for c in self.dec]

    @property
    def digit(self) -> int:
        return len(self.dec)

    def parts(self) -> list[str]:
        return [str(self.int_part), self.dec]

    @property
    def value(self) -> fractions.Fraction:
        m, k = self.scaled()
        return fractions.Fraction(m, 10**k)

    def _key(self):
        # Canonical decimal strings compare lexicographically like their values: a longer string
        # that extends a shorter one adds a non-zero digit (or the shorter one is "0").
        return (self.int_part, self.dec)

    def _aligned(self, other: Float) -> tuple[int, int, int]:
        k = max(len(self.dec), len(other.dec))
        a = self.int_part * 10**k + int(self.dec.ljust(k, "0"))
        b = other.int_part * 10**k + int(other.dec.ljust(k, "0"))
        return a, b, k

    def __add__(self, other: Float) -> Float:
        if not self._same_type(other):
            return NotImplemented
        a, b, k = self._aligned(other)
        return Float.from_scaled(a + b, k)

    def __sub__(self, other: Float) -> Float:
        if not self._same_type(other):
            return NotImplemented
        a, b, k = self._aligned(other)
        if b > a:
            raise _negative(self, other)
        return Float.from_scaled(a - b, k)

    def __mul__(self, other: Float) -> Float:
        if not self._same_type(other):
            return NotImplemented
        a, ka = self.scaled()
        b, kb = other.scaled()
        return Float.from_scaled(a * b, ka + kb)

    def to_scient(self) -> ScientificNotation:
        """Exact scientific notation (``12.34`` -> ``1.234e1``); raises if the value is < 1."""
        m, k = self.scaled()
        return ScientificNotation._from_coefficient(m, -k)

    @classmethod
    def random(cls, length: int, rng: _random.Random) -> Float:
        """Int part with u ~ U{1..L} digits (never 0), then L decimals, the last one in 1..9."""
        _check_length(length)
        u = rng.randint(1, length)
        int_part = rng.randint(10 ** (u - 1), 10**u - 1)
        digits = [rng.randint(0, 9) for _ in range(length - 1)]
        digits.append(rng.randint(1, 9))
        return cls._make(int_part, "".join(map(str, digits)))


# ================================================================================================
class Fraction(Number):
    """A non-negative fraction ``num/den``, always reduced."""

    TYPE_NAME = FRACTION
    _TEXT_FORM = "<digits>/<digits> like 7/13 with a non-zero denominator"
    __slots__ = ("num", "den")

    def __init__(self, num: int, den: int = 1):
        _check_nonnegative_int(num, "a numerator")
        _check_nonnegative_int(den, "a denominator")
        if den == 0:
            raise ZeroDivisionError(f"Fraction {num}/0 has a zero denominator")
        g = math.gcd(num, den)
        self.num = num // g
        self.den = den // g

    @classmethod
    def _make(cls, num: int, den: int) -> Fraction:
        """Build without validation; ``num/den`` must already be reduced."""
        obj = object.__new__(cls)
        obj.num = num
        obj.den = den
        return obj

    @classmethod
    def _parse(cls, text: str) -> Fraction | None:
        m = _FRACTION_TEXT.fullmatch(text)
        if m is None or int(m.group(2)) == 0:
            return None
        return cls(int(m.group(1)), int(m.group(2)))

    def __str__(self) -> str:
        return f"{self.num}/{self.den}"

    @property
    def digit(self) -> int:
        return max(len(str(self.num)), len(str(self.den)))

    def parts(self) -> list[str]:
        return [str(self.num), str(self.den)]

    @property
    def value(self) -> fractions.Fraction:
        return fractions.Fraction(self.num, self.den)

    def _key(self):
        return (self.num, self.den)

    # Order by cross-multiplication (the key above only identifies).
    def __lt__(self, other: Fraction) -> bool:
        if not self._same_type(other):
            return NotImplemented
        return self.num * other.den < other.num * self.den

    def __le__(self, other: Fraction) -> bool:
        if not self._same_type(other):
            return NotImplemented
        return self.num * other.den <= other.num * self.den

    def __gt__(self, other: Fraction) -> bool:
        if not self._same_type(other):
            return NotImplemented
        return self.num * other.den > other.num * self.den

    def __ge__(self, other: Fraction) -> bool:
        if not self._same_type(other):
            return NotImplemented
        return self.num * other.den >= other.num * self.den

    def __add__(self, other: Fraction) -> Fraction:
        if not self._same_type(other):
            return NotImplemented
        return Fraction(self.num * other.den + other.num * self.den, self.den * other.den)

    def __sub__(self, other: Fraction) -> Fraction:
        if not self._same_type(other):
            return NotImplemented
        diff = self.num * other.den - other.num * self.den
        if diff < 0:
            raise _negative(self, other)
        return Fraction(diff, self.den * other.den)

    def __mul__(self, other: Fraction) -> Fraction:
        if not self._same_type(other):
            return NotImplemented
        return Fraction(self.num * other.num, self.den * other.den)

    def __truediv__(self, other: Fraction) -> Fraction:
        if not self._same_type(other):
            return NotImplemented
        if other.num == 0:
            raise ZeroDivisionError(f"division of {self} by zero")
        return Fraction(self.num * other.den, self.den * other.num)

    def to_float(self) -> Float:
        """The exact decimal of a fraction whose denominator is 2^x 5^y (``3/8`` -> ``0.375``)."""
        den, twos, fives = self.den, 0, 0
        while den % 2 == 0:
            den //= 2
            twos += 1
        while den % 5 == 0:
            den //= 5
            fives += 1
        if den != 1:
            raise ValueError(f"{self} has no finite decimal expansion")
        k = max(twos, fives)
        return Float.from_scaled(self.num * 10**k // self.den, k)

    @classmethod
    def random(cls, length: int, rng: _random.Random) -> Fraction:
        """num ~ U[0, 10^L-1], den ~ U[10^(L-1), 10^L-1], reduced; redraw until den has L digits."""
        _check_length(length)
        while True:
            num = rng.randint(0, 10**length - 1)
            den = rng.randint(10 ** (length - 1), 10**length - 1)
            g = math.gcd(num, den)
            if len(str(den // g)) == length:
                return cls._make(num // g, den // g)


# ================================================================================================
class ScientificNotation(Number):
    """``mantissa e exponent`` with a :class:`Float` mantissa in [1, 10) (or 0.0), exponent >= 0.

    The constructor normalises: ``ScientificNotation(Float(12, [3]), 0)`` is ``1.23e1`` and
    ``ScientificNotation(Float(0, [0, 5]), 2)`` is ``5.0e0``; a zero mantissa forces exponent 0;
    a normalised exponent below 0 raises ``ValueError``.
    """

    TYPE_NAME = SCIENTIFIC
    _TEXT_FORM = "<digits>.<digits>e<digits> like 1.23e4"
    EXPONENT_RANGE: ClassVar[tuple[int, int]] = (0, 99)  # of random draws (Sec. 3.2)
    __slots__ = ("mantissa", "exponent")

    def __init__(self, mantissa: Float | str, exponent: int = 0):
        if isinstance(mantissa, str):  # e.g. ScientificNotation("12.3", 0)
            mantissa = Float.parse(mantissa)
        if not isinstance(mantissa, Float):
            raise TypeError(f"the mantissa must be a Float, got {type(mantissa).__name__}")
        if isinstance(exponent, bool) or not isinstance(exponent, int):
            raise TypeError(f"the exponent must be an int, got {type(exponent).__name__}")
        m, k = mantissa.scaled()
        normal = self._from_coefficient(m, exponent - k)
        self.mantissa = normal.mantissa
        self.exponent = normal.exponent

    @classmethod
    def _make(cls, mantissa: Float, exponent: int) -> ScientificNotation:
        """Build without validation; the pair must already be normalised."""
        obj = object.__new__(cls)
        obj.mantissa = mantissa
        obj.exponent = exponent
        return obj

    @classmethod
    def _from_coefficient(cls, coefficient: int, power: int) -> ScientificNotation:
        """The normalised number equal to ``coefficient * 10**power``."""
        if coefficient == 0:
            return cls._make(Float._make(0, "0"), 0)
        digits = str(coefficient)
        exponent = power + len(digits) - 1
        if exponent < 0:
            raise ValueError(
                f"{coefficient}e{power} needs a negative exponent ({exponent}); not supported"
            )
        return cls._make(Float._make(int(digits[0]), _strip_decimals(digits[1:])), exponent)

    def coefficient(self) -> tuple[int, int]:
        """``(c, p)`` with value ``c * 10**p``."""
        m, k = self.mantissa.scaled()
        return m, self.exponent - k

    @classmethod
    def _parse(cls, text: str) -> ScientificNotation | None:
        m = _SCIENTIFIC_TEXT.fullmatch(text)
        if m is None:
            return None
        mantissa = Float._make(int(m.group(1)), _strip_decimals(m.group(2)))
        return cls(mantissa, int(m.group(3)))

    def __str__(self) -> str:
        return f"{self.mantissa}e{self.exponent}"

    @property
    def digit(self) -> int:
        return len(self.mantissa.dec)

    def parts(self) -> list[str]:
        return [str(self.mantissa.int_part), self.mantissa.dec, str(self.exponent)]

    @property
    def value(self) -> fractions.Fraction:
        c, p = self.coefficient()
        return fractions.Fraction(c * 10**p) if p >= 0 else fractions.Fraction(c, 10**-p)

    def _key(self):
        # Exponent first, then mantissa: valid because mantissas are normalised (0.0e0 is least).
        return (self.exponent, self.mantissa.int_part, self.mantissa.dec)

    def _aligned(self, other: ScientificNotation) -> tuple[int, int, int]:
        ca, pa = self.coefficient()
        cb, pb = other.coefficient()
        p = min(pa, pb)
        return ca * 10 ** (pa - p), cb * 10 ** (pb - p), p

    def __add__(self, other: ScientificNotation) -> ScientificNotation:
        if not self._same_type(other):
            return NotImplemented
        a, b, p = self._aligned(other)
        return self._from_coefficient(a + b, p)

    def __sub__(self, other: ScientificNotation) -> ScientificNotation:
        if not self._same_type(other):
            return NotImplemented
        a, b, p = self._aligned(other)
        if b > a:
            raise _negative(self, other)
        return self._from_coefficient(a - b, p)

    def __mul__(self, other: ScientificNotation) -> ScientificNotation:
        if not self._same_type(other):
            return NotImplemented
        ca, pa = self.coefficient()
        cb, pb = other.coefficient()
        return self._from_coefficient(ca * cb, pa + pb)

    def to_float(self) -> Float:
        """Shift the decimal point ``exponent`` places right (``1.2e3`` -> ``1200.0``)."""
        c, p = self.coefficient()
        return Float.from_scaled(c, -p)

    @classmethod
    def random(cls, length: int, rng: _random.Random) -> ScientificNotation:
        """Mantissa digit in 1..9, the decimals of a Float(L) draw, exponent in [0, 99]."""
        _check_length(length)
        int_digit = rng.randint(1, 9)
        dec = Float.random(length, rng).dec
        exponent = rng.randint(*cls.EXPONENT_RANGE)
        return cls._make(Float._make(int_digit, dec), exponent)


NUMBER_TYPES: dict[str, type[Number]] = {
    INTEGER: Integer,
    FLOAT: Float,
    FRACTION: Fraction,
    SCIENTIFIC: ScientificNotation,
}


def number_type(type_name: str) -> type[Number]:
    """The class of a representation name; a clear error for an unknown name."""
    try:
        return NUMBER_TYPES[type_name]
    except KeyError:
        raise ValueError(
            f"unknown representation {type_name!r}; choose from {list(NUMBER_TYPES)}"
        ) from None
