"""scripts/reproduce.py: the held-out seed set and the results files it writes."""

from __future__ import annotations

import importlib.util
import json

import pytest

from shared.config import REPO_ROOT
from shared.entry import paper_modules


@pytest.fixture
def reproduce(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location(
        "reproduce", REPO_ROOT / "scripts" / "reproduce.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "REPO_ROOT", tmp_path)  # write results under tmp_path
    calls = []

    def fake_check_claims(slug, out_dir, seeds=None, overrides=()):
        calls.append(seeds)
        (out_dir / paper_modules(slug)[1].PLOT).write_bytes(b"png")
        claim = {"name": "c", "role": "claim", "measured": 1.0, "threshold": 1.0, "passed": True}
        return {
            "scale": "toy",
            "seeds": seeds,
            "claims": [claim],
            "metrics": {},
            "git_commit": "abc",
            "versions": {},
            "wall_time_s": 0.1,
        }

    monkeypatch.setattr(module, "check_claims", fake_check_claims)
    module.calls = calls
    return module


def test_heldout_runs_the_heldout_seeds_and_writes_heldout_json(reproduce, tmp_path):
    _, claims = paper_modules("adamcb")
    assert reproduce.main(["--paper", "adamcb", "--heldout", "--write", "--no-progress"]) == 0
    assert reproduce.calls == [list(claims.HELDOUT_SEEDS)]
    results = tmp_path / "papers" / "adamcb" / "results"
    written = json.loads((results / "heldout.json").read_text())
    assert written["seed_set"] == "heldout" and written["seeds"] == list(claims.HELDOUT_SEEDS)
    assert written["command"].endswith("--heldout")
    assert not (results / "toy.json").exists() and not (results / "toy.png").exists()


def test_write_saves_the_main_figure_beside_toy_json(reproduce, tmp_path):
    assert reproduce.main(["--paper", "adamcb", "--write", "--no-progress"]) == 0
    results = tmp_path / "papers" / "adamcb" / "results"
    assert (results / "toy.png").read_bytes() == b"png"
    assert json.loads((results / "toy.json").read_text())["seed_set"] == "claim"


def test_heldout_refuses_explicit_seeds(reproduce):
    with pytest.raises(SystemExit, match="HELDOUT_SEEDS"):
        reproduce.main(["--paper", "adamcb", "--heldout", "--seeds", "1"])
