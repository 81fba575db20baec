"""Typed Hydra configs: the schema every paper extends, and composition helpers.

The config tree lives in ``configs/`` at the repository root:

* ``configs/config.yaml`` picks ``schema/<paper>`` (the paper's dataclass, so a wrong key or
  type fails at start), ``runtime`` (cpu | gpu), ``scale`` (smoke | toy | paper), ``paper``
  (required) and finally ``configs/<paper>/<scale>.yaml`` into the global package.
* ``configs/<paper>/paper.yaml`` holds the paper's values with their sources,
  ``toy.yaml`` inherits it and lists only the simplifications, ``smoke.yaml`` inherits toy.

Each paper declares ``papers/<slug>/config.py:Config``, a dataclass subclassing
:class:`ExperimentConfig`; :func:`register_schema` stores it in Hydra's ConfigStore.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from omegaconf import MISSING, DictConfig, OmegaConf

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


def require_choice(key: str, value: Any, choices: Any) -> None:
    require(value in choices, key, value, f"choose one of {', '.join(map(str, choices))}")


def require_choices(key: str, values: list, choices: Any, allow_empty: bool = False) -> None:
    """Every entry of a list is a known name (and the list is not empty, unless allowed)."""
    require(bool(values) or allow_empty, key, values, "must not be empty")
    unknown = [v for v in values if v not in choices]
    require(not unknown, key, values, f"unknown {unknown}; choose from {', '.join(choices)}")
    require(len(set(values)) == len(values), key, values, "lists an entry twice")


@dataclass
class RuntimeConfig:
    """Where and how a run executes (selected by ``runtime=cpu|gpu``)."""

    device: str = "cpu"  # cpu | cuda | auto (auto: cuda when available)
    num_threads: int = 1  # torch intra-op threads (toy models: one is as fast, contention-proof)
    mixed_precision: str = "no"  # no | fp16 | bf16 (passed to accelerate)
    progress: bool = True  # tqdm progress bars
    # pinned: one floating-point code path on every AVX2 machine (shared/floatpath.py), so a
    # seed gives the committed numbers anywhere; native: each library picks its kernels for
    # this CPU (faster on AVX-512 machines; the numbers are then this machine's own).
    float_path: str = "pinned"
    # (method, seed) runs at once, each in its own forked process with num_threads threads
    # (shared/experiment.py): 2 uses both cores of a 2-core machine; the numbers are unchanged.
    # CPU only; the claim checks force 1 so that their CPU budget measures one process.
    workers: int = 1


@dataclass
class TrainLoopConfig:
    """Knobs of :func:`shared.loop.fit`, the shared minibatch loop, for a paper that evaluates
    after training rather than inside the loop (no ``eval_every``: a key no code reads)."""

    checkpoint_every: int = 100  # steps between checkpoints (the last step always saves)
    log_every: int = 10  # steps between metrics.jsonl records of the training loss
    console_every_s: float = 5.0  # at most one console line per this many seconds
    grad_clip: float | None = None  # max global grad norm; None disables clipping

    def validate(self, prefix: str = "loop") -> None:
        for name in ("checkpoint_every", "log_every"):
            require_at_least(f"{prefix}.{name}", getattr(self, name), 1)
        require_at_least(f"{prefix}.console_every_s", self.console_every_s, 0)
        if self.grad_clip is not None:
            require_positive(f"{prefix}.grad_clip", self.grad_clip)


@dataclass
class LoopConfig(TrainLoopConfig):
    """:class:`TrainLoopConfig` for a paper that evaluates inside the loop (``fit(evaluate=)``)."""

    eval_every: int = 100  # steps between evaluations (the last step is always evaluated)

    def validate(self, prefix: str = "loop") -> None:
        super().validate(prefix)
        require_at_least(f"{prefix}.eval_every", self.eval_every, 1)


@dataclass
class ExperimentConfig:
    """Keys every paper's config has. Papers subclass this and add their sections."""

    paper: str = MISSING  # the slug, set by configs/paper/<slug>.yaml
    scale: str = MISSING  # smoke | toy | paper | real, set by configs/scale/<scale>.yaml
    methods: list[str] = field(default_factory=list)  # methods run and compared
    seeds: list[int] = field(default_factory=lambda: [0])  # one run per (method, seed)
    out_root: str = "outputs"  # run folders: <out_root>/<paper>/<scale>/<run name>
    resume: bool = True  # continue finished/checkpointed (method, seed) runs in the run folder
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)

    def __post_init__(self) -> None:
        # OmegaConf.to_object builds this dataclass from the composed config, so the checks
        # run once, at start, before any data is read or any run folder is made.
        self.validate()

    def validate(self) -> None:
        """The constraints types cannot state, each failing with :class:`ConfigError` naming
        its key. A paper's ``Config`` extends this (calling ``super().validate()``) with its
        own: signs and ranges, a count against what it indexes, an interval against the
        steps, a name against the known set."""
        require(bool(self.methods), "methods", self.methods, "name at least one method")
        require(
            len(set(self.methods)) == len(self.methods),
            "methods",
            self.methods,
            "lists a method twice",
        )
        require(bool(self.seeds), "seeds", self.seeds, "name at least one seed")
        require(len(set(self.seeds)) == len(self.seeds), "seeds", self.seeds, "lists a seed twice")
        require_at_least("runtime.workers", self.runtime.workers, 1)
        require_at_least("runtime.num_threads", self.runtime.num_threads, 1)
        require_choice("runtime.device", self.runtime.device, ("cpu", "cuda", "auto"))
        require_choice(
            "runtime.mixed_precision", self.runtime.mixed_precision, ("no", "fp16", "bf16")
        )
        loop = getattr(self, "loop", None)
        if isinstance(loop, TrainLoopConfig):
            loop.validate()


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
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return hydra_compose(
            config_name="config", overrides=[f"paper={slug}", f"scale={scale}", *overrides]
        )


def to_object(cfg: DictConfig) -> Any:
    """Validate a composed config against its schema and return the dataclass instance.

    Hydra already merged the schema; ``to_object`` additionally fails on values left
    missing (``???``), naming them.
    """
    return OmegaConf.to_object(cfg)


def to_container(cfg: DictConfig | Any) -> dict:
    """Plain, resolved dict of a config (DictConfig or dataclass), for ``result.json``."""
    node = cfg if isinstance(cfg, DictConfig) else OmegaConf.structured(cfg)
    return OmegaConf.to_container(node, resolve=True)
