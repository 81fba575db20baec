"""One floating-point code path on every x86-64 machine with AVX2 (the pin).

The libraries under numpy and torch pick their kernels from the CPU they find: MKL (torch's
BLAS) its instruction-set branch, ATen its vectorised kernels (AVX2 or AVX-512), oneDNN its JIT
ISA, OpenBLAS (numpy's and scipy's BLAS) its core type, numpy its SIMD loops (e.g. SVML's
AVX-512 ``exp`` / ``log``, AVX-512 ``argsort``). Each choice changes the order and rounding of
floating-point operations, so a toy that trains and samples lands on different numbers on an
AVX-512 Intel machine than on an AVX2 AMD one (measured: up to +-0.02 in a win rate).

:func:`apply` sets, before numpy and torch load, the variables that fix each choice at the
AVX2 level every supported machine has, plus one thread for every pool (:data:`PIN`). It runs
on import of ``papers`` and ``shared`` (so ``python -m papers.<slug>.train``, the benchmarks,
``scripts/reproduce.py`` and the tests all get it) and overrides whatever the environment
asked for, so the pin wins. :func:`state` measures what took effect, for ``result.json``.

``REPRO_FLOAT_PATH=native`` (or the config key ``runtime.float_path=native``, which restarts
the process with it) keeps each library's own choice: faster on AVX-512 machines, but the
numbers are then the machine's own. Machines without AVX2, and non-x86 machines, always run
natively, and their records say so.

MKL honours a named branch (AVX2) only on Intel CPUs: on AMD and other vendors it runs its AUTO
branch instead (Intel's oneMKL developer guide, "Reproducibility Conditions"), so GEMM results,
and the numbers of every toy that trains through them, differ in the last bits between an Intel
and an AMD machine. The committed results come from an Intel AVX2 branch (:func:`state` records
the CPU vendor); the only cross-vendor MKL branch, COMPATIBLE (SSE2, no FMA), measured 2.5x
slower GEMMs here and is not used.
"""

from __future__ import annotations

import os
import platform
import sys
import warnings
from pathlib import Path
from typing import Any

MODE_VARIABLE = "REPRO_FLOAT_PATH"
PINNED, NATIVE = "pinned", "native"
MODES = (PINNED, NATIVE)

# Each variable fixes one library's choice at the x86-64-v3 (AVX2 + FMA) level.
PIN: dict[str, str] = {
    # MKL's conditional numerical reproducibility, strict: its AVX2 branch, and GEMMs whose
    # summation order does not follow the matrix shape, alignment or cache blocking (measured:
    # without STRICT an Intel Sapphire Rapids changes a logit when the product is widened)
    "MKL_CBWR": "AVX2,STRICT",
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's vectorised kernels (not AVX-512)
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN (mkldnn) JIT kernels
    "OPENBLAS_CORETYPE": "Haswell",  # OpenBLAS in numpy's and scipy's wheels: AVX2 kernels
    "NPY_ENABLE_CPU_FEATURES": "X86_V3",  # numpy's SIMD dispatch: baseline + AVX2, no AVX-512
    # One thread everywhere: a reduction split over threads is summed in another order.
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}
REQUIRED_CPU_FLAGS = ("avx2", "fma")  # x86-64-v3; every pinned kernel needs them

_applied: dict[str, Any] = {}


def cpu_supports_pin() -> tuple[bool, str]:
    """Whether this CPU can run the pinned path, and why not when it cannot."""
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        return False, f"{machine} is not x86-64"
    try:
        flags = next(
            line.split(":", 1)[1].split()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("flags")
        )
    except (OSError, StopIteration):
        return False, "no /proc/cpuinfo to read the CPU's flags from"
    missing = [flag for flag in REQUIRED_CPU_FLAGS if flag not in flags]
    if missing:
        return False, f"the CPU lacks {', '.join(missing)}"
    return True, ""


def _cpuinfo(field: str) -> str:
    """The first ``field`` of /proc/cpuinfo (``unknown`` without it)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    values = [line.split(":", 1)[1].strip() for line in lines if line.startswith(field)]
    return values[0] if values else "unknown"


def cpu_vendor() -> str:
    """The CPU's vendor string (``GenuineIntel``, ``AuthenticAMD``; ``unknown`` without
    /proc/cpuinfo): MKL's pinned branch holds on Intel CPUs only (module docstring)."""
    return _cpuinfo("vendor_id")


def cpu_model() -> str:
    """The CPU's model name (e.g. ``AMD EPYC 7B13``), for timing tables."""
    return _cpuinfo("model name")


def requested_mode() -> str:
    mode = os.environ.get(MODE_VARIABLE, PINNED)
    if mode not in MODES:
        raise ValueError(f"{MODE_VARIABLE}={mode!r}; choose one of {', '.join(MODES)}")
    return mode


def apply() -> str:
    """Pin the float path for this process and its children (idempotent); returns the mode.

    Must run before numpy or torch is imported: their libraries read these variables once, when
    they load. If one was imported first, the pin is incomplete; this warns, and :func:`state`
    records what actually took effect.
    """
    if _applied:
        return _applied["mode"]
    mode, reason = requested_mode(), ""
    if mode == PINNED:
        supported, reason = cpu_supports_pin()
        if not supported:
            mode = NATIVE
    if mode == PINNED:
        early = [name for name in ("numpy", "torch") if name in sys.modules]
        differs = [k for k, v in PIN.items() if os.environ.get(k) != v]
        if early and differs:
            warnings.warn(
                f"{' and '.join(early)} loaded before the float-path pin "
                f"({', '.join(differs)} not set in time): import papers or shared first, or "
                "export the variables in shared/floatpath.py:PIN; this run may not reproduce",
                RuntimeWarning,
                stacklevel=2,
            )
        _applied["overridden"] = {k: os.environ.get(k) for k in PIN}
        os.environ.update(PIN)
    os.environ[MODE_VARIABLE] = mode  # children (xdist workers, torchrun ranks) agree
    _applied.update(mode=mode, reason=reason)
    return mode


def mode() -> str:
    """The mode this process runs in (``pinned`` or ``native``)."""
    return apply()


def state() -> dict[str, Any]:
    """What took effect, measured from the loaded libraries (for run records)."""
    import numpy as np
    import torch
    from threadpoolctl import threadpool_info

    umath = np._core._multiarray_umath
    # The SIMD targets numpy dispatches to on this CPU under this environment: the CPU's own
    # features (``__cpu_features__``) stay listed whatever NPY_ENABLE_CPU_FEATURES says, so
    # what the pin changes is which dispatch targets are enabled.
    dispatched = [t for t in umath.__cpu_dispatch__ if umath.__cpu_features__.get(t)]
    blas = [
        {k: info.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
        for info in threadpool_info()
        if info.get("user_api") == "blas"
    ]
    record = {
        "mode": mode(),
        "cpu_vendor": cpu_vendor(),
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "numpy_dispatch": dispatched,
        "numpy_avx512": any(t == "X86_V4" or t.startswith("AVX512") for t in dispatched),
        "torch_threads": torch.get_num_threads(),
        "blas": blas,
        "env": {k: os.environ.get(k) for k in PIN},
    }
    if _applied.get("reason"):
        record["native_because"] = _applied["reason"]
    if record["mode"] == PINNED:
        record["holds"] = (
            record["aten_cpu_capability"] == "AVX2"
            and not record["numpy_avx512"]
            and all(b["num_threads"] == 1 for b in blas)
            and all(
                b["architecture"] in (None, "Haswell")
                for b in blas
                if b["internal_api"] == "openblas"
            )
        )
    return record


def native_environment() -> dict[str, str]:
    """This process's environment for a child that runs natively: the pin's variables back to
    what the environment held before :func:`apply` (so each library chooses for itself, or as
    the user asked)."""
    env = {k: v for k, v in os.environ.items() if k not in PIN}
    env.update({k: v for k, v in _applied.get("overridden", {}).items() if v is not None})
    env[MODE_VARIABLE] = NATIVE
    return env
