"""Run records: what a run measured and everything needed to reproduce it (``result.json``)."""

from __future__ import annotations

import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from shared.config import REPO_ROOT

# Results of one experiment: method -> metric -> one value per seed (in ``seeds`` order).
Results = dict[str, dict[str, list[float]]]

TRACKED_PACKAGES = (
    "torch",
    "numpy",
    "scipy",
    "accelerate",
    "hydra-core",
    "omegaconf",
    "scikit-learn",
    "transformers",
    "diffusers",
    "torch-geometric",
    "gymnasium",
    "rdkit",
    "networkx",
)


def summarise(results: Results, seeds: list[int]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per method and metric: mean, std (ddof=0) over the seeds where it is defined (not NaN),
    their count, and the per-seed values keyed by seed (None where undefined)."""
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for method, metrics in results.items():
        summary[method] = {}
        for name, values in metrics.items():
            if len(values) != len(seeds):
                raise ValueError(f"{method}/{name}: {len(values)} values for {len(seeds)} seeds")
            arr = np.asarray(values, dtype=float)
            defined = arr[np.isfinite(arr)]  # NaN marks a seed where the metric is undefined
            summary[method][name] = {
                "mean": float(defined.mean()) if defined.size else None,
                "std": float(defined.std()) if defined.size else None,
                "n_defined": int(defined.size),
                "per_seed": {
                    str(s): (float(v) if np.isfinite(v) else None)
                    for s, v in zip(seeds, values, strict=True)
                },
            }
    return summary


def by_setting(per_setting: Results) -> Results:
    """Flatten a grid run over settings (or graphs) whose metrics are named ``method.metric``
    into results keyed ``setting/method`` (metrics without a method prefix are dropped)."""
    results: Results = {}
    for setting, metrics in per_setting.items():
        for key, values in metrics.items():
            if "." in key:
                method, metric = key.split(".", 1)
                results.setdefault(f"{setting}/{method}", {})[metric] = values
    return results


def git_commit() -> str | None:
    """The repository's HEAD commit (with ``-dirty`` if the tree has changes), if known."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("-dirty" if dirty else "")


def package_versions() -> dict[str, str]:
    """Versions of python and the stack's main packages (absent ones are skipped)."""
    versions = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def write_json(data: dict[str, Any], path: Path) -> None:
    """Write ``data`` as indented JSON (creating folders), atomically: a crash mid-write never
    leaves a torn file that a later run would read as a finished record."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())
