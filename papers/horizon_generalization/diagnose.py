"""Why the first real protocol failed (``python -m papers.horizon_generalization.diagnose``).

The first protocol (``results/real_first.json``) rolled out the greedy argmax of each critic
on MEDIUM_MAZE; the four central claims failed there. The issue's lead: a greedy policy on a
tile (no velocity) whose argmax points into a wall stays pressed against it, while the
official code evaluates a sampled stochastic actor (``deterministic_eval=False``) and its
headline task is an open arena. The decisive experiment is the second protocol,
``python scripts/reproduce.py --paper horizon_generalization --scale real --write``
(``results/real.json``, ``configs/horizon_generalization/real.yaml``): the same critics
(same seeds, data and training) rolled out by the sampled policy ``softmax(f / 1)`` and, on
the same start-goal pairs, by the greedy one (``greedy_*`` metrics), on MEDIUM_MAZE and on the
wall-free OPEN map (layout ``arena``).

This module reads both records (no training: the critics are the run's) and prints, per
layout, protocol and critic, near and far success, the far pairs that ended stuck in one tile,
and the central claims' quantities; it checks that the greedy rollouts of the second run
reproduce the first protocol's numbers (same critics, same pairs). ``--write`` stores the
numbers in ``results/diagnosis.json`` (:func:`shared.diagnosis.write_evidence`), which
``claims.REAL_DIAGNOSES`` quotes.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from shared.diagnosis import cpu_seconds, write_evidence
from shared.records import read_json
from shared.tables import markdown_table

SLUG = "horizon_generalization"
RESULTS = Path(__file__).resolve().parent / "results"
FIRST_FILE, SECOND_FILE = "real_first.json", "real.json"
COMMAND = "python -m papers.horizon_generalization.diagnose --write"
CRITICS = ("l2", "mrn", "mlp")  # the central claims' critics
LAYOUTS = {"medium": "MEDIUM_MAZE", "arena": "OPEN"}  # real.yaml's layouts and their maps
# (number key suffix, metric in the records); the stuck fraction exists from the second run on.
METRICS = (("near", "near_success"), ("far", "far_success"), ("stuck", "far_stuck_fraction"))
MARGIN = 0.30  # claims.REAL_CLAIMS: (quasi)metric far success >= MLP's + 0.30
TOLERANCE = 1e-9  # same critics and pairs: the greedy rollouts must match exactly


def metric_mean(record: dict, run: str, metric: str) -> float:
    """Mean over seeds of ``metric`` for ``run`` (NaN when the record lacks it)."""
    entry = record["metrics"].get(run, {}).get(metric)
    return float(entry["mean"]) if entry else math.nan


def metric_per_seed(record: dict, run: str, metric: str) -> dict[str, float]:
    entry = record["metrics"].get(run, {}).get(metric)
    return dict(entry["per_seed"]) if entry else {}


def protocol_numbers(record: dict, layout: str, protocol: str, prefix: str = "") -> dict:
    """``{protocol}_{layout}_{critic}_{near|far|stuck}`` and the central claims' quantities
    (margins over the MLP, min far - near of l2 and MRN) read from metrics ``prefix + m``."""
    numbers = {}
    for critic in CRITICS:
        for key, metric in METRICS:
            numbers[f"{protocol}_{layout}_{critic}_{key}"] = metric_mean(
                record, f"{layout}/{critic}", prefix + metric
            )
    for critic in ("l2", "mrn"):
        numbers[f"{protocol}_{layout}_margin_{critic}"] = (
            numbers[f"{protocol}_{layout}_{critic}_far"] - numbers[f"{protocol}_{layout}_mlp_far"]
        )
    numbers[f"{protocol}_{layout}_far_minus_near"] = min(
        numbers[f"{protocol}_{layout}_{c}_far"] - numbers[f"{protocol}_{layout}_{c}_near"]
        for c in ("l2", "mrn")
    )
    return numbers


def first_protocol_check(first: dict, second: dict) -> float:
    """Largest difference, over critics, seeds and bins, between the first protocol's
    success and the second run's greedy rollouts of the same critics on the same pairs."""
    worst = 0.0
    for critic in (*CRITICS, "oracle", "untrained"):
        run = f"medium/{critic}"
        for b in ("near", "mid", "far"):
            before = metric_per_seed(first, run, f"{b}_success")
            after = metric_per_seed(second, run, f"greedy_{b}_success")
            for seed, value in before.items():
                worst = max(worst, abs(value - after.get(seed, math.inf)))
    return worst


def diagnose(results: Path = RESULTS) -> tuple[dict, dict]:
    """The numbers (flat) and details (per-seed tables) of both protocols."""
    first = read_json(results / FIRST_FILE)
    second = read_json(results / SECOND_FILE)
    numbers = protocol_numbers(first, "medium", "first")
    for layout in LAYOUTS:
        numbers |= protocol_numbers(second, layout, "official")
        numbers |= protocol_numbers(second, layout, "greedy", prefix="greedy_")
        numbers[f"official_{layout}_train_far_fraction"] = metric_mean(
            second, f"{layout}/l2", "train_far_fraction"
        )
        numbers[f"official_{layout}_oracle_far"] = metric_mean(
            second, f"{layout}/oracle", "far_success"
        )
    numbers["first_protocol_max_difference"] = first_protocol_check(first, second)
    numbers["first_run_cpu_s"] = float(first["cpu_time_s"])
    numbers["official_run_cpu_s"] = float(second["cpu_time_s"])
    numbers = {k: v for k, v in numbers.items() if math.isfinite(v)}
    details = {
        "first_protocol": {"file": FIRST_FILE, "commit": first["git_commit"]},
        "official_protocol": {"file": SECOND_FILE, "commit": second["git_commit"]},
        "claims": {
            name: {c["name"]: c["measured"] for c in record["claims"] if c["role"] == "claim"}
            for name, record in ((FIRST_FILE, first), (SECOND_FILE, second))
        },
        "per_seed": {
            f"{layout}/{critic}": {
                metric: metric_per_seed(second, f"{layout}/{critic}", metric)
                for metric in (
                    "near_success",
                    "far_success",
                    "far_stuck_fraction",
                    "greedy_near_success",
                    "greedy_far_success",
                    "greedy_far_stuck_fraction",
                )
            }
            for layout in LAYOUTS
            for critic in CRITICS
        },
    }
    return numbers, details


def table(numbers: dict) -> str:
    rows = []
    runs = [("first", "medium")] + [(p, lay) for lay in LAYOUTS for p in ("greedy", "official")]
    for protocol, layout in runs:
        name = {"first": "greedy (first run)", "greedy": "greedy", "official": "sampled"}
        for critic in CRITICS:
            values = [
                numbers.get(f"{protocol}_{layout}_{critic}_{k}", math.nan) for k, _ in METRICS
            ]
            rows.append([LAYOUTS[layout], name[protocol], critic, *(f"{v:.3f}" for v in values)])
        margins = [numbers[f"{protocol}_{layout}_margin_{c}"] for c in ("l2", "mrn")]
        drop = numbers[f"{protocol}_{layout}_far_minus_near"]
        rows.append(
            [
                LAYOUTS[layout],
                name[protocol],
                f"margins l2 / MRN (need {MARGIN})",
                f"{margins[0]:.3f}",
                f"{margins[1]:.3f}",
                f"far - near {drop:.3f}",
            ]
        )
    return markdown_table(["map", "policy", "critic", "near", "far", "far stuck"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store results/diagnosis.json")
    args = parser.parse_args(argv)
    started = (time.perf_counter(), cpu_seconds())
    numbers, details = diagnose()
    print(table(numbers))
    print(
        "greedy rollouts of the second run vs the first protocol, largest difference: "
        f"{numbers['first_protocol_max_difference']:.3g}"
    )
    if numbers["first_protocol_max_difference"] > TOLERANCE:
        print("warning: the second run's greedy rollouts do not reproduce the first protocol")
    if args.write:
        path = write_evidence(SLUG, numbers, COMMAND, started, details)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
