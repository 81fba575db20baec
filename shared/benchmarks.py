"""What the papers' ``benchmark.py`` scripts share: interleaved timing and their results file.

A speed claim here is a ratio of two codes timed on the same machine, one thread each, in
alternating order (so a drift in machine load hits both alike), with the median over rounds
reported. Benchmarks print their tables and write ``papers/<slug>/results/benchmark.json`` with
the machine, commit, float path and package versions beside the numbers; tests never assert
their speed (a smoke test runs each at its smallest size).
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared import floatpath
from shared.config import REPO_ROOT
from shared.records import git_commit, package_versions, write_json

BENCHMARK_NAME = "benchmark.json"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, ``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall seconds of one call of ``fn`` and what it returned."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def interleaved(
    candidates: dict[str, Callable[[], Any]],
    repeats: int,
    warmup: int = 1,
    before: Callable[[], Any] | None = None,
) -> dict[str, float]:
    """Median wall seconds of each candidate over ``repeats`` rounds, the order of the
    candidates reversed every other round; ``warmup`` untimed calls of each first. ``before``
    runs untimed before every call (e.g. returning freed memory to the OS)."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
    prepare = before or (lambda: None)
    for _ in range(warmup):
        for fn in candidates.values():
            prepare()
            fn()
    seconds: dict[str, list[float]] = {name: [] for name in candidates}
    order = list(candidates.items())
    for r in range(repeats):
        for name, fn in order if r % 2 == 0 else order[::-1]:
            prepare()
            seconds[name].append(timed(fn)[0])
    return {name: statistics.median(values) for name, values in seconds.items()}


def benchmark_path(slug: str) -> Path:
    return REPO_ROOT / "papers" / slug / "results" / BENCHMARK_NAME


def write_benchmark(
    slug: str, results: dict[str, Any], argv: list[str] | None, out: Path | None = None
) -> Path:
    """Write ``results`` with the environment they were measured in to
    ``papers/<slug>/results/benchmark.json`` (or ``out``), atomically; return the path.
    ``argv`` is the benchmark's command line (``None``: this process's)."""
    path = Path(out) if out is not None else benchmark_path(slug)
    args = sys.argv[1:] if argv is None else argv
    record = {
        "paper": slug,
        "command": " ".join(["python -m papers." + slug + ".benchmark", *args]),
        "results": results,
        "machine": {"cpu": cpu_model(), "platform": platform.platform()},
        "git_commit": git_commit(),
        "float_path": floatpath.state(),
        "versions": package_versions(),
    }
    write_json(record, path)
    print(f"wrote {path}")
    return path
