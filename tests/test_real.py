"""The real rung of every paper that has one (``configs/<slug>/real.yaml``): declared claims,
committed results that name their assets, one short end-to-end run on the real files, and,
where the whole real claim set is cheap (``claims.REAL_CI``), that claim set, reproducing the
committed ``results/real.json`` bit for bit.

Without the assets (a machine that cannot reach the registries) the runs skip, naming
``python scripts/fetch_assets.py``; CI fetches them first, so there they run."""

from __future__ import annotations

import dataclasses
import math
import warnings

import pytest

from shared import assets
from shared.claims import Claim
from shared.config import REAL_SCALE, available_papers, compose_dict, real_papers
from shared.entry import (
    check_claims,
    committed_differences,
    committed_results_path,
    execute,
    float_path_mismatch,
    paper_modules,
)
from shared.preflight import PreflightError
from shared.records import read_json
from shared.tables import verdict_table
from tests.cpu_units import AIM_FRACTION, clock_in_units, over_budget, record_claim_time
from tests.helpers import require_assets

REAL = real_papers()
# In units of the reference workload (tests/cpu_units.py); CPU s on the Intel CI machine:
SMOKE_CEILING_UNITS = 30.0  # 45 CPU s: one short real run per paper (issue 41)
SMOKE_AIM_UNITS = AIM_FRACTION * SMOKE_CEILING_UNITS  # 30 CPU s, issue 41's aim
REAL_CI_CEILING_UNITS = 80.0  # 120 CPU s: a real claim set CI runs in full costs at most this


def test_some_papers_have_a_real_rung():
    assert REAL, "no configs/<slug>/real.yaml found"


def test_scale_real_of_a_paper_without_one_is_refused():
    without = [s for s in available_papers() if s not in REAL]
    if not without:
        pytest.skip("every paper has a real rung")
    with pytest.raises(ValueError, match=f"{without[0]}.*has no real rung"):
        compose_dict(without[0], REAL_SCALE)


@pytest.fixture(params=REAL)
def real_slug(request) -> str:
    return request.param


def test_real_rung_is_declared(real_slug):
    train, claims = paper_modules(real_slug)
    names = tuple(getattr(train, "REAL_ASSETS", ()))
    assert names, f"papers/{real_slug}/train.py names no REAL_ASSETS"
    for name in names:
        assert real_slug in assets.asset(name).papers, f"{name} does not list {real_slug}"
    gated = [c for c in claims.REAL_CLAIMS if isinstance(c, Claim) and c.role == "claim"]
    assert gated, f"{real_slug}: REAL_CLAIMS has no role='claim' entry"
    assert claims.REAL_SEEDS and claims.REAL_METHODS and claims.REAL_PLOT.endswith(".png")
    assert isinstance(claims.REAL_CI, bool)
    assert isinstance(claims.REAL_SMOKE_OVERRIDES, tuple)
    if claims.REAL_CI:
        assert claims.REAL_CPU_BUDGET_UNITS <= REAL_CI_CEILING_UNITS
    cfg = compose_dict(real_slug, REAL_SCALE)
    assert cfg.scale == REAL_SCALE
    text = (committed_results_path(real_slug).parent.parent / "README.md").read_text()
    assert "## Real data" in text, f"papers/{real_slug}/README.md has no 'Real data' section"
    assert "<!-- real-results:begin -->" in text and "<!-- real-results:end -->" in text


def test_committed_real_results_name_their_assets(real_slug):
    path = committed_results_path(real_slug, scale=REAL_SCALE)
    assert path.is_file(), (
        f"papers/{real_slug}/results/real.json is missing: run "
        f"python scripts/reproduce.py --paper {real_slug} --scale real --write"
    )
    result = read_json(path)
    train, claims = paper_modules(real_slug)
    recorded = {a["name"]: a for a in result["assets"]}
    assert set(recorded) == set(train.REAL_ASSETS)
    for name, entry in recorded.items():
        pinned = assets.asset(name)
        assert entry["version"] == pinned.version
        assert entry["files"] == {f.name: f.sha256 for f in pinned.everything}
    declared = {c.name for c in claims.REAL_CLAIMS}
    assert {c["name"] for c in result["claims"]} == declared, "real.json predates REAL_CLAIMS"
    assert (path.parent / "real.png").is_file()


def test_real_run_without_its_assets_stops_in_one_line(real_slug, tmp_path, monkeypatch):
    """A fetched asset absent from the cache names the fetch command; an installed package at
    another version than the table pins names the package and the install command."""
    train, _ = paper_modules(real_slug)
    fetched = [n for n in train.REAL_ASSETS if assets.asset(n).source != "installed"]
    monkeypatch.setenv(assets.ENV_VARIABLE, str(tmp_path / "empty-cache"))
    if fetched:
        expected = f"{assets.FETCH_COMMAND} {fetched[0]}"
    else:  # only installed packages' files: pretend the table pins another version
        entry = assets.asset(train.REAL_ASSETS[0])
        other = dataclasses.replace(entry, version="0.0")
        monkeypatch.setattr(
            assets, "ASSETS", tuple(other if a is entry else a for a in assets.ASSETS)
        )
        expected = f"the table pins 0.0: reinstall {entry.package}==0.0"
    out = tmp_path / "run"
    with pytest.raises(PreflightError) as err:
        execute(real_slug, compose_dict(real_slug, REAL_SCALE), out)
    message = str(err.value)
    assert "\n" not in message and "scale=real cannot start" in message
    assert expected in message, message
    assert not out.exists(), "a refused run must not make its run folder"


def test_real_smoke_run(real_slug, tmp_path, record_property):
    """The real path end to end on the real files, shortened by REAL_SMOKE_OVERRIDES."""
    train, claims = paper_modules(real_slug)
    require_assets(*train.REAL_ASSETS)
    overrides = ["runtime.progress=false", "runtime.workers=1", *claims.REAL_SMOKE_OVERRIDES]
    with clock_in_units() as metered:
        record = execute(real_slug, compose_dict(real_slug, REAL_SCALE, overrides), tmp_path)
    record_property("real_smoke_cpu_s", metered.clock.cpu_s)
    record_property("real_smoke_units", metered.units())
    for method, metrics in record["metrics"].items():
        for name, stats in metrics.items():
            assert stats["mean"] is None or not math.isinf(stats["mean"]), f"{method}/{name}"
    assert (tmp_path / "result.json").is_file()
    assert (tmp_path / claims.REAL_PLOT).is_file(), f"the run wrote no {claims.REAL_PLOT}"
    assert [a["name"] for a in record["assets"]] == list(train.REAL_ASSETS)
    overrun = over_budget(
        f"{real_slug}'s real smoke run (aim {SMOKE_AIM_UNITS:.0f} units)",
        metered,
        SMOKE_CEILING_UNITS,
    )
    assert overrun is None, overrun


def test_real_claims_reproduce(real_slug, tmp_path, record_property):
    """Papers whose whole real claim set is cheap: CI reruns it and gets the committed numbers
    and verdicts. A real claim that fails is a reported finding, so CI pins the verdict the
    committed file reports, not a pass."""
    train, claims = paper_modules(real_slug)
    if not claims.REAL_CI:
        pytest.skip(
            f"{real_slug}'s real claim set costs more than CI affords (REAL_CPU_BUDGET_UNITS="
            f"{claims.REAL_CPU_BUDGET_UNITS:.0f}); python scripts/reproduce.py --paper {real_slug} "
            "--scale real --check reruns it"
        )
    require_assets(*train.REAL_ASSETS)
    with clock_in_units() as metered:
        record = check_claims(
            real_slug, tmp_path, overrides=("runtime.progress=false",), scale=REAL_SCALE
        )
    record_claim_time(record_property, metered, claims.REAL_CPU_BUDGET_UNITS)
    record_property("claim_label", f"{real_slug} (real)")
    committed = read_json(committed_results_path(real_slug, scale=REAL_SCALE))
    committed_by_name = {c["name"]: c for c in committed["claims"]}
    table = verdict_table(record["claims"], beside=committed_by_name, beside_name="committed")
    assert [c["passed"] for c in record["claims"]] == [c["passed"] for c in committed["claims"]], (
        f"{real_slug}: real-data verdicts moved:\n{table}"
    )
    mismatch = float_path_mismatch(real_slug, scale=REAL_SCALE)
    if mismatch:
        warnings.warn(mismatch, stacklevel=1)
    differences = [] if mismatch else committed_differences(real_slug, record, scale=REAL_SCALE)
    assert not differences, (
        f"{real_slug}: HEAD no longer computes the committed results/real.json (regenerate: "
        f"python scripts/reproduce.py --paper {real_slug} --scale real --write):\n"
        + "\n".join(differences[:20])
    )
    overrun = over_budget(
        f"{real_slug} real claims",
        metered,
        claims.REAL_CPU_BUDGET_UNITS,
    )
    assert overrun is None, overrun
