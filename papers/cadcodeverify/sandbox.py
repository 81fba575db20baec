"""Run model-written Python (CadQuery scripts) only in a sandboxed child process.

Threat model: the program is hostile. A language model wrote it, and whatever it prints to
stderr goes back to the model endpoint in the repair prompt, so anything it can read it can
also send away. The sandbox is bubblewrap (``bwrap``, Debian package ``bubblewrap``); this
module only assembles its command line and never builds namespaces by hand.

Inside bubblewrap the program

* sees a view built from nothing: read-only the interpreter's prefix directories (stdlib and
  site-packages), the dynamic loader's libraries (``/usr/lib``, ``/lib*``,
  ``/etc/ld.so.cache``), a fresh ``/proc``, a minimal ``/dev`` and its own working folder
  (``/sandbox``, a link to ``/tmp/sandbox``): ``/tmp`` is an empty tmpfs of ``disk_mb``
  megabytes, the only writable place, which never touches the host's disk and dies with the
  sandbox. Not the home folder, not the repository, not the rest of ``/etc``;
* runs in new network, PID, IPC, UTS (and where possible cgroup) namespaces: no network at
  all, not even the host's loopback, and no host process to signal;
* runs as an unprivileged user: started as root, bubblewrap keeps only CAP_SETUID/CAP_SETGID
  and the trusted runner drops to ``nobody`` (65534) before the program starts; otherwise a
  new user namespace maps the caller's own uid;
* has a task limit (``RLIMIT_NPROC``, processes and threads) that holds because its uid is
  not root, plus the CPU, address-space, file-size and core-dump limits, a wall-clock timeout,
  ``no_new_privs`` (bubblewrap) and an environment that inherits no variable.

Where bubblewrap is missing or cannot create namespaces, :func:`run_sandboxed` refuses to run
(:class:`SandboxUnavailableError`) unless the config opts in with
``unsafe_allow_unconfined=true``. That mode warns on every run and is recorded in every
result (``mode="unconfined"``); it keeps the resource limits, the empty environment and a new
session, and as root drops to ``nobody`` when the interpreter is readable by that user, but it
has the network and the host's file system.
"""

from __future__ import annotations

import functools
import logging
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

SANDBOX_MODES = ("bwrap", "unconfined")
SANDBOX_DIR = "/sandbox"  # where the working folder appears inside bubblewrap (a link to:)
WORK_DIR = "/tmp/sandbox"  # the folder itself, inside the size-limited tmpfs at /tmp
NOBODY = 65534  # uid and gid of nobody/nogroup: who root's sandboxed program runs as
RUNNER_NAME, CODE_NAME = "_sandbox_runner.py", "code.py"
MAX_ERROR_CHARS = 4000  # the tail of a traceback is what a repair prompt needs
REPOSITORY = Path(__file__).resolve().parents[2]
FIX = (
    "install bubblewrap (apt install bubblewrap), or run in a container without network and "
    "set cadprompt.sandbox.unsafe_allow_unconfined=true"
)
# Thread pools size themselves to the CPU count; every thread counts against RLIMIT_NPROC.
THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# The trusted prelude (argv: the output's name, then uid gid when started as root inside
# bubblewrap). It forks: the child becomes the unprivileged user, so that nothing the model
# wrote ever runs with a capability, and runs the script with its stdout sent nowhere; the
# parent waits, then carries the output out on its own stdout, the one channel to the host:
# "1" + the file's bytes when a regular file of that name exists (O_NOFOLLOW, no FIFO), else
# nothing. Under bubblewrap the working folder is a size-limited tmpfs that dies with the
# sandbox, so this copy is the only way anything the script wrote leaves it.
RUNNER = """\
import os
import runpy
import signal
import stat
import sys

output_name, identity = sys.argv[1], sys.argv[2:]
child = os.fork()
if child == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    if identity:
        uid, gid = int(identity[0]), int(identity[1])
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
            raise SystemExit("sandbox: could not drop privileges")
    sys.argv = ["code.py"]
    runpy.run_path("code.py", run_name="__main__")
    sys.exit(0)
_, status = os.waitpid(child, 0)
if os.WIFSIGNALED(status):  # die of the same signal: the host reads why the script stopped
    number = os.WTERMSIG(status)
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
code = os.waitstatus_to_exitcode(status)
if code == 0:
    try:
        fd = os.open(output_name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        fd = -1
    if fd >= 0 and stat.S_ISREG(os.fstat(fd).st_mode):
        out = os.fdopen(1, "wb", closefd=False)
        out.write(b"1")
        with os.fdopen(fd, "rb") as result:
            while block := result.read(1 << 20):
                out.write(block)
        out.flush()
sys.exit(code)
"""


class SandboxUnavailableError(RuntimeError):
    """No real sandbox can be set up here and the config did not opt into running unconfined."""


@dataclass(frozen=True)
class SandboxLimits:
    """What the sandbox allows one program (field names match ``SandboxConfig``)."""

    timeout_s: float = 60.0  # wall clock (brief Sec. 3.4); the whole sandbox is killed
    cpu_s: int = 60  # RLIMIT_CPU
    memory_mb: int = 4096  # RLIMIT_AS, per process
    file_mb: int = 256  # RLIMIT_FSIZE: also bounds the output and the captured stderr
    disk_mb: int = 256  # the working folder and /tmp together (a size-limited tmpfs; bwrap only)
    use_bwrap: bool = True  # false: skip bubblewrap and run unconfined (needs the unsafe key)
    max_processes: int = 64  # RLIMIT_NPROC: processes plus threads the program may run
    unsafe_allow_unconfined: bool = False  # run without bubblewrap where it does not work

    def __post_init__(self) -> None:
        for name in ("timeout_s", "cpu_s", "memory_mb", "file_mb", "disk_mb", "max_processes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"sandbox.{name} must be a positive number, got {value!r}")
        if not self.use_bwrap and not self.unsafe_allow_unconfined:
            raise ValueError(
                "sandbox.use_bwrap=false runs model-written code unconfined; set "
                "sandbox.unsafe_allow_unconfined=true as well to accept that, or use bubblewrap"
            )


@dataclass(frozen=True)
class SandboxResult:
    ok: bool  # exit status 0 and the expected output file exists
    output: bytes | None  # the output file's bytes
    error: str  # stderr tail or the reason (for the repair prompt)
    stopped: str  # "" | timeout | memory | disk | processes | other: what the sandbox stopped
    mode: str  # "bwrap" | "unconfined": which sandbox ran the program


# ---------------------------------------------------------------------------- choosing a mode
def find_bwrap() -> str | None:
    """The bubblewrap executable on PATH (tests replace this to simulate its absence)."""
    return shutil.which("bwrap")


def bwrap_problem() -> str | None:
    """Why bubblewrap cannot confine a program here, or None when it can."""
    bwrap = find_bwrap()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    return _probe_bwrap(bwrap, os.geteuid())


@functools.cache
def _probe_bwrap(bwrap: str, euid: int) -> str | None:
    """Run a trivial program through the full sandbox once per executable: a machine can have
    bwrap installed and still forbid namespaces (a container's seccomp profile, sysctls)."""
    try:
        probe = _execute(
            "open('probe', 'w').write('ok')\n", "probe", SandboxLimits(timeout_s=30), "bwrap", bwrap
        )
    except SandboxUnavailableError as err:
        return str(err)
    if probe.ok:
        return None
    first_line = (probe.error.strip().splitlines() or ["no output"])[-1]
    return f"bubblewrap ({bwrap}) cannot set up the sandbox here: {first_line}"


def choose_mode(limits: SandboxLimits) -> str:
    """``"bwrap"`` where bubblewrap works; ``"unconfined"`` only when the config opts in;
    otherwise raise :class:`SandboxUnavailableError` with one line naming the fix."""
    if limits.use_bwrap:
        problem = bwrap_problem()
        if problem is None:
            return "bwrap"
    else:
        problem = "sandbox.use_bwrap is false"
    if limits.unsafe_allow_unconfined:
        return "unconfined"
    raise SandboxUnavailableError(f"Refusing to run model-written code: {problem}; {FIX}.")


# ---------------------------------------------------------------------------- the bwrap view
def _read_only(paths: list[str]) -> list[str]:
    """Read-only binds of ``paths`` at the same place, each preceded by ``--dir`` for its
    missing parents: bubblewrap would create those with mode 0700, which nobody cannot
    cross."""
    args: list[str] = []
    made = {"/"}
    for path in paths:
        for parent in reversed(Path(path).parents):
            if str(parent) not in made:
                args += ["--dir", str(parent)]
                made.add(str(parent))
        args += ["--ro-bind", path, path]
        made.add(path)
    return args


def _loader_view() -> list[str]:
    """The dynamic loader's libraries and cache; on merged-/usr systems /lib and /lib64 are
    symlinks into /usr and are recreated as such."""
    binds = [p for p in ("/usr/lib", "/usr/lib64") if Path(p).is_dir() and not Path(p).is_symlink()]
    links: list[str] = []
    for path in ("/lib", "/lib64"):
        if Path(path).is_symlink():
            links += ["--symlink", os.readlink(path), path]
        elif Path(path).is_dir():
            binds.append(path)
    if Path("/etc/ld.so.cache").is_file():
        binds.append("/etc/ld.so.cache")
    return _read_only(binds) + links


def _interpreter_dirs() -> list[str]:
    """The interpreter's prefix directories (stdlib, site-packages, the executable), nested
    ones dropped. ``python -I`` builds sys.path from these alone: no user site, no
    PYTHONPATH, and the repository (even when installed editable) is not among them."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.add(str(Path(sys.executable).resolve().parent.parent))
    unique = sorted({str(Path(root).resolve()) for root in roots} | roots)
    return [r for r in unique if not any(Path(r).is_relative_to(o) and r != o for o in unique)]


def _masks(bound: list[str]) -> list[str]:
    """Empty tmpfs over the repository and the home folder where a bound prefix contains them
    (a system Python's prefix /usr holding a checkout under /usr/src, say)."""
    args: list[str] = []
    for secret in {str(REPOSITORY), str(Path.home())}:
        if any(Path(secret).is_relative_to(root) for root in bound):
            args += ["--tmpfs", secret]
    return args


def bwrap_command(bwrap: str, workdir: Path, output_name: str, disk_mb: int) -> list[str]:
    """The bubblewrap command line running the runner on the script in ``workdir``.

    ``/tmp`` is an empty tmpfs of ``disk_mb`` megabytes, mounted first (an interpreter that
    lives under the host's /tmp, a venv say, is bound into it afterwards), and the working
    folder ``/sandbox`` is a link to ``/tmp/sandbox`` inside it: a program that writes file
    after file into either fills the one tmpfs and gets ENOSPC, and nothing it writes reaches
    the host's disk. The runner and the script are bound into the folder read-only; the
    output comes out on the runner's stdout."""
    as_root = os.geteuid() == 0
    interpreter = _interpreter_dirs()
    if "/" in interpreter:  # binding it would show the program the whole host
        raise SandboxUnavailableError("the interpreter's prefix is '/'")
    if as_root:
        # No user namespace: its uid would map back to root, for whom RLIMIT_NPROC is void.
        # Every capability but the two the runner needs to become nobody is dropped.
        identity = ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        runner_args = [str(NOBODY), str(NOBODY)]
    else:
        identity, runner_args = ["--unshare-user"], []
    inputs = [arg for name in (RUNNER_NAME, CODE_NAME)
              for arg in ("--ro-bind", str(workdir / name), f"{WORK_DIR}/{name}")]  # fmt: skip
    env = [arg for name, value in _child_env(SANDBOX_DIR).items()
           for arg in ("--setenv", name, value)]  # fmt: skip
    return [
        bwrap,
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try",
        *identity,
        "--die-with-parent",  # the sandbox dies with the process that started it
        "--new-session",  # no terminal to inject keystrokes into
        "--clearenv", *env,
        "--proc", "/proc",
        "--dev", "/dev",
        "--perms", "1777", "--size", str(disk_mb * 1024 * 1024), "--tmpfs", "/tmp",
        *_loader_view(),
        *_read_only(interpreter),
        *_masks(interpreter),
        "--perms", "1777", "--dir", WORK_DIR,
        *inputs,
        "--symlink", WORK_DIR, SANDBOX_DIR,
        "--chdir", SANDBOX_DIR,
        sys.executable, "-I", RUNNER_NAME, output_name, *runner_args,
    ]  # fmt: skip


def _child_env(home: str) -> dict[str, str]:
    return {"HOME": home, "TMPDIR": home, **THREAD_ENV}


# ---------------------------------------------------------------------------- identity, limits
def _readable_by_nobody(path: Path) -> bool:
    """Whether every directory above ``path`` lets others through (a pyenv under /root,
    mode 700, does not: its interpreter cannot run as nobody outside bubblewrap)."""
    for directory in [path, *path.parents]:
        try:
            if not directory.stat().st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def _unconfined_user() -> int | None:
    """The uid the unconfined mode switches to: nobody when root and the interpreter allows
    it; None (stay as is) otherwise."""
    if os.geteuid() != 0:
        return None
    if all(_readable_by_nobody(Path(d)) for d in (*_interpreter_dirs(), sys.executable)):
        return NOBODY
    return None


def _tasks_of(uid: int) -> int:
    """Processes and threads whose real uid is ``uid`` (what RLIMIT_NPROC counts)."""
    count = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines())
        except (OSError, ValueError):
            continue  # the process ended while we read
        if int(fields["Uid"].split()[0]) == uid:
            count += int(fields["Threads"])
    return count


def _limit_resources(limits: SandboxLimits, nproc: int | None):
    def apply() -> None:  # runs in the child between fork and exec (after any uid switch)
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * mb, limits.file_mb * mb))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    return apply


# ---------------------------------------------------------------------------- running
def _stopped(returncode: int, stderr: str) -> str:
    if returncode > 128:  # bubblewrap reports a child killed by signal s as 128 + s
        returncode = 128 - returncode
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL) or "SIGXCPU" in stderr:
        return "timeout"  # the CPU-time limit fired
    if "MemoryError" in stderr or "std::bad_alloc" in stderr:
        return "memory"
    if "No space left on device" in stderr:
        return "disk"
    if ("BlockingIOError" in stderr and "fork" in stderr) or any(
        text in stderr for text in ("can't start new thread", "pthread_create")
    ):
        return "processes"
    if returncode < 0:
        return "other"  # killed by another signal
    return ""


def _read_output(stream) -> bytes | None:
    """The output the runner carried out ("1" + the file's bytes), or None when the script
    left no regular file of that name."""
    stream.seek(0)
    carried = stream.read()
    return carried[1:] if carried[:1] == b"1" else None


def _tail(stream) -> str:
    stream.seek(0, os.SEEK_END)
    stream.seek(max(0, stream.tell() - 4 * MAX_ERROR_CHARS))
    return stream.read().decode(errors="replace")[-MAX_ERROR_CHARS:]


def _execute(code: str, output_name: str, limits: SandboxLimits, mode: str, bwrap: str = ""):
    workdir = Path(tempfile.mkdtemp(prefix="cadcodeverify-"))
    try:
        (workdir / CODE_NAME).write_text(code)
        (workdir / RUNNER_NAME).write_text(RUNNER)
        user = None
        if mode == "bwrap":
            command = bwrap_command(bwrap, workdir, output_name, limits.disk_mb)
            task_owner = NOBODY if os.geteuid() == 0 else os.getuid()
        else:
            command = [sys.executable, "-I", RUNNER_NAME, output_name]
            user = _unconfined_user()
            if user is not None:
                os.chown(workdir, user, user)
            task_owner = user if user is not None else os.getuid()
        # RLIMIT_NPROC counts every task of the uid system-wide: allow max_processes more.
        nproc = None if task_owner == 0 else _tasks_of(task_owner) + limits.max_processes
        # stdout and stderr go to files, not pipes: RLIMIT_FSIZE bounds them, our memory not.
        with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
            proc = subprocess.Popen(
                command,
                cwd=workdir,
                env=_child_env(str(workdir)),  # inherit no variable
                stdin=subprocess.DEVNULL,
                stdout=out_file,
                stderr=err_file,
                user=user,
                group=user,
                extra_groups=[] if user is not None else None,
                preexec_fn=_limit_resources(limits, nproc),
                start_new_session=True,  # its own process group, killed as a whole
            )
            try:
                proc.wait(timeout=limits.timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            _kill_group(proc)
            stderr = _tail(err_file)
            output = _read_output(out_file) if proc.returncode == 0 else None
        if timed_out:
            message = f"TimeoutError: the script ran longer than {limits.timeout_s:g} s"
            return SandboxResult(False, None, message, "timeout", mode)
        stopped = _stopped(proc.returncode, stderr)
        if proc.returncode != 0:
            reason = stderr.strip() or f"the script exited with status {proc.returncode}"
            if stopped == "timeout" and not stderr.strip():
                reason = f"TimeoutError: the script used more than {limits.cpu_s} CPU seconds"
            if stopped == "processes":
                reason += (
                    f"\nthe sandbox allows about {limits.max_processes} processes and threads "
                    "(sandbox.max_processes)"
                )
            if stopped == "disk":
                reason += (
                    f"\nthe sandbox's working folder and /tmp hold at most {limits.disk_mb} MB "
                    "(sandbox.disk_mb)"
                )
            return SandboxResult(False, None, reason, stopped, mode)
        if output is None:
            return SandboxResult(
                False, None, f"the script ran but wrote no {output_name!r}", "", mode
            )
        return SandboxResult(True, output, "", "", mode)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL whatever is left of the program's process group (children it left behind in
    the unconfined mode; bubblewrap's PID namespace ends with its first process anyway)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def check_output_name(output_name: str) -> None:
    if not output_name or Path(output_name).name != output_name or output_name in (".", ".."):
        raise ValueError(f"output_name must be a plain file name, got {output_name!r}")


def run_sandboxed(code: str, output_name: str, limits: SandboxLimits) -> SandboxResult:
    """Run ``code`` as ``code.py`` in a fresh folder under the sandbox; return the bytes of
    ``output_name`` it wrote there. Never raises for anything the script does; raises
    :class:`SandboxUnavailableError` when no sandbox can be set up and the config did not opt
    into running unconfined."""
    check_output_name(output_name)
    mode = choose_mode(limits)
    if mode == "unconfined":
        as_user = _unconfined_user()
        who = f"uid {as_user}" if as_user is not None else f"uid {os.geteuid()}"
        if os.geteuid() == 0 and as_user is None:
            who = "ROOT: the interpreter is not readable by nobody"
        logger.warning(
            "UNSAFE: running model-written code WITHOUT a sandbox (as %s, with the network and "
            "the host's files), because sandbox.unsafe_allow_unconfined=true; %s",
            who,
            FIX.split(", or")[0],
        )
    return _execute(code, output_name, limits, mode, find_bwrap() or "")
