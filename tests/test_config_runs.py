"""Real smoke runs with the overrides a researcher tries first (issue 43, item 5): loop
intervals that do not divide the steps, a single seed other than the default, a single method.
Each runs to the end and writes what the config asks for; the papers are those whose code
paths differ there (the shared loop's evaluation and checkpoint schedule, a per-seed table of
one seed, a figure or table that compares methods drawn from one)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from shared.config import compose_dict
from shared.entry import execute

pytestmark = pytest.mark.smoke


def _records(out_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]


def _run(slug: str, overrides: list[str], out_dir: Path) -> dict:
    record = execute(
        slug, compose_dict(slug, "smoke", ["runtime.progress=false", *overrides]), out_dir
    )
    for name in ("result.json", "metrics.jsonl", "run_config.json"):
        assert (out_dir / name).is_file(), f"{slug}: {name} was not written"
    assert list(out_dir.glob("*.png")), f"{slug}: no figure was written"
    for method, metrics in record["metrics"].items():
        assert metrics, f"{slug}: {method} has no metrics"
        assert any(math.isfinite(stats["mean"]) for stats in metrics.values()), method
    return record


@pytest.mark.parametrize(
    ("slug", "eval_key", "steps"),
    [("controlar", "test_nll", 4), ("nupa", None, 6)],
)
def test_an_eval_interval_that_does_not_divide_the_steps_evaluates_on_it_and_at_the_end(
    slug, eval_key, steps, tmp_path
):
    cfg = compose_dict(slug, "smoke")
    method = cfg.methods[0]
    _run(slug, [f"methods=[{method}]", "loop.eval_every=3", "loop.log_every=4"], tmp_path)
    records = [r for r in _records(tmp_path) if r.get("method") == method and "step" in r]
    logged = sorted({r["step"] for r in records if "train/loss" in r})
    evaluated = sorted({r["step"] for r in records if "train/loss" not in r and not r.get("final")})
    assert logged == [s for s in range(1, steps + 1) if s % 4 == 0], logged
    assert evaluated == sorted({0, *range(3, steps + 1, 3), steps}), evaluated
    if eval_key is not None:
        assert all(
            eval_key in r for r in records if r["step"] in evaluated and "train/loss" not in r
        )


def test_a_checkpoint_interval_that_does_not_divide_the_steps_still_saves_the_last_step(tmp_path):
    # gnn_kvariance trains by the shared loop without evaluating in it (TrainLoopConfig)
    record = _run(
        "gnn_kvariance", ["seeds=[5]", "loop.checkpoint_every=7", "loop.log_every=3"], tmp_path
    )
    assert all(
        list(stats["per_seed"]) == ["5"] for m in record["metrics"].values() for stats in m.values()
    )
    assert list(tmp_path.rglob("checkpoint.pt")), "no checkpoint was saved"


@pytest.mark.parametrize(
    ("slug", "overrides"),
    [
        ("adamcb", ["methods=[adamcb]", "seeds=[1]"]),  # its smoke default runs two seeds
        ("horizon_generalization", ["methods=[mrn]"]),  # the figure compares critics
        ("conformal_bma", ["methods=[cbma]"]),  # a settings x methods grid of one method
    ],
)
def test_a_single_method_and_seed_run_to_the_end(slug, overrides, tmp_path):
    record = _run(slug, overrides, tmp_path)
    methods = {m.rsplit("/", 1)[-1] for m in record["metrics"]}
    requested = overrides[0].removeprefix("methods=[").removesuffix("]")
    assert requested in methods, sorted(methods)
