"""What a fabench process leaves behind and how it is swept: the owner tag its children carry
(``FABENCH_OWNER=PID:START``, inherited by their own children: mpirun's ranks, a kernel
started inside a testbed host), the temporary directories and shared-memory regions named
with that tag, and the undo it registers while tuning is applied. :func:`sweep` ends and
removes all of it once the owner is gone; the supervisor calls it when its fabench ends, and
every fabench start calls :func:`reap_orphans` for owners that died with their supervisor.

Only the standard library's lightest modules are imported here (no pathlib, no dataclasses):
every fabench command that starts a program starts a supervisor, which imports this module
and nothing else of fabench's but :mod:`fabench.host.proc_stat`.
"""

import json
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Sequence

from .proc_stat import proc_start

OWNER_ENV = "FABENCH_OWNER"
TERM_GRACE_S = 3.0


def owner_tag(pid: int | None = None) -> str:
    """``PID:START`` of a process (this one by default): what its children carry."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{proc_start(pid)}"


def child_env(env: dict[str, str] | None, outlive: bool = False) -> dict[str, str]:
    """A child's environment: tagged with this process as its owner, or, for what must
    outlive fabench, without any tag."""
    out = dict(os.environ if env is None else env)
    if outlive:
        out.pop(OWNER_ENV, None)
    else:
        out[OWNER_ENV] = owner_tag()
    return out


def environ_tag(pid: str) -> str | None:
    """The owner tag in a process's environment, if it carries one."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return None
    key = OWNER_ENV.encode() + b"="
    for item in env.split(b"\0"):
        if item.startswith(key):
            return item[len(key):].decode("ascii", "replace")
    return None


def tagged() -> dict[int, tuple[str, int | None]]:
    """Every process that carries an owner tag: pid -> (tag, its start time)."""
    out = {}
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        tag = environ_tag(name)
        if tag:
            out[int(name)] = (tag, proc_start(int(name)))
    return out


def tag_alive(tag: str) -> bool:
    """Whether the owner a tag names still runs (a tag that is not ours to judge: yes)."""
    pid, _, start = tag.partition(":")
    try:
        return proc_start(int(pid)) == int(start)
    except ValueError:
        return True


_TEMP_RE = re.compile(r"^fabench-[\w-]*?-o(\d+)\.(\d+)-")
# Shared-memory regions a kernel names with its owner tag (the ofi kernels' libfabric shm
# endpoints: native/transport/ofi.c): a killed kernel leaves its region, 16 MiB of memory each.
SHM_DIR = "/dev/shm"


def _owned_leftovers() -> list[tuple[str, str]]:
    """Temporary directories and shared-memory regions named with an owner tag, with it."""
    out = []
    for base in (tempfile.gettempdir(), SHM_DIR):
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            m = _TEMP_RE.match(name)
            if m:
                out.append((os.path.join(base, name), f"{m.group(1)}:{m.group(2)}"))
    return out


def own_tempdir(what: str) -> str:
    """A temporary directory that the supervisor, or the next fabench start, removes once
    this process is gone, however it ended."""
    pid = os.getpid()
    return tempfile.mkdtemp(prefix=f"fabench-{what}-o{pid}.{proc_start(pid)}-")


_session_base: str | None = None


def own_session_base() -> str:
    """One directory of this process's own (:func:`own_tempdir`) for MPI runtimes' session
    directories, made on first use."""
    global _session_base
    if _session_base is None or not os.path.isdir(_session_base):
        _session_base = own_tempdir("mpi")
    return _session_base


def kill_same(procs: list[tuple[int, int | None]], sig: int) -> None:
    """Send sig to each (pid, start) that still names the process it named."""
    for pid, start in procs:
        if start is not None and proc_start(pid) == start:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def _end(procs: list[tuple[int, int | None]]) -> None:
    kill_same(procs, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    while any(proc_start(p) == s for p, s in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    kill_same(procs, signal.SIGKILL)


UNDO_WHAT = "undo"
UNDO_FILE = "undo.json"
UNDO_TIMEOUT_S = 300.0


def undo_if_killed(fabench_args: Sequence[str]) -> str:
    """Have the supervisor, or the next fabench start, run ``fabench ARGS`` should this
    process die before :func:`undone` (tuning applied for a measurement: SIGKILL left it
    applied inside the testbed hosts with the journal pending). Returns the registration."""
    reg = own_tempdir(UNDO_WHAT)
    with open(os.path.join(reg, UNDO_FILE), "w", encoding="utf-8") as f:
        f.write(json.dumps([str(a) for a in fabench_args]))
    return reg


def undone(reg: str) -> None:
    shutil.rmtree(reg, ignore_errors=True)


def _owned_by_me(path: str, kind: int) -> bool:
    # /tmp is everybody's: run only what this user wrote, in a directory nobody else can
    # write (mkdtemp's 0700), never through a link
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_IFMT(st.st_mode) == kind and st.st_uid == os.geteuid()
            and not st.st_mode & 0o022)


def _run_undo(reg: str) -> str | None:
    # subprocess only here: the supervisor that imports this module seldom has an undo to run
    import subprocess

    if not _owned_by_me(reg, stat.S_IFDIR):
        return None
    claimed = os.path.join(reg, f"{UNDO_FILE}.{os.getpid()}")
    try:  # the supervisor and a next start may both sweep: one of them runs it
        os.rename(os.path.join(reg, UNDO_FILE), claimed)
    except OSError:
        return None
    if not _owned_by_me(claimed, stat.S_IFREG):
        return None
    try:
        with open(claimed, encoding="utf-8") as f:
            args = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return None
    argv = [sys.executable, "-m", "fabench", *args]
    try:  # without an owner tag: the undo must finish even as its sweeper ends
        done = subprocess.run(argv, env=child_env(None, outlive=True), timeout=UNDO_TIMEOUT_S,
                              capture_output=True, text=True, errors="replace", check=False)
        code = str(done.returncode)
    except (OSError, subprocess.TimeoutExpired) as exc:
        code = type(exc).__name__
    return f"ran fabench {' '.join(args)} (exit {code})"


def sweep(tags: set[str]) -> list[str]:
    """End every process tagged with one of ``tags``, run what they left to undo and remove
    their temporary directories; what was ended, run or removed, in words."""
    procs = [(pid, start) for pid, (tag, start) in tagged().items() if tag in tags]
    _end(procs)
    said = [f"ended pid {p}" for p, _ in procs]
    mine = [d for d, tag in _owned_leftovers() if tag in tags]
    dirs = [d for d in mine if os.path.isdir(d) and not os.path.islink(d)]
    for d in dirs:
        if os.path.basename(d).startswith(f"fabench-{UNDO_WHAT}-"):
            ran = _run_undo(d)
            if ran:
                said.append(ran)
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
        said.append(f"removed {d}")
    for f in mine:
        if os.path.dirname(f) == SHM_DIR and os.path.isfile(f):
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass
            said.append(f"removed {f}")
    return said


def reap_orphans() -> list[str]:
    """What a fabench that is gone left behind (killed with its supervisor): its tagged
    processes, temporary directories and shared-memory regions."""
    dead = {tag for tag, _ in tagged().values() if not tag_alive(tag)}
    dead |= {tag for _, tag in _owned_leftovers() if not tag_alive(tag)}
    return sweep(dead) if dead else []
