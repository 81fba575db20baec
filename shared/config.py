"""Typed Hydra configs: the schema every paper extends, and composition helpers.

The config tree lives in ``configs/`` at the repository root:

* ``configs/config.yaml`` picks ``schema/<paper>`` (the paper's dataclass, so a wrong key or
  type fails at start), ``runtime`` (cpu | gpu), ``scale`` (smoke | toy | paper), ``paper``
  (required) and finally ``configs/<paper>/<scale>.yaml`` into the global package.
* ``configs/<paper>/paper.yaml`` holds the paper's values with their sources,
  ``toy.yaml`` inherits it and lists only the simplifications, ``smoke.yaml`` inherits toy.

Each paper declares ``papers/<slug>/config.py:Config``, a dataclass subclassing
:class:`ExperimentConfig`; :func:`register_schema` stores it in Hydra's ConfigStore.

What the schema cannot say is refused at start, each in one line naming the key
(:class:`ConfigError`): a value out of its declared bounds (:func:`checked`), a key the schema
lacks added with ``+`` (:func:`to_object`), a device or mixed precision the paper would not use
(:func:`check_runtime`, ``Config.CPU_ONLY``), and an override of a key the run does not read
(:func:`check_read`, ``Config.READ_ONLY_WHERE``).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from omegaconf import MISSING, DictConfig, ListConfig, OmegaConf

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO_ROOT / "configs"
PAPERS_DIR = REPO_ROOT / "papers"
SCALES = ("smoke", "toy", "paper")  # every paper has these
# The real rung: the method on a real data set that a package ships (shared/assets.py), for the
# papers that have a configs/<slug>/real.yaml.
REAL_SCALE = "real"
DEFAULT_RUN_NAME = "default"
# A run folder's name is one path component of these characters, at most this long; anything
# else (a path value's "/", a space, a quote) or a longer name is replaced by a readable prefix
# and a hash of the full overrides, so that distinct overrides keep distinct folders.
RUN_NAME_SAFE = re.compile(r"[^A-Za-z0-9._,=+\-\[\]]")
RUN_NAME_MAX = 120
RUN_NAME_HASH = 10  # hex digits of sha256 appended when a name is rewritten


class ConfigError(ValueError):
    """A value the schema's types accept but that cannot run (a negative count, an interval
    longer than the run, a position past what it indexes, an unknown name). Raised when the
    composed config becomes its dataclass (:func:`to_object`, before any work), in one line
    naming the key, its value and what would be valid."""


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def require(ok: bool, key: str, value: Any, valid: str) -> None:
    """Raise :class:`ConfigError` ``"<key>=<value>: <valid>"`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{key}={_shown(value)}: {valid}")


def require_at_least(key: str, value: float, minimum: float) -> None:
    require(value >= minimum, key, value, f"must be >= {minimum:g}")


def require_positive(key: str, value: float) -> None:
    require(value > 0, key, value, "must be > 0")


def require_at_most(key: str, value: float, limit: float, limit_name: str) -> None:
    """``value <= limit``, where ``limit`` is another key's value or a derived count, named by
    ``limit_name`` (e.g. ``"data.n_test (4)"``)."""
    require(value <= limit, key, value, f"must be <= {limit_name}")


def require_multiple(key: str, value: int, divisor: int, divisor_name: str) -> None:
    """``value`` is a whole multiple of another key's ``divisor`` (a width split into heads)."""
    require(value % divisor == 0, key, value, f"must be a multiple of {divisor_name} ({divisor})")


def require_divides(key: str, value: int, multiple: int, multiple_name: str) -> None:
    """``value`` divides another key's ``multiple`` (heads shared by whole query groups)."""
    require(multiple % value == 0, key, value, f"must divide {multiple_name} ({multiple})")


def require_choice(key: str, value: Any, choices: Any) -> None:
    require(value in choices, key, value, f"choose one of {', '.join(map(str, choices))}")


def require_choices(key: str, values: list, choices: Any, allow_empty: bool = False) -> None:
    """Every entry of a list is a known name (and the list is not empty, unless allowed)."""
    require(bool(values) or allow_empty, key, values, "must not be empty")
    unknown = [v for v in values if v not in choices]
    require(not unknown, key, values, f"unknown {unknown}; choose from {', '.join(choices)}")
    require(len(set(values)) == len(values), key, values, "lists an entry twice")


# ---- declared bounds: a field's valid range, stated beside its default --------------------------
BOUNDS_METADATA = "bounds"  # the key of a dataclass field's metadata that holds its Bounds


@dataclass(frozen=True)
class Bounds:
    """What a schema field accepts beyond its type, in pydantic's terms: ``ge``/``gt``/``le``/
    ``lt`` against a number, ``le_key``/``lt_key`` against another key's value (a count, or the
    length of a list it indexes; skipped while that key is None), ``choices`` a set of names.
    A list (or dict) field's bounds hold for every entry. ``free`` says why a number takes any
    value (a bias, an offset); every other number declares a bound (tests/test_config_bounds.py
    checks that each one does and generates the values each bound refuses)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    le_key: str | None = None
    lt_key: str | None = None
    choices: tuple[str, ...] | None = None
    free: str | None = None

    def __post_init__(self) -> None:
        stated = [self.ge, self.gt, self.le, self.lt, self.le_key, self.lt_key, self.choices]
        if all(bound is None for bound in stated) and not self.free:
            raise TypeError("checked(): state a bound, choices, or why the value is free")

    def check(self, key: str, value: Any, root: Any) -> None:
        """Raise :class:`ConfigError` naming ``key`` unless every entry of ``value`` holds."""
        entries = list(_leaves(value))
        if self.choices is not None:
            if isinstance(value, list):
                require_choices(key, value, self.choices, allow_empty=True)
            else:
                require_choice(key, value, self.choices)
        every = "every entry " if isinstance(value, list | dict) else ""
        for limit, holds, relation in (
            (self.ge, lambda v, x: v >= x, ">="),
            (self.gt, lambda v, x: v > x, ">"),
            (self.le, lambda v, x: v <= x, "<="),
            (self.lt, lambda v, x: v < x, "<"),
        ):
            if limit is not None:
                bad = [v for v in entries if not holds(v, limit)]
                require(not bad, key, value, f"{every}must be {relation} {limit:g}")
        for other, holds, relation in (
            (self.le_key, lambda v, x: v <= x, "<="),
            (self.lt_key, lambda v, x: v < x, "<"),
        ):
            limit = None if other is None else lookup(root, other)
            if limit is not None:
                bad = [v for v in entries if not holds(v, limit)]
                require(not bad, key, value, f"{every}must be {relation} {other} ({limit})")


def _leaves(value: Any) -> Iterator[Any]:
    """The scalars of a value: itself, or the entries of a (nested) list or dict."""
    if isinstance(value, list | tuple):
        for entry in value:
            yield from _leaves(entry)
    elif isinstance(value, dict):
        for entry in value.values():
            yield from _leaves(entry)
    elif value is not None:
        yield value


def lookup(root: Any, key: str) -> Any:
    """The value of dotted ``key`` in a config object; a list stands for its length."""
    node = root
    for part in key.split("."):
        node = (
            node[int(part)]
            if isinstance(node, list)
            else (node[part] if isinstance(node, dict) else getattr(node, part))
        )
    return len(node) if isinstance(node, list) else node


def checked(default: Any = None, *, factory: Callable[[], Any] | None = None, **bounds: Any) -> Any:
    """A schema field with its :class:`Bounds`: ``epochs: int = checked(10, ge=1)``,
    ``hidden: list[int] = checked(factory=lambda: [64], ge=1)``. The bounds are checked when
    the composed config becomes its dataclass (:func:`check_bounds`), before any work."""
    if "choices" in bounds:
        bounds["choices"] = tuple(bounds["choices"])
    metadata = {BOUNDS_METADATA: Bounds(**bounds)}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def bounded_fields(node: Any, prefix: str = "") -> Iterator[tuple[str, Any, Bounds | None, Any]]:
    """``(key, field, bounds or None, value)`` for every leaf field of a config object, nested
    sections, dicts of sections and lists of sections included (``settings.easy.n``,
    ``datasets.0.n``)."""
    for spec in fields(node):
        value = getattr(node, spec.name)
        key = f"{prefix}{spec.name}"
        sections = (
            value.items()
            if isinstance(value, dict)
            else enumerate(value)
            if isinstance(value, list)
            else ()
        )
        sections = [(str(k), v) for k, v in sections if is_dataclass(v)]
        if is_dataclass(value):
            yield from bounded_fields(value, f"{key}.")
        elif sections:
            for name, section in sections:
                yield from bounded_fields(section, f"{key}.{name}.")
        else:
            yield key, spec, spec.metadata.get(BOUNDS_METADATA), value


def check_bounds(root: Any) -> None:
    """Check every declared :class:`Bounds` of a config object (None values are unset)."""
    for key, _, bounds, value in bounded_fields(root):
        if bounds is not None and value is not None:
            bounds.check(key, value, root)


@dataclass
class RuntimeConfig:
    """Where and how a run executes (selected by ``runtime=cpu|gpu``)."""

    # auto: cuda when one is visible and the paper runs on it (ExperimentConfig.CPU_ONLY), else
    # cpu. cuda without a visible CUDA device, or for a CPU-only paper, is refused at start.
    device: str = checked("cpu", choices=("cpu", "cuda", "auto"))
    # torch intra-op threads (toy models: one is as fast, and contention-proof)
    num_threads: int = checked(1, ge=1)
    # Autocast of the training steps (shared.loop.fit runs compute_loss under
    # accelerator.autocast(); evaluation stays float32): bf16 on the CPU or a GPU, fp16 on a GPU
    # only (torch's CPU autocast is bf16; Accelerate would ignore fp16 there). Refused at start
    # where it would have no effect: fp16 without a CUDA device, anything but "no" for a
    # CPU-only paper.
    mixed_precision: str = checked("no", choices=("no", "fp16", "bf16"))
    progress: bool = True  # tqdm progress bars
    # pinned: one floating-point code path on every AVX2 machine (shared/floatpath.py), so a
    # seed gives the committed numbers anywhere; native: each library picks its kernels for
    # this CPU (faster on AVX-512 machines; the numbers are then this machine's own).
    float_path: str = checked("pinned", choices=("pinned", "native"))
    # (method, seed) runs at once, each in its own forked process with num_threads threads
    # (shared/experiment.py): 2 uses both cores of a 2-core machine; the numbers are unchanged.
    # CPU only; the claim checks force 1 so that their CPU budget measures one process.
    workers: int = checked(1, ge=1)


CUDA, AUTO = "cuda", "auto"
MIXED_PRECISION_OFF = "no"
FP16 = "fp16"


def cuda_visible() -> bool:
    """Whether torch sees a CUDA device (torch is imported only when a run asks for one)."""
    import torch

    return torch.cuda.is_available()


def check_runtime(runtime: RuntimeConfig, paper: str, cpu_only: str) -> None:
    """Refuse, naming the key, a device or precision the run would silently not use: a CUDA
    device that is not visible, or that a CPU-only paper (``cpu_only`` says why it is one)
    never moves a tensor to; fp16 without a CUDA device (Accelerate ignores it on the CPU);
    any mixed precision for a CPU-only paper (its code never enters an autocast)."""
    device, precision = runtime.device, runtime.mixed_precision
    wants_cuda = device == CUDA
    if wants_cuda:
        require(
            cuda_visible(),
            "runtime.device",
            device,
            "no CUDA device is visible here (runtime=gpu sets it); use runtime=cpu",
        )
        require(
            not cpu_only,
            "runtime.device",
            device,
            f"papers.{paper} runs on the CPU only ({cpu_only}); use runtime=cpu",
        )
    if precision == MIXED_PRECISION_OFF:
        return
    require(
        not cpu_only,
        "runtime.mixed_precision",
        precision,
        f"papers.{paper} never enters an autocast, it runs on the CPU only ({cpu_only}); use no",
    )
    on_cuda = wants_cuda or (device == AUTO and cuda_visible())
    require(
        precision != FP16 or on_cuda,
        "runtime.mixed_precision",
        precision,
        "fp16 autocast needs a CUDA device (torch autocasts the CPU to bf16 only); use bf16 or no",
    )


@dataclass
class TrainLoopConfig:
    """Knobs of :func:`shared.loop.fit`, the shared minibatch loop, for a paper that evaluates
    after training rather than inside the loop (no ``eval_every``: a key no code reads)."""

    # steps between checkpoints (the last step always saves)
    checkpoint_every: int = checked(100, ge=1)
    # false: no checkpoint file at all (a run neither resumed nor reloaded afterwards: the real
    # rungs' CI smoke runs, where a 135M model's checkpoint costs more than its training)
    save_checkpoints: bool = True
    log_every: int = checked(10, ge=1)  # steps between metrics.jsonl records of the training loss
    console_every_s: float = checked(5.0, ge=0)  # at most one console line per this many seconds
    grad_clip: float | None = checked(None, gt=0)  # max global grad norm; None disables clipping


@dataclass
class LoopConfig(TrainLoopConfig):
    """:class:`TrainLoopConfig` for a paper that evaluates inside the loop (``fit(evaluate=)``)."""

    # steps between evaluations (the last step is always evaluated)
    eval_every: int = checked(100, ge=1)


@dataclass(frozen=True)
class ReadOnlyWhere:
    """Keys a paper's code reads only where ``reads`` holds (one scale's data source, one
    generator of a setting). Elsewhere an override of one would be accepted and ignored, so
    :func:`compose_dict` refuses a value that differs from what the scale composes by itself,
    naming the key and ``where`` (who reads it, e.g. ``"scale=paper (model.path set)"``).

    ``keys`` are dotted keys; a section stands for every key under it, and ``*`` for each
    entry of a dict of sections (``settings.*.hidden_covariate``). ``reads(section, root)``
    gets the composed section that holds the key and the whole composed config."""

    keys: tuple[str, ...]
    where: str
    reads: Callable[[Any, Any], bool]


@dataclass
class ExperimentConfig:
    """Keys every paper's config has. Papers subclass this and add their sections."""

    paper: str = MISSING  # the slug, set by configs/paper/<slug>.yaml
    scale: str = MISSING  # smoke | toy | paper | real, set by configs/scale/<scale>.yaml
    methods: list[str] = field(default_factory=list)  # methods run and compared
    seeds: list[int] = checked(factory=lambda: [0], ge=0)  # one run per (method, seed)
    out_root: str = "outputs"  # run folders: <out_root>/<paper>/<scale>/<run name>
    resume: bool = True  # continue finished/checkpointed (method, seed) runs in the run folder
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)

    # Declarations of the paper's Config (class attributes, not config keys):
    # why the paper's code runs on the CPU in float32 only ("" when its training runs through
    # shared.runtime.make_accelerator and shared.loop.fit, models and batches on the
    # accelerator's device, steps under its autocast): runtime.device=cuda and mixed precision
    # are then refused at start (check_runtime) instead of silently running on the CPU.
    CPU_ONLY: ClassVar[str] = ""
    # keys the code reads only under a condition (a scale's data source, a setting's generator):
    # an override of one where it is not read is refused at start (compose_dict)
    READ_ONLY_WHERE: ClassVar[tuple[ReadOnlyWhere, ...]] = ()

    def __post_init__(self) -> None:
        # OmegaConf.to_object builds this dataclass from the composed config, so the checks
        # run once, at start, before any data is read or any run folder is made.
        self.validate()

    def validate(self) -> None:
        """The constraints types cannot state, each failing with :class:`ConfigError` naming
        its key: first every field's declared :class:`Bounds` (signs and ranges, a count
        against what it indexes, a name against the known set), then what a paper's ``Config``
        adds by extending this (calling ``super().validate()``): the constraints between keys
        that one bound cannot state (an interval that must divide the steps, a layout's
        methods against the chosen methods)."""
        check_bounds(self)
        check_runtime(self.runtime, self.paper, self.CPU_ONLY)
        require(bool(self.methods), "methods", self.methods, "name at least one method")
        require(
            len(set(self.methods)) == len(self.methods),
            "methods",
            self.methods,
            "lists a method twice",
        )
        require(bool(self.seeds), "seeds", self.seeds, "name at least one seed")
        require(len(set(self.seeds)) == len(self.seeds), "seeds", self.seeds, "lists a seed twice")


def _run_name(override_dirname: str) -> str:
    """Deterministic run-folder name: the command-line overrides (Hydra's
    ``override_dirname``, which leaves out the keys that cannot change the numbers), or
    ``default``. A path value never nests the folder (``model.path=/some/dir`` ->
    ``model.path=_some_dir-<hash>``) and a long override list is cut to a prefix and a hash."""
    if not override_dirname:
        return DEFAULT_RUN_NAME
    safe = RUN_NAME_SAFE.sub("_", override_dirname)
    if safe == override_dirname and len(safe) <= RUN_NAME_MAX:
        return safe
    digest = hashlib.sha256(override_dirname.encode()).hexdigest()[:RUN_NAME_HASH]
    return f"{safe[: RUN_NAME_MAX - RUN_NAME_HASH - 1]}-{digest}"


if not OmegaConf.has_resolver("run_name"):
    OmegaConf.register_new_resolver("run_name", _run_name)


def available_papers() -> list[str]:
    """Slugs that have an identity card in ``configs/paper/``."""
    return sorted(p.stem for p in (CONFIG_DIR / "paper").glob("*.yaml"))


def has_real_rung(slug: str) -> bool:
    """Whether the paper runs on a real data set (``configs/<slug>/real.yaml``)."""
    return (CONFIG_DIR / slug / f"{REAL_SCALE}.yaml").is_file()


def real_papers() -> list[str]:
    """Slugs with a real rung."""
    return [slug for slug in available_papers() if has_real_rung(slug)]


def check_slug(slug: str) -> None:
    """Fail with the list of known papers when ``slug`` is not one of them."""
    known = available_papers()
    if slug not in known:
        raise ValueError(f"unknown paper {slug!r}; known papers: {', '.join(known)}")


def schema_class(slug: str) -> type:
    """The paper's typed config dataclass, ``papers.<slug>.config.Config``."""
    return importlib.import_module(f"papers.{slug}.config").Config


def register_schema(slug: str) -> None:
    """Store the paper's schema as ``schema/<slug>`` so ``config.yaml`` can select it."""
    ConfigStore.instance().store(
        group="schema", name=slug, node=schema_class(slug), package="_global_"
    )


def compose(slug: str, scale: str = "toy", overrides: list[str] | tuple[str, ...] = ()) -> Any:
    """Compose a paper's config in-process (tests, claim checks) and return the typed object.

    Raises the same errors as the command line: an unknown key or a wrong type names the key.
    """
    return to_object(compose_dict(slug, scale, overrides))


def compose_dict(
    slug: str, scale: str = "toy", overrides: list[str] | tuple[str, ...] = ()
) -> DictConfig:
    """Like :func:`compose` but returns the raw DictConfig (for records and printing)."""
    check_slug(slug)
    if scale == REAL_SCALE and not has_real_rung(slug):
        raise ValueError(
            f"paper {slug!r} has no real rung (configs/{slug}/real.yaml); papers with one: "
            + ", ".join(real_papers())
        )
    if scale not in (*SCALES, REAL_SCALE):
        raise ValueError(
            f"unknown scale {scale!r}; choose one of {', '.join((*SCALES, REAL_SCALE))}"
        )
    register_schema(slug)
    cfg = _hydra_compose(slug, scale, tuple(overrides))
    if overrides and schema_class(slug).READ_ONLY_WHERE:
        check_read(cfg, default_composition(slug, scale))
    return cfg


def _hydra_compose(slug: str, scale: str, overrides: tuple[str, ...]) -> DictConfig:
    """Hydra's composition, with its refusal of an unknown key put in one line naming the key
    (Hydra's own suggests ``+key=value``, which would add a key no code reads)."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            return hydra_compose(
                config_name="config", overrides=[f"paper={slug}", f"scale={scale}", *overrides]
            )
    except ConfigCompositionException as error:
        unknown = UNKNOWN_OVERRIDE.match(str(error))
        if unknown is None:
            raise
        raise unknown_key_error(slug, scale, unknown.group(1), overrides) from None


# Hydra's message for an override of a key the struct config lacks (without a '+')
UNKNOWN_OVERRIDE = re.compile(r"Could not override '([^']+)'")


def unknown_key_error(
    slug: str, scale: str, key: str, overrides: list[str] | tuple[str, ...]
) -> ConfigError:
    """The one-line refusal of an override of ``key``, a key the paper's schema lacks."""
    given = next((o for o in overrides if o.split("=", 1)[0].lstrip("+~") == key), key)
    parent = key.rsplit(".", 1)[0] if "." in key else ""
    section = OmegaConf.select(default_composition(slug, scale), parent) if parent else None
    schema = OmegaConf.get_type(section) if isinstance(section, DictConfig) else None
    if not is_dataclass(schema):
        schema = schema_class(slug) if not parent else None
    reason = _no_such_key(key, schema) if schema else f"no such key in papers.{slug}'s config"
    return ConfigError(f"{given.lstrip('+~')}: {reason}")


@cache
def default_composition(slug: str, scale: str) -> DictConfig:
    """What ``scale`` composes for ``slug`` by itself, without overrides (cached, so made read
    only: every caller shares the one object)."""
    register_schema(slug)
    cfg = _hydra_compose(slug, scale, ())
    OmegaConf.set_readonly(cfg, True)
    return cfg


def check_read(cfg: DictConfig, default: DictConfig) -> None:
    """Refuse an override of a key the run does not read (the paper's ``READ_ONLY_WHERE``): a
    value that differs from ``default``, what the scale composes by itself, naming the first
    such key and the scale or generator that reads it."""
    scale = cfg.scale
    for rule in schema_class(cfg.paper).READ_ONLY_WHERE:
        for pattern in rule.keys:
            for key, section in _matches(cfg, pattern.split("."), ""):
                if rule.reads(section, cfg):
                    continue
                name = key.rsplit(".", 1)[-1]
                given = _leaves_of(OmegaConf.select(section, name), key)
                shipped = _leaves_of(OmegaConf.select(default, key, default=None), key)
                for leaf, value in given.items():
                    if leaf not in shipped or shipped[leaf] != value:
                        raise ConfigError(
                            f"{leaf}={_shown(value)}: this run (scale={scale}) does not read "
                            f"it, only {rule.where} does; leave it out"
                        )


def _matches(node: Any, parts: list[str], prefix: str) -> Iterator[tuple[str, Any]]:
    """``(full key, the section holding it)`` of each key of ``node`` that a dotted pattern
    (``*`` for any entry) names; unset (None) sections hold none."""
    if not isinstance(node, DictConfig) or node._is_none():
        return
    head, rest = parts[0], parts[1:]
    names = [str(k) for k in node.keys()] if head == "*" else [head] if head in node else []
    for name in names:
        if rest:
            yield from _matches(node[name], rest, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", node


def _leaves_of(value: Any, key: str) -> dict[str, Any]:
    """``{full key: value}`` of every scalar (or list) under ``key``."""
    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value, resolve=True)
    if isinstance(value, dict):
        leaves: dict[str, Any] = {}
        for name, entry in value.items():
            leaves.update(_leaves_of(entry, f"{key}.{name}"))
        return leaves
    return {key: value}


def to_object(cfg: DictConfig) -> Any:
    """Validate a composed config against its schema and return the dataclass instance.

    Hydra already merged the schema; ``to_object`` additionally refuses a key the schema lacks
    (a ``+key=value`` override: Hydra adds it, and OmegaConf would set it on the dataclass as a
    stray attribute no code reads) and fails on values left missing (``???``), naming them.
    """
    for key, value, section in undeclared_keys(cfg):
        raise ConfigError(f"{key}={_shown(value)}: {_no_such_key(key, section)}")
    return OmegaConf.to_object(cfg)


def undeclared_keys(node: DictConfig | ListConfig, prefix: str = "") -> Iterator[tuple]:
    """``(full key, value, schema class)`` of every key of a composed config that its section's
    dataclass does not declare; a ``dict[str, Section]`` field's own entries are free names."""
    if isinstance(node, DictConfig):
        schema = OmegaConf.get_type(node)
        declared = {spec.name for spec in fields(schema)} if is_dataclass(schema) else None
        items = [(str(key), key) for key in node.keys()]
    else:
        schema, declared = None, None
        items = [(str(index), index) for index in range(len(node))]
    for name, key in items:
        child = node._get_node(key)
        if declared is not None and name not in declared:
            value = OmegaConf.to_container(child) if OmegaConf.is_config(child) else child._value()
            yield f"{prefix}{name}", value, schema
        elif isinstance(child, DictConfig | ListConfig) and not (
            child._is_none() or child._is_missing() or child._is_interpolation()
        ):
            yield from undeclared_keys(child, f"{prefix}{name}.")


def _no_such_key(key: str, schema: type) -> str:
    """Why ``key`` is refused: the section's schema, its keys, and the closest one."""
    name = key.rsplit(".", 1)[-1]
    section = key.rsplit(".", 1)[0] if "." in key else "the config"
    names = [spec.name for spec in fields(schema)]
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"; did you mean {key[: -len(name)]}{close[0]}?" if close else ""
    return (
        f"no such key: {section} ({schema.__module__}.{schema.__qualname__}) has "
        f"{', '.join(names)}{hint} (a '+' override cannot add a key the schema lacks)"
    )


def to_container(cfg: DictConfig | Any) -> dict:
    """Plain, resolved dict of a config (DictConfig or dataclass), for ``result.json``."""
    node = cfg if isinstance(cfg, DictConfig) else OmegaConf.structured(cfg)
    return OmegaConf.to_container(node, resolve=True)
