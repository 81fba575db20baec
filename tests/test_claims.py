"""Each paper's toy headline claim, over its CI seeds, within its time budget."""

from __future__ import annotations

import time

import pytest

from shared.entry import check_claims, paper_modules
from shared.tables import markdown_table

pytestmark = pytest.mark.claim


def test_toy_claim(slug, tmp_path):
    _, claims = paper_modules(slug)
    start = time.perf_counter()
    record = check_claims(
        slug,
        tmp_path,
        seeds=claims.CI_SEEDS,
        overrides=("runtime.progress=false",),
        methods=getattr(claims, "CI_METHODS", None),  # default: all of claims.METHODS
    )
    elapsed = time.perf_counter() - start

    table = markdown_table(
        ["claim", "role", "measured", "threshold", "passed"],
        [
            [c["name"], c["role"], f"{c['measured']:.4g}", f"{c['threshold']:.4g}", c["passed"]]
            for c in record["claims"]
        ],
    )
    assert record["claims"], f"{slug}: no claim was evaluated"
    gated = [c.name for c in claims.CLAIMS if c.role == "claim"]
    assert [c["name"] for c in record["claims"] if c["role"] == "claim"] == gated
    assert all(c["passed"] for c in record["claims"]), f"{slug} claim failed:\n{table}"
    assert elapsed <= claims.TIME_BUDGET_S, (
        f"{slug} claim took {elapsed:.0f} s > budget {claims.TIME_BUDGET_S:.0f} s"
    )
