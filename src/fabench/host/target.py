"""Where tuning acts: this host, or one network namespace (a testbed host).

Everything tune reads or changes goes through a Target, which runs commands inside it. Reading
/proc/sys/net from this process would show *our* namespace, not the target's, so even reads go
through the target's command prefix (`ip netns exec NS ...`).

A target entered through a process (`nsenter -t PID`, as testbed hosts are) is journaled with
what identifies that process and its namespace: the PID's start time (field 22 of
/proc/PID/stat) and the inode of its network namespace, and the inode of the namespace the
commands end up in. If the testbed is gone and the PID now belongs to another process, revert
would otherwise write old values into that process's namespace, possibly the host's own:
`verify` refuses then, and refuses any target that resolves to this host's namespace.
"""

import shutil
import subprocess
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..errors import FabenchError
from .placement import HostExec
from .proc_stat import proc_start
from .process import run_once
from .process_identity import host_netns, netns_of


class TargetError(FabenchError):
    """A command inside a target failed; the message names the target and the command."""


class TargetMismatch(TargetError):
    """The target no longer is what the journal recorded (or is this host's namespace)."""


def nsenter_pids(prefix: tuple[str, ...] | list[str]) -> list[int]:
    """The PIDs a command prefix enters namespaces through (`nsenter -t PID`)."""
    out, in_nsenter = [], False
    for i, tok in enumerate(prefix):
        if tok == "nsenter" or tok.endswith("/nsenter"):
            in_nsenter = True
        elif tok == "--":
            in_nsenter = False
        elif in_nsenter and tok in ("-t", "--target") and i + 1 < len(prefix) \
                and prefix[i + 1].isdigit():
            out.append(int(prefix[i + 1]))
        elif in_nsenter and tok.startswith("--target=") and tok[9:].isdigit():
            out.append(int(tok[9:]))
    return out


@dataclass(frozen=True)
class Target:
    name: str
    prefix: tuple[str, ...] = ()
    netns: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # What the journal recorded (see `identity`); None for a live target.
    ident: dict[str, Any] | None = field(default=None, compare=False, hash=False)

    @property
    def host_wide(self) -> bool:
        """True for this host's own namespace: changes there affect everything on the host."""
        return not self.prefix

    @classmethod
    def host(cls) -> "Target":
        return cls("host")

    @classmethod
    def namespace(cls, ns: str, name: str | None = None) -> "Target":
        return cls(name or ns, ("ip", "netns", "exec", ns), ns)

    @classmethod
    def from_host_exec(cls, h: HostExec) -> "Target":
        ns = h.prefix[3] if h.prefix[:3] == ("ip", "netns", "exec") and len(h.prefix) > 3 \
            else None
        return cls(h.name, tuple(h.prefix), ns)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "prefix": list(self.prefix),
                             "netns": self.netns}
        if self.prefix:
            d["ident"] = self.ident or self.identity
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Target":
        return cls(str(d["name"]), tuple(d.get("prefix") or ()), d.get("netns"),
                   ident=d.get("ident"))

    @cached_property
    def identity(self) -> dict[str, Any]:
        """What the journal keeps to recognise this target later: each PID entered through
        with its start time and network namespace, and the network namespace the commands
        run in. Refuses a namespace target that is this host's own namespace."""
        pids = []
        for pid in nsenter_pids(self.prefix):
            start = proc_start(pid)
            if start is None:
                raise TargetError(f"{self.name}: process {pid} (entered with nsenter -t) "
                                  "does not exist")
            pids.append({"pid": pid, "start": start, "netns": netns_of(pid)})
        net = self._target_netns()
        if net is None:
            raise TargetError(f"{self.name}: cannot read its network namespace")
        if net in host_netns():
            raise TargetMismatch(f"{self.name}: `{' '.join(self.prefix)}` runs in this "
                                 f"host's own network namespace ({net}), not a namespace "
                                 "of its own; refusing (this host is changed only with "
                                 "--host-wide)")
        return {"pids": pids, "netns": net}

    def _target_netns(self) -> str | None:
        p = self.run(["readlink", "/proc/self/ns/net"], check=False)
        out = p.stdout.strip()
        return out if p.returncode == 0 and out.startswith("net:") else None

    def _check_pids(self) -> bool:
        """False when a recorded PID is gone; TargetMismatch when it is another process."""
        for rec in (self.ident or {}).get("pids", []):
            pid = int(rec["pid"])
            start = proc_start(pid)
            if start is None:
                return False
            if start != rec.get("start") or netns_of(pid) != rec.get("netns"):
                raise TargetMismatch(
                    f"{self.name}: PID {pid} is no longer the process that held this target "
                    f"(journal: started at tick {rec.get('start')} in {rec.get('netns')}; "
                    f"now: started at tick {start} in {netns_of(pid)}). The testbed host is "
                    "gone and its PID was reused; refusing to write into that process's "
                    "namespace. Nothing was written and the journal is kept: delete it once "
                    "you are sure the target is gone for good")
        return True

    def verify(self) -> bool:
        """Before revert writes anything: True when the target is the one the journal
        recorded, False when it no longer exists, TargetMismatch when its PID or namespace
        is now another one, or it is this host's own namespace."""
        if not self.prefix:
            return True
        if not self._check_pids() or not self.exists():
            return False
        net = self._target_netns()
        if net is None:
            raise TargetMismatch(f"{self.name}: cannot read which network namespace "
                                 f"`{' '.join(self.prefix)}` enters; refusing to write there")
        if net in host_netns():
            raise TargetMismatch(
                f"{self.name}: `{' '.join(self.prefix)}` now runs in this host's own network "
                f"namespace ({net}); refusing to write there. Nothing was written and the "
                "journal is kept")
        want = (self.ident or {}).get("netns")
        if want and net != want:
            raise TargetMismatch(
                f"{self.name}: the network namespace is now {net}, the journal recorded "
                f"{want} (the namespace was removed and another one took its name or PID); "
                "refusing to write there. Nothing was written and the journal is kept: "
                "delete it once you are sure the target is gone for good")
        return True

    def exists(self) -> bool:
        """A namespace can vanish (testbed down) between apply and revert."""
        if not self.prefix:
            return True
        try:
            return run_once([*self.prefix, "true"], capture_output=True, timeout=30,
                                  check=False).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def run(self, argv: list[str], *, check: bool = True, input_text: str | None = None,
            timeout: float = 30) -> subprocess.CompletedProcess[str]:
        full = [*self.prefix, *argv]
        if self.ident and self._check_pids() is False:
            raise TargetError(f"{self.name}: the process it is entered through is gone")
        if shutil.which(full[0]) is None:
            raise TargetError(f"{self.name}: {full[0]} not found")
        try:
            p = run_once(full, capture_output=True, text=True, input=input_text,
                               timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise TargetError(f"{self.name}: {' '.join(full)} timed out") from exc
        if check and p.returncode != 0:
            msg = (p.stderr or p.stdout).strip().splitlines()
            raise TargetError(f"{self.name}: `{' '.join(argv)}` failed: "
                              f"{msg[-1] if msg else f'exit {p.returncode}'}")
        return p

    def read(self, path: str) -> str | None:
        """A file's content without its trailing newline; None when absent or unreadable."""
        p = self.run(["cat", path], check=False)
        return p.stdout.rstrip("\n") if p.returncode == 0 else None

    def write(self, path: str, value: str) -> None:
        # One write() of the whole value: /proc/sys parses a single write, so a value with
        # several fields (tcp_rmem) must not be split.
        self.run(["sh", "-c", 'printf "%s\\n" "$1" > "$2"', "sh", value, path])

    def writable(self, path: str) -> bool:
        return self.run(["test", "-w", path], check=False).returncode == 0


def sysctl_path(name: str) -> str:
    return "/proc/sys/" + name.replace(".", "/")
