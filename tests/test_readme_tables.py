"""The README tables agree with the results files, and those come from the locked environment
(scripts/render_tables.py --check)."""

from __future__ import annotations

import importlib.util

import pytest

from shared.config import REPO_ROOT


@pytest.fixture(scope="module")
def render_tables():
    spec = importlib.util.spec_from_file_location(
        "render_tables", REPO_ROOT / "scripts" / "render_tables.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_tables_are_current(render_tables):
    assert render_tables.main(["--check"]) == 0, "run: python scripts/render_tables.py"


def test_lock_pins_the_stack(render_tables):
    pins = render_tables.locked_versions()
    for name in ("torch", "numpy", "scipy", "lingam", "transformers", "pytest-xdist"):
        assert name in pins, f"constraints.txt does not pin {name}"
    assert pins["torch"] == "2.13.0"


def test_version_check_flags_a_results_file_from_another_environment(render_tables):
    pins = {"numpy": "2.4.6", "torch": "2.13.0", "scikit-learn": "1.9.1"}
    same = {"versions": {"python": "3.11.7", "numpy": "2.4.6", "torch": "2.13.0+cpu"}}
    assert render_tables.version_mismatches(same, pins) == []
    other = {"versions": {"numpy": "2.2.6", "scikit_learn": "1.9.1", "rdkit": "2024.3"}}
    assert render_tables.version_mismatches(other, pins) == ["numpy 2.2.6 (lock: 2.4.6)"]


def test_results_block_shows_both_verdicts_and_the_figure(render_tables):
    claim = {
        "name": "c",
        "role": "claim",
        "statement": "s",
        "measured": 0.5,
        "threshold": 1.0,
        "holds": True,
        "passed": True,
    }
    toy = {
        "paper": "adamcb",
        "seeds": [0],
        "command": "cmd",
        "wall_time_s": 1.0,
        "table_metrics": [],
        "metrics": {},
        "claims": [claim],
    }
    heldout = {**toy, "seeds": [1000], "verdict": "fail"}
    heldout["claims"] = [{**claim, "measured": 2.0, "holds": False, "passed": False}]
    block = render_tables.results_block(toy, heldout)
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in block.splitlines()]
    assert ["c", "claim", "s", "0.5", "PASS", "2", "FAIL"] in rows
    assert "held-out seeds [1000]" in block and "**0 PASS, 1 FAIL**" in block
    assert "not run" in render_tables.results_block(toy, None)
    # the papers table counts them in the same words (issue 52)
    assert render_tables._status(toy, heldout) == "1 PASS · held-out 0 PASS, 1 FAIL (fragile)"
    assert render_tables._status(toy, toy) == "1 PASS · held-out 1 PASS"
