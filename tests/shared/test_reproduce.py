"""scripts/reproduce.py: the held-out seed set, the results files it writes (from committed
code only, recording the commit and the float path), ``--check`` against them, and the exit
status of each mode (issue 52: ``--check`` answers "do the numbers reproduce", not "do the
claims hold")."""

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
CLAIM = {"name": "c", "role": "claim", "statement": "s", "measured": 1.0, "threshold": 1.0,
         "holds": True, "passed": True}  # fmt: skip
FAILING = {**CLAIM, "name": "f", "measured": 2.0, "holds": False, "passed": False}
CONTROL_FAILS = {**CLAIM, "name": "n", "role": "negative_control", "holds": False}
DIAGNOSTIC_DOES_NOT_HOLD = {**CLAIM, "name": "d", "role": "diagnostic", "holds": False}


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
        module.run_folders.append(out_dir)
        claims = paper_modules(slug)[1]
        (out_dir / (claims.REAL_PLOT if scale == "real" else claims.PLOT)).write_bytes(b"png")
        return {
            "assets": [{"name": "stand-in"}] if scale == "real" else None,
            "scale": scale or "toy",
            "seeds": seeds,
            "claims": list(module.claims_out),
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
    module.run_folders = []  # where each fake run ran
    module.claims_out = [CLAIM]  # what the fake run's claims measure; a test may change it
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
    assert reproduce.main(["--paper", slug, "--scale", "real", "--heldout"]) == 2  # refused
    without = next(p for p in PAPERS if p not in real_papers())
    with pytest.raises(SystemExit):  # argparse: not a paper with a real rung
        reproduce.main(["--paper", without, "--scale", "real"])


def test_run_dir_keeps_each_papers_run_folder_and_the_default_deletes_it(reproduce, tmp_path):
    keep = tmp_path / "keep"
    assert reproduce.main(["--paper", "adamcb", "--seeds", "0", "--run-dir", str(keep)]) == 0
    _, claims = paper_modules("adamcb")
    assert reproduce.run_folders[-1] == keep / "adamcb"
    assert (keep / "adamcb" / claims.PLOT).is_file()  # kept: a stopped run resumes there
    assert reproduce.main(["--paper", "adamcb", "--seeds", "0"]) == 0
    assert not reproduce.run_folders[-1].exists()  # the temporary folder is gone


def test_heldout_refuses_explicit_seeds(reproduce, capsys):
    assert reproduce.main(["--paper", "adamcb", "--heldout", "--seeds", "1"]) == 2
    assert "HELDOUT_SEEDS" in capsys.readouterr().err


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


ADAMCB_SEED_0 = ["--paper", "adamcb", "--seeds", "0", "--no-progress"]


def paper_line(out: str) -> list[str]:
    """The cells of the last per-paper line reproduce.py printed (paper, claims, numbers)."""
    line = [row for row in out.splitlines() if row.startswith("| adamcb ")][-1]
    return [cell.strip() for cell in line.strip("|").split("|")]


@pytest.mark.parametrize("scale", ["toy", "real"])
def test_check_exits_0_when_the_numbers_reproduce_though_a_claim_fails(reproduce, scale, capsys):
    """Issue 52: a failing claim (on real data: a finding) is not a defect of the numbers."""
    reproduce.claims_out = [CLAIM, FAILING, CONTROL_FAILS, DIAGNOSTIC_DOES_NOT_HOLD]
    args = [*ADAMCB_SEED_0, "--scale", scale]  # adamcb has a real rung
    assert reproduce.main([*args, "--write"]) == 0  # written, the failing claim recorded
    assert reproduce.main([*args, "--check"]) == 0
    out = capsys.readouterr().out
    for word in ("PASS", "FAIL", "fails, as a control must", "info: does not hold"):
        assert f"| {word} " in out, word
    assert "True" not in out and "False" not in out  # the record's bare `passed` is not shown
    assert paper_line(out) == ["adamcb", "1 PASS, 1 FAIL", "reproduce"]  # both answers


def test_check_exits_1_when_a_number_differs_though_every_claim_passes(reproduce, tmp_path, capsys):
    assert reproduce.main([*ADAMCB_SEED_0, "--write"]) == 0
    path = tmp_path / "papers" / "adamcb" / "results" / "toy.json"
    path.write_text(path.read_text().replace("0.25", "0.26"))
    assert reproduce.main([*ADAMCB_SEED_0, "--check"]) == 1
    assert paper_line(capsys.readouterr().out) == ["adamcb", "1 PASS", "1 differ"]
    path.unlink()  # a missing committed file is a difference too
    assert reproduce.main([*ADAMCB_SEED_0, "--check"]) == 1
    assert paper_line(capsys.readouterr().out) == ["adamcb", "1 PASS", "no committed file"]


def test_check_on_a_file_from_the_other_cpu_vendor_compares_no_number_and_exits_0(
    reproduce, tmp_path, monkeypatch, capsys
):
    assert reproduce.main([*ADAMCB_SEED_0, "--write"]) == 0
    path = tmp_path / "papers" / "adamcb" / "results" / "toy.json"
    other = json.loads(path.read_text())
    other["metrics"]["adamcb"]["final_train_ce"]["per_seed"]["0"] = 0.26
    other["float_path"]["cpu_vendor"] = "AuthenticAMD"
    path.write_text(json.dumps(other))
    monkeypatch.setattr(shared.entry.floatpath, "cpu_vendor", lambda: "GenuineIntel")
    assert reproduce.main([*ADAMCB_SEED_0, "--check"]) == 0
    assert "not compared (made on another CPU vendor)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("claims", "status"),
    [
        ([CLAIM, CONTROL_FAILS, DIAGNOSTIC_DOES_NOT_HOLD], 0),  # a diagnostic never gates
        ([CLAIM, FAILING], 1),
        ([CLAIM, {**CONTROL_FAILS, "holds": True, "passed": False}], 1),  # control broken
    ],
    ids=["claims-hold", "a-claim-fails", "a-control-holds"],
)
def test_a_plain_run_exits_1_only_when_a_claim_fails_or_a_control_holds(reproduce, claims, status):
    reproduce.claims_out = claims
    assert reproduce.main(ADAMCB_SEED_0) == status


def test_a_run_that_stops_with_an_error_exits_2_with_its_traceback(reproduce, capsys):
    reproduce.claims_out = [{"name": "broken record"}]  # no role: the verdict table raises
    assert reproduce.main([*ADAMCB_SEED_0, "--check"]) == 2
    assert "Traceback" in capsys.readouterr().err


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


def test_workers_fork_the_runs_and_zero_is_refused(reproduce, monkeypatch, capsys):
    """--workers N reaches the run as runtime.workers=N (the numbers do not change with it)."""
    seen = []
    fake = reproduce.check_claims
    monkeypatch.setattr(
        reproduce,
        "check_claims",
        lambda slug, out_dir, seeds=None, overrides=(), scale=None: (
            seen.append(overrides) or fake(slug, out_dir, seeds, overrides, scale)
        ),
    )
    assert reproduce.run(["--paper", "adamcb", "--workers", "2", "--no-progress"]) == 0
    assert seen == [("runtime.progress=false", "runtime.workers=2")]
    with pytest.raises(SystemExit):
        reproduce.run(["--paper", "adamcb", "--workers", "0"])
    assert "--workers 0: run at least one process" in capsys.readouterr().err
