"""The kernel's own TCP counters around a run, read inside one host's network namespace.

`/proc/net/netstat` and `/proc/net/snmp` (what nstat(8) reads) count per network namespace,
so inside a testbed host they count that host's TCP alone. Read before and after a run, their
difference says what TCP met: reordering it detected (TCPSACKReorder, TCPTSReorder,
TCPRenoReorder), out-of-order queueing (TCPOFOQueue), retransmissions, DSACKs (spurious
retransmissions found afterwards) and ECN (CE-marked packets received, CE delivered). `ss -ti`
adds each live connection's reordering estimate (`reordering:`) and reordering events seen
(`reord_seen:`).
"""

import re
import time
from dataclasses import dataclass, field
from typing import Any

from .fanout import on_each
from .process import run_capture

# The counters a TCP run's record carries by name (all others that moved go in `moved`).
REORDER = ("TcpExt.TCPSACKReorder", "TcpExt.TCPTSReorder", "TcpExt.TCPRenoReorder")
NAMED = {
    "sack_reorder": "TcpExt.TCPSACKReorder",
    "ts_reorder": "TcpExt.TCPTSReorder",
    "reno_reorder": "TcpExt.TCPRenoReorder",
    "ofo_queue": "TcpExt.TCPOFOQueue",
    "ofo_drop": "TcpExt.TCPOFODrop",
    "retrans_segs": "Tcp.RetransSegs",
    "fast_retrans": "TcpExt.TCPFastRetrans",
    "timeouts": "TcpExt.TCPTimeouts",
    "lost_retransmit": "TcpExt.TCPLostRetransmit",
    "dsack_recv": "TcpExt.TCPDSACKRecv",
    "dsack_old_sent": "TcpExt.TCPDSACKOldSent",
    "dsack_ofo_sent": "TcpExt.TCPDSACKOfoSent",
    "dsack_ofo_recv": "TcpExt.TCPDSACKOfoRecv",
    "dsack_undo": "TcpExt.TCPDSACKUndo",
    "spurious_rtos": "TcpExt.TCPSpuriousRTOs",
    "delivered_ce": "TcpExt.TCPDeliveredCE",
    "in_ce_pkts": "IpExt.InCEPkts",
    "in_ect0_pkts": "IpExt.InECT0Pkts",
    "in_ect1_pkts": "IpExt.InECT1Pkts",
    "in_segs": "Tcp.InSegs",
    "out_segs": "Tcp.OutSegs",
}


@dataclass(frozen=True)
class TcpCounters:
    """Every counter of /proc/net/netstat and /proc/net/snmp, as "Group.Name" -> value."""

    values: dict[str, int]
    monotonic_s: float


@dataclass(frozen=True)
class TcpCounterDelta:
    """What one host's TCP counted between two readings."""

    seconds: float
    sack_reorder: int = 0
    ts_reorder: int = 0
    reno_reorder: int = 0
    ofo_queue: int = 0
    ofo_drop: int = 0
    retrans_segs: int = 0
    fast_retrans: int = 0
    timeouts: int = 0
    lost_retransmit: int = 0
    dsack_recv: int = 0
    dsack_old_sent: int = 0
    dsack_ofo_sent: int = 0
    dsack_ofo_recv: int = 0
    dsack_undo: int = 0
    spurious_rtos: int = 0
    delivered_ce: int = 0
    in_ce_pkts: int = 0
    in_ect0_pkts: int = 0
    in_ect1_pkts: int = 0
    in_segs: int = 0
    out_segs: int = 0
    moved: dict[str, int] = field(default_factory=dict)  # every counter that changed

    @property
    def reorder_events(self) -> int:
        """Reordering TCP detected (each of the three ways Linux detects it counts once)."""
        return self.sack_reorder + self.ts_reorder + self.reno_reorder

    def per_second(self, name: str) -> float:
        value = self.reorder_events if name == "reorder_events" else getattr(self, name)
        return value / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in ("seconds", *NAMED)}
        out["reorder_events"] = self.reorder_events
        out["reorder_events_per_s"] = self.per_second("reorder_events")
        out["moved"] = self.moved
        return out


def parse_proc(text: str) -> dict[str, int]:
    """/proc/net/netstat or /proc/net/snmp: header and value lines in pairs per group."""
    out: dict[str, int] = {}
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    for head, vals in zip(lines[::2], lines[1::2], strict=False):
        if not head or head[0] != vals[0] or not head[0].endswith(":"):
            continue
        group = head[0][:-1]
        for name, value in zip(head[1:], vals[1:], strict=False):
            if re.fullmatch(r"-?\d+", value):
                out[f"{group}.{name}"] = int(value)
    return out


def read_tcp_counters(enter: list[str] | tuple[str, ...]) -> TcpCounters:
    """Both files, read inside the host that ``enter`` (an nsenter prefix) leads into."""
    p = run_capture([*enter, "cat", "/proc/net/netstat", "/proc/net/snmp"], timeout=60)
    return TcpCounters(parse_proc(p.stdout) if p.ok else {}, time.monotonic())


def tcp_delta(before: TcpCounters, after: TcpCounters) -> TcpCounterDelta:
    moved = {k: after.values[k] - v for k, v in before.values.items()
             if k in after.values and after.values[k] != v}
    named = {field_: moved.get(key, 0) for field_, key in NAMED.items()}
    return TcpCounterDelta(seconds=after.monotonic_s - before.monotonic_s, moved=moved,
                           **named)


@dataclass(frozen=True)
class SocketReordering:
    """One live TCP connection as `ss -ti` shows it."""

    local: str
    peer: str
    reordering: int  # the connection's reordering estimate (segments), 3 at start
    reord_seen: int  # reordering events it has seen
    retrans_total: int


def ss_reordering(enter: list[str] | tuple[str, ...]) -> list[SocketReordering]:
    """Each established TCP connection of the host, with its reordering figures."""
    p = run_capture([*enter, "ss", "-tinH", "state", "established"], timeout=60)
    return parse_ss(p.stdout) if p.ok else []


def parse_ss(text: str) -> list[SocketReordering]:
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        head = lines[i].split()
        info = lines[i + 1] if i + 1 < len(lines) and lines[i + 1][:1].isspace() else ""
        i += 2 if info else 1
        if len(head) < 4:
            continue
        local, peer = head[-2], head[-1]
        if ":" not in local:  # with state columns: Recv-Q Send-Q Local Peer [Process]
            continue

        def num(key: str, text: str = info) -> int:
            m = re.search(rf"\b{key}:(\d+)", text)
            return int(m.group(1)) if m else 0
        m = re.search(r"\bretrans:\d+/(\d+)", info)
        out.append(SocketReordering(local=local, peer=peer, reordering=num("reordering") or 3,
                                    reord_seen=num("reord_seen"),
                                    retrans_total=int(m.group(1)) if m else 0))
    return out


class TcpCounterWatch:
    """Around one run: the counters of each named host before, and their deltas after."""

    def __init__(self, enters: dict[str, list[str] | tuple[str, ...]]) -> None:
        self.enters = enters
        self.before: dict[str, TcpCounters] = {}

    def start(self) -> None:
        self.before = on_each(lambda h: read_tcp_counters(self.enters[h]), self.enters)

    def finish(self) -> dict[str, TcpCounterDelta]:
        after = on_each(lambda h: read_tcp_counters(self.enters[h]),
                        [h for h in self.enters if h in self.before])
        return {h: tcp_delta(self.before[h], a) for h, a in after.items()}
