"""Calibration: fit a fabric's piecewise point-to-point model to measured curves.

The procedure is SimGrid's ("Calibrating the models"): cut the ping-pong curve at protocol
breakpoints and fit a line per segment. The breakpoints are not given: every placement of up to
`max_breaks` breakpoints between measured sizes is tried, each segment gets a weighted least
squares line (weights 1/t, so small and large messages count alike), and the placement is
chosen by BIC on the relative residuals, so a breakpoint is only kept when it pays for its two
extra parameters.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..analyse import summarize_results
from ..errors import FabenchError
from ..metrics import LATENCY
from ..store import RunRow, Store
from .fabric import Fabric, Segment

MIN_POINTS = 3  # per segment: a line through two points has no residual to judge it by


@dataclass
class Curve:
    """Median time per size (us): half round trip (latency) or time per message (bw)."""

    sizes: list[int]
    times: list[float]
    runs: list[int] = field(default_factory=list)


def _fit_line(m: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """alpha, beta >= 0 minimising sum(((alpha + beta m) - t) / t)^2."""
    w = 1.0 / t
    a = np.column_stack([w, m * w])
    (alpha, beta), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
    if beta < 0:  # flat segment: best constant in the relative sense
        beta = 0.0
        alpha = float(np.sum(w) / np.sum(w * w))
    if alpha < 0:  # through the origin
        alpha = 0.0
        beta = float(np.sum(m * w * w * t) / np.sum((m * w) ** 2)) if np.any(m > 0) else 0.0
    return float(alpha), float(beta)


def _segment(m: np.ndarray, t: np.ndarray) -> tuple[Segment, float]:
    alpha, beta = _fit_line(m, t)
    rel = (alpha + beta * m - t) / t
    seg = Segment(start=int(m[0]), alpha_us=alpha, beta_us_per_byte=beta, n_points=len(m),
                  median_rel_err=float(np.median(np.abs(rel))),
                  max_rel_err=float(np.max(np.abs(rel))))
    return seg, float(np.sum(rel * rel))


def fit_segments(sizes: Sequence[int], times: Sequence[float], max_breaks: int = 2,
                 min_points: int = MIN_POINTS) -> tuple[list[Segment], dict[str, float]]:
    """Piecewise-linear fit of t(size); returns the segments and overall fit quality."""
    pts = sorted((int(s), float(x)) for s, x in zip(sizes, times, strict=True)
                 if s > 0 and x > 0 and math.isfinite(x))
    if len(pts) < min_points:
        raise FabenchError(f"calibration needs at least {min_points} sizes with a positive "
                           f"time (got {len(pts)})")
    m = np.array([p[0] for p in pts], dtype=float)
    t = np.array([p[1] for p in pts], dtype=float)
    n = len(m)
    best: tuple[float, list[Segment], float] | None = None
    for k in range(0, max_breaks + 1):
        for cuts in itertools.combinations(range(min_points, n - min_points + 1), k):
            bounds = [0, *cuts, n]
            if any(b - a < min_points for a, b in itertools.pairwise(bounds)):
                continue
            segs, rss = [], 0.0
            for a, b in itertools.pairwise(bounds):
                seg, r = _segment(m[a:b], t[a:b])
                segs.append(seg)
                rss += r
            params = 2 * len(segs) + k  # lines plus breakpoint positions
            bic = n * math.log(max(rss / n, 1e-12)) + params * math.log(n)
            if best is None or bic < best[0]:
                best = (bic, segs, rss)
    assert best is not None
    _, segs, rss = best
    segs[0].start = 0  # the first line also covers sizes below the smallest measured
    model = np.array([segs_time(segs, x) for x in m])
    rel = np.abs(model - t) / t
    quality = {"points": float(n), "segments": float(len(segs)),
               "median_rel_err": float(np.median(rel)), "max_rel_err": float(np.max(rel)),
               "rms_rel_err": float(math.sqrt(rss / n))}
    return segs, quality


def segs_time(segs: Sequence[Segment], m: float) -> float:
    chosen = segs[0]
    for s in segs:
        if m >= s.start:
            chosen = s
    return chosen.alpha_us + chosen.beta_us_per_byte * m


# -- curves from the store --------------------------------------------------------------------
def run_curve(store: Store, run_id: int) -> tuple[str, Curve]:
    """(kernel, curve) of one stored run: latency kernels give the half round trip per size,
    bandwidth kernels the time per message inside a window."""
    run = store.run(run_id)
    if run.status != "ok":
        raise FabenchError(f"run {run_id} ({run.label}) has status {run.status}")
    results = list(store.results(run_id))
    sums = summarize_results(run.kernel, results, LATENCY)
    sizes, times = [], []
    for rec, s in zip(results, sums, strict=True):
        per = s.summary.median / max(rec.messages_per_sample, 1.0)
        if rec.size > 0 and math.isfinite(per):
            sizes.append(rec.size)
            times.append(per)
    return run.kernel, Curve(sizes, times, [run_id])


def merge_curves(curves: Sequence[Curve]) -> Curve:
    """Repeated runs: the median over runs of each size's median."""
    by_size: dict[int, list[float]] = {}
    for c in curves:
        for s, x in zip(c.sizes, c.times, strict=True):
            by_size.setdefault(s, []).append(x)
    sizes = sorted(by_size)
    return Curve(sizes, [float(np.median(by_size[s])) for s in sizes],
                 [r for c in curves for r in c.runs])


LATENCY_KERNELS = ("mpi.latency",)
STREAM_KERNELS = ("mpi.bw",)
EXCHANGE_KERNELS = ("mpi.bibw",)
CONTENTION_KERNELS = ("mpi.mbw_mr",)


def _large_bandwidth(curve: Curve) -> float:
    """Best bytes per us (MB/s) of a curve's large sizes (the top quarter of its range)."""
    big = [s / x for s, x in zip(curve.sizes, curve.times, strict=True)
           if s >= max(curve.sizes) // 4]
    return float(max(big)) if big else 0.0


def _round_trip_half(run: RunRow, curve: Curve) -> Curve:
    """An mpi.mbw_mr run with a window of 1: every pair at once sends m bytes and gets a
    1-byte reply, each sample the slowest pair's round trip. Half of that is the per-message
    time with all ranks busy, as in a collective's step (run_curve divided the sample by the
    pairs)."""
    args = list(run.settings.get("kernel_args") or [])
    window = args[args.index("--window") + 1] if "--window" in args[:-1] else None
    if window != "1":
        raise FabenchError(f"run {run.id} is mpi.mbw_mr with window {window or 'default'}: "
                           "the contention calibration needs --window 1 (one message and its "
                           "reply per pair and sample)")
    pairs = run.ranks // 2
    return Curve(curve.sizes, [t * pairs / 2 for t in curve.times], curve.runs)


def _contention(lat: Curve, contended: dict[tuple[int, int], list[Curve]],
                segs: Sequence[Segment]) -> tuple[int, list[list[float]], list[int]]:
    """(ranks, [[size, factor], ...], runs) of the most-ranks contended curve, all pairs
    busy (mpi.mbw_mr) before two ranks busy and the rest waiting (mpi.latency): per size its
    time over the 2-rank ping-pong's. Nothing when no such run was given."""
    if not contended:
        return 0, [], []
    ranks, _ = key = max(contended)
    curve = merge_curves(contended[key])
    base = dict(zip(lat.sizes, lat.times, strict=True))
    raw = [(s, max(1.0, x / base[s]))
           for s, x in zip(curve.sizes, curve.times, strict=True) if base.get(s)]
    # One factor per protocol segment of the 2-rank fit (the median of its sizes'): a single
    # noisy size (1 B read 5.4x beside 4.3x at every other small size) must not set the
    # stretch of the barrier-exit step or of SimGrid's whole first segment.
    starts = [sg.start for sg in segs]

    def seg_of(size: float) -> int:
        return max(i for i, st in enumerate(starts) if size >= st or i == 0)
    by_seg: dict[int, list[float]] = {}
    for s, f in raw:
        by_seg.setdefault(seg_of(s), []).append(f)
    factors = [[s, round(float(np.median(by_seg[seg_of(s)])), 4)] for s, _ in raw]
    return (ranks, factors, curve.runs) if factors else (0, [], [])


@dataclass
class Calibration:
    fabric: Fabric
    latency: Curve
    stream: Curve | None
    exchange: Curve | None = None


def calibrate(store: Store, run_ids: Sequence[int], name: str, *, max_breaks: int = 2,
              calibrated_hops: int = 1, hop_latency_us: float = 0.4,
              link_bandwidth_MBps: float | None = None) -> Calibration:
    lat_curves: list[Curve] = []
    contended: dict[tuple[int, int], list[Curve]] = {}
    bw_curves: list[Curve] = []
    bibw_curves: list[Curve] = []
    transports: set[str] = set()
    for rid in run_ids:
        kernel, curve = run_curve(store, rid)
        run = store.run(rid)
        transports.add(run.selected_transport or run.transport)
        if kernel in CONTENTION_KERNELS:
            contended.setdefault((run.ranks, 1), []).append(_round_trip_half(run, curve))
        elif kernel in LATENCY_KERNELS and run.ranks > 2:
            # ranks 0 and 1 ping-pong while the others wait in MPI: the same curve under the
            # CPU contention of `ranks` ranks (emulated nodes sharing one machine's cores)
            contended.setdefault((run.ranks, 0), []).append(curve)
        elif kernel in LATENCY_KERNELS:
            lat_curves.append(curve)
        elif kernel in STREAM_KERNELS:
            bw_curves.append(curve)
        elif kernel in EXCHANGE_KERNELS:
            bibw_curves.append(curve)
        else:
            raise FabenchError(
                f"run {rid} is {kernel}: calibration takes "
                f"{', '.join(LATENCY_KERNELS + STREAM_KERNELS + EXCHANGE_KERNELS)} runs, and "
                f"{CONTENTION_KERNELS[0]} --window 1 runs for ranks sharing cores")
    if not lat_curves:
        raise FabenchError("calibration needs at least one mpi.latency run (the ping-pong "
                           "curve); mpi.bw runs add the gap g and the streaming bandwidth")
    lat = merge_curves(lat_curves)
    segs, quality = fit_segments(lat.sizes, lat.times, max_breaks=max_breaks)
    stream = merge_curves(bw_curves) if bw_curves else None
    exchange = merge_curves(bibw_curves) if bibw_curves else None
    gap = overhead = 0.0
    extra: dict[str, float] = {}
    if stream is not None:
        small = [x for s, x in zip(stream.sizes, stream.times, strict=True) if s <= 64]
        gap = float(np.median(small)) if small else 0.0
        extra["stream_bandwidth_MBps"] = _large_bandwidth(stream)
    slowdown: list[list[float]] = []
    if exchange is not None and stream is not None:
        # per size: one-way rate / per-direction rate of the exchange. mpi.bibw's time per
        # message counts both directions' messages, so a direction moves m / (2 t) per us.
        one_way = dict(zip(stream.sizes, stream.times, strict=True))
        slowdown = [[s, round(max(1.0, 2 * x / one_way[s]), 4)]
                    for s, x in zip(exchange.sizes, exchange.times, strict=True)
                    if s in one_way]
        extra["exchange_bandwidth_MBps"] = _large_bandwidth(exchange) / 2
    # A sender cannot inject faster than its own per-message overhead, so g bounds o from
    # above; L = alpha - 2 o must stay >= 0. Netgauge measures o directly with busy-waits;
    # from two curves, o = min(g, alpha/2) is the assumption (written down in docs/model.md).
    overhead = min(gap, segs[0].alpha_us / 2) if gap else segs[0].alpha_us / 4
    # The link rate: what streaming reached (every flow is limited by it), else the last
    # segment's ping-pong rate. Not an earlier segment's slope: a latency-dominated segment's
    # fitted slope is no bandwidth (339 MB/s on a 400 Mbit/s testbed link).
    last = segs[-1].bandwidth_MBps
    link = link_bandwidth_MBps or (extra.get("stream_bandwidth_MBps")
                                   or (last if math.isfinite(last) else 0.0))
    contention_ranks, contention, cont_runs = _contention(lat, contended, segs)
    if contention:
        assumptions_extra = [
            f"ranks sharing cores: a step's latency part stretches as measured with "
            f"{contention_ranks} ranks (runs {', '.join(map(str, cont_runs))}), "
            "linearly in the ranks around it"]
    else:
        assumptions_extra = []
    runs_used = (lat.runs + (stream.runs if stream else []) + (exchange.runs if exchange else [])
                 + cont_runs)
    assumptions = [
        "o = min(g, alpha/2): the CPU overhead per side is not measured separately",
        f"the measured path crossed {calibrated_hops} switch(es); each additional switch "
        f"adds {hop_latency_us} us",
    ]
    assumptions += assumptions_extra
    if not slowdown:
        assumptions.append("full duplex: two ranks exchanging at once each get the one-way "
                           "bandwidth (no mpi.bibw and mpi.bw runs to say otherwise)")
    fabric = Fabric(
        name=name, segments=segs, origin="calibrated",
        source=f"runs {', '.join(str(r) for r in runs_used)} in {store.path} over "
               f"{', '.join(sorted(transports))}",
        assumptions=assumptions,
        overhead_us=overhead, gap_us=gap, calibrated_hops=calibrated_hops,
        hop_latency_us=hop_latency_us, link_bandwidth_MBps=link,
        exchange_slowdown=slowdown, contention_ranks=contention_ranks, contention=contention,
        fit={**quality, **extra, "breakpoints": [s.start for s in segs[1:]]},
    )
    return Calibration(fabric, lat, stream, exchange)
