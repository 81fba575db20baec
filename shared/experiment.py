"""The (method x seed) grid every paper's toy experiment runs, with per-run resume, in one
process or in ``runtime.workers`` forked processes (one run each at a time)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tqdm.auto import tqdm

from shared.logger import MetricsLogger
from shared.records import Results, read_json, write_json

FINAL_NAME = "final.json"
T = TypeVar("T")


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

# Processes that run_grid may use; set for one experiment by :func:`parallel_runs`.
_workers = 1


@contextmanager
def parallel_runs(workers: int) -> Iterator[None]:
    """Let :func:`run_grid` run up to ``workers`` (method, seed) runs at once, in forked
    processes, while the block runs (``shared.entry`` wraps each experiment in it with
    ``runtime.workers``). Every run is seeded by its own (method, seed), one thread each, so the
    numbers are the same as in one process; only the order of ``metrics.jsonl`` lines differs.
    This holds only for a paper whose runs write nothing outside their own run folder: a
    shared artefact (resdex's base experts) is built first by :func:`map_jobs`, since runs
    that each built it lazily would race."""
    global _workers
    if workers < 1:
        raise ValueError(f"runtime.workers must be >= 1, got {workers}")
    saved, _workers = _workers, workers
    try:
        yield
    finally:
        _workers = saved


_forked_fn: Callable[..., object] | None = None


def map_jobs(
    fn: Callable[..., T],
    jobs: list[tuple],
    *,
    desc: str,
    progress: bool = True,
    fresh_process: bool = False,
) -> list[T]:
    """``[fn(*job) for job in jobs]``, in up to ``runtime.workers`` forked processes inside
    :func:`parallel_runs` (else here), results in the jobs' order: the grid's runs, and work
    done before a grid (resdex's base experts, which the grid's runs then read back instead of
    each building them, racing; t2v_turbo_v2's Algorithm 1 batches). ``fn`` must depend on its
    job alone (seeded by it, or drawing no random numbers) so that the numbers do not depend on
    the worker count; its results travel back pickled. ``fresh_process`` forks a new worker
    for every job (a training run then inherits nothing from the run before it)."""
    global _forked_fn
    if _workers <= 1 or len(jobs) <= 1:
        return [fn(*job) for job in tqdm(jobs, desc=desc, disable=not progress)]
    _forked_fn = fn
    try:
        context = multiprocessing.get_context("fork")
        tasks = 1 if fresh_process else None
        with context.Pool(min(_workers, len(jobs)), maxtasksperchild=tasks) as pool:
            return list(tqdm(pool.imap(_call_forked, jobs), total=len(jobs), desc=desc,
                             disable=not progress))  # fmt: skip
    finally:
        _forked_fn = None


def _call_forked(job: tuple):
    """One job of :func:`map_jobs` in a forked worker (the function is inherited)."""
    assert _forked_fn is not None
    return _forked_fn(*job)


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
    metrics of every newly finished run are logged too. Inside :func:`parallel_runs` with
    more than one worker, the unfinished pairs run first in forked processes, then every
    pair is read back from its ``final.json`` in the same order.
    """
    if not methods or not seeds:
        raise ValueError("methods and seeds must both be non-empty")
    results: Results = {m: {} for m in methods}
    curves: Curves = {m: {} for m in methods}
    pairs = [(m, s) for m in methods for s in seeds]
    pending = [
        (m, s) for m, s in pairs if not (Path(out_dir) / "runs" / f"{m}-s{s}" / FINAL_NAME).exists()
    ]
    if _workers > 1 and len(pending) > 1 and is_main_process:

        def finish(method: str, seed: int) -> None:  # in a worker: leave final.json behind
            run_dir = Path(out_dir) / "runs" / f"{method}-s{seed}"
            output = train_one(method, seed, run_dir)
            write_json({"metrics": output.metrics, "curves": output.curves}, run_dir / FINAL_NAME)
            if logger is not None:
                logger.log({"method": method, "seed": seed, "final": True, **output.metrics})

        map_jobs(finish, pending, desc="runs", progress=progress, fresh_process=True)
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
