"""The (method x seed) grid every paper's toy experiment runs, with per-run resume."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from shared.logger import MetricsLogger
from shared.records import Results, read_json, write_json

FINAL_NAME = "final.json"


@dataclass
class RunOutput:
    """What one (method, seed) run reports: scalar metrics and optional curves."""

    metrics: dict[str, float]
    curves: dict[str, list[float]] = field(default_factory=dict)


def check_names(kind: str, requested: list[str], known) -> None:
    """Fail before any work when a config names an unknown method (or graph, toy...)."""
    unknown = sorted(set(requested) - set(known))
    if unknown:
        raise ValueError(f"unknown {kind} {unknown}; choose from {sorted(known)}")


def enabled_settings(settings: dict) -> dict:
    """A name -> setting mapping without the settings disabled with ``null`` (a config that
    inherits settings from another file switches them off that way); refuses an empty one."""
    enabled = {name: s for name, s in settings.items() if s is not None}
    if not enabled:
        raise ValueError("no settings configured (all are missing or null)")
    return enabled


# method -> curve name -> one list per seed
Curves = dict[str, dict[str, list[list[float]]]]


def run_grid(
    methods: list[str],
    seeds: list[int],
    out_dir: Path,
    train_one: Callable[[str, int, Path], RunOutput],
    *,
    is_main_process: bool = True,
    progress: bool = True,
    logger: MetricsLogger | None = None,
) -> tuple[Results, Curves]:
    """Run ``train_one(method, seed, run_dir)`` for every pair, skipping finished ones.

    Each pair gets ``out_dir/runs/<method>-s<seed>/``; a finished run leaves ``final.json``
    there and is read back instead of retrained, and an interrupted one resumes from the
    checkpoint its loop left (see :func:`shared.loop.fit`). With a ``logger``, the final
    metrics of every newly finished run are logged too.
    """
    if not methods or not seeds:
        raise ValueError("methods and seeds must both be non-empty")
    results: Results = {m: {} for m in methods}
    curves: Curves = {m: {} for m in methods}
    pairs = [(m, s) for m in methods for s in seeds]
    for method, seed in tqdm(pairs, desc="runs", disable=not (progress and is_main_process)):
        run_dir = Path(out_dir) / "runs" / f"{method}-s{seed}"
        final_path = run_dir / FINAL_NAME
        if final_path.exists():
            saved = read_json(final_path)
            output = RunOutput(saved["metrics"], saved["curves"])
        else:
            output = train_one(method, seed, run_dir)
            if is_main_process:
                write_json({"metrics": output.metrics, "curves": output.curves}, final_path)
            if logger is not None:
                logger.log({"method": method, "seed": seed, "final": True, **output.metrics})
        for name, value in output.metrics.items():
            results[method].setdefault(name, []).append(float(value))
        for name, values in output.curves.items():
            curves[method].setdefault(name, []).append([float(v) for v in values])
    return results, curves
