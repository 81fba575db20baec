"""Tests of papers/horizon_generalization/diagnose.py on hand-made records: the central
claims' quantities per protocol and the check that the second run's greedy rollouts reproduce
the first protocol."""

from __future__ import annotations

import json

import pytest

from papers.horizon_generalization import diagnose


def entry(value: float) -> dict:
    return {"mean": value, "std": 0.0, "n_defined": 2, "per_seed": {"0": value, "1": value}}


def record(metrics: dict, cpu: float) -> dict:
    claims = [{"name": "l2: near-goal success >= 0.9", "role": "claim", "measured": 0.5}]
    return {
        "metrics": {run: {k: entry(v) for k, v in m.items()} for run, m in metrics.items()},
        "claims": claims,
        "git_commit": "abc",
        "cpu_time_s": cpu,
    }


SUCCESS = {"l2": (0.6, 0.0), "mrn": (0.8, 0.1), "mlp": (0.7, 0.05)}  # (near, far), greedy


@pytest.fixture
def results(tmp_path):
    first = {
        f"medium/{c}": {"near_success": n, "mid_success": 0.2, "far_success": f}
        for c, (n, f) in SUCCESS.items()
    }
    second = {}
    for layout in diagnose.LAYOUTS:
        for c, (n, f) in SUCCESS.items():
            second[f"{layout}/{c}"] = {
                "near_success": 1.0,
                "far_success": {"l2": 0.9, "mrn": 0.95, "mlp": 0.5}[c],
                "far_stuck_fraction": 0.0,
                "greedy_near_success": n,
                "greedy_mid_success": 0.2,
                "greedy_far_success": f,
                "greedy_far_stuck_fraction": 0.9,
                "train_far_fraction": 0.0,
            }
    (tmp_path / diagnose.FIRST_FILE).write_text(json.dumps(record(first, 600.0)))
    (tmp_path / diagnose.SECOND_FILE).write_text(json.dumps(record(second, 900.0)))
    return tmp_path


def test_protocol_quantities(results):
    numbers, details = diagnose.diagnose(results)
    assert numbers["first_medium_margin_l2"] == pytest.approx(-0.05)
    assert numbers["first_medium_far_minus_near"] == pytest.approx(-0.7)  # min: mrn -0.7
    assert numbers["official_arena_margin_mrn"] == pytest.approx(0.45)
    assert numbers["official_medium_far_minus_near"] == pytest.approx(-0.1)
    assert numbers["greedy_medium_l2_stuck"] == pytest.approx(0.9)
    assert numbers["first_protocol_max_difference"] == 0.0
    assert numbers["official_run_cpu_s"] == 900.0
    assert "first_medium_l2_stuck" not in numbers  # the first record has no stuck count
    assert details["per_seed"]["arena/mlp"]["far_success"] == {"0": 0.5, "1": 0.5}
    assert "margins l2 / MRN" in diagnose.table(numbers)


def test_a_different_greedy_rerun_is_reported(results):
    path = results / diagnose.SECOND_FILE
    second = json.loads(path.read_text())
    second["metrics"]["medium/l2"]["greedy_far_success"]["per_seed"]["1"] = 0.25
    path.write_text(json.dumps(second))
    numbers, _ = diagnose.diagnose(results)
    assert numbers["first_protocol_max_difference"] == pytest.approx(0.25)


def test_committed_diagnoses_cover_every_failing_claim_and_render():
    from papers.horizon_generalization.claims import REAL_CLAIMS, REAL_DIAGNOSES
    from shared.diagnosis import read_evidence

    evidence = read_evidence(diagnose.SLUG)
    if evidence is None:
        pytest.skip("no committed results/diagnosis.json")
    covered = [name for d in REAL_DIAGNOSES for name in d.claims]
    assert len(covered) == len(set(covered))
    assert set(covered) <= {c.name for c in REAL_CLAIMS}
    for file_name in (diagnose.FIRST_FILE, diagnose.SECOND_FILE):
        record = json.loads((diagnose.RESULTS / file_name).read_text())
        failing = {c["name"] for c in record["claims"] if c["role"] == "claim" and not c["passed"]}
        assert failing <= set(covered), file_name
    for d in REAL_DIAGNOSES:
        d.render(evidence["numbers"])  # every field is a number the experiment wrote
