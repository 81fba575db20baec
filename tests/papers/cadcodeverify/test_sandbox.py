"""Model-written Python runs only in a sandboxed child process (issue: Security)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from papers.cadcodeverify.executors import SandboxedCadQueryExecutor
from papers.cadcodeverify.sandbox import SandboxLimits, bwrap_available

LIMITS = SandboxLimits(timeout_s=5, cpu_s=3, memory_mb=1024, file_mb=16)
BOTH = [pytest.param(True, id="bwrap"), pytest.param(False, id="fallback")]


def _execute(code: str, use_bwrap: bool):
    if use_bwrap and not bwrap_available():
        pytest.skip("bubblewrap is not available on this machine")
    limits = SandboxLimits(**{**LIMITS.__dict__, "use_bwrap": use_bwrap})
    return SandboxedCadQueryExecutor(limits, "output.stl").execute(code)


@pytest.mark.parametrize("use_bwrap", BOTH)
def test_an_infinite_loop_is_killed_at_the_limit(use_bwrap):
    result = _execute("while True:\n    pass\n", use_bwrap)
    assert not result.ok and result.stopped == "timeout"
    assert "Timeout" in result.error or "CPU" in result.error


@pytest.mark.parametrize("use_bwrap", BOTH)
def test_a_10_gb_allocation_fails(use_bwrap):
    result = _execute("block = bytearray(10 * 1024**3)\n", use_bwrap)
    assert not result.ok and result.stopped == "memory" and "MemoryError" in result.error


@pytest.mark.parametrize("use_bwrap", BOTH)
def test_the_parent_environment_is_invisible(use_bwrap, monkeypatch):
    monkeypatch.setenv("CCV_PARENT_SECRET", "do-not-leak")
    result = _execute(
        "import os\nassert 'CCV_PARENT_SECRET' not in os.environ, 'leaked'\n"
        "open('output.stl', 'w').write('solid a\\nendsolid a\\n')\n",
        use_bwrap,
    )
    assert "leaked" not in result.error
    assert result.error.startswith("the exported STL")  # it ran: empty STL, no triangles


@pytest.mark.parametrize("use_bwrap", BOTH)
def test_a_loopback_connection_fails(use_bwrap):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        result = _execute(
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "open('output.stl', 'w').write('connected')\n",
            use_bwrap,
        )
    assert not result.ok and ("Error" in result.error)


def test_writing_outside_the_working_directory_fails_under_bubblewrap(tmp_path):
    target = tmp_path / "escaped.txt"
    result = _execute(f"open({str(target)!r}, 'w').write('x')\n", use_bwrap=True)
    assert not result.ok and not target.exists()
    assert "Read-only file system" in result.error or "No such file" in result.error


def test_a_failing_script_is_a_compile_failure_with_its_traceback():
    result = _execute("raise ValueError('bad sketch')\n", use_bwrap=False)
    assert not result.ok and result.stopped == ""
    assert "ValueError: bad sketch" in result.error
    result = _execute("x = 1\n", use_bwrap=False)
    assert not result.ok and "wrote no 'output.stl'" in result.error
    assert os.getpid() > 0 and Path.cwd().exists()  # the parent carries on
