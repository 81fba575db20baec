"""What holds on real data, what fails, and why (issue 51), read from one place.

Per paper with a real rung, three sources:

* ``results/real.json``: the real rung at its current protocol (the paper's own, where a first
  run departed from it and was rerun), checked by ``reproduce.py --scale real --check``;
* ``results/real_first.json``: the first protocol's record, kept when the protocol changed
  (its config is gone; it names the commit that made it);
* ``claims.REAL_DIAGNOSES`` (:class:`shared.claims.Diagnosis`) with the decisive experiment's
  numbers, ``results/diagnosis.json``.

:func:`paper_findings` joins them; ``scripts/render_tables.py`` prints them in the root
README's findings table and each paper README's real block, ``scripts/site.py`` on the site's
findings page. :func:`undiagnosed` lists failing real claims no diagnosis covers (a test
requires it to be empty).
"""

from __future__ import annotations

import importlib
import json
from types import ModuleType

from shared.claims import DIAGNOSIS_FILE, Diagnosis, claims_summary
from shared.config import REPO_ROOT, real_papers

REAL_FILE, FIRST_PROTOCOL_FILE = "real.json", "real_first.json"


def results_file(slug: str, name: str) -> dict | None:
    path = REPO_ROOT / "papers" / slug / "results" / name
    return json.loads(path.read_text()) if path.is_file() else None


def claims_module(slug: str) -> ModuleType:
    return importlib.import_module(f"papers.{slug}.claims")


def failing_claims(record: dict | None) -> list[str]:
    """Names of the role-"claim" entries of a results file that did not pass."""
    if record is None:
        return []
    return [c["name"] for c in record["claims"] if c["role"] == "claim" and not c["passed"]]


def claim_status(record: dict | None) -> str:
    """A real results file's claims counted in the shared words (``2 PASS, 1 FAIL``,
    :func:`shared.claims.claims_summary`), '-' when there is none."""
    return "-" if record is None else claims_summary(record["claims"])


def declared_diagnoses(slug: str) -> list[Diagnosis]:
    return list(getattr(claims_module(slug), "REAL_DIAGNOSES", []))


def rendered_diagnoses(slug: str) -> list[dict]:
    """The paper's diagnoses with their numbers filled from ``results/diagnosis.json``; one
    that quotes a number without that file raises, naming it."""
    declared = declared_diagnoses(slug)
    if not declared:
        return []
    evidence = results_file(slug, DIAGNOSIS_FILE)
    numbers = evidence["numbers"] if evidence else {}
    if evidence is None and any("{" in d.reason + d.official for d in declared):
        raise FileNotFoundError(
            f"papers/{slug}/results/{DIAGNOSIS_FILE} is missing: run {declared[0].experiment}"
        )
    return [d.render(numbers) for d in declared]


def undiagnosed(slug: str) -> list[str]:
    """Failing real claims (of the first protocol and of the current one) that no diagnosis
    names, and diagnosed names that no failing claim carries (a renamed claim)."""
    failing = set(failing_claims(results_file(slug, FIRST_PROTOCOL_FILE)))
    failing |= set(failing_claims(results_file(slug, REAL_FILE)))
    covered: list[str] = [name for d in declared_diagnoses(slug) for name in d.claims]
    problems = [
        f"{slug}: failing real claim {name!r} has no diagnosis"
        for name in sorted(failing - set(covered))
    ]
    problems += [
        f"{slug}: diagnosis names {name!r}, which no real results file records as failing"
        for name in sorted(set(covered) - failing)
    ]
    problems += [
        f"{slug}: {name!r} is diagnosed more than once"
        for name in sorted({n for n in covered if covered.count(n) > 1})
    ]
    return problems


def paper_findings(slug: str) -> dict:
    """One paper's real-data findings: the first protocol's and the current protocol's claim
    status, and the rendered diagnoses."""
    first, current = results_file(slug, FIRST_PROTOCOL_FILE), results_file(slug, REAL_FILE)
    return {
        "slug": slug,
        "first_protocol": claim_status(first) if first else None,
        "real": claim_status(current) if current else "not run yet",
        "assets": ", ".join(a["name"] for a in (current or first or {}).get("assets", [])),
        "failing": sorted(set(failing_claims(first)) | set(failing_claims(current))),
        "diagnoses": rendered_diagnoses(slug),
    }


def all_findings() -> list[dict]:
    return [paper_findings(slug) for slug in real_papers()]
