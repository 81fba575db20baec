"""Score a JSONL file of model answers on the NUPA benchmark (brief Sec. 3.7, 3.8).

Each line is one test sample with at least ``"task"`` (variant name such as
``add_Integer_Integer_Integer``), ``"digit"``, ``"answer"`` (ground truth) and ``"prediction"``
(the model's raw generated text, or just its answer). Lines written by the benchmark generator
carry ``"type_out"`` as well; a user only adds ``"prediction"``. Usage::

    python -m papers.nupa.evaluate preds.jsonl --out metrics.json
    python -m papers.nupa.evaluate preds.jsonl --marker "The answer is"   # API models
    python -m papers.nupa.evaluate preds.jsonl --marker "So the answer is"  # CoT

A bad prediction (missing, null, not a string, no readable number) is scored as a wrong answer;
a line that cannot be scored at all (invalid JSON, no task/digit/answer, a ground truth that is
not a number of its type) is skipped and reported with its line number.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from papers.nupa.formats import FORMATS, split_parts
from papers.nupa.metrics import (
    BUCKET_RANGES,
    BUCKETS,
    DEFAULT_MARKER,
    IN_DOMAIN,
    METRICS,
    OUT_OF_DOMAIN,
    DlengthMode,
    aggregate,
    extract_answer,
    infer_max_length,
    score,
)

# Parameter types of the official task names "{task}_{typeA}_{typeB}_{typeOut}" (Sec. 3.4).
_NAME_TYPES = (*FORMATS, "none")
_SHORT = {"exact_match": "EM", "digit_match": "DM", "dlength": "dlen"}
_MAX_PRINTED_SKIPS = 20


def parse_task_name(task: str) -> tuple[str, str | None, str | None, str]:
    """``(base task, type a, type b, output type)`` of a variant name.

    Task bases may hold underscores (``digit_max``, ``max_hard``) but type names do not, so the
    last three ``_`` fields are the types. A name not of that shape is read as
    ``(name, None, None, last field)``.
    """
    fields = task.rsplit("_", 3)
    if len(fields) == 4 and all(f in _NAME_TYPES for f in fields[1:]):
        return fields[0], fields[1], fields[2], fields[3]
    return task, None, None, task.rsplit("_", 1)[-1]


def task_max_length(task: str, digits: Iterable[int] = ()) -> int:
    """20 or 100: the length scale that sets a task's S/M/L/XL ranges (brief Sec. 3.8).

    Asks the task registry (``papers.nupa.tasks.max_length``); for a name it does not know, or
    when the registry is unavailable, infers it from the digits seen (:func:`infer_max_length`).
    """
    try:
        from papers.nupa.tasks import max_length  # lazy: the registry is optional here

        value = int(max_length(task))
    except Exception:  # any registry failure just means "unknown task": use the data
        return infer_max_length(digits)
    return value if value in BUCKET_RANGES else infer_max_length(digits)


def _as_digit(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        return int(value.strip())
    return None


def _prepare(record: Any) -> tuple[dict | None, str]:
    """The fields needed to score ``record``, or None and the reason it cannot be scored."""
    if not isinstance(record, Mapping):
        return None, f"not a JSON object ({type(record).__name__})"
    missing = [k for k in ("task", "digit", "answer") if record.get(k) is None]
    if missing:
        return None, f"missing field(s) {', '.join(missing)}"
    task = record["task"]
    if not isinstance(task, str) or not task:
        return None, f"task must be a non-empty string, got {task!r}"
    digit = _as_digit(record["digit"])
    if digit is None:
        return None, f"digit must be a non-negative integer, got {record['digit']!r}"
    _, type_a, _, type_from_name = parse_task_name(task)
    type_out = record.get("type_out")
    if type_out is None:
        type_out = type_from_name
    if not isinstance(type_out, str) or type_out not in FORMATS:
        return None, f"unknown output type {type_out!r} for task {task!r}"
    answer = record["answer"]
    if isinstance(answer, int) and not isinstance(answer, bool):
        answer = str(answer)  # a JSON integer answer is unambiguous; a JSON float is not
    if not isinstance(answer, str) or split_parts(answer.strip(), type_out) is None:
        return None, f"answer {answer!r} is not a valid {type_out}"
    return {
        "task": task,
        "representation": type_a if type_a not in (None, "none") else type_out,
        "type_out": type_out,
        "digit": digit,
        "answer": answer.strip(),
        "prediction": record.get("prediction"),
    }, ""


def _evaluate(
    numbered: Iterable[tuple[int, Any]],
    skipped: list[dict],
    marker: str | None,
    max_lengths: Mapping[str, int] | None,
    dlength_mode: DlengthMode,
) -> dict:
    rows: list[dict] = []
    for line, record in numbered:
        fields, reason = _prepare(record)
        if fields is None:
            skipped.append({"line": line, "reason": reason})
            continue
        extracted = extract_answer(fields["prediction"], fields["type_out"], marker)
        rows.append(
            {
                "line": line,
                **{k: v for k, v in fields.items() if k != "prediction"},
                "extracted": extracted,
                **score(extracted, fields["answer"], fields["type_out"], dlength_mode),
            }
        )

    digits_of: dict[str, list[int]] = {}
    first_of: dict[str, dict] = {}
    for row in rows:
        digits_of.setdefault(row["task"], []).append(row["digit"])
        first_of.setdefault(row["task"], row)
    overrides = dict(max_lengths or {})
    default = overrides.pop("*", None)
    scales = {
        task: overrides.get(task) or default or task_max_length(task, digits)
        for task, digits in digits_of.items()
    }
    per_task = aggregate(rows, METRICS, scales)
    tasks = {}
    for task in sorted(per_task):
        tasks[task] = {
            "representation": first_of[task]["representation"],
            "type_out": first_of[task]["type_out"],
            **per_task[task],
        }
    skipped.sort(key=lambda s: s["line"])
    return {
        "marker": marker,
        "dlength_mode": dlength_mode,
        "n_scored": len(rows),
        "n_skipped": len(skipped),
        "skipped": skipped,
        "tasks": tasks,
        "records": rows,
    }


def evaluate_records(
    records: Iterable[Any],
    marker: str | None = DEFAULT_MARKER,
    max_lengths: Mapping[str, int] | None = None,
    dlength_mode: DlengthMode = "total",
) -> dict:
    """Score already-parsed records (dicts as in the JSONL file); see :func:`main` for the
    layout of the result. ``max_lengths`` maps task -> 20 or 100 (key ``"*"``: every task) and
    overrides the registry. Records that cannot be scored are listed under ``"skipped"`` with
    their 1-based position as ``"line"``."""
    return _evaluate(enumerate(records, start=1), [], marker, max_lengths, dlength_mode)


def evaluate_file(
    path: str | Path,
    marker: str | None = DEFAULT_MARKER,
    max_lengths: Mapping[str, int] | None = None,
    dlength_mode: DlengthMode = "total",
) -> dict:
    """Score a JSONL file; invalid JSON lines are skipped with their line number."""
    # Undecodable bytes become U+FFFD rather than aborting the whole file.
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    numbered, skipped = [], []
    # split("\n"), not splitlines(): JSON strings may hold raw U+2028 and similar separators.
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            numbered.append((line_no, json.loads(line)))
        except json.JSONDecodeError as error:
            skipped.append({"line": line_no, "reason": f"invalid JSON ({error.msg})"})
    return _evaluate(numbered, skipped, marker, max_lengths, dlength_mode)


# ---------------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_tables(result: dict) -> str:
    """The range table (per task x representation x length range, plus in/out of domain) and
    the digit table (well-learned / performance-preserving digit per metric)."""
    tasks = result["tasks"]
    if not tasks:
        return "no scored records"
    width = max(len("task"), *(len(t) for t in tasks))
    rep_width = max(len("repr"), *(len(v["representation"]) for v in tasks.values()))
    head = (
        f"{'task':<{width}}  {'repr':<{rep_width}}  {'range':<5}  {'digits':>7}  {'n':>6}  "
        + "  ".join(f"{_SHORT[m]:>6}" for m in METRICS)
    )
    lines = [head, "-" * len(head)]
    for task, info in tasks.items():
        buckets = info["per_bucket"]
        groups = [(b, buckets[b], "{}-{}".format(*buckets[b]["digits"])) for b in BUCKETS]
        groups.append(("ID", info["in_domain"], "+".join(IN_DOMAIN)))
        groups.append(("OOD", info["out_of_domain"], "+".join(OUT_OF_DOMAIN)))
        for name, stats, span in groups:
            lines.append(
                f"{task:<{width}}  {info['representation']:<{rep_width}}  {name:<5}  "
                f"{span:>7}  {stats['n']:>6}  " + "  ".join(f"{_fmt(stats[m]):>6}" for m in METRICS)
            )
    lines.append("")
    labels = [f"WL {_SHORT[m]}" for m in METRICS] + [f"PP {_SHORT[m]}" for m in METRICS]
    head = f"{'task':<{width}}  {'max':>4}  " + "  ".join(f"{c:>7}" for c in labels)
    lines += [head, "-" * len(head)]
    for task, info in tasks.items():
        values = [info["well_learned_digit"][m] for m in METRICS]
        values += [info["performance_preserving_digit"][m] for m in METRICS]
        lines.append(
            f"{task:<{width}}  {info['max_length']:>4}  "
            + "  ".join(f"{'-' if v is None else v:>7}" for v in values)
        )
    lines.append(
        "WL = well-learned digit, PP = performance-preserving digit (brief Sec. 3.8); "
        "'-' = no digit qualifies"
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def _max_length_spec(text: str) -> tuple[str, int]:
    task, _, value = text.rpartition("=")
    try:
        number = int(value)
    except ValueError:
        number = None
    if number not in BUCKET_RANGES:
        raise argparse.ArgumentTypeError(
            f"expected TASK=N or N with N in {sorted(BUCKET_RANGES)}, got {text!r}"
        )
    return task or "*", number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m papers.nupa.evaluate",
        description="Score NUPA model answers: exact match, digit match and dlength per "
        "length range (brief Sec. 3.8).",
    )
    parser.add_argument("predictions", help="JSONL file: task, digit, answer, prediction")
    parser.add_argument(
        "--out", help="JSON file for all results (default: input path, suffix .metrics.json)"
    )
    parser.add_argument(
        "--marker",
        default=DEFAULT_MARKER,
        help="the answer follows the first occurrence of this text (default ' = '; "
        "'The answer is' for API models, 'So the answer is' for CoT; '' = whole text)",
    )
    parser.add_argument(
        "--max-length-of-task",
        action="append",
        type=_max_length_spec,
        default=[],
        metavar="[TASK=]N",
        help="length scale (20 or 100) of TASK, or of every task when TASK is omitted; "
        "overrides the task registry (repeatable)",
    )
    parser.add_argument(
        "--dlength-mode",
        choices=("total", "per_part"),
        default="total",
        help="'total' (text benchmark, default) or 'per_part' (number-model variant)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Score a predictions file, print the tables, write the JSON; 0 on success, 1 when no line
    could be scored, 2 on an unreadable input or output.

    JSON layout: ``{"marker", "dlength_mode", "n_scored", "n_skipped",
    "skipped": [{"line", "reason"}], "tasks": {task: {"representation", "type_out",
    "max_length", "n", "per_digit": {digit: {"n", metric...}}, "per_bucket": {"S"|"M"|"L"|"XL":
    {"digits": [lo, hi], "n", metric...}}, "in_domain": {...}, "out_of_domain": {...},
    "well_learned_digit": {metric: digit|null}, "performance_preserving_digit": {...}}},
    "records": [{"line", "task", "representation", "type_out", "digit", "answer", "extracted",
    metric...}]}`` with metric in exact_match, digit_match, dlength (mean None/null when a
    range is empty).
    """
    args = build_parser().parse_args(argv)
    path = Path(args.predictions)
    try:
        result = evaluate_file(
            path,
            marker=args.marker or None,
            max_lengths=dict(args.max_length_of_task),
            dlength_mode=args.dlength_mode,
        )
    except OSError as error:
        print(f"error: cannot read {path}: {error}", file=sys.stderr)
        return 2

    for skip in result["skipped"][:_MAX_PRINTED_SKIPS]:
        print(f"skipped line {skip['line']}: {skip['reason']}", file=sys.stderr)
    if result["n_skipped"] > _MAX_PRINTED_SKIPS:
        print(f"... and {result['n_skipped'] - _MAX_PRINTED_SKIPS} more", file=sys.stderr)
    print(format_tables(result))
    print(f"\nscored {result['n_scored']} records, skipped {result['n_skipped']} lines")

    out = Path(args.out) if args.out else path.with_suffix(".metrics.json")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        print(f"error: cannot write {out}: {error}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0 if result["n_scored"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
