"""Generated bad values, refused at start naming the key (issue 43, item 5).

Every number of every paper's schema declares its valid range beside its default
(``shared.config.checked``: ``ge``/``gt``/``le``/``lt``, ``le_key``/``lt_key`` against the count
or list it indexes, ``choices`` for names). From those declarations this module generates, for
each paper at each scale, the values just outside each bound (a count one below its minimum,
a position equal to the length it indexes, an interval one past the run, an unknown name) and
checks that turning the config into its dataclass, the start-up step before any work, refuses
each one in one line that begins with the key.
"""

from __future__ import annotations

import dataclasses
import types
import typing

import pytest
from omegaconf import OmegaConf

from shared.config import (
    BOUNDS_METADATA,
    REAL_SCALE,
    SCALES,
    Bounds,
    ConfigError,
    bounded_fields,
    check_bounds,
    checked,
    compose_dict,
    has_real_rung,
    lookup,
    schema_class,
    to_object,
)
from tests.helpers import PAPERS

UNKNOWN_NAME = "no_such_name"
NUMBER_TYPES = (int, float)


def _scalar_types(hint: typing.Any) -> set[type]:
    """The scalar types a field annotation can hold (``list[int] | None`` -> {int})."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType, list, tuple):
        return set().union(*(_scalar_types(arg) for arg in typing.get_args(hint)))
    if origin is dict:
        return _scalar_types(typing.get_args(hint)[1])
    return {hint} if isinstance(hint, type) else set()


def _schema_numbers(cls: type, prefix: str = "") -> typing.Iterator[tuple[str, type, Bounds]]:
    """``(key, scalar type, bounds or None)`` of every number field of a schema class; the
    sections of a ``dict[str, Section]`` or ``list[Section]`` appear under ``<key>.*``."""
    hints = typing.get_type_hints(cls)
    for spec in dataclasses.fields(cls):
        key = f"{prefix}{spec.name}"
        scalars = _scalar_types(hints[spec.name])
        # a section (key.), or a dict or list of sections (key.*.)
        inner = f"{key}." if dataclasses.is_dataclass(hints[spec.name]) else f"{key}.*."
        for section in (t for t in scalars if dataclasses.is_dataclass(t)):
            yield from _schema_numbers(section, inner)
        number = next((t for t in scalars if t in NUMBER_TYPES), None)
        if number is not None and bool not in scalars:
            yield key, number, spec.metadata.get(BOUNDS_METADATA)


def _first_leaf_replaced(value: typing.Any, bad: typing.Any, depth: int) -> typing.Any:
    """``value`` with its first scalar replaced by ``bad``: a list keeps its other entries, so
    that a bound on the entries, not the length, is what fails; an empty (or unset) list of
    ``depth`` nested list levels becomes ``[[bad]]`` (depth 2)."""
    if isinstance(value, dict):
        if not value:  # an empty mapping gains one entry
            return {UNKNOWN_NAME: _first_leaf_replaced(None, bad, depth)}
        first = next(iter(value))
        return {**value, first: _first_leaf_replaced(value[first], bad, depth)}
    if depth == 0:
        return bad
    if isinstance(value, list) and value:
        return [_first_leaf_replaced(value[0], bad, depth - 1), *value[1:]]
    return [_first_leaf_replaced(None, bad, depth - 1)]


def bad_values(
    bounds: Bounds, value: typing.Any, root: typing.Any, annotation: str
) -> list[typing.Any]:
    """Values just outside each bound of a field whose current value is ``value`` and whose
    annotation is ``annotation``."""
    leaves = [value]
    while leaves and isinstance(leaves[0], list | dict):
        leaves = list(leaves[0].values() if isinstance(leaves[0], dict) else leaves[0])
    is_int = bool(leaves) and isinstance(leaves[0], int) and not isinstance(leaves[0], bool)
    outside: list[float] = []
    if bounds.ge is not None:
        outside.append(bounds.ge - 1)
    if bounds.gt is not None:
        outside.append(bounds.gt)
    if bounds.le is not None:
        outside.append(bounds.le + 1)
    if bounds.lt is not None:
        outside.append(bounds.lt)
    for other, step in ((bounds.le_key, 1), (bounds.lt_key, 0)):
        limit = None if other is None else lookup(root, other)
        if limit is not None:
            outside.append(limit + step)
    bad: list[typing.Any] = [
        int(x) if is_int and float(x).is_integer() else x
        for x in outside
        if not is_int or float(x).is_integer()
    ]
    if bounds.choices is not None:
        bad.append(UNKNOWN_NAME)
    depth = annotation.count("list[")
    return [_first_leaf_replaced(value, x, depth) for x in bad]


def _scales(slug: str) -> list[str]:
    return [*SCALES, *([REAL_SCALE] if has_real_rung(slug) else [])]


@pytest.mark.parametrize("slug", PAPERS)
def test_every_number_in_every_schema_declares_its_bounds(slug):
    undeclared = [key for key, _, bounds in _schema_numbers(schema_class(slug)) if bounds is None]
    assert not undeclared, (
        f"{slug}: numbers without a declared range (shared.config.checked): {undeclared}"
    )


@pytest.mark.parametrize("slug", PAPERS)
def test_generated_bad_values_are_refused_at_start_naming_the_key(slug):
    accepted, misnamed, cases = [], [], 0
    for scale in _scales(slug):
        cfg = compose_dict(slug, scale)
        root = to_object(cfg)  # the shipped config itself is valid
        for key, spec, bounds, value in bounded_fields(root):
            if bounds is None:
                continue
            shipped = OmegaConf.select(cfg, key)
            if OmegaConf.is_config(shipped):
                shipped = OmegaConf.to_container(shipped)
            for bad in bad_values(bounds, value, root, str(spec.type)):
                cases += 1
                # set in place and put back (a copy of the composed config per case would cost
                # most of this test's time)
                OmegaConf.update(cfg, key, bad, merge=False)
                try:
                    to_object(cfg)
                except ConfigError as error:
                    message = str(error)
                    if "\n" in message or not message.startswith(f"{key}="):
                        misnamed.append(f"{scale} {key}={bad!r}: {message}")
                else:
                    accepted.append(f"{scale} {key}={bad!r}")
                finally:
                    OmegaConf.update(cfg, key, shipped, merge=False)
        assert to_object(cfg) == root, f"{slug} {scale}: the config was not put back"
    assert cases, f"{slug}: no bounds declared"
    assert not accepted, f"{slug}: accepted {accepted}"
    assert not misnamed, f"{slug}: refused without naming the key first: {misnamed}"


@dataclasses.dataclass
class _Section:
    count: int = checked(3, ge=1)
    names: list[str] = checked(factory=lambda: ["a"], choices=("a", "b"))
    position: int = checked(0, ge=0, lt_key="section.items")
    items: list[int] = checked(factory=lambda: [1, 2], gt=0)
    limit: float | None = checked(None, le_key="section.count")


@dataclasses.dataclass
class _Root:
    section: _Section = dataclasses.field(default_factory=_Section)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"count": 0}, "section.count=0: must be >= 1"),
        ({"names": ["a", "c"]}, "section.names=['a', 'c']: unknown ['c']; choose from a, b"),
        ({"position": 2}, "section.position=2: must be < section.items (2)"),
        ({"items": [1, 0]}, "section.items=[1, 0]: every entry must be > 0"),
        ({"limit": 3.5}, "section.limit=3.5: must be <= section.count (3)"),
    ],
)
def test_check_bounds_hand_cases(change, message):
    root = _Root(_Section(**change))
    with pytest.raises(ConfigError) as error:
        check_bounds(root)
    assert str(error.value) == message


def test_check_bounds_accepts_the_edges_and_skips_unset_values():
    check_bounds(_Root(_Section(count=1, position=1, limit=1.0)))  # the edges hold
    check_bounds(_Root(_Section(limit=None)))  # None: unset, not checked
    keys = [key for key, *_ in bounded_fields(_Root())]
    assert keys == [f"section.{name}" for name in ("count", "names", "position", "items", "limit")]


def test_a_number_declares_a_bound_or_says_why_it_is_free():
    with pytest.raises(TypeError, match="state a bound"):
        checked(1.0)
    assert checked(0.0, free="an offset may be any real").metadata[BOUNDS_METADATA].free
