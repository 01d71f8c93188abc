"""hpcc's figures as fabench result records, one kernel each.

Every record carries a time per sample and the work of the sample, so the Metric layer
derives the rate as it does for every kernel: HPL's rate from its own operation count
(2/3 N^3 + 3/2 N^2) over its time, StarDGEMM's from 2 n^3, MPIFFT's from 5 N log2 N (the
counts hpcc uses for its Gflop/s), PTRANS's and the ring's bandwidth from the bytes moved.
hpcc reports aggregates, not per-iteration times; where it gives one figure it is one
sample (PTRANS's five WALL rows are five).
"""

from __future__ import annotations

import math
from typing import Any

from .blas import BlasSeen
from .output import HpccResult, check_hpl
from .peak import Peak

# Work per sample is counted in units of 1e3 flop, so that work / time(us) reads in Gflop/s.
KFLOP = 1e3


def _record(kernel: str, size: int, times_us: list[float], **fields: Any) -> dict[str, Any]:
    return {"type": "result", "kernel": kernel, "size": size, "iterations": len(times_us),
            "warmup": 0, "unit": "us", "times": times_us, **fields}


def hpl_records(res: HpccResult, ranks: int, peak: Peak, blas: BlasSeen,
                nodes: int = 1) -> list[dict[str, Any]]:
    stardgemm = res.stardgemm.get("avg")
    run_peak = ranks * peak.per_core_gflops
    out = []
    for t in check_hpl(res):
        out.append(_record(
            "hpcc.hpl", t.n, [t.seconds * 1e6], messages_per_sample=t.flops / KFLOP,
            gflops=t.gflops, efficiency=t.gflops / run_peak if run_peak > 0 else None,
            peak_gflops=run_peak,
            # StarDGEMM: every rank's DGEMM at once, the practical peak of the same cores
            efficiency_stardgemm=(t.gflops / (ranks * stardgemm) if stardgemm else None),
            stardgemm_gflops_per_rank=stardgemm, residual=t.residual, nb=t.nb, p=t.p, q=t.q,
            variant=t.variant, nodes=nodes,
            blas=f"{blas.name} ({blas.core} kernels)" if blas.core else blas.name))
    return out


def ptrans_records(res: HpccResult) -> list[dict[str, Any]]:
    n = res.ptrans_n
    if not n or not res.ptrans_gbs:
        return []
    nbytes = 8.0 * n * n  # hpcc's PTRANS GB/s: 8 n^2 bytes over the time
    times = [nbytes / (g * 1e9) * 1e6 for g in res.ptrans_gbs if g > 0]
    return [_record("hpcc.ptrans", n, times, bytes_per_sample=nbytes,
                    passed=res.ptrans_passed)]


def stardgemm_records(res: HpccResult, peak: Peak) -> list[dict[str, Any]]:
    n = int(res.number("DGEMM_N") or 0)
    avg = res.stardgemm.get("avg")
    if not n or not avg:
        return []
    flops = 2.0 * n**3
    return [_record("hpcc.stardgemm", n, [flops / (avg * 1e9) * 1e6],
                    messages_per_sample=flops / KFLOP, min_gflops=res.stardgemm.get("min"),
                    max_gflops=res.stardgemm.get("max"),
                    efficiency=avg / peak.per_core_gflops if peak.per_core_gflops else None)]


def mpifft_records(res: HpccResult) -> list[dict[str, Any]]:
    n, g = res.mpifft.get("n"), res.mpifft.get("gflops")
    if not n or not g:
        return []
    flops = 5.0 * n * math.log2(n)
    return [_record("hpcc.mpifft", int(n), [flops / (g * 1e9) * 1e6],
                    messages_per_sample=flops / KFLOP, max_err=res.mpifft.get("max_err"))]


def ring_records(res: HpccResult) -> list[dict[str, Any]]:
    return [_record("hpcc.ring", r.size, [r.latency_us], bytes_per_sample=float(r.size),
                    order=r.order) for r in res.ring]


def records_for(kernel: str, res: HpccResult, ranks: int, peak: Peak,
                blas: BlasSeen, nodes: int = 1) -> list[dict[str, Any]]:
    """The records of one hpcc kernel (an HPL that failed its residual raises); `nodes`:
    the hosts the ranks were placed on."""
    if kernel == "hpcc.hpl":
        return hpl_records(res, ranks, peak, blas, nodes)
    check_hpl(res)  # a run whose HPL failed its check stores nothing of its other figures
    if kernel == "hpcc.ptrans":
        return ptrans_records(res)
    if kernel == "hpcc.stardgemm":
        return stardgemm_records(res, peak)
    if kernel == "hpcc.mpifft":
        return mpifft_records(res)
    if kernel == "hpcc.ring":
        return ring_records(res)
    return []


def summary_meta(res: HpccResult) -> dict[str, Any]:
    """Every headline figure of the run (whichever kernel it was stored as)."""
    keys = ("HPL_Tflops", "HPL_N", "HPL_NB", "HPL_nprow", "HPL_npcol", "StarDGEMM_Gflops",
            "SingleDGEMM_Gflops", "PTRANS_GBs", "MPIFFT_Gflops", "StarFFT_Gflops",
            "StarSTREAM_Triad", "MPIRandomAccess_GUPs", "NaturallyOrderedRingLatency_usec",
            "RandomlyOrderedRingLatency_usec", "NaturallyOrderedRingBandwidth_GBytes",
            "RandomlyOrderedRingBandwidth_GBytes", "CommWorldProcs")
    return {k: res.number(k) for k in keys if k in res.summary}
