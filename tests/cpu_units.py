"""CPU budgets in machine-independent units: a claim's cost as a multiple of a fixed reference
workload measured on the same machine, around the same claim check.

A claim check's CPU seconds depend on the machine (resdex measured 111-230 CPU s across this
project's machines, controlar 133-155) and on its load (a busy neighbour evicts the caches and
shares the core, so the same arithmetic costs more CPU seconds: on the 2-core Intel machine the
reference below takes about 1.5 CPU s alone and 2.3-3.2 beside three busy processes). A ceiling in
seconds therefore fails a claim that is fine on a slow or busy machine and hides one that grew
on a fast one. The reference workload (:func:`reference_workload`: a small convolutional net
trained for a few hundred steps, plus a pure-Python loop, the mix of the toys' work) is run
just before and just after each claim check (:func:`clock_in_units`), under the same float-path
pin, in the same process, so under the load the claim ran under; one **unit** is the mean of
those two runs' CPU seconds, scaled to :data:`REFERENCE_STEPS` steps, and every budget is a
number of units.

Why around each claim and not once per test process: a unit measured once, at a worker's first
claim check, caught whatever its neighbour did at that moment (on 2026-12-07 one CI run's two
workers measured 1.74 and 2.41 CPU s), and every later claim of that worker was divided by it.

The ceilings were calibrated on the Intel CI machine (:data:`CALIBRATION`): a ceiling of
``CALIBRATION.ceiling_s`` CPU s there is ``ceiling_units`` units, so that machine keeps the
ceilings it had in seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from shared import floatpath

floatpath.apply()  # before torch loads: the reference runs on the pinned float path

import torch  # noqa: E402

from tests.helpers import Clock, cpu_and_wall_clock  # noqa: E402

REFERENCE_STEPS = 600  # one unit: these training steps of the reference net (~1.5 CPU s, Intel)
SAMPLE_STEPS = 300  # each run around a claim check: half a unit, ~0.75 CPU s (twice per claim)
PYTHON_LOOP_LENGTH = 2_500  # integer operations per step in the interpreter, like a toy's loop
CLAIM_CEILING_UNITS = 120.0  # the most a paper's CI claim check may declare (180 CPU s there)
AIM_FRACTION = 2 / 3  # a CI claim check aims at most this share of its budget: 1.5x headroom


@dataclass(frozen=True)
class Calibration:
    """The machine and load the unit was calibrated on, and what it measured there."""

    machine: str
    conditions: str
    reference_s: float  # the unit on that machine (CPU s of REFERENCE_STEPS steps)


CALIBRATION = Calibration(
    machine="Intel Xeon @ 2.80 GHz (Ice Lake, family 6 model 106), 2 cores, KVM",
    conditions="both cores busy with other Python work, as under CI's two pytest workers",
    reference_s=1.5,
)


def seconds_to_units(cpu_s: float, reference_s: float) -> float:
    """``cpu_s`` CPU seconds as a multiple of a reference workload that took ``reference_s``."""
    if not reference_s > 0:
        raise ValueError(f"the reference workload must take positive CPU time, not {reference_s}")
    return cpu_s / reference_s


def calibrated_units(ceiling_s: float) -> float:
    """The units a ceiling of ``ceiling_s`` CPU s on the calibration machine amounts to."""
    return seconds_to_units(ceiling_s, CALIBRATION.reference_s)


def reference_workload(steps: int = REFERENCE_STEPS) -> tuple[float, int]:
    """Train a small conv net on fixed random images for ``steps`` SGD steps, with a
    pure-Python integer loop per step; returns ``(final loss, loop checksum)``.

    Deterministic under the float-path pin (its own generator, one thread): the numbers are a
    check that the same work ran, the CPU seconds it takes are the unit."""
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(32, 3, 16, 16, generator=generator)
    labels = torch.randint(0, 10, (32,), generator=generator)
    conv = (0.2 * torch.randn(16, 3, 3, 3, generator=generator)).requires_grad_()
    hidden = (0.03 * torch.randn(16 * 8 * 8, 128, generator=generator)).requires_grad_()
    output = (0.1 * torch.randn(128, 10, generator=generator)).requires_grad_()
    parameters = (conv, hidden, output)
    learning_rate = 0.05
    checksum = 0
    loss = torch.zeros(())
    for step in range(steps):
        features = torch.nn.functional.conv2d(images, conv, padding=1).relu()
        pooled = torch.nn.functional.avg_pool2d(features, 2).flatten(1)
        logits = torch.tanh(pooled @ hidden) @ output
        loss = torch.nn.functional.cross_entropy(logits, labels)
        gradients = torch.autograd.grad(loss, parameters)
        with torch.no_grad():
            for parameter, gradient in zip(parameters, gradients, strict=True):
                parameter -= learning_rate * gradient
        # the interpreter's share of a toy's work: bookkeeping in plain Python
        for i in range(PYTHON_LOOP_LENGTH):
            checksum = (checksum * 31 + i * step) % 1_000_003
    return float(loss.detach()), checksum


def process_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process, all its threads."""
    return time.process_time()


@dataclass(frozen=True)
class CpuUnit:
    """One unit on this machine now: the reference workload's CPU seconds for
    :data:`REFERENCE_STEPS` steps (the mean of ``samples``), and every run measured, for the
    claim-time table."""

    reference_s: float
    samples: tuple[float, ...]

    def units(self, cpu_s: float) -> float:
        return seconds_to_units(cpu_s, self.reference_s)


def reference_seconds(steps: int = SAMPLE_STEPS) -> float:
    """Run the reference workload for ``steps`` steps on one torch thread; its CPU seconds,
    scaled to :data:`REFERENCE_STEPS` steps (one unit)."""
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the pin's one thread, whatever the caller set
    try:
        start = process_cpu_seconds()
        reference_workload(steps)
        return (process_cpu_seconds() - start) * REFERENCE_STEPS / steps
    finally:
        torch.set_num_threads(previous_threads)


def unit_from(samples: list[float]) -> CpuUnit:
    """The unit of reference runs taken around one block: their mean (the block ran between
    them, under the load both saw)."""
    return CpuUnit(reference_s=sum(samples) / len(samples), samples=tuple(samples))


@dataclass
class UnitClock:
    """A block's CPU and wall seconds (``clock``) and the unit measured around it (``unit``,
    set when the block ends)."""

    clock: Clock = field(default_factory=Clock)
    unit: CpuUnit | None = None

    def units(self) -> float:
        assert self.unit is not None, "the block has not ended"
        return self.unit.units(self.clock.cpu_s)


@contextmanager
def clock_in_units(steps: int = SAMPLE_STEPS) -> Iterator[UnitClock]:
    """Measure a block's CPU seconds (process and children) and wall seconds, and the unit
    around it: one reference run just before the block and one just after, outside its clock."""
    before = reference_seconds(steps)
    metered = UnitClock()
    with cpu_and_wall_clock() as clock:
        metered.clock = clock
        yield metered
    metered.unit = unit_from([before, reference_seconds(steps)])


def record_claim_time(record_property, metered: UnitClock, budget_units: float) -> None:
    """Hand the claim-time table (``tests/conftest.py``) a claim check's seconds and units."""
    clock, unit = metered.clock, metered.unit
    record_property("claim_cpu_s", clock.cpu_s)
    record_property("claim_wall_s", clock.wall_s)
    record_property("claim_units", unit.units(clock.cpu_s))
    record_property("claim_budget_units", budget_units)
    record_property("claim_reference_s", unit.reference_s)


def over_budget(label: str, metered: UnitClock, budget_units: float):
    """``None`` when the block's CPU seconds are within ``budget_units`` units, else the
    one-line failure, naming seconds and units both."""
    cpu_s, wall_s, unit = metered.clock.cpu_s, metered.clock.wall_s, metered.unit
    used = unit.units(cpu_s)
    if used <= budget_units:
        return None
    return (
        f"{label} took {used:.1f} units > budget {budget_units:.0f} units "
        f"({cpu_s:.0f} CPU s, wall {wall_s:.0f} s; one unit = the reference workload's "
        f"{unit.reference_s:.2f} CPU s around it on this machine)"
    )


def claim_time_rows(times) -> list[list[str]]:
    """One row per claim check: seconds, units, its share of its budget (``over the aim`` past
    AIM_FRACTION of it), and the unit it was measured in."""
    rows = []
    for label, outcome, cpu, wall, units, budget, reference in sorted(times):
        share = units / budget
        aim = " (over the aim)" if share > AIM_FRACTION else ""
        row = [label, outcome, f"{cpu:.0f}", f"{wall:.0f}", f"{units:.1f}", f"{budget:.0f}"]
        rows.append([*row, f"{share:.0%}{aim}", f"{reference:.2f}"])
    return rows


CLAIM_TIME_HEADER = [
    "paper",
    "outcome",
    "CPU s",
    "wall s",
    "units",
    "budget units",
    "of budget",
    "unit (CPU s)",
]
