"""Every paper's smoke config runs end to end, writes its outputs and trains its parameters."""

from __future__ import annotations

import math

import pytest

from shared.checkpoint import load_checkpoint
from shared.entry import paper_modules
from shared.loop import param_fingerprints

pytestmark = pytest.mark.smoke


def _changed(initial: list[float], tensor) -> bool:
    return param_fingerprints_of(tensor) != initial


def param_fingerprints_of(tensor) -> list[float]:
    t = tensor.detach().double()
    return [t.sum().item(), t.square().sum().item()]


def test_smoke_run(slug, smoke_reference):
    record, run_dir = smoke_reference  # the session's one smoke run of this paper (conftest)

    for method, metrics in record["metrics"].items():
        for name, stats in metrics.items():
            assert math.isfinite(stats["mean"]), f"{method}/{name} is not finite"
    for name in ("result.json", "metrics.jsonl", "run_config.json"):
        assert (run_dir / name).is_file(), f"{name} was not written"
    assert list(run_dir.glob("*.png")), "no plot was written"

    train, _ = paper_modules(slug)
    if not getattr(train, "HAS_TRAINABLE_PARAMETERS", True):
        return  # statistics papers: nothing is trained (checkpoints, if any, hold progress)
    checkpoints = sorted(run_dir.rglob("checkpoint.pt"))
    assert checkpoints, "the smoke run left no checkpoint"
    for path in checkpoints:
        state = load_checkpoint(path)  # weights_only=True
        initial = state["initial_fingerprints"]
        assert initial, f"{path}: no trainable parameters recorded"
        unchanged = [k for k, v in initial.items() if not _changed(v, state["model"][k])]
        assert not unchanged, f"{path.parent.name}: parameters never changed: {unchanged}"


def test_fingerprint_helper_matches_loop():
    import torch

    layer = torch.nn.Linear(3, 2)
    fingerprints = param_fingerprints(layer)
    assert fingerprints["weight"] == param_fingerprints_of(layer.weight)
