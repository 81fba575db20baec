"""One vocabulary for verdicts (issue 52): every role x holds has its word and tone, and the
console table, scripts/reproduce.py, the README tables and the site print those words, never
the record's bare ``passed``."""

from __future__ import annotations

import pytest

import shared.entry
from shared.claims import (
    Verdict,
    claim_verdict,
    claims_summary,
    summary_tone,
    verdict_tone,
    verdict_word,
)
from shared.config import compose_dict
from shared.entry import execute, paper_modules
from shared.tables import verdict_table

# (role, holds) -> (word, tone, the record's "passed"), by hand.
CASES = {
    ("claim", True): ("PASS", "ok", True),
    ("claim", False): ("FAIL", "bad", False),
    ("negative_control", False): ("fails, as a control must", "ok", True),
    ("negative_control", True): ("HOLDS: control broken", "bad", False),
    ("diagnostic", True): ("info: holds", "info", True),
    ("diagnostic", False): ("info: does not hold", "info", True),
}


def entry(role: str, holds: bool, name: str = "c", measured: float = 0.5) -> dict:
    """A claim as ``result.json`` records it."""
    return {
        "name": name,
        "role": role,
        "statement": "s",
        "measured": measured,
        "threshold": 1.0,
        "holds": holds,
        "passed": CASES[(role, holds)][2],
    }


@pytest.mark.parametrize(("role", "holds"), list(CASES), ids=[f"{r}-{h}" for r, h in CASES])
def test_each_role_and_outcome_has_its_word_and_tone(role, holds):
    word, tone, passed = CASES[(role, holds)]
    assert verdict_word(role, holds) == word
    assert claim_verdict(entry(role, holds)) == word
    assert verdict_tone(word) == tone
    # the record's `passed` (kept in result.json and results/*.json) agrees with the tone
    assert Verdict("c", role, "s", 0.5, 1.0, holds).passed is passed is (tone != "bad")


def test_a_claim_not_measured_reads_not_run_and_an_unknown_role_is_refused():
    assert claim_verdict(None) == "not run" and verdict_tone("not run") == ""
    with pytest.raises(ValueError, match="'control'"):
        verdict_word("control", True)


def test_the_lalonde_diagnostic_reads_does_not_hold_not_true():
    """Issue 52's case: ``lalonde: PPI coverage >= 0.88 | diagnostic | 0.142 | True``."""
    coverage = {**entry("diagnostic", False, "lalonde: PPI coverage >= 0.88", 0.142)}
    table = verdict_table([coverage])
    assert "info: does not hold" in table and "True" not in table
    assert "| verdict " in table and "passed" not in table


def test_verdict_table_adds_the_other_records_columns():
    claims = [entry("claim", True, "a"), entry("negative_control", False, "b")]
    table = verdict_table(claims, beside={"a": entry("claim", False, "a", 2.0)}, beside_name="x")
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()]
    assert rows[0][-2:] == ["x measured", "x verdict"]
    assert ["a", "claim", "s", "0.5", "PASS", "2", "FAIL"] in rows
    assert ["control: b", "negative_control", "s", "0.5", "fails, as a control must", "-"] + [
        "not run"
    ] in rows


@pytest.mark.parametrize(
    ("claims", "summary", "tone"),
    [
        ([("claim", True), ("claim", True)], "2 PASS", "ok"),
        ([("claim", True), ("claim", False)], "1 PASS, 1 FAIL", "bad"),
        ([("claim", True), ("negative_control", False)], "1 PASS", "ok"),
        ([("claim", True), ("negative_control", True)], "1 PASS · control broken", "bad"),
        ([("claim", True), ("diagnostic", False)], "1 PASS", "ok"),
        ([("diagnostic", True)], "no claim evaluated", "ok"),
        ([], "no claim evaluated", "bad"),
    ],
)
def test_a_runs_claims_are_counted_in_the_same_words(claims, summary, tone):
    records = [entry(role, holds) for role, holds in claims]
    assert claims_summary(records) == summary
    assert summary_tone(records) == tone


def test_the_train_commands_console_table_prints_the_words(tmp_path, monkeypatch, capsys):
    """The table ``python -m papers.<slug>.train`` prints under "Headline claim": a stand-in
    run (no training) whose verdicts cover every role, through the real entry pipeline."""
    cfg = compose_dict("etcd", "smoke", ["runtime.progress=false"])
    train, _ = paper_modules("etcd")
    seeds = list(cfg.seeds)
    monkeypatch.setattr(train, "run", lambda cfg, out_dir: {"etcd": {"f1": [0.5] * len(seeds)}})
    verdicts = [
        Verdict(name, role, "s", 0.142, 0.88, holds)
        for name, role, holds in [
            ("c", "claim", True),
            ("lalonde: PPI coverage >= 0.88", "diagnostic", False),
            ("n", "negative_control", False),
        ]
    ]
    monkeypatch.setattr(shared.entry, "claim_verdicts", lambda *args: verdicts)
    execute("etcd", cfg, tmp_path)
    out = capsys.readouterr().out
    table = out[out.index("Headline claim") :]
    for word in ("| PASS ", "| info: does not hold ", "| fails, as a control must "):
        assert word in table, word
    assert "True" not in table and "passed" not in table
