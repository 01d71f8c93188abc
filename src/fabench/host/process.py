"""Every way fabench runs another program: a short command whose output is read
(:func:`run_capture`, :func:`output_of`), and a kernel whose JSON-lines stdout streams into
records as it runs (:func:`run_streaming`), in its own session so that Ctrl-C or a timeout
ends the whole tree it started and nothing else. argv lists only: no shell, ever.

Nothing fabench starts outlives it unless asked to (a testbed's holder processes): every child
gets a parent-death signal (SIGKILL when fabench dies, SIGKILL included) and carries
``FABENCH_OWNER=PID:START`` in its environment, which its own children (mpirun's ranks, a
kernel started inside a testbed host) inherit. A supervisor started with the first child, in a
session of its own, waits for fabench to end however it ends and then ends every process that
carries the tag and removes fabench's temporary directories; the next fabench start does the
same for any owner that is gone, should the supervisor have been killed too (both sweeps:
:mod:`fabench.host.leftovers`).
"""

import ctypes
import errno
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import KernelError
from ..records import KernelOutput
from .leftovers import TERM_GRACE_S, child_env, environ_tag, kill_same, owner_tag, tag_alive
from .proc_stat import proc_start, stat_fields

STDERR_KEEP = 64 * 1024
NOT_FOUND = 127  # a shell's status for a missing command
TIMED_OUT = 124  # timeout(1)'s status
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

try:  # resolved once here: the child between fork and exec calls it and nothing else
    _prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: no parent-death signal, the supervisor stays
    _prctl = None


def _die_with(parent: int) -> Callable[[], None]:
    def setup() -> None:
        if _prctl is not None:
            _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)
    return setup


# The parent-death signal is armed by util-linux's setpriv, which sets it and execs the program
# in the same process, where it can: a preexec_fn makes Python fork the whole interpreter
# (page tables of its heap copied, then faulted back in) where it would otherwise vfork. One
# start measured here: 9.3 ms of CPU from a 46 MB fabench, 33 ms from a 258 MB one (a test
# worker), against 2.7 and 2.3 ms through setpriv. Between the vfork and setpriv's prctl the
# parent may die unnoticed (the preexec_fn checked its parent): the supervisor, which ends
# every process that carries the owner tag, and the next start's reaping cover that moment.
PDEATHSIG_EXEC = ("setpriv", "--pdeathsig", "KILL", "--")


@functools.cache
def _pdeathsig_prefix() -> tuple[str, ...] | None:
    """setpriv's argv prefix, once it has armed the signal on this host (util-linux >= 2.33
    has --pdeathsig); None: the preexec_fn instead. Probed once per process."""
    setpriv, true = shutil.which(PDEATHSIG_EXEC[0]), shutil.which("true")
    if not (setpriv and true):
        return None
    try:
        ok = subprocess.run([setpriv, *PDEATHSIG_EXEC[1:], true], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
                            check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (setpriv, *PDEATHSIG_EXEC[1:]) if ok else None


def _check_program(argv: list[str], kw: dict[str, Any]) -> None:
    """Raise what Popen raises for a program that cannot be run: through setpriv, Popen would
    start setpriv and the missing program would be an exit status instead."""
    prog = argv[0]
    if os.sep in prog:
        path = os.path.join(os.fspath(kw.get("cwd") or "."), prog)
        found = os.path.isfile(path) and os.access(path, os.X_OK)
    else:
        found = shutil.which(prog, path=os.pathsep.join(os.get_exec_path(kw["env"]))) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), prog)


def popen(argv: Sequence[str], *, outlive: bool = False, **kw: Any) -> subprocess.Popen[Any]:
    """The one way fabench starts a program. ``outlive=True`` only for what must stay after
    fabench ends (a testbed's namespace holders): no parent-death signal, no owner tag."""
    kw["env"] = child_env(kw.get("env"), outlive)
    args = list(argv)
    if not outlive:
        _supervise()
        prefix = _pdeathsig_prefix()
        if prefix is None:
            kw["preexec_fn"] = _die_with(os.getpid())
        else:
            _check_program(args, kw)
            proc = subprocess.Popen([*prefix, *args], **kw)
            proc.args = args  # what was asked for, in messages and CompletedProcess
            return proc
    return subprocess.Popen(args, **kw)


def run_once(argv: Sequence[str], *, timeout: float | None = None, input: Any = None,
        check: bool = False, **kw: Any) -> subprocess.CompletedProcess[Any]:
    """subprocess.run through :func:`popen`: a short command, to completion."""
    if input is not None:
        kw["stdin"] = subprocess.PIPE
    if kw.pop("capture_output", False):
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    with popen(argv, **kw) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        except BaseException:
            proc.kill()
            raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


# --- the supervisor, and what a dead owner left -------------------------------------------

_supervisor: subprocess.Popen[bytes] | None = None
_supervisor_lock = threading.Lock()


def _supervise() -> None:
    """Start the supervisor once per process: it reads a pipe nobody writes, so it sees EOF
    exactly when this process ends, then sweeps what it left (:func:`.leftovers.sweep`)."""
    global _supervisor
    with _supervisor_lock:
        if _supervisor is not None and _supervisor.poll() is None:
            return
        try:
            _supervisor = subprocess.Popen(
                [sys.executable, "-m", "fabench.host.supervisor", owner_tag()],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, env=child_env(None, outlive=True))
        except OSError:
            _supervisor = None  # the parent-death signal and reap_orphans still hold


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
        p = run_once(argv, capture_output=True, text=True, timeout=timeout, check=False,
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
    stopped: str | None = None  # why a watch ended the launch before it ended itself


class Watch(Protocol):
    """Something a launch's files show while it runs that makes its result worthless (hpcc
    running its built-in defaults after a bad input value): polled until it says so, then
    the launch is ended as a timeout ends it."""

    every_s: float  # between polls

    def poll(self) -> str | None:
        """Why the launch must stop now, or None."""

    @property
    def done(self) -> bool:
        """Nothing more to watch for: polling stops (a good start costs nothing later)."""


_live: set[subprocess.Popen[str]] = set()  # launches run_streaming is reading now
_live_lock = threading.Lock()


def terminate_all() -> None:
    """End every launch in progress, those other threads started too (a signal reaches the
    main thread only)."""
    with _live_lock:
        procs = list(_live)
    threads = [threading.Thread(target=terminate, args=(p,)) for p in procs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_streaming(argv: list[str], env: dict[str, str], timeout_s: float,
                  on_record: Callable[[dict[str, Any]], None] | None = None,
                  cwd: str | None = None, watch: Watch | None = None) -> ProcessOutcome:
    """Start argv in its own session so that Ctrl-C, a timeout or a ``watch`` that finds the
    run worthless ends the whole launch tree (mpirun and its ranks) we started, and nothing
    else."""
    start = time.monotonic()
    try:
        proc = popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
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
    # Daemon, and everything after popen inside the try: a signal between starting the timer
    # and the try left a live timer that kept the interpreter from exiting until the run's
    # timeout, and the launch untouched (the kill matrix: `run` did not end in 90 s of a
    # Ctrl-C it had already reported).
    timer = threading.Timer(min(timeout_s, threading.TIMEOUT_MAX), terminate, args=(proc,))
    timer.daemon = True
    ended = threading.Event()
    stopped: list[str] = []

    def watching() -> None:
        assert watch is not None
        while not watch.done and not ended.wait(watch.every_s):
            try:
                why = watch.poll()
            except Exception as exc:  # a watch that breaks must not end the run
                print(f"fabench: watch stopped: {exc}", file=sys.stderr)
                return
            if why is not None:
                stopped.append(why)
                terminate(proc)
                return

    w = threading.Thread(target=watching, daemon=True) if watch is not None else None
    try:
        with _live_lock:
            _live.add(proc)
        t.start()
        timer.start()
        if w is not None:
            w.start()
        assert proc.stdout is not None
        out.add_lines(proc.stdout, on_record)
        proc.wait()
    except BaseException:
        terminate(proc)
        raise
    finally:
        timer.cancel()
        ended.set()
        if t.is_alive():
            t.join(timeout=5)
        if w is not None:
            w.join(timeout=TERM_GRACE_S + 10)  # a terminate in progress finishes first
        with _live_lock:
            _live.discard(proc)
    stderr = "".join(err_chunks)
    timed_out = (time.monotonic() - start >= timeout_s and proc.returncode != 0
                 and not stopped)
    return ProcessOutcome(out, proc.returncode, stderr[-STDERR_KEEP:],
                          time.monotonic() - start, timed_out,
                          stopped[0] if stopped else None)


def descendants(pid: int) -> list[tuple[int, int | None]]:
    """Every process below ``pid`` now, with its start time: (pid, start ticks). Open MPI
    puts each rank in a process group of its own, so the launch's group does not reach them;
    their PIDs do, while the start time says a PID still names the same process."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        fields = stat_fields(d.name)
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append((c, proc_start(c)))
            todo.append(c)
    return out


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


# --- foreign load: CPU used beside a run by processes that are not fabench's --------------

FOREIGN_NOTE_CORES = 0.2  # a fifth of a core on average: enough to show in a latency tail
_KTHREAD = 0x00200000  # PF_KTHREAD: the kernel's own threads (softirq work for our traffic)


@dataclass(frozen=True)
class CpuSnapshot:
    time: float
    ticks: dict[tuple[int, int], tuple[int, str]]  # (pid, start) -> (utime+stime, comm)


def cpu_snapshot() -> CpuSnapshot:
    """CPU time of every user process on this host now. Testbed hosts share this kernel,
    so their processes are here too; a remote host's are not."""
    ticks: dict[tuple[int, int], tuple[int, str]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            f = stat.rsplit(")", 1)[1].split()
            if int(f[6]) & _KTHREAD:
                continue
            ticks[(int(d.name), int(f[19]))] = (int(f[11]) + int(f[12]), comm)
        except (OSError, ValueError, IndexError):
            continue
    return CpuSnapshot(time.monotonic(), ticks)


def foreign_load(before: CpuSnapshot, after: CpuSnapshot | None = None) -> dict[str, Any]:
    """What processes other than this fabench and what it started did between two
    snapshots: cores busy on average and the busiest of them (a kernel left running by an
    earlier fabench shows here by name)."""
    after = after or cpu_snapshot()
    hz = os.sysconf("SC_CLK_TCK")
    wall = max(after.time - before.time, 1e-3)
    me = os.getpid()
    ours = {me, *(p for p, _ in descendants(me))}
    if _supervisor is not None:
        ours.add(_supervisor.pid)
    tag = owner_tag()
    used: list[tuple[float, int, str]] = []
    for key, (t1, comm) in after.ticks.items():
        pid = key[0]
        t0 = before.ticks.get(key, (0, ""))[0] if key in before.ticks else 0
        cpu = (t1 - t0) / hz
        if cpu <= 0 or pid in ours or environ_tag(str(pid)) == tag:
            continue
        used.append((cpu, pid, comm))
    used.sort(reverse=True)
    total = sum(c for c, _, _ in used)
    return {"cores": round(total / wall, 3), "wall_s": round(wall, 3),
            "top": [{"pid": p, "comm": c, "cpu_s": round(s, 3),
                     **({"left_by_dead_fabench": True}
                        if (t := environ_tag(str(p))) and not tag_alive(t) else {})}
                    for s, p, c in used[:5]]}


def foreign_note(load: dict[str, Any]) -> str | None:
    """A run's note when other processes took enough CPU beside it to matter."""
    if load.get("cores", 0) < FOREIGN_NOTE_CORES:
        return None
    top = ", ".join(f"{t['comm']} (pid {t['pid']}, {t['cpu_s']} s"
                    + (", left by a fabench that is gone" if t.get("left_by_dead_fabench")
                       else "") + ")" for t in load["top"][:3])
    return (f"foreign load: processes not of this run kept {load['cores']:.2f} cores busy "
            f"on average during its {load['wall_s']:.1f} s: {top}")
