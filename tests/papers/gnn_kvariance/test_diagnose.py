"""Issue 51's diagnosis of gnn_kvariance: the epoch-trend summary on a hand trend, the
official driver's JSON read into flat numbers, and the bookkeeping (every failing real claim
has exactly one diagnosis whose reason renders from results/diagnosis.json)."""

from __future__ import annotations

import json

import pytest

from papers.gnn_kvariance import claims, diagnose
from shared.diagnosis import read_evidence
from shared.records import read_json


def hand_trend():
    """Seeds 1-3 at 10 and 20 epochs: the L=6 bound is 3x L=1's except seed 3 at 10 epochs."""
    trend = {}
    for seed, base in zip((1, 2, 3), (1.0, 2.0, 4.0), strict=True):
        for length in (10, 20):
            deep = 0.5 * base if (seed, length) == (3, 10) else 3.0 * base
            for family, depth, bound in (
                ("mpnn", 1, base),
                ("mpnn", 6, deep),
                ("fmpnn_cycles", 1, 5.0 * base),
            ):
                metrics = dict.fromkeys(diagnose.REPORTED, 0.0)
                metrics |= {"bound": bound, "gap": 0.1 * seed}
                trend[(family, depth, seed, length)] = metrics
    return trend


def test_summary_counts_wins_and_takes_median_ratios():
    numbers = diagnose.summarise(hand_trend(), [1, 2, 3], [10, 20], "")
    assert numbers["e10_r1_wins"] == 2 and numbers["e20_r1_wins"] == 3
    # medians: L=1 2.0; L=6 at 10 epochs median(3, 6, 2) = 3, at 20 median(3, 6, 12) = 6
    assert numbers["e10_r2_ratio"] == pytest.approx(1.5)
    assert numbers["e20_r2_ratio"] == pytest.approx(3.0)
    assert numbers["e20_r5_ratio"] == pytest.approx(5.0)
    assert numbers["e20_mpnn_L1_gap"] == pytest.approx(0.2)  # gaps: the mean over seeds
    assert numbers["seeds"] == 3


def test_official_numbers_are_flat_and_named_by_run(tmp_path):
    path = tmp_path / "official.json"
    runs = {"L6_e400": {"bound": 7.5, "gap": 0.1}, "L1_e400": {"bound": 2.5, "gap": 0.0}}
    path.write_text(json.dumps({"runs": runs, "colours": []}))
    numbers, record = diagnose.official_numbers(path)
    assert numbers["official_l6_e400_bound"] == 7.5 and numbers["official_l1_e400_gap"] == 0.0
    assert numbers["official_e400_r2_ratio"] == pytest.approx(3.0)  # L=6 / L=1
    assert record["runs"]["L6_e400"]["bound"] == 7.5
    # MUTAG's driver output (--official-mutag) under its own prefix, beside solubility's
    mutag, _ = diagnose.official_numbers(path, "official_mutag")
    assert mutag["official_mutag_e400_r2_ratio"] == pytest.approx(3.0)
    assert not any(key.startswith("official_l") for key in mutag)


def test_official_seeds_count_r1_wins_and_take_r2_over_seed_medians(tmp_path):
    bounds = [(2.0, 3.0), (3.0, 2.5), (2.5, 3.5)]  # (L=1, L=6) per seed; seed 2 flips
    paths = []
    for seed, (low, high) in enumerate(bounds, start=1):
        path = tmp_path / f"seed{seed}.json"
        runs = {"L1_e400": {"bound": low}, "L6_e400": {"bound": high}}
        path.write_text(json.dumps({"runs": runs}))
        paths.append(path)
    numbers, records = diagnose.official_seeds(paths, "official_mutag")
    assert numbers["official_mutag_e400_r1_wins"] == 2 and numbers["official_mutag_seeds"] == 3
    assert numbers["official_mutag_e400_median_r2_ratio"] == pytest.approx(3.0 / 2.5)
    assert numbers["official_mutag_l1_e400_bound"] == 2.0  # the first file's runs, one by one
    assert len(records) == 3


def test_epochs_must_increase():
    with pytest.raises(SystemExit):
        diagnose.parse_args(["--epochs", "200", "100"])
    assert diagnose.parse_args([]).epochs == [50, 100, 200, 400]


def failing_claims() -> set[str]:
    failing = set()
    for name in ("real_first.json", "real.json"):
        path = diagnose.REAL_RESULTS.parent / name
        if path.is_file():
            record = read_json(path)
            failing |= {
                c["name"] for c in record["claims"] if c["role"] == "claim" and not c["passed"]
            }
    return failing


def test_every_failing_real_claim_has_exactly_one_diagnosis():
    covered = [name for d in claims.REAL_DIAGNOSES for name in d.claims]
    assert len(covered) == len(set(covered)), "a claim is diagnosed twice"
    assert failing_claims() <= set(covered)
    known = {c.name for c in claims.REAL_CLAIMS}
    assert set(covered) <= known


def test_diagnoses_render_from_the_committed_evidence():
    evidence = read_evidence("gnn_kvariance")
    assert evidence is not None, "results/diagnosis.json is missing"
    for diagnosis in claims.REAL_DIAGNOSES:
        rendered = diagnosis.render(evidence["numbers"])
        assert "{" not in rendered["reason"] and rendered["official"]


def test_first_protocol_numbers_are_read_from_real_first():
    numbers = diagnose.real_run_numbers(diagnose.FIRST_RESULTS, "first")
    assert numbers["first_r1"] == 3 and numbers["first_r2"] == pytest.approx(1.235, abs=1e-3)
    # per run: the median bound over the five seeds, the mean gap
    assert numbers["first_solubility_l1_mpnn_bound"] == pytest.approx(16.2512, abs=1e-4)
    assert numbers["first_solubility_l1_mpnn_gap"] == pytest.approx(0.0216, abs=1e-4)
