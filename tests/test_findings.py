"""Issue 51: every failing real claim has a diagnosis, read from one place.

A paper's ``claims.REAL_DIAGNOSES`` gives each claim that failed on real data (in the first
protocol's ``results/real_first.json`` or in ``results/real.json``) one of four words and a
reason whose numbers come from the decisive experiment's ``results/diagnosis.json``."""

from __future__ import annotations

import pytest

from shared import findings
from shared.claims import DIAGNOSIS_WORDS, Diagnosis
from shared.config import real_papers


def test_diagnosis_fills_its_numbers_from_the_experiment():
    diagnosis = Diagnosis(
        claims=("beats Adam",),
        word="method",
        reason="ablation equals it: ratio {ratio:.3f}",
        experiment="python -m papers.x.diagnose --write",
        official="official loss {official_loss:.2f} vs ours {our_loss:.2f}",
    )
    shown = diagnosis.render({"ratio": 1.00049, "official_loss": 0.3, "our_loss": 0.31})
    assert shown["reason"] == "ablation equals it: ratio 1.000"
    assert shown["official"] == "official loss 0.30 vs ours 0.31"
    with pytest.raises(KeyError, match="'ratio'"):
        diagnosis.render({"official_loss": 0.3, "our_loss": 0.3})
    # without a headline the findings table shows the whole reason; with one, the headline
    assert shown["headline"] == shown["reason"] and shown["official_headline"] == shown["official"]
    short = Diagnosis(("c",), "open", "long {x}", "e", headline="x = {x:.1f}")
    assert short.render({"x": 2.0})["headline"] == "x = 2.0"
    with pytest.raises(KeyError, match="'y'"):
        Diagnosis(("c",), "open", "r", "e", official_headline="{y}").render({})


def test_diagnosis_refuses_a_word_outside_the_four():
    assert DIAGNOSIS_WORDS == ("method", "protocol", "code", "open")
    with pytest.raises(ValueError, match="not one of"):
        Diagnosis(claims=("c",), word="data", reason="r", experiment="e")
    with pytest.raises(ValueError, match="at least one claim"):
        Diagnosis(claims=(), word="open", reason="r", experiment="e")


def test_undiagnosed_names_failing_claims_renamed_ones_and_doubles(monkeypatch):
    records = {
        "real_first.json": {
            "claims": [
                {"name": "a", "role": "claim", "passed": False},
                {"name": "b", "role": "claim", "passed": False},
                {"name": "ctl", "role": "negative_control", "passed": False},
            ]
        },
        "real.json": {"claims": [{"name": "c", "role": "claim", "passed": False}]},
    }
    monkeypatch.setattr(findings, "results_file", lambda slug, name: records.get(name))
    declared = [
        Diagnosis(claims=("a", "gone"), word="protocol", reason="r", experiment="e"),
        Diagnosis(claims=("a",), word="open", reason="r", experiment="e"),
    ]
    monkeypatch.setattr(findings, "declared_diagnoses", lambda slug: declared)
    problems = findings.undiagnosed("p")
    assert "p: failing real claim 'b' has no diagnosis" in problems
    assert "p: failing real claim 'c' has no diagnosis" in problems
    assert "p: diagnosis names 'gone', which no real results file records as failing" in problems
    assert "p: 'a' is diagnosed more than once" in problems
    assert not any("'ctl'" in p for p in problems)  # a control that failed is its job
    assert len(problems) == 4


@pytest.mark.parametrize("slug", real_papers())
def test_every_failing_real_claim_is_diagnosed(slug):
    assert findings.undiagnosed(slug) == []
    for shown in findings.rendered_diagnoses(slug):  # every number it quotes is on file
        assert "{" not in shown["reason"] + shown["official"], shown
