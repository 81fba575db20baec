"""Helpers shared by the generic tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from shared.config import REPO_ROOT, available_papers

PAPERS = available_papers()


def run_cli(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python <args>`` from ``cwd`` with the repository importable; capture output."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HYDRA_FULL_ERROR": "0"}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
