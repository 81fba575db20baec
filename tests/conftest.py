"""Test-wide setup: offline hubs, quiet progress bars, the list of papers, one BLAS/torch
thread per xdist worker, the CPU unit the claim budgets count in, and the claim-time table
printed at the end of the run."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

import pytest

from shared import floatpath

floatpath.apply()  # before torch and numpy load (shared's import does it too; explicit here)

import torch  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

# Any accidental hub access must fail loudly instead of downloading (CI has no network).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from shared.config import REPO_ROOT  # noqa: E402
from shared.tables import markdown_table  # noqa: E402
from tests.cpu_units import (  # noqa: E402
    CALIBRATION,
    CLAIM_TIME_HEADER,
    claim_time_rows,
)
from tests.helpers import PAPERS, run_cli, run_smoke  # noqa: E402

if os.environ.get("PYTEST_XDIST_WORKER"):
    # One worker per core: a second BLAS or torch thread per worker would only contend (and
    # spin, inflating the CPU seconds the claim budgets count).
    threadpool_limits(1)
    torch.set_num_threads(1)


def pytest_collection_modifyitems(items):
    """The claim checks (minutes each) first, every other test after them in its own order.

    With ``--dist load --maxschedchunk 1`` (the README's test command) pytest-xdist hands the
    next test in this order to whichever worker is free: both workers start on the claims and
    the ~2,000 short tests then fill in until both finish together, instead of one worker
    still running a claim for minutes after the other has run out of work."""
    items.sort(key=lambda item: not _is_claim_check(item))  # a stable sort


def _is_claim_check(item) -> bool:
    return item.get_closest_marker("claim") is not None or item.name.startswith(
        "test_real_claims_reproduce"
    )


@pytest.fixture(params=PAPERS)
def slug(request) -> str:
    return request.param


def built_once(tmp_path_factory, name: str, build) -> Path:
    """The folder ``build(folder)`` makes, made once per test session and shared, read-only,
    by every test and pytest-xdist worker that asks for it: the first to ask builds it in the
    session's shared temporary folder under a file lock; the others wait, then read it. A
    build that raised part-way is discarded and made again by the next test that asks."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the folder every worker of this session shares
    folder = base / "built-once" / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = folder.parent / f"{name}.complete"
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            build(folder)
            done.touch()
    return folder


@pytest.fixture
def smoke_reference(slug, tmp_path_factory) -> tuple[dict, Path]:
    """``(record, run_dir)`` of the paper's smoke run, computed once per test session and
    shared by every test that needs a finished reference run (the smoke checks, resume,
    refusal); ``record`` is read back from its ``result.json``."""
    run_dir = built_once(tmp_path_factory, f"smoke-{slug}", lambda out: run_smoke(slug, out))
    return json.loads((run_dir / "result.json").read_text()), run_dir


@pytest.fixture
def built_site(tmp_path_factory) -> Path:
    """The static site, built and checked once per test session by ``python scripts/site.py``
    (which exits non-zero, leaving nothing, when a check fails), for the build test and the
    browser test. It lies alone in its own folder, so a leftover temporary folder shows."""
    return built_once(tmp_path_factory, "site", _build_site) / "site"


def _build_site(folder: Path) -> None:
    site_script = REPO_ROOT / "scripts" / "site.py"
    proc = run_cli([str(site_script), "--out", str(folder / "site")], REPO_ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def one_thread():
    """One torch intra-op thread for a module of tiny-tensor tests: faster, and far faster on a
    busy machine. Restored afterwards so no other test inherits it."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def smollm2():
    """``(model, tokenizer)`` of the real pretrained LM (SmolLM2-135M, the fetched asset),
    loaded once per test process; skips naming the fetch command when it is absent."""
    from shared import pretrained
    from tests.helpers import require_assets

    require_assets(pretrained.MODEL_ASSET)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # the runtime's pin: the real-model tests compare numbers
    yield pretrained.load_model()
    torch.set_num_threads(previous)


# ------------------------------------------------------------ claim-time table (all workers)
_CLAIM_TIMES: list[tuple[str, str, float, float, float, float, float]] = []


def pytest_runtest_logreport(report):
    """Collect the CPU seconds, wall seconds and units each claim test recorded (xdist forwards
    every worker's reports, with their user properties, to the controller)."""
    if report.when != "call":
        return
    props = dict(report.user_properties)
    if "claim_cpu_s" in props:
        _CLAIM_TIMES.append(
            (
                props.get("claim_label") or report.nodeid.split("[", 1)[-1].rstrip("]"),
                report.outcome,
                props["claim_cpu_s"],
                props["claim_wall_s"],
                props["claim_units"],
                props["claim_budget_units"],
                props["claim_reference_s"],
            )
        )


def pytest_terminal_summary(terminalreporter):
    if not _CLAIM_TIMES:
        return
    terminalreporter.write_sep("=", "claim times (CPU s: this process and its children; units)")
    # CPU seconds depend on the machine and its load, units much less: name both beside the table
    terminalreporter.write_line(
        f"CPU: {floatpath.cpu_model()} ({floatpath.cpu_vendor()}), {os.cpu_count()} cores; "
        f"one unit = the reference workload of tests/cpu_units.py (the mean of a run just "
        f"before and one just after each claim check), {CALIBRATION.reference_s:.2f} CPU s "
        f"on the calibration machine ({CALIBRATION.machine})"
    )
    terminalreporter.write_line(markdown_table(CLAIM_TIME_HEADER, claim_time_rows(_CLAIM_TIMES)))
