"""The local reduction rate (gamma) measured on this host.

A reduction step adds the received vector into the local one: MPI_SUM on MPI_FLOAT is an
in-place sum of two float32 buffers (two loads and a store per element). The micro-kernel does
exactly that with numpy (`np.add(b, a, out=b)`), at a size inside the collectives' range, and
reports bytes of message reduced per microsecond (MB/s). Taken when `model calibrate` runs on
the host that measured the runs (local or testbed runs); for runs from elsewhere the rate is
assumed or given (`--gamma-MBps`).
"""

from __future__ import annotations

import socket
import time

import numpy as np

SIZES = (64 << 10, 1 << 20, 16 << 20)  # bytes: L2-, L3- and memory-resident
REPEATS = 30


def measure(sizes: tuple[int, ...] = SIZES, repeats: int = REPEATS) -> tuple[float, str]:
    """(MB/s at 1 MiB, detail naming every size's median rate)."""
    rates: dict[int, float] = {}
    for m in sizes:
        n = m // 4
        a = np.full(n, 1.0, dtype=np.float32)
        b = np.full(n, 2.0, dtype=np.float32)
        np.add(b, a, out=b)  # touch both buffers once before timing
        samples = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.add(b, a, out=b)
            samples.append(time.perf_counter() - t0)
        rates[m] = m / (float(np.median(samples)) * 1e6)
    key = 1 << 20 if (1 << 20) in rates else sizes[len(sizes) // 2]
    detail = ", ".join(f"{m >> 10} KiB {r:.0f} MB/s" for m, r in rates.items())
    return rates[key], (f"measured on {socket.gethostname()}: in-place float32 sum (the work "
                        f"of MPI_SUM), median of {repeats}: {detail}")
