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


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def load_script(name: str):
    """Import ``scripts/<name>.py`` as a module without leaking the thread variables the
    benchmark scripts set at import into later tests' subprocesses."""
    import importlib.util

    saved = {var: os.environ.get(var) for var in THREAD_VARIABLES}
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
    return module
