"""Each paper's toy headline claim, over its CI seeds, within its CPU-time budget, computing
the per-seed metrics of the committed ``results/toy.json`` (exactly, under the float-path pin,
or within the tolerance its ``claims.METRIC_TOLERANCES`` states).

The budget is CPU time of this process and its children, not wall seconds, in units of a
reference workload run just before and just after the claim check on the same machine
(``claims.CPU_BUDGET_UNITS``, ``tests/cpu_units.py``): a claim must not fail because the
machine is shared or slower, nor pass because it is faster. ``tests/conftest.py`` prints every
claim's CPU seconds, wall seconds and units in one table at the end of the run.
"""

from __future__ import annotations

import warnings

import pytest

from shared.entry import (
    check_claims,
    committed_differences,
    float_path_mismatch,
    paper_modules,
    reproduce_only,
)
from shared.tables import verdict_table
from tests.cpu_units import clock_in_units, over_budget, record_claim_time

pytestmark = pytest.mark.claim


def test_toy_claim(slug, tmp_path, record_property):
    _, claims = paper_modules(slug)
    with clock_in_units() as metered:
        record = check_claims(
            slug,
            tmp_path,
            seeds=claims.CI_SEEDS,
            # a CI protocol lighter only in what is never compared bit for bit (wall clocks)
            overrides=("runtime.progress=false", *getattr(claims, "CI_OVERRIDES", ())),
            methods=getattr(claims, "CI_METHODS", None),  # default: all of claims.METHODS
        )
    record_claim_time(record_property, metered, claims.CPU_BUDGET_UNITS)

    table = verdict_table(record["claims"])
    assert record["claims"], f"{slug}: no claim was evaluated"
    optional = reproduce_only(claims)  # gated by scripts/reproduce.py only (over budget here)
    gated = [c.name for c in claims.CLAIMS if c.role == "claim" and c.name not in optional]
    measured = [c["name"] for c in record["claims"] if c["role"] == "claim"]
    assert [name for name in measured if name not in optional] == gated
    # A REPRODUCE_ONLY claim evaluated on the CI subset is shown in the table, not gated.
    assert all(c["passed"] for c in record["claims"] if c["name"] not in optional), (
        f"{slug} claim failed:\n{table}"
    )
    mismatch = float_path_mismatch(slug)
    if mismatch:
        warnings.warn(mismatch, stacklevel=1)
    differences = [] if mismatch else committed_differences(slug, record)
    assert not differences, (
        f"{slug}: HEAD no longer computes the committed papers/{slug}/results/toy.json "
        f"(regenerate it: python scripts/reproduce.py --paper {slug} --write):\n"
        + "\n".join(differences[:20])
    )
    overrun = over_budget(f"{slug} claim", metered, claims.CPU_BUDGET_UNITS)
    assert overrun is None, overrun
