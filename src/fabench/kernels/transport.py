"""Transport kernels (native/transport): TCP/UDP sockets, UCX, libfabric, RDMA verbs.

They start without MPI (a TCP rendezvous brings the two sides together, see
docs/transports.md), so they run between any two hosts; the pair starter
(fabench.starters.pair) starts them.
"""

from dataclasses import replace
from pathlib import Path

from ..records import ResultRecord
from . import Kernel, register_kernel
from .table import rows_of

# What a family needs at build time (the reason `fabench doctor` gives when it is missing).
BUILD_NEEDS = {
    "tcp": "a C compiler (always built)",
    "udp": "a C compiler (always built)",
    "ucx": "UCX development files at build time (Debian: libucx-dev; pkg-config ucx)",
    "ofi": "libfabric development files at build time (Debian: libfabric-dev; "
           "pkg-config libfabric)",
    "verbs": "rdma-core headers at build time (Debian: libibverbs-dev librdmacm-dev)",
}

# One kernel per line of native/kernels.list in these families (kernel_table); udp.* sizes
# start at 8 B: an 8-byte sequence header rides in every datagram.
for _row in rows_of(frozenset(BUILD_NEEDS)):
    register_kernel(Kernel(
        name=_row.name, family=_row.family, kind=_row.kind, executable=_row.executable,
        metrics=_row.metrics, default_sizes=_row.sizes, description=_row.description,
        start="pair", build_needs=BUILD_NEEDS[_row.family],
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
