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
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import ValidationError

from shared import config as config_lib
from shared.config import (
    BOUNDS_METADATA,
    PAPERS_DIR,
    REAL_SCALE,
    SCALES,
    Bounds,
    ConfigError,
    ReadOnlyWhere,
    bounded_fields,
    check_bounds,
    check_read,
    checked,
    compose_dict,
    default_composition,
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


# ---- issue 52: '+' keys, device and precision switches, keys a scale does not read ------------
NO_SUCH_KEY = "no_such_key"


def _schema_sections(node: typing.Any, prefix: str = "") -> typing.Iterator[tuple[str, typing.Any]]:
    """``(key prefix, node)`` of the config and every section of it that a dataclass types
    (the entries of a dict or list of sections included)."""
    if isinstance(node, DictConfig) and not node._is_none():
        if dataclasses.is_dataclass(OmegaConf.get_type(node)):
            yield prefix, node
        for key in node.keys():
            yield from _schema_sections(node._get_node(key), f"{prefix}{key}.")
    elif isinstance(node, ListConfig) and not node._is_none():
        for index in range(len(node)):
            yield from _schema_sections(node._get_node(index), f"{prefix}{index}.")


def _changed(value: typing.Any) -> list[typing.Any]:
    """Values of the same type as ``value`` that differ from it (the first the schema takes
    is used): a number plus one, a flag flipped, a name or path changed, a list grown."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int | float):
        return [value + 1]
    if isinstance(value, str):
        return [f"{value}_changed"]
    if isinstance(value, list):
        return [[*value, *value[-1:]] if value else [1], ["changed"]]
    return ["changed", 1, 1.5, True, [1]]  # unset (None): whatever type the key takes


def _one_line_naming(message: str, key: str) -> bool:
    return "\n" not in message and message.startswith(f"{key}=")


def _unread_leaves(cfg: DictConfig, rule: ReadOnlyWhere) -> list[str]:
    """The leaf keys of ``cfg`` that ``rule`` declares and this config does not read."""
    leaves = []
    for pattern in rule.keys:
        for key, section in config_lib._matches(cfg, pattern.split("."), ""):
            if not rule.reads(section, cfg):
                leaves += list(config_lib._leaves_of(OmegaConf.select(cfg, key), key))
    return leaves


@pytest.mark.parametrize("slug", PAPERS)
def test_generated_plus_keys_switches_and_unread_keys_are_refused_naming_the_key(slug, monkeypatch):
    """For every scale: a ``+`` key in each section of the schema, ``runtime.device=cuda``
    (no device visible; a device visible but a CPU-only paper), fp16 on the CPU, bf16 for a
    CPU-only paper, and every key the paper declares unread (``READ_ONLY_WHERE``) changed
    where it is not read: each refused in one line that begins with the key."""
    schema = schema_class(slug)
    problems, cases = [], 0

    def expect(key: str, check: typing.Callable, *args: typing.Any, refuse: bool = True) -> None:
        nonlocal cases
        cases += 1
        try:
            check(*args)
        except ConfigError as error:
            if not refuse or not _one_line_naming(str(error), key):
                problems.append(f"{args[0].scale} {key}: {error}")
        else:
            if refuse:
                problems.append(f"{args[0].scale} {key}: accepted")

    for scale in _scales(slug):
        cfg = compose_dict(slug, scale)
        shipped_config = OmegaConf.to_container(cfg)
        for prefix, section in _schema_sections(cfg):
            with open_dict(section):  # what Hydra does with +<prefix>no_such_key=1
                section[NO_SUCH_KEY] = 1
            try:
                expect(f"{prefix}{NO_SUCH_KEY}", to_object, cfg)
            finally:
                with open_dict(section):
                    del section[NO_SUCH_KEY]
        runtime = cfg.runtime
        for visible in (False, True):
            monkeypatch.setattr(config_lib, "cuda_visible", lambda visible=visible: visible)
            runtime.device = "cuda"
            refuse = not visible or bool(schema.CPU_ONLY)
            expect("runtime.device", to_object, cfg, refuse=refuse)
            runtime.device = "cpu"
        runtime.mixed_precision = "fp16"  # the CPU: torch autocasts it to bf16 only
        expect("runtime.mixed_precision", to_object, cfg)
        runtime.mixed_precision = "bf16"  # applied by shared.loop.fit unless CPU-only
        expect("runtime.mixed_precision", to_object, cfg, refuse=bool(schema.CPU_ONLY))
        runtime.mixed_precision = "no"
        monkeypatch.undo()
        default = default_composition(slug, scale) if schema.READ_ONLY_WHERE else None
        for rule in schema.READ_ONLY_WHERE:
            for leaf in _unread_leaves(cfg, rule):
                shipped = OmegaConf.select(cfg, leaf)
                if OmegaConf.is_config(shipped):
                    shipped = OmegaConf.to_container(shipped)
                for value in _changed(shipped):
                    try:
                        OmegaConf.update(cfg, leaf, value, merge=False)
                    except ValidationError:
                        continue  # not this key's type: try the next
                    try:
                        expect(leaf, check_read, cfg, default)
                    finally:
                        OmegaConf.update(cfg, leaf, shipped, merge=False)
                    break
                else:
                    problems.append(f"{scale} {leaf}: no changed value of its type")
        assert OmegaConf.to_container(cfg) == shipped_config, f"{scale}: not put back"
    assert cases, slug
    assert not problems, f"{slug}: {problems}"


@pytest.mark.parametrize("slug", PAPERS)
def test_cpu_only_is_declared_exactly_by_the_papers_that_never_use_the_accelerator(slug):
    """``Config.CPU_ONLY`` (device and precision refused) is what the code does: a paper whose
    code never builds the shared Accelerator (``shared.runtime.make_accelerator``, which puts
    its models on the device and, in ``shared.loop.fit``, its steps under autocast) declares
    why it runs on the CPU only; one that builds it declares nothing."""
    sources = (PAPERS_DIR / slug).glob("*.py")
    accelerated = any("make_accelerator(cfg.runtime)" in path.read_text() for path in sources)
    assert bool(schema_class(slug).CPU_ONLY) != accelerated


def test_the_cached_default_composition_cannot_be_changed_by_a_caller():
    """check_read and the unknown-key message share one cached object per (paper, scale)."""
    default = default_composition("leret", "smoke")
    with pytest.raises(Exception, match="read-only"):
        default.seeds = [99]
    assert default_composition("leret", "smoke") is default and default.seeds != [99]
