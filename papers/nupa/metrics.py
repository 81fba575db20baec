"""String metrics of the NUPA benchmark and their aggregation (brief Sec. 3.8).

Three metrics score a model's answer against the ground truth, both written in the answer's
output type (brief Sec. 3.1):

* ``exact_match``: 1 iff the digit strings of all parts agree (representation sensitive, so
  ``9.90`` vs ``9.9`` and an unreduced fraction are wrong);
* ``digit_match``: the share of ground-truth digits reproduced at the same position, where
  integer-like parts are compared from the right and decimal parts from the left;
* ``dlength``: how far the predicted digit count is from the true one.

The number-token models of the paper additionally report ``mse`` and ``digit_diff``. Scores are
averaged per (task, digit), then over the length ranges S/M/L/XL and the in-domain (S+M) and
out-of-domain (L+XL) halves; per task the *well-learned* and *performance-preserving* digits
summarise where a curve stops being good. Pure Python: ints, strings and ``fractions``.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, Literal

from papers.nupa.formats import (
    FLOAT,
    FRACTION,
    INTEGER,
    PLAIN_INT,
    RIGHT,
    SCIENTIFIC,
    check_type,
)

METRICS = ("exact_match", "digit_match", "dlength")
NUMBER_MODEL_METRICS = ("mse", "digit_diff")

# Where the answer starts in a generated text (brief Sec. 3.8).
DEFAULT_MARKER = " = "  # models that continue the benchmark's "question = " prompt
API_MARKER = "The answer is"  # chat/API models asked to end with this sentence
COT_MARKER = "So the answer is"  # rule-following chain of thought
# The official CoT reader also accepts the sentence in lower case (mid-sentence).
_MARKER_ALTERNATIVES = {COT_MARKER: ("so the answer is",)}

DlengthMode = Literal["total", "per_part"]

# ---------------------------------------------------------------------------------------------
# Answer extraction and splitting
# ---------------------------------------------------------------------------------------------


def extract_answer(text: Any, type_name: str, marker: str | None = DEFAULT_MARKER) -> str:
    """The answer a model wrote in ``text``, or ``""`` when there is none (brief Sec. 3.8).

    Takes the text after the first ``marker`` (the whole text when the marker is absent or
    None), strips it and matches the output type's pattern at its *start*, so leading prose
    makes the answer unreadable while trailing prose is ignored. Signs are dropped and an
    exponent ``E`` becomes ``e``: ``"... = 1.2E+3 foo"`` -> ``"1.2e3"``.
    """
    fmt = check_type(type_name)
    if not isinstance(text, str):
        return ""
    if marker:
        for candidate in (marker, *_MARKER_ALTERNATIVES.get(marker, ())):
            position = text.find(candidate)
            if position >= 0:
                text = text[position + len(candidate) :]
                break
    # ASCII digits only: the ground truth is ASCII, and a non-ASCII "digit" would otherwise
    # count towards dlength as if it were a digit of the answer.
    found = re.match(fmt.pattern, text.strip(), flags=re.ASCII)
    if found is None:
        return ""
    return found.group().replace("+", "").replace("-", "").replace("E", "e")


def answer_parts(text: Any, type_name: str) -> list[str]:
    """The digit strings of the parts of an answer (brief Sec. 3.8).

    The text is cut at the type's separators in order (``.`` for Float, ``/`` for Fraction,
    ``.`` then ``e`` for ScientificNotation) and only the digit characters of each piece are
    kept. A text lacking a separator, or not a string at all, is malformed and yields one
    empty string per part, which every metric scores as a wrong answer.
    """
    fmt = check_type(type_name)
    empty = [""] * len(fmt.aligns)
    if not isinstance(text, str):
        return empty
    rest = text.replace("E", "e")
    pieces = []
    for separator in fmt.separators:
        head, found, rest = rest.partition(separator)
        if not found:
            return empty
        pieces.append(head)
    pieces.append(rest)
    return ["".join(c for c in piece if c in "0123456789") for piece in pieces]


def _gt_parts(gt: str, type_name: str) -> list[str]:
    parts = answer_parts(gt, type_name)
    if not any(parts):
        raise ValueError(f"ground truth {gt!r} has no digits as a {type_name}")
    return parts


def _oriented(parts: list[str], type_name: str) -> list[str]:
    """Each part written in its reading order: right-aligned parts reversed, so that index 0
    is the units digit of integer-like parts and the first decimal of decimal parts."""
    aligns = check_type(type_name).aligns
    return [p[::-1] if align == RIGHT else p for p, align in zip(parts, aligns, strict=True)]


# ---------------------------------------------------------------------------------------------
# The three text metrics
# ---------------------------------------------------------------------------------------------


def exact_match(pred: Any, gt: str, type_name: str) -> float:
    """1.0 iff the part digit strings of ``pred`` and ``gt`` are equal (brief Sec. 3.8).

    Representation sensitive by design: ``"9.90"`` vs ``"9.9"`` scores 0.
    """
    return float(answer_parts(pred, type_name) == _gt_parts(gt, type_name))


def digit_match(pred: Any, gt: str, type_name: str) -> float:
    """Share of ground-truth digits matched position by position (brief Sec. 3.8).

    Per part, digits are paired from the right for right-aligned parts (integer parts,
    numerators, denominators, exponents) and from the left for left-aligned ones (decimals),
    over the overlap of the two lengths; the matches of all parts are divided by the total
    number of ground-truth digits.
    """
    gt_parts = _oriented(_gt_parts(gt, type_name), type_name)
    pred_parts = _oriented(answer_parts(pred, type_name), type_name)
    # Only the overlap of each pair of parts is compared (``strict=False`` on purpose).
    hits = sum(
        sum(p == g for p, g in zip(pp, gp, strict=False))
        for pp, gp in zip(pred_parts, gt_parts, strict=True)
    )
    return hits / sum(len(g) for g in gt_parts)


def dlength(pred: Any, gt: str, type_name: str, mode: DlengthMode = "total") -> float:
    """Difference in digit count between ``pred`` and ``gt`` (brief Sec. 3.8).

    ``mode="total"`` (text benchmark): ``|total pred digits - total gt digits|``.
    ``mode="per_part"`` (number-token models): ``sum over parts of |pred part - gt part|``,
    which also counts digits moved across a separator (``1.23`` vs ``12.3``: 0 vs 2).
    """
    pred_parts = answer_parts(pred, type_name)
    gt_parts = _gt_parts(gt, type_name)
    if mode == "total":
        return float(abs(sum(map(len, pred_parts)) - sum(map(len, gt_parts))))
    if mode == "per_part":
        return float(sum(abs(len(p) - len(g)) for p, g in zip(pred_parts, gt_parts, strict=True)))
    raise ValueError(f"unknown dlength mode {mode!r}; use 'total' or 'per_part'")


def score(pred: Any, gt: str, type_name: str, dlength_mode: DlengthMode = "total") -> dict:
    """All three text metrics of one answer: ``{"exact_match", "digit_match", "dlength"}``."""
    return {
        "exact_match": exact_match(pred, gt, type_name),
        "digit_match": digit_match(pred, gt, type_name),
        "dlength": dlength(pred, gt, type_name, mode=dlength_mode),
    }


# ---------------------------------------------------------------------------------------------
# Number-model extras
# ---------------------------------------------------------------------------------------------


def answer_value(text: Any, type_name: str) -> Fraction | None:
    """The exact value of an answer, or None when it is malformed (a part without digits, or
    a zero denominator, which has no value)."""
    parts = answer_parts(text, type_name)
    if not all(parts):
        return None
    kind = INTEGER if type_name == PLAIN_INT else type_name
    if kind == INTEGER:
        return Fraction(int(parts[0]))
    if kind == FLOAT:
        return int(parts[0]) + Fraction(int(parts[1]), 10 ** len(parts[1]))
    if kind == FRACTION:
        den = int(parts[1])
        return Fraction(int(parts[0]), den) if den else None
    if kind == SCIENTIFIC:
        mantissa = int(parts[0]) + Fraction(int(parts[1]), 10 ** len(parts[1]))
        return mantissa * 10 ** int(parts[2])
    raise ValueError(f"no value for type {type_name!r}")  # unreachable: check_type ran


def mse(pred: Any, gt: str, type_name: str) -> float:
    """Squared error ``(pred - gt)^2`` of the values (brief Sec. 3.8, number-model extra).

    Computed exactly with ``fractions.Fraction`` and converted to float at the end; a missing
    or malformed prediction scores ``gt^2`` (as if it were 0). A square too large for a float
    is ``inf``.
    """
    truth = answer_value(gt, type_name)
    if truth is None:
        raise ValueError(f"ground truth {gt!r} is not a valid {type_name}")
    guess = answer_value(pred, type_name)
    error = truth if guess is None else guess - truth
    try:
        return float(error * error)
    except OverflowError:
        return math.inf


def digit_diff(pred: Any, gt: str, type_name: str) -> float:
    """Mean absolute digit difference (brief Sec. 3.8, number-model extra).

    Parts are read in their own direction (as in ``digit_match``); the shorter of each pair
    is filled with ``'0'`` so that missing and surplus digits both count, and the sum of
    ``|p - g|`` over all positions is divided by the number of ground-truth digits. A missing
    prediction therefore scores the mean of the ground-truth digits.
    """
    gt_parts = _oriented(_gt_parts(gt, type_name), type_name)
    pred_parts = _oriented(answer_parts(pred, type_name), type_name)
    total = sum(
        abs(int(p) - int(g))
        for pp, gp in zip(pred_parts, gt_parts, strict=True)
        for p, g in itertools.zip_longest(pp, gp, fillvalue="0")
    )
    return total / sum(len(g) for g in gt_parts)


# ---------------------------------------------------------------------------------------------
# Aggregation over digits and length ranges
# ---------------------------------------------------------------------------------------------

BUCKETS = ("S", "M", "L", "XL")
# Inclusive digit ranges per task length (brief Sec. 3.8). As in the official statistics the
# short range starts at 0, so a 0-digit key (never produced by the generator) still counts.
BUCKET_RANGES: dict[int, dict[str, tuple[int, int]]] = {
    20: {"S": (0, 4), "M": (5, 8), "L": (9, 14), "XL": (15, 20)},
    100: {"S": (0, 10), "M": (11, 20), "L": (21, 60), "XL": (61, 100)},
}
IN_DOMAIN, OUT_OF_DOMAIN = ("S", "M"), ("L", "XL")

# (well-learned, performance-preserving) thresholds and whether larger is better (Sec. 3.8).
THRESHOLDS: dict[str, tuple[float, float, bool]] = {
    "exact_match": (0.9, 0.1, True),
    "digit_match": (0.9, 0.5, True),
    "dlength": (0.1, 1.0, False),
}


def _ranges(max_length: int) -> dict[str, tuple[int, int]]:
    try:
        return BUCKET_RANGES[max_length]
    except KeyError:
        raise ValueError(
            f"max_length must be one of {sorted(BUCKET_RANGES)}, got {max_length!r}"
        ) from None


def bucket_of(digit: int, max_length: int) -> str | None:
    """The length range ("S", "M", "L" or "XL") of ``digit`` for a task whose lengths go up to
    ``max_length`` (20 or 100), or None when the digit lies outside them (brief Sec. 3.8)."""
    for name, (lo, hi) in _ranges(max_length).items():
        if lo <= digit <= hi:
            return name
    return None


def infer_max_length(digits: Iterable[int]) -> int:
    """20 or 100 from the digits seen for one task, when no task registry says which.

    A single digit of 21 still means a 20-digit task: the official statistics note that
    ``to_float`` produces a few 21-digit samples and treat such a task as a 20-digit one.
    """
    return 100 if max(digits, default=0) > 21 else 20


def _satisfies(mean: float, metric: str, which: int) -> bool:
    try:
        bounds = THRESHOLDS[metric]
    except KeyError:
        raise ValueError(f"no digit thresholds for metric {metric!r}") from None
    threshold, larger_is_better = bounds[which], bounds[2]
    return mean >= threshold if larger_is_better else mean <= threshold


def _largest_digit(
    per_digit_means: Mapping[int, Any], metric: str, which: int, max_length: int | None
) -> int | None:
    # The official statistic is the largest digit that passes, not the end of the first
    # passing run: a curve that fails at 6 but passes again at 9 reports 9.
    best = None
    for digit, mean in per_digit_means.items():
        if isinstance(mean, Mapping):
            mean = mean.get(metric)
        if mean is None or (max_length is not None and bucket_of(digit, max_length) is None):
            continue
        if _satisfies(mean, metric, which) and (best is None or digit > best):
            best = digit
    return best


def well_learned_digit(
    per_digit_means: Mapping[int, Any], metric: str, max_length: int | None = None
) -> int | None:
    """Largest digit whose mean is >= 0.9 (exact/digit match) or <= 0.1 (dlength); None if
    no digit qualifies (brief Sec. 3.8; official name ``well_learned_digit``).

    ``per_digit_means`` maps digit -> mean, or digit -> dict of means keyed by metric (the
    ``per_digit`` entry of :func:`aggregate`). With ``max_length``, digits outside the length
    ranges are ignored, as the official statistics do.
    """
    return _largest_digit(per_digit_means, metric, 0, max_length)


def performance_preserving_digit(
    per_digit_means: Mapping[int, Any], metric: str, max_length: int | None = None
) -> int | None:
    """Largest digit whose mean is >= 0.1 (exact match), >= 0.5 (digit match) or <= 1
    (dlength); None if no digit qualifies (brief Sec. 3.8; official name
    ``has_performance_digit``). Arguments as in :func:`well_learned_digit`."""
    return _largest_digit(per_digit_means, metric, 1, max_length)


def _means(sums: Mapping[str, float], n: int, metrics: Iterable[str]) -> dict:
    return {"n": n, **{m: (sums[m] / n if n else None) for m in metrics}}


def aggregate(
    rows: Iterable[Mapping[str, Any]],
    metrics: Iterable[str] = METRICS,
    max_lengths: Mapping[str, int] | None = None,
) -> dict[str, dict]:
    """Means per (task, digit), per length range and per domain (brief Sec. 3.8).

    ``rows`` are scored samples: mappings with ``"task"``, ``"digit"`` and one value per
    metric. A task's maximal length (20 or 100) comes from ``max_lengths`` or, failing that,
    from :func:`infer_max_length`. Returns, per task::

        {"max_length": 20, "n": ...,
         "per_digit": {digit: {"n": ..., metric: mean, ...}, ...},   # sorted by digit
         "per_bucket": {"S": {"digits": [lo, hi], "n": ..., metric: mean}, ..., "XL": ...},
         "in_domain": {"n": ..., metric: mean}, "out_of_domain": {...},
         "well_learned_digit": {metric: digit or None},             # only the 3 text metrics
         "performance_preserving_digit": {metric: digit or None}}

    Range and domain means are sample-weighted; an empty range has mean None. Digits outside
    the ranges (e.g. 21 for a 20-digit task) keep their per-digit mean but enter no range and
    no digit statistic.
    """
    metrics = tuple(metrics)
    max_lengths = max_lengths or {}
    sums: dict[str, dict[int, dict[str, float]]] = {}
    counts: dict[str, dict[int, int]] = {}
    for row in rows:
        task, digit = row["task"], int(row["digit"])
        per_digit = sums.setdefault(task, {}).setdefault(digit, dict.fromkeys(metrics, 0.0))
        for m in metrics:
            per_digit[m] += float(row[m])
        counts.setdefault(task, {})
        counts[task][digit] = counts[task].get(digit, 0) + 1

    result: dict[str, dict] = {}
    for task in sums:
        digit_counts = counts[task]
        max_length = max_lengths.get(task) or infer_max_length(digit_counts)
        ranges = _ranges(max_length)
        per_digit = {
            d: _means(sums[task][d], digit_counts[d], metrics) for d in sorted(digit_counts)
        }
        bucket_sums = {b: dict.fromkeys(metrics, 0.0) for b in BUCKETS}
        bucket_counts = dict.fromkeys(BUCKETS, 0)
        for d, n in digit_counts.items():
            b = bucket_of(d, max_length)
            if b is None:
                continue
            bucket_counts[b] += n
            for m in metrics:
                bucket_sums[b][m] += sums[task][d][m]

        def pooled(names: tuple[str, ...], _s=bucket_sums, _c=bucket_counts) -> dict:
            total = {m: sum(_s[b][m] for b in names) for m in metrics}
            return _means(total, sum(_c[b] for b in names), metrics)

        text_metrics = [m for m in metrics if m in THRESHOLDS]
        result[task] = {
            "max_length": max_length,
            "n": sum(digit_counts.values()),
            "per_digit": per_digit,
            "per_bucket": {b: {"digits": list(ranges[b]), **pooled((b,))} for b in BUCKETS},
            "in_domain": pooled(IN_DOMAIN),
            "out_of_domain": pooled(OUT_OF_DOMAIN),
            "well_learned_digit": {
                m: well_learned_digit(per_digit, m, max_length) for m in text_metrics
            },
            "performance_preserving_digit": {
                m: performance_preserving_digit(per_digit, m, max_length) for m in text_metrics
            },
        }
    return result
