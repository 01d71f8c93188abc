"""Does this kernel honour a delayed-ACK change? Measured, in two throwaway namespaces.

Nagle x delayed ACK: the client writes 100 B, writes 100 B more and reads an 8 B reply. Nagle
holds the second write until the first is ACKed, and the server delays that ACK, so each
round trip waits for the delayed-ACK timer. A route attribute on the server's route changes
that timer: `quickack 1` (ACK at once), or `rto_min` on kernels that derive the delayed-ACK
ceiling from it (the per-route form of [001]'s "minimum delayed-ACK time 40 ms -> 5 ms").
The same route change `tune apply` makes (`ip route change ...`, built by apply.route_with)
is applied here, so the figure says whether that change works on this kernel.

The two namespaces are held by child processes (`unshare --net`) that end when fabench does;
their veth pair goes with them.
"""

import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from ..errors import FabenchError
from ..host.process import popen, run_once
from .apply import route_args, route_with
from .sysctl_scope import Probe

# A fixed program (no input interpolated): server on argv[1], port 5555; 200 B in, 8 B out.
_SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5555)); s.listen(1); print("listening", flush=True)
c, _ = s.accept()
while True:
    buf = b""
    while len(buf) < 200:
        d = c.recv(200 - len(buf))
        if not d:
            sys.exit(0)
        buf += d
    c.sendall(b"r" * 8)
"""
# Client: argv[1] address, then one line per phase on stdin ("go N"), one median per line.
_CLIENT = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], 5555))
for line in sys.stdin:
    n = int(line.split()[1]); out = []
    for _ in range(n):
        t0 = time.perf_counter()
        c.send(b"a" * 100); c.send(b"b" * 100)
        got = 0
        while got < 8:
            got += len(c.recv(8 - got))
        out.append(time.perf_counter() - t0)
    print(" ".join(repr(x) for x in out), flush=True)
"""
_NET = "10.254.77."  # inside namespaces of our own only; never routed anywhere


@dataclass(frozen=True)
class DelackResult:
    samples: dict[str, list[float]]  # mode -> write-write-read round trips, seconds

    def median(self, mode: str) -> float:
        return statistics.median(self.samples[mode])


def _ns(pid: int, *argv: str) -> list[str]:
    return ["nsenter", "-t", str(pid), "-n", "--", *argv]


def _run(argv: list[str]) -> str:
    p = run_once(argv, capture_output=True, text=True, timeout=30, check=False)
    if p.returncode != 0:
        raise FabenchError(f"`{' '.join(argv)}` failed: {(p.stderr or p.stdout).strip()}")
    return p.stdout


@contextmanager
def _pair() -> Iterator[tuple[int, int]]:
    with ExitStack() as stack:
        a = stack.enter_context(Probe()).holder_pid
        b = stack.enter_context(Probe()).holder_pid
        _run(_ns(a, "ip", "link", "add", "dla", "type", "veth", "peer", "name", "dlb",
                 "netns", str(b)))
        for pid, dev, addr in ((a, "dla", "1"), (b, "dlb", "2")):
            _run(_ns(pid, "ip", "addr", "add", f"{_NET}{addr}/24", "dev", dev))
            _run(_ns(pid, "ip", "link", "set", dev, "up"))
            _run(_ns(pid, "ip", "link", "set", "lo", "up"))
        yield a, b


def _server_route(b: int) -> str:
    for line in _run(_ns(b, "ip", "-4", "route", "show", "table", "main")).splitlines():
        if line.startswith(f"{_NET}0/24"):
            return line.strip()
    raise FabenchError("the probe namespace has no route to its peer")


def measure(modes: Sequence[str] = ("default", "rto_min 5ms", "quickack 1"), rounds: int = 3,
            per_round: int = 5) -> DelackResult:
    """Write-write-read round trips per mode; modes are interleaved round by round, so a
    load burst on a shared host touches every mode. A mode is `default` or a route
    attribute and value (`quickack 1`, `rto_min 5ms`) set on the server's route."""
    for m in modes:
        if m != "default" and (len(m.split()) != 2 or m.split()[0] not in ("quickack",
                                                                         "rto_min")):
            raise FabenchError(f"not a delayed-ACK mode: {m!r}")
    samples: dict[str, list[float]] = {m: [] for m in modes}
    with _pair() as (a, b):
        base = _server_route(b)
        server = popen(_ns(b, sys.executable, "-c", _SERVER, f"{_NET}2"),
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        client = None
        try:
            assert server.stdout is not None
            if server.stdout.readline().strip() != "listening":
                raise FabenchError("the delayed-ACK probe's server did not start")
            client = popen(_ns(a, sys.executable, "-c", _CLIENT, f"{_NET}2"),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True)
            assert client.stdin is not None and client.stdout is not None
            for _ in range(rounds):
                for m in modes:
                    line = base if m == "default" else route_with(base, *m.split())
                    _run(_ns(b, "ip", "route", "change", *route_args(line)))
                    # One more than asked: the first round trip after a route change may
                    # still wait on a timer the previous mode armed.
                    client.stdin.write(f"go {per_round + 1}\n")
                    client.stdin.flush()
                    got = client.stdout.readline().split()
                    if len(got) != per_round + 1:
                        raise FabenchError("the delayed-ACK probe's client stopped")
                    samples[m] += [float(x) for x in got[1:]]
        finally:
            for p in (client, server):
                if p is not None and p.poll() is None:
                    p.kill()  # our own children, by handle
                if p is not None:
                    p.wait()
    return DelackResult(samples)
