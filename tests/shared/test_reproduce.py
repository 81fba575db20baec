"""scripts/reproduce.py: the held-out seed set, the results files it writes (from committed
code only, recording the commit and the float path), and ``--check`` against them."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess

import pytest

import shared.entry
from shared.config import REPO_ROOT, real_papers
from shared.entry import committed_results_path, paper_modules
from tests.helpers import PAPERS

METRICS = {"adamcb": {"final_train_ce": {"mean": 1.0, "std": 0.0, "n_defined": 1,
                                         "per_seed": {"0": 0.25}}}}  # fmt: skip


@pytest.fixture
def reproduce(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location(
        "reproduce", REPO_ROOT / "scripts" / "reproduce.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "REPO_ROOT", tmp_path)  # write results under tmp_path
    monkeypatch.setattr(shared.entry, "REPO_ROOT", tmp_path)  # --check reads them there
    monkeypatch.setattr(module, "committed_code", lambda: "f" * 40)  # this tree may be dirty
    calls = []

    def fake_check_claims(slug, out_dir, seeds=None, overrides=(), scale=None):
        calls.append(seeds)
        claims = paper_modules(slug)[1]
        (out_dir / (claims.REAL_PLOT if scale == "real" else claims.PLOT)).write_bytes(b"png")
        claim = {"name": "c", "role": "claim", "measured": 1.0, "threshold": 1.0, "passed": True}
        return {
            "assets": [{"name": "stand-in"}] if scale == "real" else None,
            "scale": scale or "toy",
            "seeds": seeds,
            "claims": [claim],
            "metrics": METRICS,
            "git_commit": "abc-dirty",
            "float_path": {"mode": "pinned", "holds": True},
            "versions": {},
            "wall_time_s": 0.1,
            "table_metrics": ["final_train_ce"],
            "labels": {"adam": "Adam"},
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
    assert written["git_commit"] == "f" * 40  # the clean HEAD, not the run's own view
    assert written["float_path"] == {"mode": "pinned", "holds": True}
    assert not (results / "toy.json").exists() and not (results / "toy.png").exists()


def test_write_saves_the_main_figure_beside_toy_json(reproduce, tmp_path):
    assert reproduce.main(["--paper", "adamcb", "--write", "--no-progress"]) == 0
    results = tmp_path / "papers" / "adamcb" / "results"
    assert (results / "toy.png").read_bytes() == b"png"
    assert json.loads((results / "toy.json").read_text())["seed_set"] == "claim"


def test_scale_real_writes_real_json_with_its_assets(reproduce, tmp_path):
    slug = real_papers()[0]
    assert reproduce.main(["--paper", slug, "--scale", "real", "--write", "--no-progress"]) == 0
    results = tmp_path / "papers" / slug / "results"
    written = json.loads((results / "real.json").read_text())
    assert written["seed_set"] == "real" and written["assets"] == [{"name": "stand-in"}]
    assert written["command"].endswith("--scale real")
    assert (results / "real.png").read_bytes() == b"png"
    assert not (results / "toy.json").exists()
    with pytest.raises(SystemExit, match="no held-out seed set"):
        reproduce.main(["--paper", slug, "--scale", "real", "--heldout"])
    without = next(p for p in PAPERS if p not in real_papers())
    with pytest.raises(SystemExit):  # argparse: not a paper with a real rung
        reproduce.main(["--paper", without, "--scale", "real"])


def test_heldout_refuses_explicit_seeds(reproduce):
    with pytest.raises(SystemExit, match="HELDOUT_SEEDS"):
        reproduce.main(["--paper", "adamcb", "--heldout", "--seeds", "1"])


def test_check_names_each_metric_that_differs_from_the_committed_file(reproduce, tmp_path, capsys):
    assert reproduce.main(["--paper", "adamcb", "--seeds", "0", "--write", "--no-progress"]) == 0
    assert reproduce.main(["--paper", "adamcb", "--seeds", "0", "--check", "--no-progress"]) == 0
    assert "every per-seed metric reproduces" in capsys.readouterr().out
    path = tmp_path / "papers" / "adamcb" / "results" / "toy.json"
    stale = json.loads(path.read_text())
    stale["metrics"]["adamcb"]["final_train_ce"]["per_seed"]["0"] = 0.2500001
    path.write_text(json.dumps(stale))
    assert reproduce.main(["--paper", "adamcb", "--seeds", "0", "--check", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert (
        "adamcb/final_train_ce seed 0: HEAD computes 0.25, the committed file says 0.2500001" in out
    )


def test_write_refuses_a_tree_whose_code_differs_from_head(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "reproduce", REPO_ROOT / "scripts" / "reproduce.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    repo = tmp_path / "repo"
    (repo / "papers" / "x" / "results").mkdir(parents=True)
    (repo / "papers" / "x" / "method.py").write_text("a = 1\n")
    (repo / "papers" / "x" / "results" / "toy.json").write_text("{}\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    monkeypatch.setattr(module, "REPO_ROOT", repo)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    (repo / "papers" / "x" / "results" / "toy.json").write_text('{"new": 1}\n')
    assert module.committed_code() == head.strip()  # results files are what --write changes
    (repo / "papers" / "x" / "method.py").write_text("a = 2\n")
    with pytest.raises(SystemExit, match=r"tracked files differ from HEAD \(papers/x/method.py\)"):
        module.committed_code()


@pytest.mark.parametrize("heldout", [False, True], ids=["toy", "heldout"])
@pytest.mark.parametrize("slug", PAPERS)
def test_every_committed_results_file_names_a_clean_commit_and_the_pin(slug, heldout):
    """What ``reproduce.py --write`` guarantees, checked on the files in the tree: a full
    commit hash (no ``-dirty``) and the pinned float path, as it took effect."""
    record = json.loads(committed_results_path(slug, heldout).read_text())
    _assert_clean_and_pinned(record)


@pytest.mark.parametrize("slug", real_papers())
def test_every_committed_real_results_file_names_a_clean_commit_and_the_pin(slug):
    path = committed_results_path(slug, scale="real")
    if not path.is_file():
        pytest.fail(f"{path} is missing: python scripts/reproduce.py --paper {slug} --scale real")
    _assert_clean_and_pinned(json.loads(path.read_text()))


def _assert_clean_and_pinned(record: dict) -> None:
    assert re.fullmatch(r"[0-9a-f]{40}", record["git_commit"]), record["git_commit"]
    assert record["float_path"]["mode"] == "pinned", record["float_path"]
    assert record["float_path"]["holds"] is True, record["float_path"]
