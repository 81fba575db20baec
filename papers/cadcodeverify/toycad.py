"""``toycad``: the toy's CAD language (brief Sec. 5), parsed and checked, never evaluated.

A program is text, one op per line::

    base box L W H        # a box on z in [0, H], centred in x and y (L along x, W along y)
    base cyl R H          # a cylinder of radius R on z in [0, H]
    boss box S H2         # a square boss of half-side S stacked on the top face, centred
    boss cyl R2 H2        # a cylindrical boss of radius R2 stacked on the top face, centred
    hole r                # a vertical through-hole of radius r at the centre (base and boss)

:func:`compile_program` is the toy's compiler/executor C of the paper's Sec. 3: it turns text
into a :class:`Solid` or raises an error whose message names the offending op or field (the
text a model reads in the execute-and-repair step). Because the language is parsed and never
executed, toy programs run in-process; model-written Python never does (see ``sandbox.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("box", "cyl")
# Fields of a program, the units a repair or a refinement regenerates (brief Sec. 5).
FIELDS = ("base.kind", "base.dims", "boss", "hole")
ARITY = {("base", "box"): 3, ("base", "cyl"): 2, ("boss", "box"): 2, ("boss", "cyl"): 2}


class ToyCadError(ValueError):
    """A program that parses but describes an impossible solid; ``field`` names the culprit."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


class UnknownOpError(NameError):
    """An op that is not ``base``, ``boss`` or ``hole`` (brief Sec. 5: ``NameError``)."""

    def __init__(self, op: str, line_number: int, line: str):
        super().__init__(f"unknown op {op!r} on line {line_number}: {line!r}")
        self.op = op
        self.line_number = line_number


@dataclass(frozen=True)
class Base:
    kind: str  # box | cyl
    dims: tuple[float, ...]  # box: (L, W, H); cyl: (R, H)

    @property
    def half_widths(self) -> tuple[float, float]:
        """Half-extent along x and y."""
        if self.kind == "box":
            return self.dims[0] / 2, self.dims[1] / 2
        return self.dims[0], self.dims[0]

    @property
    def height(self) -> float:
        return self.dims[-1]


@dataclass(frozen=True)
class Boss:
    kind: str  # box | cyl
    size: float  # box: half-side S; cyl: radius R2
    height: float  # H2


@dataclass(frozen=True)
class Hole:
    r: float


@dataclass(frozen=True)
class Solid:
    """What a toy program builds (the 'solid' of the brief)."""

    base: Base
    boss: Boss | None = None
    hole: Hole | None = None

    @property
    def half_widths(self) -> tuple[float, float]:
        return self.base.half_widths

    @property
    def height(self) -> float:
        return self.base.height + (self.boss.height if self.boss else 0.0)


def _number(text: str, field: str) -> float:
    try:
        value = float(text)
    except ValueError as err:
        raise ToyCadError(field, f"{text!r} is not a number") from err
    if not value > 0 or value == float("inf"):
        raise ToyCadError(field, f"{text} must be a positive finite number")
    return value


def _op_and_kind(words: list[str], field: str, line_number: int) -> tuple[str, list[str]]:
    if len(words) < 2 or words[1] not in KINDS:
        got = words[1] if len(words) > 1 else "nothing"
        raise ToyCadError(field, f"line {line_number}: kind must be box or cyl, got {got!r}")
    expected = ARITY[(words[0], words[1])]
    if len(words) - 2 != expected:
        raise ToyCadError(
            f"{words[0]}.dims" if words[0] == "base" else words[0],
            f"line {line_number}: {words[0]} {words[1]} takes {expected} numbers, "
            f"got {len(words) - 2}",
        )
    return words[1], words[2:]


def compile_program(text: str) -> Solid:
    """Parse and check a toycad program (the toy's compiler C).

    Raises:
        UnknownOpError: an op other than base/boss/hole (a ``NameError`` naming the op).
        ToyCadError: a malformed line or an impossible solid; the message names the field
            (``base.kind``, ``base.dims``, ``boss`` or ``hole``).
    """
    base = boss = hole = None
    lines = [(i + 1, ln.strip()) for i, ln in enumerate(text.splitlines())]
    for line_number, line in lines:
        if not line or line.startswith("#"):
            continue
        words = line.split()
        op = words[0]
        if op == "base":
            if base is not None:
                raise ToyCadError("base.kind", f"line {line_number}: a second base")
            kind, numbers = _op_and_kind(words, "base.kind", line_number)
            base = Base(kind, tuple(_number(n, "base.dims") for n in numbers))
        elif op == "boss":
            if boss is not None:
                raise ToyCadError("boss", f"line {line_number}: a second boss")
            kind, numbers = _op_and_kind(words, "boss", line_number)
            size, height = (_number(n, "boss") for n in numbers)
            boss = Boss(kind, size, height)
        elif op == "hole":
            if hole is not None or len(words) != 2:
                raise ToyCadError("hole", f"line {line_number}: hole takes one radius, once")
            hole = Hole(_number(words[1], "hole"))
        else:
            raise UnknownOpError(op, line_number, line)
    if base is None:
        raise ToyCadError("base.kind", "the program has no base")
    base_half_width = min(base.half_widths)
    if boss is not None and not boss.size < base_half_width:
        raise ToyCadError(
            "boss",
            f"boss half-size {boss.size:g} must be < {base_half_width:g}, the base's smallest "
            "half-width (its footprint must fit strictly inside the base)",
        )
    if hole is not None:
        wall = min(base_half_width, boss.size) if boss is not None else base_half_width
        if not hole.r < wall:
            raise ToyCadError(
                "hole",
                f"hole radius {hole.r:g} must be < {wall:g}, the smallest half-width of "
                "base and boss",
            )
    return Solid(base, boss, hole)


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def format_program(solid: Solid) -> str:
    """The canonical program text of ``solid`` (the inverse of :func:`compile_program`)."""
    return "\n".join(field_lines(solid).values()) + "\n"


def field_lines(solid: Solid) -> dict[str, str]:
    """One line per present op, keyed base/boss/hole, in program order."""
    b = solid.base
    lines = {"base": f"base {b.kind} " + " ".join(_fmt(d) for d in b.dims)}
    if solid.boss is not None:
        s = solid.boss
        lines["boss"] = f"boss {s.kind} {_fmt(s.size)} {_fmt(s.height)}"
    if solid.hole is not None:
        lines["hole"] = f"hole {_fmt(solid.hole.r)}"
    return lines


# "<field>: ..." at the start of the message, possibly after the error's type name
FIELD_OF_ERROR = re.compile(r"^(?:\w+: )?(base\.kind|base\.dims|boss|hole): ")


def field_named_in(error: str) -> str | None:
    """The field a compile error's message names, or None (e.g. an unknown op)."""
    match = FIELD_OF_ERROR.match(error.strip())
    return match.group(1) if match else None
