"""Headline claims as data: comparators over seeds, each with its threshold.

A paper's ``claims.py`` lists :class:`Claim` objects over the toy experiment's results
(:data:`shared.records.Results`). Three roles:

* ``claim``: must hold, CI fails otherwise;
* ``negative_control``: the same comparator applied where it must *not* hold (a claim that a
  baseline also passes is no claim), CI fails if it holds;
* ``diagnostic``: reported beside the claims, never gating (e.g. a caveat the toy exposes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from shared.records import Results

Role = Literal["claim", "negative_control", "diagnostic"]


def _mean(values: np.ndarray) -> float:
    """Mean over the seeds where the metric is defined (NaN marks undefined, e.g. a method
    that declined to return an answer); NaN when it is defined nowhere."""
    defined = values[np.isfinite(values)]
    return float(defined.mean()) if defined.size else float("nan")


def _values(results: Results, method: str, metric: str) -> np.ndarray:
    try:
        return np.asarray(results[method][metric], dtype=float)
    except KeyError as err:
        raise KeyError(
            f"claim needs {method}/{metric}; results have methods {sorted(results)}"
        ) from err


@dataclass(frozen=True)
class RatioAtMost:
    """mean(metric of ``method``) / mean(metric of ``baseline``) <= ``max_ratio``; with
    ``every_seed``, the ratio is taken per seed (paired) and the worst seed must pass."""

    metric: str
    method: str
    baseline: str
    max_ratio: float
    every_seed: bool = False

    def measure(self, results: Results) -> float:
        ours = _values(results, self.method, self.metric)
        theirs = _values(results, self.baseline, self.metric)
        if self.every_seed:
            return _worst(list(ours / theirs), max)
        return _mean(ours) / _mean(theirs)

    def holds(self, measured: float) -> bool:
        return measured <= self.max_ratio

    def describe(self) -> str:
        if self.every_seed:
            return (
                f"{self.metric}: {self.method} / {self.baseline} <= {self.max_ratio:g} "
                "on every seed"
            )
        return f"mean {self.metric}: {self.method} / {self.baseline} <= {self.max_ratio:g}"

    def methods_needed(self) -> set[str]:
        return {self.method, self.baseline}

    @property
    def threshold(self) -> float:
        return self.max_ratio


@dataclass(frozen=True)
class PairedWins:
    """``method`` beats ``baseline`` on at least ``min_wins`` seeds (paired by seed)."""

    metric: str
    method: str
    baseline: str
    min_wins: int
    lower_is_better: bool = True

    def measure(self, results: Results) -> float:
        ours = _values(results, self.method, self.metric)
        theirs = _values(results, self.baseline, self.metric)
        wins = ours < theirs if self.lower_is_better else ours > theirs
        return float(wins.sum())

    def holds(self, measured: float) -> bool:
        return measured >= self.min_wins

    def describe(self) -> str:
        better = "lower" if self.lower_is_better else "higher"
        return (
            f"{self.method} has {better} {self.metric} than {self.baseline} "
            f"on >= {self.min_wins} seeds"
        )

    def methods_needed(self) -> set[str]:
        return {self.method, self.baseline}

    @property
    def threshold(self) -> float:
        return float(self.min_wins)


def _worst(means: list[float], pick) -> float:
    """The worst of several means; NaN (a method that never answered) is the worst of all."""
    return float("nan") if any(np.isnan(means)) else float(pick(means))


@dataclass(frozen=True)
class _MeanBound:
    """Every listed method's mean ``metric`` against ``bound``; measured: the worst mean."""

    metric: str
    methods: tuple[str, ...]
    bound: float
    every_seed: bool = False  # bound every seed's value instead of each method's mean
    # Methods a derived metric is computed from (a margin against a baseline): the claim can
    # be evaluated only where they ran too.
    reads: tuple[str, ...] = ()

    def methods_needed(self) -> set[str]:
        return set(self.methods) | set(self.reads)

    @property
    def threshold(self) -> float:
        return self.bound

    def _means(self, results: Results) -> list[float]:
        if self.every_seed:
            return [float(v) for m in self.methods for v in _values(results, m, self.metric)]
        return [_mean(_values(results, m, self.metric)) for m in self.methods]

    def _describe(self, worst: str, relation: str) -> str:
        methods = ", ".join(self.methods)
        what = f"every seed's {self.metric}" if self.every_seed else f"mean {self.metric}"
        return f"{worst} over {methods} of {what} {relation} {self.bound:g}"


@dataclass(frozen=True)
class MeanBelow(_MeanBound):
    """Every listed method's mean ``metric`` is strictly below ``bound``."""

    def measure(self, results: Results) -> float:
        return _worst(self._means(results), max)

    def holds(self, measured: float) -> bool:
        return measured < self.bound

    def describe(self) -> str:
        return self._describe("max", "<")


@dataclass(frozen=True)
class MeanAtMost(_MeanBound):
    """Every listed method's mean ``metric`` is at most ``bound``."""

    def measure(self, results: Results) -> float:
        return _worst(self._means(results), max)

    def holds(self, measured: float) -> bool:
        return measured <= self.bound

    def describe(self) -> str:
        return self._describe("max", "<=")


@dataclass(frozen=True)
class MeanAtLeast(_MeanBound):
    """Every listed method's mean ``metric`` is at least ``bound``."""

    def measure(self, results: Results) -> float:
        return _worst(self._means(results), min)

    def holds(self, measured: float) -> bool:
        return measured >= self.bound

    def describe(self) -> str:
        return self._describe("min", ">=")


@dataclass(frozen=True)
class MeanWithin(_MeanBound):
    """Every listed method's mean ``metric`` lies within ``bound`` of ``target``; measured: the
    largest absolute deviation."""

    target: float = 0.0

    def measure(self, results: Results) -> float:
        return _worst([abs(m - self.target) for m in self._means(results)], max)

    def holds(self, measured: float) -> bool:
        return measured <= self.bound

    def describe(self) -> str:
        return (
            f"max over {', '.join(self.methods)} of abs(mean {self.metric} - {self.target:g}) "
            f"<= {self.bound:g}"
        )


@dataclass(frozen=True)
class MarginAtLeast:
    """mean(metric of ``method``) - mean(metric of ``baseline``) >= ``margin``."""

    metric: str
    method: str
    baseline: str
    margin: float

    def measure(self, results: Results) -> float:
        return _mean(_values(results, self.method, self.metric)) - _mean(
            _values(results, self.baseline, self.metric)
        )

    def holds(self, measured: float) -> bool:
        return measured >= self.margin

    def describe(self) -> str:
        return f"mean {self.metric}: {self.method} - {self.baseline} >= {self.margin:g}"

    def methods_needed(self) -> set[str]:
        return {self.method, self.baseline}

    @property
    def threshold(self) -> float:
        return self.margin


Comparator = (
    RatioAtMost | PairedWins | MeanBelow | MeanAtMost | MeanAtLeast | MeanWithin | MarginAtLeast
)


@dataclass(frozen=True)
class Claim:
    name: str
    comparator: Comparator
    role: Role = "claim"


@dataclass(frozen=True)
class Verdict:
    name: str
    role: Role
    statement: str
    measured: float
    threshold: float
    holds: bool

    @property
    def passed(self) -> bool:
        """A claim passes when it holds, a negative control when it does not; a diagnostic
        is informational and always passes."""
        if self.role == "claim":
            return self.holds
        if self.role == "negative_control":
            return not self.holds
        return True

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "role": self.role,
            "statement": self.statement,
            "measured": self.measured,
            "threshold": self.threshold,
            "holds": self.holds,
            "passed": self.passed,
        }


def evaluate(claims: list[Claim], results: Results) -> list[Verdict]:
    """Measure every claim on ``results``."""
    verdicts = []
    for claim in claims:
        measured = claim.comparator.measure(results)
        verdicts.append(
            Verdict(
                name=claim.name,
                role=claim.role,
                statement=claim.comparator.describe(),
                measured=measured,
                threshold=claim.comparator.threshold,
                holds=claim.comparator.holds(measured),
            )
        )
    return verdicts


def all_passed(verdicts: list[Verdict]) -> bool:
    return all(v.passed for v in verdicts)


CONTROL_PREFIX = "control: "


# One vocabulary for verdicts (issues 43 and 52): the console table of the train command,
# scripts/reproduce.py, the README tables and the site all print these words, never the
# record's bare ``passed`` (True beside a control or diagnostic that does not hold reads as a
# claim that held). Each word has a tone: "ok" and "bad" decide, "info" never does.
PASS, FAIL = "PASS", "FAIL"
CONTROL_FAILS, CONTROL_BROKEN = "fails, as a control must", "HOLDS: control broken"
DIAGNOSTIC_HOLDS, DIAGNOSTIC_DOES_NOT_HOLD = "info: holds", "info: does not hold"
VERDICT_WORDS: dict[tuple[str, bool], str] = {
    ("claim", True): PASS,
    ("claim", False): FAIL,
    ("negative_control", False): CONTROL_FAILS,
    ("negative_control", True): CONTROL_BROKEN,
    ("diagnostic", True): DIAGNOSTIC_HOLDS,
    ("diagnostic", False): DIAGNOSTIC_DOES_NOT_HOLD,
}
VERDICT_TONES = {
    PASS: "ok",
    CONTROL_FAILS: "ok",
    FAIL: "bad",
    CONTROL_BROKEN: "bad",
    DIAGNOSTIC_HOLDS: "info",
    DIAGNOSTIC_DOES_NOT_HOLD: "info",
}
NOT_RUN = "not run"  # a claim the other seed set has not measured


def verdict_word(role: str, holds: bool) -> str:
    """What happened, in words a reader cannot mistake: a claim ``PASS`` / ``FAIL``; a negative
    control says whether it failed as it must (a bare "PASS" beside a control's statement reads
    as a claim that held); a diagnostic is information only. One wording for the console
    table, ``scripts/reproduce.py``, the README blocks and the site."""
    try:
        return VERDICT_WORDS[(role, bool(holds))]
    except KeyError:
        raise ValueError(
            f"claim role {role!r} is not one of claim, negative_control, diagnostic"
        ) from None


def claim_verdict(claim: dict | None) -> str:
    """:func:`verdict_word` of a recorded claim (``result.json`` / ``results/*.json``'s
    ``claims`` entries, which keep ``holds`` and ``passed``); ``not run`` for none."""
    return NOT_RUN if claim is None else verdict_word(claim["role"], claim["holds"])


def verdict_tone(word: str) -> str:
    """``ok``, ``bad`` or ``info`` for a verdict word (the site's colours); '' for ``not run``."""
    return VERDICT_TONES.get(word, "")


def claims_summary(claims: list[dict]) -> str:
    """A run's claims in the same words, counted: ``3 PASS`` or ``2 PASS, 1 FAIL`` over the
    role-"claim" entries, then `` · control broken`` when a negative control holds
    (diagnostics never count). The README's status columns and the site's home page."""
    verdicts = [claim_verdict(c) for c in claims if c["role"] == "claim"]
    summary = f"{verdicts.count(PASS)} {PASS}" if verdicts else "no claim evaluated"
    if FAIL in verdicts:
        summary += f", {verdicts.count(FAIL)} {FAIL}"
    broken = any(claim_verdict(c) == CONTROL_BROKEN for c in claims)
    return summary + (" · control broken" if broken else "")


def summary_tone(claims: list[dict]) -> str:
    """``ok`` when every claim passes and every control fails as it must, else ``bad``."""
    tones = [verdict_tone(claim_verdict(c)) for c in claims]
    return "ok" if tones and "bad" not in tones else "bad"


def claim_label(name: str, role: str) -> str:
    """A claim's displayed name: every negative control reads ``control: <what it tries>``,
    whatever its ``claims.py`` name starts with."""
    if role != "negative_control":
        return name
    bare = name[len(CONTROL_PREFIX) :] if name.lower().startswith(CONTROL_PREFIX) else name
    return CONTROL_PREFIX + bare


# ------------------------------------------------- the committed numbers (results/toy.json)
@dataclass(frozen=True)
class Tolerance:
    """How far a metric recomputed by HEAD may sit from the committed results file, and why.

    The default for every metric is exact equality (under the float-path pin the same seed
    gives the same bits). A paper's ``claims.METRIC_TOLERANCES`` maps a metric name (or
    ``method/metric``) to a Tolerance with its ``reason``; ``compare=False`` leaves a metric out
    (a wall-clock time, which no machine repeats)."""

    reason: str
    abs: float = 0.0
    rel: float = 0.0
    compare: bool = True

    def accepts(self, computed: float, committed: float) -> bool:
        if not self.compare:
            return True
        return abs(computed - committed) <= self.abs + self.rel * abs(committed)


EXACT = Tolerance(reason="the float-path pin makes the same seed give the same bits")


def metric_differences(
    computed: dict, committed: dict, seeds: list[int], tolerances: dict[str, Tolerance]
) -> list[str]:
    """Per-seed metrics of a run (``result.json``'s ``metrics``) that differ from the committed
    file's beyond their tolerance, one line each naming method, metric and seed; empty when
    every value reproduces. Methods and metrics the run did not compute are not compared."""
    differences = []
    for method, metrics in computed.items():
        for metric, summary in metrics.items():
            tolerance = tolerances.get(f"{method}/{metric}", tolerances.get(metric, EXACT))
            if not tolerance.compare:
                continue
            reference = committed.get(method, {}).get(metric)
            if reference is None:
                differences.append(f"{method}/{metric}: not in the committed file")
                continue
            for seed in map(str, seeds):
                if seed not in reference["per_seed"]:
                    differences.append(f"{method}/{metric}: seed {seed} not in the committed file")
                    continue
                value, expected = summary["per_seed"][seed], reference["per_seed"][seed]
                if value is None or expected is None:
                    same = value is None and expected is None
                else:
                    same = value == expected or tolerance.accepts(value, expected)
                if not same:
                    differences.append(
                        f"{method}/{metric} seed {seed}: HEAD computes {value!r}, "
                        f"the committed file says {expected!r}"
                    )
    return differences


# ------------------------------------------ why a real claim failed (issue 51: diagnosed)
DiagnosisWord = Literal["method", "protocol", "code", "open"]
DIAGNOSIS_WORDS: tuple[str, ...] = ("method", "protocol", "code", "open")
DIAGNOSIS_MEANING = {
    "method": "the paper's method fails on this real data (our code matching the official code "
    "or the brief)",
    "protocol": "it holds at the paper's own protocol, or the trend says it would",
    "code": "a defect of ours, fixed, with a test that would have caught it",
    "open": "not yet decided: the diagnosis names what is still missing",
}
DIAGNOSIS_FILE = "diagnosis.json"  # results/diagnosis.json: the decisive experiment's numbers


@dataclass(frozen=True)
class Diagnosis:
    """Why failing real claims failed, settled by an experiment (a paper's ``REAL_DIAGNOSES``).

    ``claims`` names the ``REAL_CLAIMS`` entries it explains (as the first protocol's
    ``results/real_first.json`` or ``results/real.json`` names them); ``word`` is one of
    :data:`DIAGNOSIS_WORDS`; ``reason`` is one line, whose ``{key}`` / ``{key:.3f}`` fields are
    filled from the numbers the experiment wrote (``results/diagnosis.json``'s ``numbers``), so
    no number in it is typed by hand; ``experiment`` is the command that wrote them;
    ``official`` says how the official code's output compared on the same input (same
    ``{key}`` fields), empty where it was not run. ``headline`` and ``official_headline``
    say the same in a few words with the deciding number, for the findings table that shows
    every paper on one screen (the paper's README shows the whole reason)."""

    claims: tuple[str, ...]
    word: DiagnosisWord
    reason: str
    experiment: str
    official: str = ""
    headline: str = ""
    official_headline: str = ""

    def __post_init__(self) -> None:
        if self.word not in DIAGNOSIS_WORDS:
            raise ValueError(f"Diagnosis word {self.word!r} is not one of {DIAGNOSIS_WORDS}")
        if not self.claims:
            raise ValueError("a Diagnosis explains at least one claim")

    def render(self, numbers: dict[str, float]) -> dict:
        """The diagnosis with its ``{key}`` fields filled from the experiment's ``numbers``;
        a field the numbers lack raises, naming it."""
        try:
            reason, official, headline, official_headline = (
                text.format(**numbers)
                for text in (self.reason, self.official, self.headline, self.official_headline)
            )
        except KeyError as err:
            raise KeyError(
                f"diagnosis of {self.claims[0]!r} reads {err.args[0]!r}, which "
                f"{DIAGNOSIS_FILE} does not hold (it has {sorted(numbers)})"
            ) from err
        return {
            "claims": list(self.claims),
            "word": self.word,
            "reason": reason,
            "experiment": self.experiment,
            "official": official,
            "headline": headline or reason,
            "official_headline": official_headline or official,
        }
