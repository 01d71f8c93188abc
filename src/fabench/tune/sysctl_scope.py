"""Whether a sysctl follows the network namespace, decided by the kernel, never by a table.

`tune apply` on a namespace target (a testbed host, `--netns`) may only write keys the kernel
keeps per network namespace: a host-wide key written "inside" a namespace is written for the
whole host. Being writable inside a namespace proves nothing (`vm.*` and `kernel.*` are), so:

1. Only `/proc/sys/net` is registered per network namespace (`register_net_sysctl`); every
   other key is host-wide for network namespaces whatever its permissions. Those are never
   written here.
2. A `net.*` key absent in a fresh namespace is registered for the initial namespace only
   (`netdev_max_backlog`); one present but read-only is a global the kernel shows read-only
   outside the initial namespace (`rmem_max`).
3. A `net.*` key writable in a fresh namespace is written there, and only there: the value
   that namespace already has plus one (minus one where +1 is refused), then the host's value
   is read back and compared, then the namespace's own value is written back. The host's
   value unchanged means the key is per namespace. Changed means it is host-wide: the value
   written back is then the host's own, and it is read again to confirm.

The throwaway namespace is a child process (`unshare --net`) that ends when its stdin closes,
so a killed fabench leaves nothing behind; nothing is ever written in the user's namespaces.
"""

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import FabenchError
from ..host.process import popen, run_once

PER_NETNS = "per-netns"
HOST_WIDE = "host-wide"
HOST_WIDE_RO = "host-wide (read-only in namespaces)"
ROOT_NS_ONLY = "root-ns only"
ABSENT = "absent"
UNKNOWN = "unknown"

_NAME = re.compile(r"[a-z0-9_]+(\.[A-Za-z0-9_-]+)+")
_INT = re.compile(r"-?\d{1,20}")


@dataclass(frozen=True)
class Scope:
    name: str
    kind: str  # one of the constants above
    how: str  # how the kernel said so, for the audit's "why"

    @property
    def namespaced(self) -> bool:
        """Only these may be written on a namespace target."""
        return self.kind == PER_NETNS

    @property
    def label(self) -> str:
        return self.kind


def sysctl_path(name: str) -> str:
    return "/proc/sys/" + name.replace(".", "/")


def _check_name(name: str) -> None:
    # Names come from profiles (validated there too); a path must never escape /proc/sys.
    if not _NAME.fullmatch(name) or ".." in name:
        raise FabenchError(f"not a sysctl name: {name!r}")


class Probe:
    """A throwaway network namespace, and the namespace whose values must not change.

    `reference` is a command prefix that reads in the namespace to protect (empty: this
    process's own, the host's). `spawn` is the prefix that starts the throwaway namespace's
    holder; the commands inside it run through `nsenter --all` on that holder, so every other
    namespace (IPC, UTS) is the holder's too.
    """

    def __init__(self, reference: Sequence[str] = (), spawn: Sequence[str] = ()) -> None:
        self.reference = tuple(reference)
        self.spawn = tuple(spawn)
        self._holder: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> "Probe":
        if shutil.which("unshare") is None or shutil.which("nsenter") is None:
            raise FabenchError("unshare/nsenter (util-linux) are needed to make a throwaway "
                               "namespace")
        # `read` returns when our end of the pipe closes: the holder never outlives fabench.
        self._holder = popen(
            [*self.spawn, "unshare", "--net", "--", "sh", "-c", "echo ready; read _"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self._holder.stdout is not None
        if self._holder.stdout.readline().strip() != b"ready":
            self.__exit__()
            raise FabenchError("cannot make a throwaway network namespace (needs root)")
        return self

    def __exit__(self, *exc: object) -> None:
        h, self._holder = self._holder, None
        if h is None:
            return
        try:
            if h.stdin:
                h.stdin.close()
            h.wait(timeout=10)
        except subprocess.TimeoutExpired:
            h.kill()  # our own child, by its handle
            h.wait()

    @property
    def holder_pid(self) -> int:
        if self._holder is None:
            raise FabenchError("the throwaway namespace is not up")
        return self._holder.pid

    def inside(self, script: str, *args: str) -> str:
        """Run a fixed shell script in the throwaway namespace; data only as arguments."""
        p = run_once(["nsenter", "--all", "-t", str(self.holder_pid), "--", "sh", "-c",
                            script, "sh", *args], capture_output=True, text=True, timeout=30,
                           check=False)
        return p.stdout

    def read_reference(self, name: str) -> str | None:
        path = sysctl_path(name)
        if not self.reference:
            try:
                return " ".join(Path(path).read_text().split())
            except OSError:
                return None
        p = run_once([*self.reference, "cat", "--", path], capture_output=True,
                           text=True, timeout=30, check=False)
        return " ".join(p.stdout.split()) if p.returncode == 0 else None


# Prints one line per key: NAME<TAB>absent|ro|rw<TAB>value.
_STATE = ('for n in "$@"; do f=/proc/sys/$(printf %s "$n" | tr . /); '
          'if [ ! -e "$f" ]; then printf "%s\\tabsent\\t\\n" "$n"; '
          'elif [ -w "$f" ]; then printf "%s\\trw\\t%s\\n" "$n" "$(cat "$f" | tr "\\t\\n" "  ")"; '
          'else printf "%s\\tro\\t%s\\n" "$n" "$(cat "$f" 2>/dev/null | tr "\\t\\n" "  ")"; fi; '
          'done')
# Arguments: NAME VALUE [VALUE...]; writes the first value the kernel accepts, prints it.
_WRITE = ('n=$1; shift; f=/proc/sys/$(printf %s "$n" | tr . /); for v in "$@"; do '
          'if printf "%s\\n" "$v" > "$f" 2>/dev/null; then printf "%s" "$v"; exit 0; fi; '
          'done; exit 1')


def _states(probe: Probe, names: list[str]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for line in probe.inside(_STATE, *names).splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] in names and parts[1] in ("absent", "ro", "rw"):
            out[parts[0]] = (parts[1], " ".join(parts[2].split()))
    return out


def _nudged(value: str) -> list[str]:
    """The value with its first field +1, then -1 (a boolean refuses one of them)."""
    fields = value.split()
    if not fields or not _INT.fullmatch(fields[0]):
        return []
    first = int(fields[0])
    return [" ".join([str(first + d), *fields[1:]]) for d in (1, -1)]


# Keys whose values are names: a different valid value comes from the kernel's own list.
_CHOICES = {"net.ipv4.tcp_congestion_control": "net.ipv4.tcp_available_congestion_control"}


def _alternatives(probe: Probe, name: str, value: str) -> list[str]:
    listing = _CHOICES.get(name)
    if listing is None:
        return []
    st, choices = _states(probe, [listing]).get(listing, ("", ""))
    return [c for c in choices.split() if c != value and re.fullmatch(r"[a-z0-9_]{1,32}", c)
            ][:2] if st in ("ro", "rw") else []


def write_test(probe: Probe, names: list[str]) -> dict[str, Scope]:
    """Decide each key by writing it in the throwaway namespace only and watching the
    reference namespace (see the module's description). Callers pass keys that are writable
    there; `decide` passes `net.*` keys only."""
    out: dict[str, Scope] = {}
    states = _states(probe, names)
    for n in names:
        st, ns_value = states.get(n, ("", ""))
        if st != "rw":
            out[n] = Scope(n, UNKNOWN, "not writable in a throwaway namespace")
            continue
        candidates = _nudged(ns_value) or _alternatives(probe, n, ns_value)
        if not candidates:
            out[n] = Scope(n, UNKNOWN, f"value {ns_value!r} is not a number, so it was not "
                           "write-tested; treated as host-wide")
            continue
        before = probe.read_reference(n)
        written = probe.inside(_WRITE, n, *candidates)
        if written not in candidates:
            out[n] = Scope(n, UNKNOWN, "the kernel refused both test values in a throwaway "
                           "namespace; treated as host-wide")
            continue
        after = probe.read_reference(n)
        probe.inside(_WRITE, n, ns_value)
        if before is not None and after == before:
            out[n] = Scope(n, PER_NETNS, f"written in a throwaway namespace ({ns_value} -> "
                           f"{written}); the host kept {before}")
            continue
        restored = probe.read_reference(n)
        if restored != before:
            raise FabenchError(f"{n}: the write test reached the host and its value could not "
                               f"be put back (was {before!r}, now {restored!r}); set it back "
                               "by hand")
        out[n] = Scope(n, HOST_WIDE, f"a write in a throwaway namespace changed the host's "
                       f"value ({before} -> {after}); it was put back")
    return out


_CACHE: dict[str, Scope] = {}


def decide(names: Sequence[str], probe: Probe | None = None) -> dict[str, Scope]:
    """The scope of each key on this kernel. Results are cached per process (the kernel does
    not change under us), except when a probe is given."""
    for n in names:
        _check_name(n)
    todo = [n for n in dict.fromkeys(names) if probe is not None or n not in _CACHE]
    found: dict[str, Scope] = {}
    net = []
    for n in todo:
        if not n.startswith("net."):
            ref = (probe or Probe()).read_reference(n)
            found[n] = Scope(n, HOST_WIDE if ref is not None else ABSENT,
                             "only /proc/sys/net follows the network namespace (kernel "
                             "rule); never written to find out")
        else:
            net.append(n)
    if net:
        try:
            with probe or Probe() as p:
                states = _states(p, net)
                writable = []
                for n in net:
                    st = states.get(n, ("", ""))[0]
                    on_host = p.read_reference(n) is not None
                    if st == "absent":
                        found[n] = Scope(n, ROOT_NS_ONLY if on_host else ABSENT,
                                         "absent in a fresh network namespace: registered "
                                         "for the initial namespace only")
                    elif st == "ro":
                        found[n] = Scope(n, HOST_WIDE_RO, "read-only in a fresh network "
                                         "namespace: the kernel shows a host-wide value there")
                    elif st == "rw":
                        writable.append(n)
                    else:
                        found[n] = Scope(n, UNKNOWN, "could not be read in a throwaway "
                                         "namespace")
                found.update(write_test(p, writable))
        except FabenchError as exc:
            if "reached the host" in str(exc):
                raise
            for n in net:
                found.setdefault(n, Scope(n, UNKNOWN, f"not decided: {exc}"))
    if probe is None:
        _CACHE.update({n: s for n, s in found.items() if s.kind != UNKNOWN
                       or "not decided" not in s.how})
    return {n: found.get(n) or _CACHE[n] for n in names}
