"""Files and memory of one host reached through its command prefix (argv only): the same
calls work for this host (prefix ()), a testbed namespace and a cluster node."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import FabenchError
from .process import owner_tag, run_capture


class HostFiles:
    """Files in a directory of one host, through its command prefix (argv only)."""

    def __init__(self, prefix: Sequence[str]) -> None:
        self.prefix = tuple(prefix)
        self._local: bool | None = None

    def _run(self, argv: list[str], what: str, input_text: str | None = None) -> str:
        c = run_capture([*self.prefix, *argv], timeout=60, input_text=input_text)
        if not c.ok:
            raise FabenchError(f"{what}: {c.text.strip()[:300] or f'exit {c.returncode}'}")
        return c.stdout

    def mkdtemp(self, tag: str) -> str:
        # Named for this process (leftovers.own_tempdir's pattern): removed after it however
        # it ends, where the host's /tmp is this one's.
        owner = owner_tag().replace(":", ".")
        return self._run(["mktemp", "-d", f"/tmp/fabench-{tag}-o{owner}-XXXXXX"],
                         f"cannot make a run directory for {tag}").strip()

    def write(self, path: str, text: str) -> None:
        self._run(["tee", "--", path], f"cannot write {path}", input_text=text)

    def read(self, path: str) -> str | None:
        c = run_capture([*self.prefix, "cat", "--", path], timeout=60)
        return c.stdout if c.ok else None

    def read_from(self, path: str, offset: int) -> str:
        """What the file holds past its first ``offset`` bytes ("" while it does not exist).
        Read here when this host's files are this machine's (no command started per read),
        else through the host's prefix."""
        if self.local:
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    return f.read().decode("utf-8", "replace")
            except FileNotFoundError:
                return ""
        c = run_capture([*self.prefix, "tail", "-c", f"+{offset + 1}", "--", path],
                        timeout=30)
        return c.stdout if c.ok else ""

    @property
    def local(self) -> bool:
        """The host's files are this process's: no prefix, or one (a testbed's network
        namespace) that reaches this machine and this mount namespace."""
        if not self.prefix:
            return True
        if self._local is None:
            mnt = run_capture([*self.prefix, "readlink", "/proc/self/ns/mnt"], timeout=30)
            self._local = (
                mnt.ok and mnt.stdout.strip() == os.readlink("/proc/self/ns/mnt")
                and machine_id(self.prefix) == machine_id(()))
        return self._local

    def remove(self, path: str) -> None:
        run_capture([*self.prefix, "rm", "-rf", "--", path], timeout=60)

    def text(self, path: str) -> str:
        return self._run(["cat", "--", path], f"cannot read {path}")


def machine_id(prefix: Sequence[str]) -> str:
    """The kernel's boot id of the machine a host prefix reaches: namespaces of one machine
    (a testbed) share it, and so share its memory and cores."""
    c = run_capture([*prefix, "cat", "/proc/sys/kernel/random/boot_id"], timeout=30)
    return c.stdout.strip() if c.ok and c.stdout.strip() else " ".join(prefix)


def mem_total_bytes(files: HostFiles) -> float:
    for line in files.text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return float(line.split()[1]) * 1024
    raise FabenchError("/proc/meminfo has no MemTotal")


def mem_available_bytes(files: HostFiles) -> float:
    """What the host can give a new program now (the kernel's own estimate, MemAvailable;
    MemFree where a kernel older than 3.14 has no such line)."""
    lines = files.text("/proc/meminfo").splitlines()
    for key in ("MemAvailable:", "MemFree:"):
        for line in lines:
            if line.startswith(key):
                return float(line.split()[1]) * 1024
    raise FabenchError("/proc/meminfo has no MemAvailable")
