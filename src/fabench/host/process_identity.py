"""Which process and which namespace: who owns a `running` row in the store and whether that
process still lives; and the network namespaces that are this host's own.

A PID alone names nothing once its process is gone: the number is reused. The start time in
clock ticks since boot (field 22 of /proc/PID/stat) pins the PID to one process; the boot id
pins that clock to one boot; the host name and the PID namespace say where the PID means
anything at all. A store may sit on a shared file system and be written from several nodes or
containers: from anywhere else the answer is "cannot tell", never "dead".
"""

import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .proc_stat import proc_start, running


def netns_of(pid: int | str) -> str | None:
    """`net:[INODE]`, the network namespace of a process."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def host_netns() -> set[str]:
    """This host's own network namespace: fabench's, and PID 1's where readable (without
    root only ours, which stands for it). Nothing in it is ever changed or killed by a
    command that targets a testbed or a named namespace."""
    return {ns for ns in (netns_of("self"), netns_of(1)) if ns}


def wait_gone(pid: int | None, timeout: float = 5.0) -> None:
    """Wait (at most ``timeout``) until a process we ended is gone; reap it if it is our
    child, so it does not linger as a zombie."""
    deadline = time.monotonic() + timeout
    while pid:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not running(pid) or time.monotonic() >= deadline:
            return
        time.sleep(0.02)


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


@dataclass(frozen=True)
class ProcessOwner:
    pid: int
    start: int | None
    host: str
    boot_id: str | None
    pid_ns: str | None

    @classmethod
    def current(cls) -> "ProcessOwner":
        pid = os.getpid()
        return cls(pid=pid, start=proc_start(pid), host=socket.gethostname(),
                   boot_id=_boot_id(), pid_ns=_pid_namespace())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: object) -> "ProcessOwner | None":
        """The owner recorded in the store, or None when the value is not one (hostile or
        damaged rows are data, not code: anything malformed is simply unknown)."""
        if not isinstance(obj, dict):
            return None
        pid, start = obj.get("pid"), obj.get("start")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            return None
        if start is not None and (not isinstance(start, int) or isinstance(start, bool)):
            return None

        def text(key: str) -> str | None:
            v = obj.get(key)
            return v if isinstance(v, str) else None

        return cls(pid=pid, start=start, host=text("host") or "", boot_id=text("boot_id"),
                   pid_ns=text("pid_ns"))

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host or 'an unnamed host'}"

    def alive(self) -> bool | None:
        """True while the process runs, False once it is gone, None when this host cannot
        tell (another host, another PID namespace, or nothing recorded to compare)."""
        here = ProcessOwner.current()
        if self.host != here.host:
            return None
        if self.boot_id and here.boot_id and self.boot_id != here.boot_id:
            return False  # this host rebooted since: every process of that boot is gone
        if self.pid_ns != here.pid_ns or self.start is None:
            return None
        now = proc_start(self.pid)
        return now is not None and now == self.start
