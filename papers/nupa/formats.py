"""The text forms of the four number representations (brief Sec. 3.1, 3.8).

One table serves the exact number classes (``numbers.py``), which print these forms, and the
string metrics (``metrics.py``), which split answers into the same parts. All numbers are
non-negative; a part is a run of digits, read from the right (integer-like parts) or from
the left (decimal parts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from papers.nupa.config import REPRESENTATIONS

INTEGER, FLOAT, FRACTION, SCIENTIFIC = REPRESENTATIONS
PLAIN_INT = "int"  # the answer type of digit-counting tasks (length, count, get_digit)
OUTPUT_TYPES = (*REPRESENTATIONS, PLAIN_INT)
SHORT_NAMES = {INTEGER: "I", FLOAT: "F", FRACTION: "R", SCIENTIFIC: "S"}

RIGHT, LEFT = "right", "left"  # the side a part is aligned on (read from)


@dataclass(frozen=True)
class Format:
    """How one output type is written: its answer pattern, separators, part alignments."""

    pattern: str  # regex an answer must match at its start (Sec. 3.8)
    separators: tuple[str, ...]  # between consecutive parts, in order
    aligns: tuple[str, ...]  # one per part: RIGHT (integer-like) or LEFT (decimals)

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


_INTEGER_FORMAT = Format(r"\d+", (), (RIGHT,))
FORMATS: dict[str, Format] = {
    INTEGER: _INTEGER_FORMAT,
    PLAIN_INT: _INTEGER_FORMAT,
    FLOAT: Format(r"\d+\.\d+", (".",), (RIGHT, LEFT)),
    FRACTION: Format(r"\d+/\d+", ("/",), (RIGHT, RIGHT)),
    SCIENTIFIC: Format(r"\d+\.\d+[eE][+-]?\d+", (".", "e"), (RIGHT, LEFT, RIGHT)),
}


def check_type(type_name: str) -> Format:
    """The format of ``type_name``; a clear error for an unknown type."""
    try:
        return FORMATS[type_name]
    except KeyError:
        raise ValueError(
            f"unknown number type {type_name!r}; choose from {list(FORMATS)}"
        ) from None


def split_parts(text: str, type_name: str) -> list[str] | None:
    """The digit strings of the parts of ``text`` written as ``type_name``.

    ``"12.34"`` as Float -> ``["12", "34"]``; ``"1.2e3"`` as Scientific -> ``["1", "2", "3"]``.
    Returns None when ``text`` is not exactly of that form (signs, spaces, missing parts).
    """
    fmt = check_type(type_name)
    if fmt.regex.fullmatch(text) is None or not text.isascii():
        return None
    text = text.replace("E", "e")
    parts = (
        re.split("|".join(re.escape(s) for s in fmt.separators), text) if fmt.separators else [text]
    )
    if len(parts) != len(fmt.aligns) or not all(p.isdigit() for p in parts):
        return None
    return parts
