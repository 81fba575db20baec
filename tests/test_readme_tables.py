"""The README tables agree with the results files (scripts/render_tables.py --check)."""

from __future__ import annotations

import importlib.util

from shared.config import REPO_ROOT


def test_readme_tables_are_current():
    spec = importlib.util.spec_from_file_location(
        "render_tables", REPO_ROOT / "scripts" / "render_tables.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "run: python scripts/render_tables.py"
