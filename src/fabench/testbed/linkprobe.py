"""A UDP probe for checking what a testbed link does: sequence-numbered, time-stamped
datagrams from one host to another, and at the receiver loss, duplicates, reordering (RFC
4737: a datagram is reordered when its sequence number is below the highest one already
received) and one-way delay. Both ends are namespaces of one machine, so they share a clock:
the sender stamps CLOCK_REALTIME into each datagram, the receiver's kernel stamps its arrival
(SO_TIMESTAMPNS), and their difference is the one-way delay without any sync protocol.

    python -m fabench.testbed.linkprobe recv PORT COUNT IDLE_S
    python -m fabench.testbed.linkprobe send HOST PORT COUNT INTERVAL_US

Each prints one JSON line. The receiver stops after COUNT distinct sequence numbers or IDLE_S
seconds without a datagram. `measure()` runs both in a testbed.
"""

import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..host.process import popen, run_once

_FMT = "!QQ"  # sequence number, send time (ns, CLOCK_REALTIME)
_PAD = 64  # bytes per datagram: small, so that serialisation adds nothing to the delay
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


@dataclass
class ProbeResult:
    sent: int
    received: int  # datagrams, duplicates included
    unique: int
    duplicates: int
    lost: int
    reordered: int  # RFC 4737 reordered datagrams (of the unique ones)
    overtook: int  # datagrams that arrived before one with a lower number (netem's
    #                "reordered": those sent ahead of the others)
    delay_us_median: float
    delay_us_mean: float
    delay_us_p99: float
    delay_us_min: float
    delay_us_p10: float = float("nan")

    @property
    def loss_ratio(self) -> float:
        return self.lost / self.sent if self.sent else 0.0

    @property
    def dup_ratio(self) -> float:
        return self.duplicates / (self.unique or 1)

    @property
    def reordered_ratio(self) -> float:
        return self.reordered / (self.unique or 1)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(loss_ratio=self.loss_ratio, dup_ratio=self.dup_ratio,
                   reordered_ratio=self.reordered_ratio,
                   overtook_ratio=self.overtook / (self.unique or 1))
        return out


def receive(port: int, count: int, idle_s: float) -> dict[str, Any]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("0.0.0.0", port))
    print(json.dumps({"ready": True}), flush=True)
    s.settimeout(30.0)  # the first datagram may take the sender's start-up
    seen: set[int] = set()
    highest = -1
    received = dups = reordered = 0
    delays: list[float] = []
    order: list[int] = []
    while len(seen) < count:
        try:
            data, anc, _, _ = s.recvmsg(_PAD, socket.CMSG_SPACE(16))
        except TimeoutError:
            break
        s.settimeout(idle_s)
        rx_ns = time.time_ns()
        for level, kind, blob in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(blob) >= 16:
                sec, nsec = struct.unpack("qq", blob[:16])
                rx_ns = sec * 1_000_000_000 + nsec
        seq, tx_ns = struct.unpack_from(_FMT, data)
        received += 1
        if seq in seen:
            dups += 1
            continue
        seen.add(seq)
        order.append(seq)
        if seq < highest:
            reordered += 1
        highest = max(highest, seq)
        delays.append((rx_ns - tx_ns) / 1000)
    overtook = 0
    low = float("inf")
    for seq in reversed(order):  # a datagram overtook when a lower one arrived after it
        overtook += seq > low
        low = min(low, seq)
    return {"received": received, "unique": len(seen), "duplicates": dups,
            "reordered": reordered, "overtook": overtook, "delays_us": delays}


def send(host: str, port: int, count: int, interval_us: float) -> dict[str, Any]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((host, port))
    pad = b"\0" * (_PAD - struct.calcsize(_FMT))
    start = time.perf_counter()
    for seq in range(count):
        due = start + seq * interval_us / 1e6
        while time.perf_counter() < due:
            pass
        try:
            s.send(struct.pack(_FMT, seq, time.time_ns()) + pad)
        except OSError:
            pass
    return {"sent": count, "seconds": time.perf_counter() - start}


def summarise(sent: int, recv: dict[str, Any]) -> ProbeResult:
    d = sorted(recv["delays_us"]) or [float("nan")]
    return ProbeResult(sent=sent, received=recv["received"], unique=recv["unique"],
                       duplicates=recv["duplicates"], lost=sent - recv["unique"],
                       reordered=recv["reordered"], overtook=recv["overtook"],
                       delay_us_median=statistics.median(d),
                       delay_us_mean=statistics.fmean(d), delay_us_p99=d[int(0.99 * (len(d) - 1))],
                       delay_us_min=d[0], delay_us_p10=d[int(0.10 * (len(d) - 1))])


def measure(src_enter: list[str], dst_enter: list[str], dst_address: str, *, count: int = 2000,
            interval_us: float = 200.0, port: int = 47999, idle_s: float = 2.0) -> ProbeResult:
    """Send `count` datagrams from one host to another (each given by its nsenter prefix)."""
    py = sys.executable
    # The package may be run from a source tree: entering a mount namespace changes the
    # working directory, so its location goes by absolute path.
    pkg = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [pkg, *filter(None, [os.environ.get("PYTHONPATH")])])}
    rx = popen([*dst_enter, py, "-m", "fabench.testbed.linkprobe", "recv", str(port),
                           str(count), str(idle_s)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert rx.stdout is not None
        rx.stdout.readline()  # ready
        tx = run_once([*src_enter, py, "-m", "fabench.testbed.linkprobe", "send",
                             dst_address, str(port), str(count), str(interval_us)],
                            capture_output=True, text=True, timeout=600, check=True, env=env)
        out, _ = rx.communicate(timeout=600)
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()
    return summarise(json.loads(tx.stdout)["sent"], json.loads(out))


def main(argv: list[str]) -> int:
    if argv[:1] == ["recv"] and len(argv) == 4:
        print(json.dumps(receive(int(argv[1]), int(argv[2]), float(argv[3]))))
        return 0
    if argv[:1] == ["send"] and len(argv) == 5:
        print(json.dumps(send(argv[1], int(argv[2]), int(argv[3]), float(argv[4]))))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
