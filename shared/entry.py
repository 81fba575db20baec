"""Entry point: turns a paper's ``run(cfg, out_dir)`` into ``python -m papers.<slug>.train``.

A paper's ``train.py`` ends with::

    if __name__ == "__main__":
        main("<slug>")

and gets Hydra overrides (``key=value``), ``-m`` multirun sweeps, typed validation, a
deterministic run folder, ``result.json`` (metrics, claim verdicts, resolved config, commit,
versions, wall time), a results table on the console, and resume of interrupted runs.

:func:`execute` is the same pipeline in-process, used by tests and ``scripts/reproduce.py``.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import hydra
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig

from shared import assets, floatpath, preflight
from shared import claims as claims_lib
from shared.config import (
    CONFIG_DIR,
    REAL_SCALE,
    REPO_ROOT,
    check_slug,
    compose_dict,
    has_real_rung,
    register_schema,
    to_container,
    to_object,
)
from shared.experiment import parallel_runs
from shared.records import git_commit, package_versions, read_json, summarise, write_json
from shared.runtime import process_state, shutdown_process_group
from shared.tables import results_table, verdict_table

RESULT_NAME = "result.json"
# The committed results of each paper: papers/<slug>/results/{toy.json, heldout.json}.
RESULTS_DIR = "results"
TOY_FILE, HELDOUT_FILE = "toy.json", "heldout.json"
REAL_FILE = "real.json"  # the real rung's claims (scripts/reproduce.py --scale real)
CONFIG_RECORD_NAME = "run_config.json"
# Keys that may change between a run and its resumption without invalidating it (the float
# path is the one runtime key that changes numbers, so it is kept).
RESUME_NEUTRAL_KEYS = ("runtime", "resume", "out_root")


def paper_modules(slug: str) -> tuple[ModuleType, ModuleType]:
    """The paper's ``train`` and ``claims`` modules."""
    return (
        importlib.import_module(f"papers.{slug}.train"),
        importlib.import_module(f"papers.{slug}.claims"),
    )


def execute(
    slug: str,
    cfg_dict: DictConfig,
    out_dir: Path,
    command: str | None = None,
    checked: bool = False,
) -> dict[str, Any]:
    """Validate ``cfg_dict``, run the experiment into ``out_dir`` and write its record.

    ``command`` is recorded as the way to rerun it (default: the entry point with this
    config's scale; pass the real overrides when known). ``checked``: :func:`start_checks`
    already passed for this config (the command line runs them before Hydra makes the run
    folder), so the data and package checks are not repeated.

    Returns:
        The run record (also written to ``out_dir/result.json`` by the main process).
    """
    cfg = to_object(cfg_dict) if checked else start_checks(slug, cfg_dict)
    check_float_path(cfg.runtime.float_path)
    train, claims = paper_modules(slug)
    real_assets = assets_read(train, cfg)
    out_dir = Path(out_dir)
    resolved = to_container(cfg_dict)
    state = process_state(cfg.runtime)
    if state.is_main_process:
        _guard_run_folder(out_dir, resolved, resume=cfg.resume)
    state.wait_for_everyone()

    if cfg.runtime.workers > 1 and (cfg.runtime.device != "cpu" or state.num_processes > 1):
        raise ValueError(
            f"runtime.workers={cfg.runtime.workers} forks CPU processes; use 1 with "
            f"device={cfg.runtime.device} or {state.num_processes} launched processes"
        )
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    with parallel_runs(cfg.runtime.workers):
        results = train.run(cfg, out_dir)
    wall_time, cpu_time = time.perf_counter() - start, _cpu_seconds() - cpu_start

    summary = summarise(results, cfg.seeds)
    own_files = user_files(train, cfg)
    # the claims are about the shipped data: a run on a user's own files reports its numbers
    verdicts = [] if own_files else claim_verdicts(claims, results, cfg.scale)
    metrics, labels = table_spec(claims, cfg.scale, cfg)
    record = {
        "paper": slug,
        "scale": cfg.scale,
        "methods": list(results),
        "seeds": list(cfg.seeds),
        "metrics": summary,
        "claims": [v.as_dict() for v in verdicts],
        "command": command or f"python -m papers.{slug}.train scale={cfg.scale}",
        "config": resolved,
        "git_commit": git_commit(),
        "float_path": floatpath.state(),
        "versions": package_versions(),
        "wall_time_s": round(wall_time, 2),
        "cpu_time_s": round(cpu_time, 2),  # this process and its finished children
        "table_metrics": metrics,
        "labels": labels,  # from this run's config (claims.config_labels)
    }
    if real_assets:
        record["assets"] = assets.record(real_assets)  # name, version and sha256 of each
    if own_files:
        record["user_files"] = assets.user_file_record(own_files)  # path, size and sha256
    if state.is_main_process:
        write_json(record, out_dir / RESULT_NAME)
        print(f"\n{slug} ({cfg.scale}), seeds {list(cfg.seeds)}, {wall_time:.1f} s")
        print(results_table(summary, metrics, labels))
        if verdicts:
            print(f"\nHeadline claim at {cfg.scale} scale (seeds {list(cfg.seeds)}):")
            print(verdict_table(record["claims"]))
        print(f"\nrun folder: {out_dir}")
    shutdown_process_group()  # under torchrun: tear gloo down before the interpreter exits
    return record


def start_checks(slug: str, cfg_dict: DictConfig) -> Any:
    """Everything a run checks before any work or folder, each refusal in one line: the config
    (:func:`shared.config.to_object`: bounds, keys, device and precision), then the optional
    packages a chosen method needs and, at paper scale and on the real rung, the data, models
    and assets (``train.preflight`` / ``train.real_preflight``). Returns the typed config."""
    cfg = to_object(cfg_dict)  # typed dataclass; fails naming a missing or ill-typed key
    if cfg.paper != slug:
        raise ValueError(f"config is for paper {cfg.paper!r}, entry point is {slug!r}")
    train, _ = paper_modules(slug)
    # Optional packages a chosen method needs (train.OPTIONAL_PACKAGES: method -> {module:
    # how to install it}), at every scale: refused before any work, not when the method starts.
    optional = getattr(train, "OPTIONAL_PACKAGES", {})
    preflight.check(
        slug,
        [
            f"method {method!r}: {problem}"
            for method in cfg.methods
            for problem in preflight.missing_packages(optional.get(method, {}))
        ],
        cfg.scale,
    )
    if cfg.scale in ("paper", REAL_SCALE):
        problems = assets.missing(assets_read(train, cfg))
        # paper scale: train.preflight (data.root, optional packages); the real rung may add
        # checks of its own (train.real_preflight) beside its assets'
        check = getattr(train, "real_preflight" if cfg.scale == REAL_SCALE else "preflight", None)
        if check is not None:
            problems += check(cfg)
        preflight.check(slug, problems, cfg.scale)
    # Every scale: the config against the data, assets and committed files that its enabled
    # parts read (train.data_preflight), once, before the first run: a key that only the data
    # can refuse (a covariate's name, a split too small) stops here, not replications later.
    data_check = getattr(train, "data_preflight", None)
    if data_check is not None:
        preflight.check(slug, data_check(cfg), cfg.scale)
    return cfg


def assets_read(train: ModuleType, cfg: Any) -> tuple[str, ...]:
    """The assets a run reads and records: at scale=real, ``train.real_assets(cfg)`` where the
    config decides (a user's own file in place of the shipped data), else
    ``train.REAL_ASSETS``; none at the other scales."""
    if cfg.scale != REAL_SCALE:
        return ()
    chooser = getattr(train, "real_assets", None)
    return tuple(chooser(cfg)) if chooser else tuple(getattr(train, "REAL_ASSETS", ()))


def user_files(train: ModuleType, cfg: Any) -> dict[str, str]:
    """The user's own files a run reads (``train.user_files(cfg)``: config key -> path)."""
    lister = getattr(train, "user_files", None)
    return dict(lister(cfg)) if lister else {}


def _cpu_seconds() -> float:
    """CPU seconds of this process and its waited-for children (forked workers included)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def check_float_path(requested: str) -> None:
    """Fail, in one line, when ``runtime.float_path`` differs from the process's float path
    (fixed when numpy and torch loaded; the command line restarts the process instead)."""
    if requested not in floatpath.MODES:
        raise ValueError(
            f"runtime.float_path={requested!r}; choose one of {', '.join(floatpath.MODES)}"
        )
    if requested != floatpath.mode():
        raise SystemExit(
            f"runtime.float_path={requested} but this process runs {floatpath.mode()} (fixed "
            f"when numpy and torch loaded): start it with {floatpath.MODE_VARIABLE}={requested}"
        )


def _restart_for_float_path(requested: str) -> None:
    """Command line: rerun this very command in a process whose float path is ``requested``
    (numpy's and torch's kernels are chosen when they load, so only a new process can switch)."""
    if requested not in floatpath.MODES or requested == floatpath.mode():
        return
    if floatpath.mode() == floatpath.NATIVE and requested == floatpath.PINNED:
        supported, reason = floatpath.cpu_supports_pin()
        if not supported:  # the pin cannot hold here: run natively, and the record says why
            return
    env = floatpath.native_environment() if requested == floatpath.NATIVE else dict(os.environ)
    env[floatpath.MODE_VARIABLE] = requested
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def reproduce_only(claims: ModuleType) -> dict[str, str]:
    """``claims.REPRODUCE_ONLY``: claim name -> why CI cannot afford it (measured CPU seconds).

    Such a claim is gated by ``scripts/reproduce.py`` (claim and held-out seeds) and shown in
    the README, never by CI's claim check; everything else in ``CLAIMS`` is gated in CI."""
    return dict(getattr(claims, "REPRODUCE_ONLY", {}))


def scale_claims(claims: ModuleType, scale: str) -> list[claims_lib.Claim]:
    """The claims a run at ``scale`` is judged by: ``CLAIMS`` at the toy claims' scale,
    ``REAL_CLAIMS`` on the real rung (declared before the first full real run), else none."""
    if scale == REAL_SCALE:
        return list(getattr(claims, "REAL_CLAIMS", []))
    return list(claims.CLAIMS) if scale == claims.SCALE else []


def table_spec(claims: ModuleType, scale: str, cfg: Any = None) -> tuple[list[str], dict[str, str]]:
    """The metrics and method labels of the results table (the real rung may name its own).
    A label that quotes a config value comes from ``claims.config_labels(cfg)``, and columns
    named after a config list from ``claims.config_table_metrics(cfg)``, so a run with that
    value changed says so instead of repeating the default's text."""
    if scale == REAL_SCALE:
        metrics = list(getattr(claims, "REAL_TABLE_METRICS", claims.TABLE_METRICS))
        labels = dict(getattr(claims, "REAL_LABELS", claims.LABELS))
    else:
        metrics, labels = list(claims.TABLE_METRICS), dict(claims.LABELS)
    if cfg is not None and hasattr(claims, "config_labels"):
        labels.update(claims.config_labels(cfg))
    if cfg is not None and scale != REAL_SCALE and hasattr(claims, "config_table_metrics"):
        metrics = list(claims.config_table_metrics(cfg))  # columns that follow a config list
    return metrics, labels


def claim_verdicts(claims: ModuleType, results: dict, scale: str) -> list[claims_lib.Verdict]:
    """Evaluate the paper's claims when the run is at the claims' scale (or the real rung) and
    has the methods of every gated claim; negative controls, diagnostics and the claims of
    ``REPRODUCE_ONLY`` are evaluated where their methods ran (a CI subset, ``CI_METHODS``, may
    leave a costly control, or a claim whose single seed exceeds the CI budget, to
    ``scripts/reproduce.py``)."""
    declared = scale_claims(claims, scale)
    ran = set(results)
    optional = reproduce_only(claims) if scale != REAL_SCALE else {}
    if not declared or not all(
        c.comparator.methods_needed() <= ran
        for c in declared
        if c.role == "claim" and c.name not in optional
    ):
        return []
    return claims_lib.evaluate(
        [c for c in declared if c.comparator.methods_needed() <= ran], results
    )


def check_claims(
    slug: str,
    out_dir: Path,
    seeds: list[int] | None = None,
    overrides: tuple[str, ...] = (),
    methods: list[str] | None = None,
    scale: str | None = None,
) -> dict[str, Any]:
    """Run the paper's claim experiment in-process (toy scale, the claims' methods and seeds,
    or the given subsets; ``scale="real"``: the real rung's ``REAL_METHODS`` and
    ``REAL_SEEDS``), in this process alone (``runtime.workers=1``: the claim's CPU budget then
    measures one process, and pytest's workers are not forked)."""
    _, claims = paper_modules(slug)
    scale = scale or claims.SCALE
    real = scale == REAL_SCALE  # compose_dict refuses a paper without a real rung
    default_seeds = claims.REAL_SEEDS if real else claims.SEEDS
    default_methods = claims.REAL_METHODS if real else claims.METHODS
    seeds = list(default_seeds if seeds is None else seeds)
    methods = list(default_methods if methods is None else methods)
    overrides = [
        f"scale={scale}",
        f"methods=[{','.join(methods)}]",
        f"seeds=[{','.join(map(str, seeds))}]",
        "runtime.workers=1",
        *overrides,
    ]
    cfg_dict = compose_dict(slug, scale, overrides[1:])
    return execute(slug, cfg_dict, out_dir, _command(slug, overrides))


def committed_results_path(slug: str, heldout: bool = False, scale: str = "toy") -> Path:
    """``papers/<slug>/results/toy.json`` (claim seeds), ``heldout.json``, or ``real.json``
    (``scale="real"``)."""
    name = REAL_FILE if scale == REAL_SCALE else (HELDOUT_FILE if heldout else TOY_FILE)
    return REPO_ROOT / "papers" / slug / RESULTS_DIR / name


def committed_differences(
    slug: str, record: dict[str, Any], heldout: bool = False, scale: str = "toy"
) -> list[str]:
    """What a claim run (``record``) computes differently from the committed results file, on
    the run's seeds, beyond ``claims.METRIC_TOLERANCES`` (exact by default); one line each."""
    _, claims = paper_modules(slug)
    path = committed_results_path(slug, heldout, scale)
    if not path.is_file():
        return [f"{path.relative_to(REPO_ROOT)} does not exist"]
    committed = read_json(path)["metrics"]
    tolerances = getattr(claims, "METRIC_TOLERANCES", {})
    return claims_lib.metric_differences(record["metrics"], committed, record["seeds"], tolerances)


def float_path_mismatch(slug: str, heldout: bool = False, scale: str = "toy") -> str:
    """Why this machine cannot compute the committed results file's numbers bit for bit: the
    file was made on another CPU vendor, where MKL runs another GEMM branch (see
    ``shared/floatpath.py``); '' when it can (files that predate the vendor record included)."""
    path = committed_results_path(slug, heldout, scale)
    made_on = read_json(path).get("float_path", {}).get("cpu_vendor") if path.is_file() else None
    here = floatpath.cpu_vendor()
    if made_on and made_on != here:
        return (
            f"papers/{slug}/{path.parent.name}/{path.name} was made on a {made_on} CPU and this "
            f"is a {here} one: MKL pins its AVX2 GEMM branch on Intel CPUs only, so the numbers "
            "differ in the last bits and are not compared (the claims still are)"
        )
    return ""


def _command(slug: str, overrides: list[str]) -> str:
    quoted = [f"'{o}'" if any(c in o for c in "[]{}, ") else o for o in overrides]
    return " ".join([f"python -m papers.{slug}.train", *quoted])


def _guard_run_folder(out_dir: Path, resolved: dict[str, Any], resume: bool) -> None:
    """Refuse to resume a folder made with a different config; wipe it when not resuming."""
    record_path = out_dir / CONFIG_RECORD_NAME
    comparable = {k: v for k, v in resolved.items() if k not in RESUME_NEUTRAL_KEYS}
    comparable["float_path"] = resolved["runtime"]["float_path"]
    if not resume:
        for name in ("runs", "metrics.jsonl", RESULT_NAME):
            path = out_dir / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
    elif record_path.exists() and read_json(record_path) != comparable:
        raise SystemExit(
            f"{out_dir} holds runs made with a different config, so they cannot be resumed.\n"
            "Rerun with resume=false to start over there, or change out_root."
        )
    write_json(comparable, record_path)


# Hydra flags of a command that runs no job (help, printing the config, completion) or composes
# another primary config than configs/config.yaml: the start check leaves those to Hydra.
NO_JOB_FLAGS = ("-h", "--help", "--hydra-help", "-c", "--cfg", "-i", "--info", "-sc")
OTHER_CONFIG_FLAGS = ("-cn", "--config-name", "-cp", "--config-path", "-cd", "--config-dir")
MULTIRUN_FLAGS = ("-m", "--multirun")


def check_at_start(slug: str, argv: list[str]) -> bool:
    """Command line: compose every job the command runs (each combination of a ``-m`` sweep)
    and run its :func:`start_checks` before Hydra starts, which makes the run folder and its
    ``.hydra/`` before it calls the task. A refused value (``ConfigError``: a bound, a key the
    schema lacks, a device or precision with no effect, a key the scale does not read) or a
    missing package, data set or asset (``PreflightError``) then stops the command in one
    line and leaves nothing on disk. Returns whether every job the task will run was checked
    here, in this process."""
    flags = {arg.split("=", 1)[0] for arg in argv if arg.startswith("-")}
    if flags & {*NO_JOB_FLAGS, *OTHER_CONFIG_FLAGS, "--shell-completion"}:
        return False
    overrides = [
        arg
        for arg in argv
        if "=" in arg and not arg.startswith("-") and not arg.lstrip("+~").startswith("hydra")
    ]
    jobs = [overrides]
    if flags & set(MULTIRUN_FLAGS):  # Hydra's own sweep expansion (its basic sweeper)
        jobs = BasicSweeper.split_arguments(
            OverridesParser.create().parse_overrides(overrides), None
        )[0]
    for job in jobs:
        scales = [o.split("=", 1)[1] for o in job if o.startswith("scale=")]
        rest = [o for o in job if not o.startswith("scale=")]
        try:
            start_checks(slug, compose_dict(slug, *scales[-1:], overrides=rest))
        except ValueError as error:  # ConfigError, an unknown scale: one line naming it
            raise SystemExit(str(error)) from None
        except HydraException:  # a value of the wrong type: Hydra reports it, as it composes
            return False  # the same config before it makes any folder
    # Another launcher runs the jobs elsewhere (a cluster node checks its own data), another
    # sweeper adds overrides of its own: their jobs check again in execute.
    elsewhere = ("hydra/launcher", "hydra.launcher", "hydra/sweeper", "hydra.sweeper")
    return not any(arg.lstrip("+~").startswith(elsewhere) for arg in argv)


def main(slug: str) -> None:
    """Command-line entry of ``papers/<slug>/train.py``: Hydra app with ``paper`` preset."""
    check_slug(slug)
    argv = sys.argv[1:]
    for arg in argv:
        if arg.startswith("paper=") and arg != f"paper={slug}":
            raise SystemExit(
                f"papers.{slug}.train runs paper {slug!r}; remove the {arg!r} override"
            )
    if f"scale={REAL_SCALE}" in argv and not has_real_rung(slug):
        raise SystemExit(f"papers.{slug} has no real rung: configs/{slug}/real.yaml does not exist")
    register_schema(slug)
    argv = [a for a in argv if not a.startswith("paper=")]
    checked = check_at_start(slug, argv)
    # Hydra's overrides are one contiguous positional group: put paper=<slug> inside it.
    first = next((i for i, a in enumerate(argv) if "=" in a and not a.startswith("-")), 0)
    sys.argv = [sys.argv[0], *argv[:first], f"paper={slug}", *argv[first:]]

    def task(cfg_dict: DictConfig) -> float | None:
        _restart_for_float_path(cfg_dict.runtime.float_path)
        hydra_cfg = HydraConfig.get()
        overrides = [o for o in hydra_cfg.overrides.task if not o.startswith("paper=")]
        output_dir = Path(hydra_cfg.runtime.output_dir)
        record = execute(slug, cfg_dict, output_dir, _command(slug, overrides), checked)
        _, claims = paper_modules(slug)
        method, metric = claims.PRIMARY
        return record["metrics"].get(method, {}).get(metric, {}).get("mean")

    hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")(task)()
