"""Generate (and optionally verify) the NUPA text benchmark.

    python -m papers.nupa.generate [--scale toy|paper] [--out DIR] [--seed N] [--verify]

Reads the benchmark knobs from ``configs/nupa/<scale>.yaml`` (``benchmark`` section), writes
``<out>/<task>.jsonl`` for the 50 task names plus ``manifest.json`` (default out:
``outputs/nupa/benchmark/<scale>``) and prints the counts and timings. ``--verify`` re-checks
every sample with the independent oracle (:mod:`papers.nupa.oracle`) while streaming and exits
with status 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from papers.nupa.benchmark import SPLITS, iter_benchmark, write_benchmark
from papers.nupa.oracle import check_sample
from shared.config import SCALES, compose


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m papers.nupa.generate", description=__doc__)
    p.add_argument("--scale", choices=SCALES, default="toy", help="config scale (default toy)")
    p.add_argument(
        "--out", default=None, help="output folder (default outputs/nupa/benchmark/SCALE)"
    )
    p.add_argument("--seed", type=int, default=None, help="override benchmark.master_seed")
    p.add_argument("--verify", action="store_true", help="check every sample with the oracle")
    p.add_argument("--tasks", nargs="+", default=None, help="only these task names")
    p.add_argument("--max-failures", type=int, default=10, help="failures to print")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cfg = compose("nupa", args.scale)
    bench = cfg.benchmark
    if args.seed is not None:
        bench.master_seed = args.seed
    out = Path(args.out) if args.out else Path(cfg.out_root) / "nupa" / "benchmark" / args.scale

    stats = {"checked": 0, "agree": 0, "seconds": 0.0}
    failures: list[tuple[dict, str]] = []

    def verified(records):
        for record in records:
            start = time.perf_counter()
            reason = check_sample(record)
            stats["seconds"] += time.perf_counter() - start
            stats["checked"] += 1
            if reason is None:
                stats["agree"] += 1
            else:
                failures.append((record, reason))
            yield record

    print(f"NUPA benchmark, scale={args.scale}, master_seed={bench.master_seed} -> {out}")
    start = time.perf_counter()
    records = iter_benchmark(bench, args.tasks)
    if args.verify:
        records = verified(records)
    manifest = write_benchmark(records, out, config=bench)
    total = time.perf_counter() - start
    generation = total - stats["seconds"]
    manifest["generation_seconds"] = round(generation, 3)
    if args.verify:
        manifest["verification"] = {
            "checked": stats["checked"],
            "agree": stats["agree"],
            "seconds": round(stats["seconds"], 3),
        }
    (out / "manifest.json").write_text(_dumps(manifest), encoding="utf-8")

    totals = manifest["totals"]
    print(
        f"{manifest['n_tasks']} tasks, "
        + ", ".join(f"{s} {totals[s]}" for s in SPLITS)
        + f" samples; generation + writing {generation:.2f} s"
    )
    if args.verify:
        print(
            f"oracle: {stats['agree']}/{stats['checked']} samples agree ({stats['seconds']:.2f} s)"
        )
        for record, reason in failures[: args.max_failures]:
            print(
                f"  DISAGREE {record['task']} [{record['split']}] {record['question']!r}"
                f"{record['answer']!r}: {reason}"
            )
        if failures:
            raise SystemExit(1)
    return 0


def _dumps(obj) -> str:
    import json

    return json.dumps(obj, indent=2) + "\n"


if __name__ == "__main__":
    main()
