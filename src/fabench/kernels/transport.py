"""Transport kernels (native/transport): TCP/UDP sockets, UCX, libfabric, RDMA verbs.

They start without MPI (a TCP rendezvous brings the two sides together, see
docs/transports.md), so they run between any two hosts; the pair starter
(fabench.starters.pair) starts them.
"""

from dataclasses import replace
from pathlib import Path

from ..records import ResultRecord
from . import BANDWIDTH, LATENCY, MESSAGE_RATE, PT2PT_SIZES, Kernel, register_kernel

UDP_SIZES = "8:32K"  # an 8-byte sequence header rides in every datagram; 64 KiB is UDP's cap

# What a family needs at build time (the reason `fabench doctor` gives when it is missing).
BUILD_NEEDS = {
    "tcp": "a C compiler (always built)",
    "udp": "a C compiler (always built)",
    "ucx": "UCX development files at build time (Debian: libucx-dev; pkg-config ucx)",
    "ofi": "libfabric development files at build time (Debian: libfabric-dev; "
           "pkg-config libfabric)",
    "verbs": "rdma-core headers at build time (Debian: libibverbs-dev librdmacm-dev)",
}

_SPECS: list[tuple[str, str, tuple, str, str]] = [
    ("tcp", "latency", (LATENCY,), PT2PT_SIZES,
     "TCP ping-pong, half round trip (--pattern wwr: write-write-read, full round trip)"),
    ("tcp", "bw", (BANDWIDTH,), PT2PT_SIZES, "one TCP stream, window of writes + 1-byte ack"),
    ("tcp", "streams", (BANDWIDTH,), PT2PT_SIZES,
     "N parallel TCP connections (--streams N), total and per stream, like iperf -P"),
    ("tcp", "bibw", (BANDWIDTH,), PT2PT_SIZES, "TCP, both directions at once"),
    ("udp", "latency", (LATENCY,), UDP_SIZES, "UDP ping-pong, half round trip, lost pings"),
    ("udp", "stream", (BANDWIDTH, MESSAGE_RATE), UDP_SIZES,
     "UDP datagram stream: sender rate, receiver loss and reorder counts"),
    ("ucx", "latency", (LATENCY,), PT2PT_SIZES, "UCP tag ping-pong (any UCX_TLS)"),
    ("ucx", "bw", (BANDWIDTH,), PT2PT_SIZES, "UCP tag window + ack"),
    ("ucx", "bibw", (BANDWIDTH,), PT2PT_SIZES, "UCP tag, both directions"),
    ("ofi", "latency", (LATENCY,), PT2PT_SIZES, "libfabric ping-pong, RDM or MSG endpoint"),
    ("ofi", "bw", (BANDWIDTH,), PT2PT_SIZES, "libfabric window + ack, RDM or MSG endpoint"),
    ("verbs", "latency", (LATENCY,), PT2PT_SIZES, "RC send or RDMA write over rdma-cm"),
    ("verbs", "bw", (BANDWIDTH,), PT2PT_SIZES, "RC send or RDMA write window over rdma-cm"),
]

for _fam, _name, _metrics, _sizes, _desc in _SPECS:
    register_kernel(Kernel(
        name=f"{_fam}.{_name}", family=_fam, kind="pt2pt", executable=f"fb-{_fam}-{_name}",
        metrics=_metrics, default_sizes=_sizes, description=_desc, start="pair",
        build_needs=BUILD_NEEDS[_fam],
    ))


def rdma_devices(sysfs: Path = Path("/sys/class/infiniband")) -> list[str]:
    return sorted(p.name for p in sysfs.iterdir()) if sysfs.is_dir() else []


def runnable_here(kernel: Kernel) -> str | None:
    """Why a built transport kernel cannot run on this host (None when it can)."""
    if kernel.family == "verbs" and not rdma_devices():
        return "no RDMA device (runs are recorded as skipped)"
    return None


def stream_results(rec: ResultRecord) -> list[ResultRecord]:
    """tcp.streams: one record per stream (its own window times), so the Metric layer derives
    per-stream bandwidth exactly as it derives the total."""
    n = int(rec.extra.get("streams", 0) or 0)
    flat = rec.extra.get("stream_times") or []
    if n <= 0 or not flat or len(flat) % n:
        return []
    per = len(flat) // n
    bps = float(rec.extra.get("stream_bytes_per_sample", rec.bytes_per_sample / n))
    mps = rec.messages_per_sample / n
    return [replace(rec, times=[float(x) for x in flat[k * per:(k + 1) * per]],
                    bytes_per_sample=bps, messages_per_sample=mps,
                    extra={"stream": k}, times_min=None, times_mean=None)
            for k in range(n)]
