"""The float-path pin (shared/floatpath.py) and the comparison with committed numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from shared import floatpath
from shared.claims import Tolerance, metric_differences
from shared.entry import check_float_path
from tests.helpers import run_cli

PINNABLE, WHY_NOT = floatpath.cpu_supports_pin()
needs_pin = pytest.mark.skipif(not PINNABLE, reason=f"no pinned path here: {WHY_NOT}")

# What a different machine's libraries would pick: ATen's and oneDNN's non-AVX2 kernels, MKL's
# SSE2 branch, OpenBLAS's generic core.
OTHER_ISA = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "COMPATIBLE",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "OPENBLAS_CORETYPE": "Prescott",
}


@needs_pin
def test_the_pin_holds_in_the_test_process():
    state = floatpath.state()
    assert state["mode"] == floatpath.PINNED and state["holds"], state
    assert state["aten_cpu_capability"] == "AVX2" and not state["numpy_avx512"]
    assert all(os.environ[k] == v for k, v in floatpath.PIN.items())


def _smoke_metrics(tmp_path, name: str, env: dict[str, str], *overrides: str) -> dict:
    out_root = tmp_path / name
    # one method and seed of the smoke run: enough arithmetic for the kernels to show
    args = [
        "-m",
        "papers.adamcb.train",
        "scale=smoke",
        "methods=[adamcb]",
        "seeds=[0]",
        "runtime.progress=false",
    ]
    previous = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        proc = run_cli([*args, f"out_root={out_root}", *overrides], cwd=tmp_path)
    finally:
        for k, v in previous.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (record,) = out_root.glob("adamcb/smoke/*/result.json")
    return json.loads(record.read_text())


@needs_pin
@pytest.mark.slow
def test_the_pin_wins_over_an_environment_that_asks_for_another_isa(tmp_path):
    plain = _smoke_metrics(tmp_path, "plain", {})
    other = _smoke_metrics(tmp_path, "other", OTHER_ISA)
    assert other["float_path"]["holds"] and other["float_path"]["env"] == plain["float_path"]["env"]
    assert other["metrics"] == plain["metrics"]
    # Control: the same environment on the native path does change the numbers, so the
    # equality above is the pin's doing (the process restarts itself without the pin).
    native = _smoke_metrics(tmp_path, "native", OTHER_ISA, "runtime.float_path=native")
    assert native["float_path"]["mode"] == floatpath.NATIVE
    assert native["float_path"]["aten_cpu_capability"] == "DEFAULT"
    assert native["metrics"] != plain["metrics"]


def test_a_cpu_without_the_pins_isa_runs_natively(monkeypatch):
    monkeypatch.setattr(floatpath.platform, "machine", lambda: "aarch64")
    assert floatpath.cpu_supports_pin() == (False, "aarch64 is not x86-64")


def test_an_unknown_mode_is_named(monkeypatch):
    monkeypatch.setenv(floatpath.MODE_VARIABLE, "fast")
    with pytest.raises(ValueError, match="REPRO_FLOAT_PATH='fast'; choose one of pinned, native"):
        floatpath.requested_mode()
    with pytest.raises(ValueError, match="runtime.float_path='fast'"):
        check_float_path("fast")


@needs_pin
def test_a_config_asking_for_the_other_path_in_process_fails_in_one_line():
    with pytest.raises(SystemExit, match="start it with REPRO_FLOAT_PATH=native"):
        check_float_path(floatpath.NATIVE)


def test_native_environment_gives_back_what_the_user_had(monkeypatch):
    monkeypatch.setitem(floatpath._applied, "overridden", {"MKL_CBWR": "COMPATIBLE"})
    env = floatpath.native_environment()
    assert env["MKL_CBWR"] == "COMPATIBLE" and env[floatpath.MODE_VARIABLE] == "native"
    assert "ATEN_CPU_CAPABILITY" not in env or os.environ.get("ATEN_CPU_CAPABILITY") is None


def test_importing_numpy_first_warns_that_the_pin_is_incomplete(tmp_path):
    code = "import numpy, warnings; warnings.simplefilter('error'); import shared"
    env = {k: v for k, v in os.environ.items() if k not in floatpath.PIN}
    env.pop(floatpath.MODE_VARIABLE, None)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(floatpath.Path(floatpath.__file__).parents[1])},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    if PINNABLE:
        assert proc.returncode != 0 and "numpy loaded before the float-path pin" in proc.stderr
    else:
        assert proc.returncode == 0


# ------------------------------------------------------------------ committed numbers
def _summary(values: dict[str, float | None]) -> dict:
    return {"m": {"loss": {"per_seed": values}}}


def test_identical_per_seed_metrics_reproduce():
    run = _summary({"0": 0.125, "1": None})
    assert metric_differences(run, _summary({"0": 0.125, "1": None, "2": 9.0}), [0, 1], {}) == []


def test_a_stale_committed_value_is_named_with_seed_and_both_numbers():
    run, stale = _summary({"0": 0.125, "1": 0.5}), _summary({"0": 0.125, "1": 0.5000001})
    assert metric_differences(run, stale, [0, 1], {}) == [
        "m/loss seed 1: HEAD computes 0.5, the committed file says 0.5000001"
    ]


def test_a_missing_metric_or_seed_is_a_difference():
    run = {**_summary({"0": 1.0}), "new": {"acc": {"per_seed": {"0": 1.0}}}}
    assert metric_differences(run, _summary({"1": 1.0}), [0], {}) == [
        "m/loss: seed 0 not in the committed file",
        "new/acc: not in the committed file",
    ]


def test_a_stated_tolerance_or_an_uncompared_metric_is_honoured():
    run, committed = _summary({"0": 1.0}), _summary({"0": 1.004})
    loose = Tolerance(reason="test", rel=0.01)
    assert metric_differences(run, committed, [0], {"loss": loose}) == []
    assert metric_differences(run, committed, [0], {"m/loss": Tolerance("t", abs=1e-3)}) != []
    assert metric_differences(run, committed, [0], {"loss": Tolerance("t", compare=False)}) == []


def test_the_cpu_vendor_is_recorded():
    assert floatpath.state()["cpu_vendor"] == floatpath.cpu_vendor() != ""


def test_numbers_from_another_cpu_vendor_are_named_not_compared(tmp_path, monkeypatch):
    """MKL's AVX2 branch holds on Intel only: a file made on the other vendor is not compared
    bit for bit (the mismatch is named); one from this vendor, or one that predates the vendor
    record, is."""
    from shared import entry

    results = tmp_path / "results" / "toy.json"
    results.parent.mkdir()
    monkeypatch.setattr(
        entry, "committed_results_path", lambda slug, heldout=False, scale="toy": results
    )
    monkeypatch.setattr(floatpath, "cpu_vendor", lambda: "GenuineIntel")
    for made_on, compared in [("AuthenticAMD", False), ("GenuineIntel", True), (None, True)]:
        record = {"mode": "pinned"} | ({"cpu_vendor": made_on} if made_on else {})
        results.write_text(json.dumps({"float_path": record, "metrics": {}}))
        mismatch = entry.float_path_mismatch("adamcb")
        assert (mismatch == "") == compared, made_on
        if not compared:
            assert "AuthenticAMD" in mismatch and "GenuineIntel" in mismatch


def test_the_cpu_is_named_for_timing_tables():
    assert floatpath.cpu_model() and floatpath.cpu_vendor()
