"""The decisive experiments behind failing real claims (issue 51): their evidence file.

A paper whose real claims failed keeps ``papers/<slug>/diagnose.py``: it runs the experiment
that settles each failure (the paper's protocol, an ablation, the official code's output on
the same arrays, a null model...) and, with ``--write``, stores the numbers it measured in
``papers/<slug>/results/diagnosis.json`` through :func:`write_evidence`. The paper's
``claims.REAL_DIAGNOSES`` (:class:`shared.claims.Diagnosis`) gives each failing claim its word
and one-line reason, whose numbers are read from that file, so the README, the tables and the
site all print what the experiment measured.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from shared.claims import DIAGNOSIS_FILE
from shared.config import REPO_ROOT
from shared.records import git_commit, package_versions, read_json, write_json


def evidence_path(slug: str) -> Path:
    return REPO_ROOT / "papers" / slug / "results" / DIAGNOSIS_FILE


def read_evidence(slug: str) -> dict[str, Any] | None:
    """The paper's committed ``results/diagnosis.json``, or None when it has none."""
    path = evidence_path(slug)
    return read_json(path) if path.is_file() else None


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def write_evidence(
    slug: str,
    numbers: dict[str, float],
    command: str,
    started: tuple[float, float],
    details: dict[str, Any] | None = None,
) -> Path:
    """Store the experiment's ``numbers`` (flat name -> finite float or int: what the
    diagnoses' reasons quote) and free-form ``details`` (tables, per-seed lists) with the
    command, commit, versions and cost. ``started`` is ``(time.perf_counter(),
    cpu_seconds())`` taken when the experiment began."""
    bad = [k for k, v in numbers.items() if not isinstance(v, int | float) or not math.isfinite(v)]
    if bad:
        raise ValueError(f"diagnosis numbers must be finite numbers; not: {bad}")
    wall_start, cpu_start = started
    record = {
        "paper": slug,
        "command": command,
        "numbers": dict(numbers),
        "details": details or {},
        "git_commit": git_commit(),
        "versions": package_versions(),
        "wall_time_s": round(time.perf_counter() - wall_start, 2),
        "cpu_time_s": round(cpu_seconds() - cpu_start, 2),
    }
    path = evidence_path(slug)
    write_json(record, path)
    return path
