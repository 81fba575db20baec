"""The CPU unit the claim budgets count in (``tests/cpu_units.py``): the conversion, the budget
check in units on hand-worked cases, the calibration, and the reference workload's result
(its numbers, never its time: tests do not assert speed)."""

from __future__ import annotations

import math

import pytest

from tests.cpu_units import (
    AIM_FRACTION,
    CALIBRATION,
    CLAIM_CEILING_UNITS,
    CLAIM_TIME_HEADER,
    CpuUnit,
    calibrated_units,
    claim_time_rows,
    measure_unit,
    over_budget,
    reference_workload,
    seconds_to_units,
)

FEW_STEPS = 5  # enough to check the result, a few hundredths of a CPU second


def test_seconds_to_units_is_a_multiple_of_the_reference():
    assert seconds_to_units(3.0, 1.5) == 2.0
    assert seconds_to_units(180.0, 2.0) == 90.0
    assert CpuUnit(reference_s=0.5, repeats=(0.5, 0.6)).units(10.0) == 20.0


@pytest.mark.parametrize("reference_s", [0.0, -1.0, float("nan")])
def test_a_reference_without_positive_time_is_refused(reference_s):
    with pytest.raises(ValueError, match="reference workload must take positive CPU time"):
        seconds_to_units(1.0, reference_s)


def test_the_calibration_keeps_the_ceilings_of_the_intel_ci_machine():
    """180 CPU s was the claim ceiling there; in units it is the same work."""
    assert calibrated_units(180.0) == pytest.approx(CLAIM_CEILING_UNITS)
    assert calibrated_units(CALIBRATION.reference_s) == 1.0
    assert "Intel" in CALIBRATION.machine


def test_within_budget_and_at_it_pass():
    unit = CpuUnit(reference_s=1.5, repeats=(1.5,))
    assert over_budget("x", 90.0, 100.0, 120.0, unit) is None  # 60 units
    assert over_budget("x", 180.0, 400.0, 120.0, unit) is None  # exactly 120 units


def test_a_slow_machine_does_not_fail_a_claim_that_is_fine():
    """200 CPU s failed the old 180 s ceiling; on a machine where the reference takes 2 s it
    is 100 units, within 120."""
    assert over_budget("x", 200.0, 250.0, 120.0, CpuUnit(reference_s=2.0, repeats=(2.0,))) is None


def test_a_fast_machine_does_not_hide_a_claim_that_grew():
    """150 CPU s passed the old 180 s ceiling; on a machine where the reference takes 1 s it
    is 150 units, over 120, and the message names units, seconds and the unit."""
    message = over_budget(
        "resdex claim", 150.0, 160.0, 120.0, CpuUnit(reference_s=1.0, repeats=(1.0, 1.1))
    )
    assert message == (
        "resdex claim took 150.0 units > budget 120 units (150 CPU s, wall 160 s; one unit = "
        "the reference workload's 1.00 CPU s on this machine now)"
    )


def test_claim_time_rows_print_seconds_units_and_the_aim():
    times = [
        ("spa", "passed", 60.0, 70.0, 40.0, 120.0, 1.5),
        ("resdex", "passed", 150.0, 160.0, 100.0, 120.0, 1.5),
    ]
    rows = claim_time_rows(times)
    assert [len(row) for row in rows] == [len(CLAIM_TIME_HEADER)] * 2
    over_the_aim = "83% (over the aim)"  # 100 of 120 units, past two thirds
    assert rows[0] == ["resdex", "passed", "150", "160", "100.0", "120", over_the_aim, "1.50"]
    assert rows[1] == ["spa", "passed", "60", "70", "40.0", "120", "33%", "1.50"]
    assert AIM_FRACTION == pytest.approx(2 / 3)


def test_the_reference_workload_computes_the_same_numbers_each_time():
    first, second = reference_workload(FEW_STEPS), reference_workload(FEW_STEPS)
    assert first == second  # bit for bit: its own generator, the pinned float path
    loss, checksum = first
    assert math.isfinite(loss) and loss > 0 and isinstance(checksum, int)
    assert reference_workload(FEW_STEPS + 1) != first  # the steps are work that was done


def test_measure_unit_takes_the_fastest_run():
    unit = measure_unit(repeats=2, steps=FEW_STEPS)
    assert len(unit.repeats) == 2 and unit.reference_s == min(unit.repeats) > 0
