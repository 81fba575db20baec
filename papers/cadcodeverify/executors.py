"""Executors C (paper Sec. 3): code -> Execution (an artifact or the error text).

* :class:`ToyExecutor`: parses toycad in-process (the language is never evaluated).
* :class:`SandboxedCadQueryExecutor`: runs a model-written CadQuery script in the sandbox of
  ``sandbox.py`` (never in-process) and reads the STL it exports as a trimesh mesh.
"""

from __future__ import annotations

import io
from collections import Counter

from papers.cadcodeverify.method import Execution
from papers.cadcodeverify.sandbox import (
    SANDBOX_MODES,
    SandboxLimits,
    check_output_name,
    choose_mode,
    run_sandboxed,
)
from papers.cadcodeverify.toycad import ToyCadError, UnknownOpError, compile_program


class ToyExecutor:
    """The toy's compiler: a :class:`~papers.cadcodeverify.toycad.Solid` or the error text."""

    def execute(self, code: str) -> Execution:
        try:
            return Execution(True, compile_program(code))
        except (ToyCadError, UnknownOpError) as err:
            return Execution(False, error=f"{type(err).__name__}: {err}")


class SandboxedCadQueryExecutor:
    """Paper scale: the script must export an STL named ``output_name`` (the prompts say so);
    a script that fails, is stopped, or leaves an empty mesh is a compile failure.

    Construction fails at once (:class:`~papers.cadcodeverify.sandbox.SandboxUnavailableError`)
    where no sandbox can be set up, before any model is asked for code. ``runs_by_mode``
    counts the programs each sandbox mode ran, so a run's results can say which one it was.
    """

    def __init__(self, limits: SandboxLimits, output_name: str = "output.stl"):
        check_output_name(output_name)
        choose_mode(limits)  # refuse now rather than after the first model call
        self.limits = limits
        self.output_name = output_name
        self.runs_by_mode: Counter[str] = Counter(dict.fromkeys(SANDBOX_MODES, 0))

    def execute(self, code: str) -> Execution:
        result = run_sandboxed(code, self.output_name, self.limits)
        self.runs_by_mode[result.mode] += 1
        if not result.ok:
            return Execution(False, error=result.error, stopped=result.stopped)
        import trimesh

        try:  # parsing the bytes is data handling, not code execution
            mesh = trimesh.load(io.BytesIO(result.output), file_type="stl", force="mesh")
        except Exception as err:  # trimesh raises many types for corrupt files
            return Execution(False, error=f"the exported STL is unreadable: {err}")
        if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
            return Execution(False, error="the exported STL holds no solid (no triangles)")
        return Execution(True, mesh)
