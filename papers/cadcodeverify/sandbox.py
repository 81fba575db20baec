"""Run model-written Python (CadQuery scripts) only in a sandboxed child process.

Every program a model writes runs in a child process with

* a wall-clock timeout (the process group is killed) and a CPU-time limit (``RLIMIT_CPU``);
* an address-space limit (``RLIMIT_AS``): a huge allocation fails with ``MemoryError``;
* a file-size limit (``RLIMIT_FSIZE``) and no core dumps;
* a fresh temporary working directory, deleted afterwards;
* an environment that inherits no variable (``python -I`` and an empty environment);
* no network.

Where bubblewrap (``bwrap``, Debian package ``bubblewrap``) works, the child also runs in new
namespaces (``--unshare-all``: no network, own PID/IPC/UTS) with a read-only view of the
filesystem, a private ``/tmp`` and only the working directory writable. Elsewhere the fallback
is the resource-limited subprocess above, whose "no network" is a guard installed in the
child's ``socket`` module before the script runs. Residual risks of that fallback: a script
can reach the network through the ``_socket`` C module or ``ctypes``, and can read (and, with
the user's permissions, write) files outside its working directory. Use a machine with
bubblewrap (or a container without network) for untrusted models.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# The trusted prelude: blocks sockets at the Python level (defence in depth; the only network
# barrier without bubblewrap), then runs the model's script as __main__.
RUNNER = """\
import runpy
import socket


def _no_network(*args, **kwargs):
    raise OSError("network access is disabled in the sandbox")


for _name in ("connect", "connect_ex", "bind", "sendto"):
    setattr(socket.socket, _name, _no_network)
socket.create_connection = _no_network
socket.getaddrinfo = _no_network
runpy.run_path("code.py", run_name="__main__")
"""
RUNNER_NAME, CODE_NAME = "_sandbox_runner.py", "code.py"
MAX_ERROR_CHARS = 4000  # the tail of a traceback is what a repair prompt needs


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 60.0  # wall clock (brief Sec. 3.4)
    cpu_s: int = 60  # RLIMIT_CPU
    memory_mb: int = 4096  # RLIMIT_AS
    file_mb: int = 256  # RLIMIT_FSIZE
    use_bwrap: bool = True  # use bubblewrap when it works on this machine


@dataclass(frozen=True)
class SandboxResult:
    ok: bool  # exit status 0 and the expected output file exists
    output: bytes | None  # the output file's bytes
    error: str  # stderr tail or the reason (for the repair prompt)
    stopped: str  # "" | timeout | memory | other: what the sandbox stopped


def _bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    try:
        probe = subprocess.run(
            ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-all", "true"],
            capture_output=True,
            timeout=10,
            env={},
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


_BWRAP_OK: bool | None = None


def bwrap_available() -> bool:
    """Whether bubblewrap exists and can create namespaces here (checked once)."""
    global _BWRAP_OK
    if _BWRAP_OK is None:
        _BWRAP_OK = _bwrap_works()
    return _BWRAP_OK


def _limit_resources(limits: SandboxLimits):
    def apply() -> None:  # runs in the child between fork and exec
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * mb, limits.file_mb * mb))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _python_binds() -> list[str]:
    """Read-only binds of the interpreter and its import paths that live under /tmp: the
    sandbox mounts a fresh /tmp, which would hide a virtual environment created there (as a
    fresh-clone CI run does)."""
    roots = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        str(Path(sys.executable).resolve().parent),
    }
    roots |= {entry for entry in sys.path if entry and Path(entry).is_dir()}
    binds: list[str] = []
    for root in sorted(roots):
        if Path(root).resolve().is_relative_to("/tmp"):
            binds += ["--ro-bind", root, root]
    return binds


def sandbox_command(workdir: Path, use_bwrap: bool) -> list[str]:
    python = [sys.executable, "-I", RUNNER_NAME]  # -I: no PYTHON* variables, no user site
    if not use_bwrap:
        return python
    wd = str(workdir)
    return [
        "bwrap",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        *_python_binds(),
        "--bind", wd, wd,
        "--chdir", wd,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--setenv", "HOME", wd,
        *python,
    ]  # fmt: skip


def _stopped(returncode: int, stderr: str) -> str:
    if returncode > 128:  # bubblewrap reports a child killed by signal s as 128 + s
        returncode = 128 - returncode
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL) or "SIGXCPU" in stderr:
        return "timeout"  # the CPU-time limit fired
    if "MemoryError" in stderr or "std::bad_alloc" in stderr:
        return "memory"
    if returncode < 0:
        return "other"  # killed by another signal (e.g. SIGXFSZ: the file-size limit)
    return ""


def run_sandboxed(code: str, output_name: str, limits: SandboxLimits) -> SandboxResult:
    """Run ``code`` as ``code.py`` in a fresh directory under the sandbox; return the bytes of
    ``output_name`` it wrote there. Never raises for anything the script does."""
    workdir = Path(tempfile.mkdtemp(prefix="cadcodeverify-"))
    try:
        (workdir / CODE_NAME).write_text(code)
        (workdir / RUNNER_NAME).write_text(RUNNER)
        use_bwrap = limits.use_bwrap and bwrap_available()
        proc = subprocess.Popen(
            sandbox_command(workdir, use_bwrap),
            cwd=workdir,
            env={},  # inherit no variable
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_limit_resources(limits),
            start_new_session=True,  # its own process group, killed as a whole on timeout
        )
        try:
            _, err = proc.communicate(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            message = f"TimeoutError: the script ran longer than {limits.timeout_s:g} s"
            return SandboxResult(False, None, message, "timeout")
        stderr = err.decode(errors="replace")[-MAX_ERROR_CHARS:]
        stopped = _stopped(proc.returncode, stderr)
        if proc.returncode != 0:
            reason = stderr.strip() or f"the script exited with status {proc.returncode}"
            if stopped == "timeout" and not stderr.strip():
                reason = f"TimeoutError: the script used more than {limits.cpu_s} CPU seconds"
            return SandboxResult(False, None, reason, stopped)
        output = workdir / output_name
        if not output.is_file():
            return SandboxResult(False, None, f"the script ran but wrote no {output_name!r}", "")
        return SandboxResult(True, output.read_bytes(), "", "")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
