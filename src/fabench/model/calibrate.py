"""Calibration: fit a fabric's piecewise point-to-point model to measured curves.

The procedure is SimGrid's ("Calibrating the models"): cut the ping-pong curve at protocol
breakpoints and fit a line per segment. The breakpoints are not given: every placement of up to
`max_breaks` breakpoints between measured sizes is tried, each segment gets a weighted least
squares line (weights 1/t, so small and large messages count alike), and the placement is
chosen by BIC on the relative residuals, so a breakpoint is only kept when it pays for its two
extra parameters. Values printed with 2 decimals (OSU, IMB imports) carry a rounding error of
up to half a step: residuals inside it count as zero, so a run of identical rounded values
cannot buy a breakpoint by fitting exactly.

Shared-memory runs (transport shm) fit the same-node segments; the local reduction rate is
measured on this host when the runs were measured here. Every run set is also resampled
(runs, then samples within a run; residuals when there is one value per size) and refitted
with the chosen breakpoints: the replicates give the prediction bands (uncertainty.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import FabenchError
from ..plan.plan import configuration_of, configuration_text
from ..store.database import RunRow, Store
from . import gamma as gamma_kernel
from .fabric import Fabric, Provenance, Replicate, Segment
from .families import (
    GAMMA_MBPS,
    NODE_MEMORY_MBPS,
    SHM_LAT_US,
    SHM_MBPS,
    hop_default,
    scale_provenance,
)

MIN_POINTS = 3  # per segment: a line through two points has no residual to judge it by
REPLICATES = 30
SHM_TRANSPORTS = {"shm", "vader", "sm", "posix", "sysv", "cma", "xpmem", "knem"}
LOCAL_LAUNCHERS = {"local", "testbed", "auto"}


@dataclass
class Curve:
    """Median time per size (us): half round trip (latency) or time per message (bw).
    `samples[i]`: per run, the per-message samples of size i (for the bootstrap)."""

    sizes: list[int]
    times: list[float]
    runs: list[int] = field(default_factory=list)
    samples: list[list[np.ndarray]] = field(default_factory=list)


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


def _segment(m: np.ndarray, t: np.ndarray, slack: np.ndarray) -> tuple[Segment, float]:
    alpha, beta = _fit_line(m, t)
    rel = (alpha + beta * m - t) / t
    seg = Segment(start=int(m[0]), alpha_us=alpha, beta_us_per_byte=beta, n_points=len(m),
                  median_rel_err=float(np.median(np.abs(rel))),
                  max_rel_err=float(np.max(np.abs(rel))))
    # a residual inside the printed values' rounding is no error
    judged = np.maximum(np.abs(rel) - slack, 0.0)
    return seg, float(np.sum(judged * judged))


def resolution(times: Sequence[float]) -> float:
    """The rounding step of printed values: 0.01 when every value is a multiple of 0.01
    (OSU and IMB print 2 decimals), 0.001 for 3 decimals, else 0."""
    arr = np.asarray(times, dtype=float)
    for step in (0.01, 0.001):
        scaled = arr / step
        if len(arr) and np.all(np.abs(scaled - np.round(scaled)) < 1e-6):
            return step
    return 0.0


def _prepare(sizes: Sequence[int], times: Sequence[float], min_points: int
             ) -> tuple[np.ndarray, np.ndarray]:
    pts = sorted((int(s), float(x)) for s, x in zip(sizes, times, strict=True)
                 if s > 0 and x > 0 and math.isfinite(x))
    if len(pts) < min_points:
        raise FabenchError(f"calibration needs at least {min_points} sizes with a positive "
                           f"time (got {len(pts)})")
    return (np.array([p[0] for p in pts], dtype=float), np.array([p[1] for p in pts],
                                                                  dtype=float))


def fit_segments(sizes: Sequence[int], times: Sequence[float], max_breaks: int = 2,
                 min_points: int = MIN_POINTS, step: float | None = None
                 ) -> tuple[list[Segment], dict[str, float]]:
    """Piecewise-linear fit of t(size); returns the segments and overall fit quality.
    `step`: the values' rounding step (None: detected)."""
    m, t = _prepare(sizes, times, min_points)
    q = resolution(t) if step is None else step
    slack = (q / 2) / t
    n = len(m)
    best: tuple[float, list[Segment], float] | None = None
    for k in range(0, max_breaks + 1):
        for cuts in itertools.combinations(range(min_points, n - min_points + 1), k):
            bounds = [0, *cuts, n]
            if any(b - a < min_points for a, b in itertools.pairwise(bounds)):
                continue
            segs, rss = [], 0.0
            for a, b in itertools.pairwise(bounds):
                seg, r = _segment(m[a:b], t[a:b], slack[a:b])
                segs.append(seg)
                rss += r
            params = 2 * len(segs) + k  # lines plus breakpoint positions
            # the floor: a fit cannot be judged better than the values' own rounding
            floor = max(float(np.mean(slack * slack)) / 3, 1e-12)
            bic = n * math.log(max(rss / n, floor)) + params * math.log(n)
            if best is None or bic < best[0] - 1e-9:
                best = (bic, segs, rss)
    assert best is not None
    _, segs, rss = best
    segs[0].start = 0  # the first line also covers sizes below the smallest measured
    model = np.array([segs_time(segs, x) for x in m])
    rel = np.abs(model - t) / t
    quality = {"points": float(n), "segments": float(len(segs)),
               "median_rel_err": float(np.median(rel)), "max_rel_err": float(np.max(rel)),
               "rms_rel_err": float(math.sqrt(rss / n)), "rounding_step": q}
    return segs, quality


def fit_fixed(sizes: Sequence[int], times: Sequence[float], starts: Sequence[int]
              ) -> list[Segment]:
    """Lines on given segment starts (a bootstrap replicate keeps the chosen breakpoints)."""
    m, t = _prepare(sizes, times, 1)
    segs = []
    bounds = list(starts[1:]) + [math.inf]
    lo = 0.0
    for start, hi in zip(starts, bounds, strict=True):
        sel = (m >= max(start, lo)) & (m < hi)
        if sel.sum() >= 2:
            alpha, beta = _fit_line(m[sel], t[sel])
        elif segs:
            alpha, beta = segs[-1].alpha_us, segs[-1].beta_us_per_byte
        else:
            alpha, beta = float(t[0]), 0.0
        segs.append(Segment(int(start), alpha, beta, int(sel.sum())))
        lo = hi
    segs[0].start = 0
    return segs


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
    sizes, times, samples = [], [], []
    for rec in store.results(run_id):
        per = np.asarray(rec.times, dtype=float) / max(rec.messages_per_sample, 1.0)
        per = per[np.isfinite(per)]
        if rec.size > 0 and len(per):
            sizes.append(rec.size)
            times.append(float(np.median(per)))
            samples.append([per])
    return run.kernel, Curve(sizes, times, [run_id], samples)


def merge_curves(curves: Sequence[Curve]) -> Curve:
    """Repeated runs: the median over runs of each size's median."""
    by_size: dict[int, list[float]] = {}
    samp: dict[int, list[np.ndarray]] = {}
    for c in curves:
        for i, (s, x) in enumerate(zip(c.sizes, c.times, strict=True)):
            by_size.setdefault(s, []).append(x)
            if c.samples:
                samp.setdefault(s, []).extend(c.samples[i])
    sizes = sorted(by_size)
    return Curve(sizes, [float(np.median(by_size[s])) for s in sizes],
                 [r for c in curves for r in c.runs], [samp.get(s, []) for s in sizes])


def resample(curve: Curve, rng: np.random.Generator) -> list[float]:
    """One bootstrap draw of the curve's per-size medians: runs resampled, then samples
    within each run (two-stage); one value per size: the caller resamples residuals."""
    out = []
    for i, t in enumerate(curve.times):
        runs = curve.samples[i] if curve.samples else []
        if not runs or all(len(r) <= 1 for r in runs) and len(runs) <= 1:
            out.append(t)
            continue
        picks = [runs[j] for j in rng.integers(0, len(runs), len(runs))]
        meds = [float(np.median(r[rng.integers(0, len(r), len(r))])) for r in picks]
        out.append(float(np.median(meds)))
    return out


def _has_spread(curve: Curve) -> bool:
    return bool(curve.samples) and any(len(runs) > 1 or any(len(r) > 1 for r in runs)
                                       for runs in curve.samples)


def replicates(curve: Curve, segs: list[Segment], n: int, seed: int = 1) -> list[list[Segment]]:
    """`n` refits of the curve with its segments' breakpoints kept."""
    rng = np.random.default_rng(seed)
    starts = [s.start for s in segs]
    out = []
    if _has_spread(curve):
        for _ in range(n):
            out.append(fit_fixed(curve.sizes, resample(curve, rng), starts))
        return out
    model = np.array([segs_time(segs, x) for x in curve.sizes])
    rel = (np.asarray(curve.times) - model) / model
    for _ in range(n):
        noise = rel[rng.integers(0, len(rel), len(rel))]
        out.append(fit_fixed(curve.sizes, list(model * (1 + noise)), starts))
    return out


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
    intra: Curve | None = None


def is_shared_memory(run: RunRow) -> bool:
    sel = (run.selected_transport or "").lower()
    return run.transport == "shm" or sel.rsplit("/", 1)[-1] in SHM_TRANSPORTS


@dataclass
class RunCurves:
    """The curves a calibration fits, sorted by what they measure."""

    lat: list[Curve] = field(default_factory=list)
    bw: list[Curve] = field(default_factory=list)
    bibw: list[Curve] = field(default_factory=list)
    shm_lat: list[Curve] = field(default_factory=list)
    shm_bw: list[Curve] = field(default_factory=list)
    contended: dict[tuple[int, int], list[Curve]] = field(default_factory=dict)
    transports: set[str] = field(default_factory=set)
    launchers: set[str] = field(default_factory=set)


def _one_configuration(runs: Sequence[RunRow]) -> None:
    """Runs that fit one curve are merged as repeats: their kernel settings must agree (a
    hugepages run and a plain one are two fabrics' worth of bandwidth, not one)."""
    seen: dict[tuple[str, bool, int], tuple[RunRow, tuple[tuple[str, str], ...]]] = {}
    for run in runs:
        conf = configuration_of([str(a) for a in run.settings.get("kernel_args") or []])
        first, first_conf = seen.setdefault((run.kernel, is_shared_memory(run), run.ranks),
                                            (run, conf))
        if conf != first_conf:
            raise FabenchError(
                f"runs {first.id} and {run.id} ({run.kernel}) differ in their kernel settings "
                f"({configuration_text(first_conf) or 'defaults'} vs "
                f"{configuration_text(conf) or 'defaults'}): a calibration merges them as "
                "repeats of one curve; give the runs of one configuration")


def _sort_runs(store: Store, run_ids: Sequence[int]) -> RunCurves:
    out = RunCurves()
    _one_configuration([store.run(rid) for rid in run_ids])
    for rid in run_ids:
        kernel, curve = run_curve(store, rid)
        run = store.run(rid)
        out.transports.add(run.selected_transport or run.transport)
        out.launchers.add(run.launcher)
        shm = is_shared_memory(run)
        if kernel in CONTENTION_KERNELS:
            out.contended.setdefault((run.ranks, 1), []).append(_round_trip_half(run, curve))
        elif kernel in LATENCY_KERNELS and run.ranks > 2:
            # ranks 0 and 1 ping-pong while the others wait in MPI: the same curve under the
            # CPU contention of `ranks` ranks (emulated nodes sharing one machine's cores)
            out.contended.setdefault((run.ranks, 0), []).append(curve)
        elif kernel in LATENCY_KERNELS:
            (out.shm_lat if shm else out.lat).append(curve)
        elif kernel in STREAM_KERNELS:
            (out.shm_bw if shm else out.bw).append(curve)
        elif kernel in EXCHANGE_KERNELS and not shm:
            out.bibw.append(curve)
        else:
            raise FabenchError(
                f"run {rid} is {kernel}{' over shared memory' if shm else ''}: calibration "
                f"takes {', '.join(LATENCY_KERNELS + STREAM_KERNELS + EXCHANGE_KERNELS)} runs "
                "(mpi.latency and mpi.bw also over shm, for the same-node segments), and "
                f"{CONTENTION_KERNELS[0]} --window 1 runs for ranks sharing cores")
    return out


def _intra(runs: RunCurves, n_rep: int) -> tuple[list[Segment], Curve | None, list[str],
                                                list[list[Segment]]]:
    if not runs.shm_lat:
        return [], None, [], []
    curve = merge_curves(runs.shm_lat)
    segs, _ = fit_segments(curve.sizes, curve.times, max_breaks=2)
    used = list(curve.runs)
    if runs.shm_bw:
        stream = merge_curves(runs.shm_bw)
        rate = _large_bandwidth(stream)
        if rate > 0 and segs[-1].beta_us_per_byte > 0:
            # streaming reaches the copy rate a ping-pong's last segment only approaches
            segs[-1].beta_us_per_byte = min(segs[-1].beta_us_per_byte, 1.0 / rate)
        used += stream.runs
    return segs, curve, used, replicates(curve, segs, n_rep, seed=7)


def calibrate(store: Store, run_ids: Sequence[int], name: str, *, family: str = "custom",
              max_breaks: int = 2, calibrated_hops: int = 1,
              hop_latency_us: float | None = None,
              link_bandwidth_MBps: float | None = None, gamma_MBps: float | None = None,
              measure_gamma: bool | None = None, n_replicates: int = REPLICATES
              ) -> Calibration:
    """`measure_gamma` None: measure the local reduction rate when every run was measured on
    this host (local or testbed launcher)."""
    return calibrate_curves(_sort_runs(store, run_ids), name, f"in {store.path}",
                            family=family, max_breaks=max_breaks,
                            calibrated_hops=calibrated_hops, hop_latency_us=hop_latency_us,
                            link_bandwidth_MBps=link_bandwidth_MBps, gamma_MBps=gamma_MBps,
                            measure_gamma=measure_gamma, n_replicates=n_replicates)


def _ids(c: Curve, what: str = "runs") -> str:
    return f"{what} {', '.join(map(str, c.runs))}" if c.runs else "the given curves"


def calibrate_curves(runs: RunCurves, name: str, where: str, *, family: str = "custom",
                     max_breaks: int = 2, calibrated_hops: int = 1,
                     hop_latency_us: float | None = None,
                     link_bandwidth_MBps: float | None = None, gamma_MBps: float | None = None,
                     measure_gamma: bool | None = None, n_replicates: int = REPLICATES
                     ) -> Calibration:
    if not runs.lat:
        raise FabenchError("calibration needs at least one mpi.latency run between hosts (the "
                           "ping-pong curve); mpi.bw runs add the gap g and the streaming "
                           "bandwidth, shared-memory runs the same-node segments")
    lat = merge_curves(runs.lat)
    segs, quality = fit_segments(lat.sizes, lat.times, max_breaks=max_breaks)
    stream = merge_curves(runs.bw) if runs.bw else None
    exchange = merge_curves(runs.bibw) if runs.bibw else None
    gap = 0.0
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
    contention_ranks, contention, cont_runs = _contention(lat, runs.contended, segs)
    intra, intra_curve, intra_runs, intra_reps = _intra(runs, n_replicates)
    reps = replicates(lat, segs, n_replicates)
    runs_used = (lat.runs + (stream.runs if stream else []) + (exchange.runs if exchange else [])
                 + cont_runs + intra_runs)
    where = f"runs {', '.join(map(str, runs_used))} {where}" if runs_used else where
    prov: dict[str, Provenance] = {
        "latency_us": Provenance(f"fitted to {_ids(lat)}"),
        "bandwidth_MBps": Provenance(f"fitted to {_ids(lat)}"),
        "overhead_us": Provenance("assumed: o = min(g, alpha/2), not measured separately",
                                  True),
        "gap_us": Provenance(f"{_ids(stream, 'mpi.bw runs')} at <= 64 B"
                             if stream else "not measured (no mpi.bw run)", stream is None),
        "link_bandwidth_MBps": Provenance(
            "given (--link-MBps)" if link_bandwidth_MBps else
            f"{_ids(stream, 'mpi.bw runs')} (best large-message rate)"
            if stream else "the last segment's ping-pong rate", not (link_bandwidth_MBps
                                                                     or stream)),
        **scale_provenance(),
    }
    # LogGP's g (Alexandrov et al., SPAA 1995) is the interval between consecutive messages of
    # one sender: the ranks of a node sending through its NIC in one step queue behind each
    # other by it. mpi.bw's window at <= 64 B measures it for one flow; until collectives on a
    # few nodes fit the NIC's own gap (scale.py replaces it, 0 included), that is the figure.
    nic_gap = gap
    if stream is not None and gap:
        prov["nic_gap_us"] = Provenance(
            f"g of {_ids(stream, 'mpi.bw runs')} at <= 64 B (one flow's gap per message; "
            "fitted on small node counts' collectives where they exist)")
    if len(segs) > 1:
        prov["eager_limit_B"] = Provenance("found by the breakpoint search")
        prov["rendezvous_us"] = Provenance("fitted")
    if hop_latency_us is not None:
        hop, prov["hop_latency_us"] = hop_latency_us, Provenance("given (--hop-latency-us)")
    else:
        d = hop_default(family)
        hop, prov["hop_latency_us"] = d.value, d.prov
    assumptions = [f"the measured path crossed {calibrated_hops} switch(es); each additional "
                   f"switch adds {hop:g} us"]
    if intra:
        prov["shm_latency_us"] = Provenance(f"fitted to shared-memory runs "
                                            f"{', '.join(map(str, intra_runs))}")
        prov["shm_bandwidth_MBps"] = Provenance(f"shared-memory runs "
                                                f"{', '.join(map(str, intra_runs))}")
    else:
        assumptions.append("same-node segment assumed (no shared-memory mpi.latency run "
                           "given): ranks per node > 1 predict with its assumed range")
    local = runs.launchers <= LOCAL_LAUNCHERS
    if gamma_MBps is not None:
        gamma, prov["gamma_MBps"] = gamma_MBps, Provenance("given (--gamma-MBps)")
    elif measure_gamma or (measure_gamma is None and local):
        gamma, detail = gamma_kernel.measure()
        prov["gamma_MBps"] = Provenance(detail)
    else:
        gamma, prov["gamma_MBps"] = GAMMA_MBPS.value, GAMMA_MBPS.prov
        assumptions.append("local reduction rate assumed: the runs were not measured on this "
                           f"host (launchers {', '.join(sorted(runs.launchers))})")
    if contention:
        assumptions.append(
            f"ranks sharing cores: a step's latency part stretches as measured with "
            f"{contention_ranks} ranks (runs {', '.join(map(str, cont_runs))}), "
            "linearly in the ranks around it")
    if not slowdown:
        assumptions.append("full duplex: two ranks exchanging at once each get the one-way "
                           "bandwidth (no mpi.bibw and mpi.bw runs to say otherwise)")
    fabric = Fabric(
        name=name, segments=segs, origin="calibrated", family=family,
        source=f"{where} over {', '.join(sorted(runs.transports))}",
        assumptions=assumptions, overhead_us=overhead, gap_us=gap, nic_gap_us=nic_gap,
        calibrated_hops=calibrated_hops, hop_latency_us=hop, link_bandwidth_MBps=link,
        exchange_slowdown=slowdown, contention_ranks=contention_ranks, contention=contention,
        reduce_us_per_byte=1.0 / gamma if gamma > 0 else 0.0, intra=intra,
        node_memory_MBps=NODE_MEMORY_MBPS.value,
        fit={**quality, **extra, "breakpoints": [s.start for s in segs[1:]]},
        provenance=prov,
        replicates=[Replicate(r, intra_reps[i] if i < len(intra_reps) else [])
                    for i, r in enumerate(reps)],
    )
    if not intra:
        from_define_shm(fabric)
    return Calibration(fabric, lat, stream, exchange, intra_curve)


def from_define_shm(f: Fabric) -> None:
    """The assumed same-node segment (families.py), with its range, for a calibration that
    had no shared-memory run."""
    f.intra = [Segment(0, SHM_LAT_US.value, 1.0 / SHM_MBPS.value)]
    f.provenance["shm_latency_us"] = SHM_LAT_US.prov
    f.provenance["shm_bandwidth_MBps"] = SHM_MBPS.prov
