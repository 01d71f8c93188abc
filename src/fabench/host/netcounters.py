"""Interface counters before and after a run: proof that a run's traffic crossed the network.

Every scheduler whose runs cross hosts checks them: the testbed and hostfile ones read the
counters live through each host's command prefix, Slurm's from copies its job script made.

A testbed run that says "tcp between h1 and h2" but whose bytes went through shared memory, or
through loopback on one host, looks exactly like a fast network. The counters of each host's
link cannot be fooled that way, so every run that claims to cross is checked against them.
"""

from dataclasses import asdict, dataclass
from typing import Any

from ..records import ResultRecord
from .launched import LaunchResult
from .process import run_capture

# A run crossed when the links carried at least this share of what the kernel says it moved
# (latency counts one direction per sample, so a crossing run carries about twice that).
MIN_SHARE = 0.5


@dataclass(frozen=True)
class IfCounters:
    rx_bytes: int = 0
    tx_bytes: int = 0
    rx_packets: int = 0
    tx_packets: int = 0

    def __add__(self, other: "IfCounters") -> "IfCounters":
        return IfCounters(self.rx_bytes + other.rx_bytes, self.tx_bytes + other.tx_bytes,
                          self.rx_packets + other.rx_packets, self.tx_packets + other.tx_packets)

    def __sub__(self, other: "IfCounters") -> "IfCounters":
        return IfCounters(self.rx_bytes - other.rx_bytes, self.tx_bytes - other.tx_bytes,
                          self.rx_packets - other.rx_packets, self.tx_packets - other.tx_packets)


def parse_proc_net_dev(text: str) -> dict[str, IfCounters]:
    """/proc/net/dev as {interface: counters}; it shows the namespace of whoever reads it."""
    out = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        f = rest.split()
        if sep and len(f) >= 10:
            out[name.strip()] = IfCounters(int(f[0]), int(f[8]), int(f[1]), int(f[9]))
    return out


def read_host_counters(prefix: list[str] | tuple[str, ...],
                       ifname: str | None = None) -> IfCounters:
    """Counters of one host reached through ``prefix`` (nsenter line, ssh, agent): of
    ``ifname``, or of every interface but loopback when no interface is named."""
    return link_counters(run_capture([*prefix, "cat", "/proc/net/dev"], timeout=60).stdout,
                         ifname)


def link_counters(proc_net_dev: str, ifname: str | None = None) -> IfCounters:
    """The counters of ``ifname`` in a copy of /proc/net/dev, or of every interface but
    loopback when no interface is named (loopback traffic never crossed anything)."""
    total = IfCounters()
    for name, c in parse_proc_net_dev(proc_net_dev).items():
        if (ifname is None and name != "lo") or name == ifname:
            total = total + c
    return total


def delta(before: dict[str, IfCounters],
          after: dict[str, IfCounters]) -> dict[str, dict[str, int]]:
    return {name: asdict(after[name] - before[name]) for name in after if name in before}


def expected_crossing(results: list[ResultRecord]) -> tuple[int, int]:
    """(bytes, messages) the kernel reports moving in its timed samples: a lower bound on
    what must cross when its ranks sit on different hosts."""
    nbytes = sum(int(r.bytes_per_sample * len(r.times)) for r in results)
    msgs = sum(int(max(r.messages_per_sample, 1) * len(r.times)) for r in results)
    return nbytes, msgs


def crossing_flag(carried: dict[str, dict[str, int]], results: list[ResultRecord],
                  hosts: list[str]) -> str | None:
    """A flag text when the links carried clearly less than the run claims, else None.

    Bytes decide when the kernel moved payload (TCP may pack many small messages into one
    packet, never fewer bytes onto the wire); packets only for payload-free kernels (barrier),
    where every iteration needs at least one packet."""
    if not results:
        return None
    tx = sum(carried.get(h, {}).get("tx_bytes", 0) for h in hosts)
    pkts = sum(carried.get(h, {}).get("tx_packets", 0) for h in hosts)
    want_bytes, want_msgs = expected_crossing(results)
    short = tx < MIN_SHARE * want_bytes if want_bytes else pkts < MIN_SHARE * want_msgs
    if short:
        return (f"traffic-did-not-cross: {'+'.join(hosts)} links sent {tx} B in {pkts} "
                f"packets, the kernel reports {want_bytes} B in {want_msgs} messages")
    return None


def summary(carried: dict[str, dict[str, int]]) -> dict[str, Any]:
    return {"per_host": carried,
            "tx_bytes": sum(c["tx_bytes"] for c in carried.values()),
            "rx_bytes": sum(c["rx_bytes"] for c in carried.values())}


def check_crossing(res: LaunchResult, results: list[ResultRecord],
                   before: dict[str, IfCounters], after: dict[str, IfCounters],
                   where: str) -> None:
    """Record what each host's link carried; flag the run if it carried less than it moved."""
    carried = delta(before, after)
    res.extra["interface_bytes"] = {"where": where, "per_host": carried}
    flag = crossing_flag(carried, results, list(carried))
    if flag:
        res.flags.append(flag)
