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
    REFERENCE_STEPS,
    CpuUnit,
    UnitClock,
    calibrated_units,
    claim_time_rows,
    clock_in_units,
    over_budget,
    reference_workload,
    seconds_to_units,
    unit_from,
)
from tests.helpers import Clock

FEW_STEPS = 5  # enough to check the result, a few hundredths of a CPU second


def metered(cpu_s: float, wall_s: float, reference_s: float) -> UnitClock:
    """A block that took ``cpu_s`` / ``wall_s`` between two reference runs of ``reference_s``."""
    unit = CpuUnit(reference_s=reference_s, samples=(reference_s, reference_s))
    return UnitClock(clock=Clock(cpu_s=cpu_s, wall_s=wall_s), unit=unit)


def test_seconds_to_units_is_a_multiple_of_the_reference():
    assert seconds_to_units(3.0, 1.5) == 2.0
    assert seconds_to_units(180.0, 2.0) == 90.0
    assert CpuUnit(reference_s=0.5, samples=(0.5, 0.5)).units(10.0) == 20.0


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
    assert over_budget("x", metered(90.0, 100.0, 1.5), 120.0) is None  # 60 units
    assert over_budget("x", metered(180.0, 400.0, 1.5), 120.0) is None  # exactly 120 units


def test_a_slow_machine_does_not_fail_a_claim_that_is_fine():
    """200 CPU s failed the old 180 s ceiling; on a machine where the reference takes 2 s it
    is 100 units, within 120."""
    assert over_budget("x", metered(200.0, 250.0, 2.0), 120.0) is None


def test_a_fast_machine_does_not_hide_a_claim_that_grew():
    """150 CPU s passed the old 180 s ceiling; on a machine where the reference takes 1 s it
    is 150 units, over 120, and the message names units, seconds and the unit."""
    message = over_budget("resdex claim", metered(150.0, 160.0, 1.0), 120.0)
    assert message == (
        "resdex claim took 150.0 units > budget 120 units (150 CPU s, wall 160 s; one unit = "
        "the reference workload's 1.00 CPU s around it on this machine)"
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


def test_the_unit_is_the_mean_of_the_runs_around_the_block():
    """A neighbour that slowed the reference after the block began counts half: the claim ran
    under both loads."""
    unit = unit_from([1.2, 1.8])
    assert unit.reference_s == pytest.approx(1.5) and unit.samples == (1.2, 1.8)
    assert unit.units(150.0) == pytest.approx(100.0)


def test_clock_in_units_keeps_the_reference_runs_off_the_block_clock():
    with clock_in_units(steps=FEW_STEPS) as block:
        assert block.unit is None  # set when the block ends
        sum(range(10_000))
    assert len(block.unit.samples) == 2 and block.unit.reference_s > 0
    # the reference runs happen outside the block's clock: the almost empty block costs less
    # than half of one run of FEW_STEPS steps (a unit is that run scaled to REFERENCE_STEPS)
    one_run_s = block.unit.reference_s * FEW_STEPS / REFERENCE_STEPS
    assert block.clock.cpu_s < one_run_s / 2
    assert block.units() == pytest.approx(block.clock.cpu_s / block.unit.reference_s)
