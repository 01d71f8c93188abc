"""Every way fabench runs another program: a short command whose output is read
(:func:`run_capture`, :func:`output_of`), and a kernel whose JSON-lines stdout streams into
records as it runs (:func:`run_streaming`), in its own session so that Ctrl-C or a timeout
ends the whole tree it started and nothing else. argv lists only: no shell, ever.
"""

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import KernelError
from .process_identity import proc_start
from .records import KernelOutput

STDERR_KEEP = 64 * 1024
NOT_FOUND = 127  # a shell's status for a missing command
TIMED_OUT = 124  # timeout(1)'s status


@dataclass(frozen=True)
class Captured:
    """A finished short command: its status and both outputs."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def run_capture(argv: Sequence[str], *, timeout: float = 60.0, input_text: str | None = None,
                env: dict[str, str] | None = None,
                cwd: str | Path | None = None) -> Captured:
    """Run a short command to completion. A missing program reads as status 127 and a hang
    past ``timeout`` as 124 (the shell's and timeout(1)'s conventions), never as an
    exception: the caller decides whether that is an error."""
    argv = list(argv)
    if not argv or (shutil.which(argv[0]) is None and not Path(argv[0]).is_file()):
        return Captured(NOT_FOUND, "", f"{argv[0] if argv else '?'} not found")
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                           input=input_text, env=env, cwd=cwd, errors="replace")
    except subprocess.TimeoutExpired:
        return Captured(TIMED_OUT, "", f"{argv[0]} timed out after {timeout:.0f} s")
    except OSError as exc:
        return Captured(NOT_FOUND, "", f"cannot start {argv[0]}: {exc.strerror}")
    return Captured(p.returncode, p.stdout, p.stderr)


def output_of(argv: Sequence[str], timeout: float = 10.0,
              cwd: str | Path | None = None) -> str | None:
    """The output of a command that succeeded; None when it is missing, hangs or fails (a
    failing command's error message is not a fact about the host)."""
    c = run_capture(argv, timeout=timeout, cwd=cwd)
    return c.text.strip() or None if c.ok else None


@dataclass
class ProcessOutcome:
    output: KernelOutput
    returncode: int
    stderr: str
    elapsed_s: float
    timed_out: bool = False


def run_streaming(argv: list[str], env: dict[str, str], timeout_s: float,
                  on_record: Callable[[dict[str, Any]], None] | None = None,
                  cwd: str | None = None) -> ProcessOutcome:
    """Start argv in its own session so that Ctrl-C or a timeout ends the whole launch tree
    (mpirun and its ranks) we started, and nothing else."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, bufsize=1, start_new_session=True, cwd=cwd)
    except OSError as exc:
        raise KernelError(f"cannot start {argv[0]}: {exc}") from exc
    out = KernelOutput()
    err_chunks: list[str] = []

    def drain_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err_chunks.append(line)

    t = threading.Thread(target=drain_stderr, daemon=True)
    t.start()
    timer = threading.Timer(timeout_s, terminate, args=(proc,))
    timer.start()
    try:
        assert proc.stdout is not None
        out.add_lines(proc.stdout, on_record)
        proc.wait()
    except BaseException:
        terminate(proc)
        raise
    finally:
        timer.cancel()
        t.join(timeout=5)
    stderr = "".join(err_chunks)
    timed_out = time.monotonic() - start >= timeout_s and proc.returncode != 0
    return ProcessOutcome(out, proc.returncode, stderr[-STDERR_KEEP:],
                          time.monotonic() - start, timed_out)


def descendants(pid: int) -> list[tuple[int, int | None]]:
    """Every process below ``pid`` now, with its start time: (pid, start ticks). Open MPI
    puts each rank in a process group of its own, so the launch's group does not reach them;
    their PIDs do, while the start time says a PID still names the same process."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        children.setdefault(int(fields[1]), []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append((c, proc_start(c)))
            todo.append(c)
    return out


def kill_same(procs: list[tuple[int, int | None]], sig: int) -> None:
    """Send sig to each (pid, start) that still names the process it named."""
    for pid, start in procs:
        if start is not None and proc_start(pid) == start:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def terminate(proc: subprocess.Popen[str], grace_s: float = 5.0) -> None:
    """End a launch we started and everything below it: SIGTERM to its session's group (mpirun
    then ends its ranks its own way), then, after ``grace_s``, SIGKILL to the group and to
    every process that was below it, ranks in process groups of their own included."""
    if proc.poll() is not None:
        return
    tree = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    kill_same(tree, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    # Ranks may outlive their mpirun by a moment; wait for them within the same grace.
    while any(proc_start(p) == s for p, s in tree if s is not None) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is None:  # still not reaped: its PID (and group) is still ours
        tree += descendants(proc.pid)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    kill_same(tree, signal.SIGKILL)
    proc.wait()
