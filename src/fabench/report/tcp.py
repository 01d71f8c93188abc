"""The kernel's TCP counters of each run, as events per second: the evidence behind a TCP
number on a path that reorders or loses.

The scheduler stores, for every run placed on more than one host, each host's TCP counter
deltas over the run (provenance `tcp_counters`, fabench.host.tcpstats). Reordering is detected by
the sending TCP (from the SACKs and timestamps it gets back), out-of-order queueing by the
receiving one, so a row per host is given and both matter.
"""

from dataclasses import dataclass
from typing import Any

from ..analysis.selection import config_label
from ..store.database import RunRow

# (column, counter names summed, title): what document 001 and issue 16 read
COLUMNS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("reorder_events", ("sack_reorder", "ts_reorder", "reno_reorder"),
     "TCPSACKReorder + TCPTSReorder + TCPRenoReorder"),
    ("sack_reorder", ("sack_reorder",), "TCPSACKReorder"),
    ("ts_reorder", ("ts_reorder",), "TCPTSReorder"),
    ("reno_reorder", ("reno_reorder",), "TCPRenoReorder"),
    ("ofo_queue", ("ofo_queue",), "TCPOFOQueue"),
    ("retrans_segs", ("retrans_segs",), "Tcp RetransSegs"),
    ("dsack_recv", ("dsack_recv",), "TCPDSACKRecv (spurious retransmits found by the sender)"),
    ("dsack_sent", ("dsack_old_sent", "dsack_ofo_sent"),
     "TCPDSACKOldSent + TCPDSACKOfoSent"),
    ("timeouts", ("timeouts",), "TCPTimeouts"),
)


@dataclass(frozen=True)
class TcpRow:
    """One host of one run: each column's count over the run, and per second."""

    run_id: int
    kernel: str
    configuration: str
    host: str
    seconds: float
    counts: dict[str, int]

    def per_second(self, column: str) -> float:
        return self.counts.get(column, 0) / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "kernel": self.kernel,
                "configuration": self.configuration, "host": self.host,
                "seconds": self.seconds, **self.counts,
                **{f"{c}_per_s": self.per_second(c) for c, _, _ in COLUMNS}}


def tcp_rows(runs: list[RunRow]) -> list[TcpRow]:
    """A row per host of every run whose hosts' TCP carried segments during it."""
    out = []
    for r in runs:
        counters = r.provenance.get("tcp_counters")
        if not isinstance(counters, dict):
            continue
        for host, d in sorted(counters.items()):
            if not isinstance(d, dict) or not (d.get("in_segs") or d.get("out_segs")):
                continue
            counts = {col: sum(int(d.get(k) or 0) for k in keys) for col, keys, _ in COLUMNS}
            out.append(TcpRow(r.id, r.kernel, config_label(r), str(host),
                              float(d.get("seconds") or 0.0), counts))
    return out
