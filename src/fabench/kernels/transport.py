"""Transport kernels (native/transport): TCP/UDP sockets, UCX, libfabric, RDMA verbs.

They start without MPI (a TCP rendezvous brings the two sides together, see
docs/transports.md), so they run between any two hosts; the pair starter
(fabench.starters.pair) starts them. This module registers them; whether this host can run
one is `fabench doctor`'s question (doctor/checks.py), and a multi-stream record's split
per stream is the analysis's (analysis/streams.py).
"""

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

