"""`fabench diagnose reorder`: how much does a path reorder, and what window repairs it?

The probe is `udp.reorder` (numbered datagrams, RFC 4737 / RFC 5236 figures at the receiver),
run from one host to another through the normal plan -> scheduler -> runner path, every run
stored. Its rounds are pooled into two distributions over the reordered datagrams:

- the RFC 4737 reordering extent: how many arrivals back the earliest higher-numbered datagram
  came;
- the offset: how many numbers below the highest one received so far a datagram arrived.

Document 001's Algorithm 1 holds packets by number: a hole stays open while every later
arrival is within W numbers of it, so a window W repairs exactly the packets whose offset is
at most W (native/transport/fb_reorder.h). The extent counts arrivals, not numbers; without
loss it is at most the offset (multipath spreads a burst over paths, and the packets in front
of a late one are every K-th number: the extent then understates the window by up to K
times). So W is read off the offset distribution: the smallest W that covers the offsets of
``percentile`` % of the reordered packets.

Why a percentile and not the maximum (default 99): the largest offsets are rare stalls (a
host or a link process descheduled for a moment), and a window sized for them holds every
hole that long when a packet is really lost, which delays TCP's fast retransmit (the sweep's
lossy rows show it, and document 001's W = 80 lost throughput under loss). Each packet left
uncovered reaches TCP out of order, at worst one reorder event. 99 covers all but one in a
hundred reordered packets; the table shows what every other choice covers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..choices import REORDER_SIZE
from ..errors import FabenchError
from ..host.provenance import host_provenance
from ..kernels import get_kernel
from ..plan.plan import plan_run, settings_for
from ..records import ResultRecord
from ..run.runner import execute_run
from ..schedulers import Scheduler
from ..store.database import Store
from ..testbed.impair import WINDOW_MAX
from .placed import PlacedScheduler
from .reorder_sweep import SweepPoint, SweepSettings, run_sweep, sweep_lines

Say = Callable[[str], None]
PROBE = "udp.reorder"
DEFAULT_SIZE = REORDER_SIZE
# The receiver must keep up with a sender at full speed, or its socket drops datagrams and
# the loss hides reordering: asking for 16 MiB (the kernel caps it at net.core.rmem_max, 4
# MiB on the development machine) lost none of 12,800 datagrams on the testbed where the
# default buffer lost 73 % of them.
PROBE_RCVBUF = "16M"
LOSSY_PROBE = 0.05  # above this loss the figures say so: a loss inflates the offsets after it
EXIT_REORDERS = 3  # the product's "a diagnosis flagged something": the path reorders


@dataclass
class ReorderOptions:
    hosts: list[str] | None = None  # sender, receiver
    percentile: float = 99.0
    size: int = DEFAULT_SIZE
    iterations: int = 200  # windows of --window datagrams per round
    window: int | None = None  # datagrams per window (the kernel's default: 64)
    rounds: int = 3
    timeout_s: float = 600.0
    sweep: bool = False
    sweep_settings: SweepSettings = field(default_factory=SweepSettings)


@dataclass
class Histogram:
    """Counts of reordered packets per value (extent or offset), pooled over rounds."""

    counts: dict[int, int] = field(default_factory=dict)

    def add(self, values: list[Any], counts: list[Any]) -> None:
        for v, c in zip(values, counts, strict=False):
            self.counts[int(v)] = self.counts.get(int(v), 0) + int(c)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def max(self) -> int:
        return max(self.counts, default=0)

    def covered(self, w: int) -> int:
        return sum(c for v, c in self.counts.items() if v <= w)

    def percentile(self, p: float) -> int:
        """The smallest value v with at least p % of the packets at or below it (nearest rank);
        0 when nothing was reordered."""
        total = self.total
        if not total:
            return 0
        need = p / 100 * total
        run = 0
        for v in sorted(self.counts):
            run += self.counts[v]
            if run >= need - 1e-9:
                return v
        return self.max


@dataclass
class ProbeRound:
    run_id: int
    sent: int
    received: int
    lost: int
    duplicates: int
    reordered: int
    reordered_ratio: float
    received_mb_per_s: float


@dataclass
class ReorderDiagnosis:
    where: str
    sender: str
    receiver: str
    percentile: float
    size: int
    rounds: list[ProbeRound]
    extents: Histogram
    offsets: Histogram
    failures: list[str]
    sweep: list[SweepPoint] = field(default_factory=list)
    sweep_note: str = ""

    @property
    def received(self) -> int:
        return sum(r.received for r in self.rounds)

    @property
    def sent(self) -> int:
        return sum(r.sent for r in self.rounds)

    @property
    def reordered(self) -> int:
        return sum(r.reordered for r in self.rounds)

    @property
    def loss_ratio(self) -> float:
        return 1 - self.received / self.sent if self.sent else 0.0

    @property
    def window(self) -> int:
        """The recommended W: 0 when nothing was reordered."""
        return self.offsets.percentile(self.percentile)

    @property
    def exit_code(self) -> int:
        return EXIT_REORDERS if self.window > 0 else 0

    def recommendation(self) -> str:
        w, n = self.window, self.reordered
        if not self.rounds:
            return "none: no probe round succeeded"
        if n == 0:
            return (f"W=0: no window needed - none of {self.received} datagrams arrived out "
                    f"of order")
        cap = (f"; above fb-link's largest window ({WINDOW_MAX}): repair it elsewhere"
               if w > WINDOW_MAX else "")
        return (f"W={w}: the smallest window covering the offsets of {self.percentile:g} % "
                f"of the reordered datagrams ({self.offsets.covered(w)} of {n}; the largest "
                f"offset {self.offsets.max}, RFC 4737 extent at the same percentile "
                f"{self.extents.percentile(self.percentile)}){cap}")

    def lines(self) -> list[str]:
        out = [f"# diagnose reorder: {self.sender} -> {self.receiver} on {self.where}",
               f"# probe: {PROBE}, {self.size} B datagrams at the sender's full pace, "
               f"{len(self.rounds)} round(s), runs "
               f"{', '.join(str(r.run_id) for r in self.rounds) or '-'}"]
        out += [f"# failed: {f}" for f in self.failures]
        out.append(f"{'round':>5} {'run':>5} {'sent':>8} {'received':>8} {'lost':>6} "
                   f"{'dup':>5} {'reordered':>9} {'ratio':>8} {'MB/s rx':>8}")
        for i, r in enumerate(self.rounds):
            out.append(f"{i + 1:>5} {r.run_id:>5} {r.sent:>8} {r.received:>8} {r.lost:>6} "
                       f"{r.duplicates:>5} {r.reordered:>9} {r.reordered_ratio:>8.4f} "
                       f"{r.received_mb_per_s:>8.1f}")
        if self.loss_ratio > LOSSY_PROBE:
            out.append(f"# the probe lost {self.loss_ratio:.1%} of its datagrams: a loss "
                       "makes the datagrams after it look further displaced; read the "
                       "offsets as an upper bound")
        out.append("")
        out += self.distribution_lines()
        if self.sweep or self.sweep_note:
            out.append("")
            out += sweep_lines(self.sweep, self.window, self.sweep_note)
        out.append("")
        out.append(f"# recommendation: {self.recommendation()}")
        return out

    def distribution_lines(self) -> list[str]:
        n = self.reordered
        if not n:
            return ["reordering: none measured"]
        out = [f"reordering extent distribution ({n} reordered datagrams of "
               f"{self.received}): offset = numbers below the highest received (what "
               f"window W must cover), extent = RFC 4737's arrivals back"]
        out.append(f"{'value':>9} {'offset n':>9} {'cum %':>7} {'extent n':>9} {'cum %':>7}")
        hi = max(self.offsets.max, self.extents.max)
        lo = 1
        while lo <= hi:
            top = lo * 2 - 1
            o = sum(c for v, c in self.offsets.counts.items() if lo <= v <= top)
            e = sum(c for v, c in self.extents.counts.items() if lo <= v <= top)
            out.append(f"{f'{lo}-{top}' if top > lo else str(lo):>9} {o:>9} "
                       f"{self.offsets.covered(top) / n * 100:>7.1f} {e:>9} "
                       f"{self.extents.covered(top) / self.extents.total * 100:>7.1f}")
            lo *= 2
        ps = (50.0, 90.0, 99.0, 99.9, self.percentile)
        ps = tuple(sorted(set(ps)))
        out.append("percentile " + "  ".join(f"p{p:g}: offset {self.offsets.percentile(p)}, "
                                              f"extent {self.extents.percentile(p)}"
                                              for p in ps))
        three = sum(c for v, c in self.extents.counts.items() if v >= 3)
        out.append(f"3-reordered (RFC 4737 n-reordering, n = TCP's duplicate-ACK threshold): "
                   f"{three} ({three / self.received:.2%} of received)")
        return out

    def records(self) -> list[dict[str, Any]]:
        recs: list[dict[str, Any]] = [
            {"type": "probe", "round": i + 1, **asdict(r)} for i, r in enumerate(self.rounds)]
        for name, h in (("offset", self.offsets), ("extent", self.extents)):
            vals = sorted(h.counts)
            recs.append({"type": "distribution", "metric": name, "values": vals,
                         "counts": [h.counts[v] for v in vals], "max": h.max,
                         f"p{self.percentile:g}": h.percentile(self.percentile)})
        recs += [{"type": "sweep", **asdict(p)} for p in self.sweep]
        recs.append({
            "type": "recommendation", "window": self.window, "percentile": self.percentile,
            "covered": self.offsets.covered(self.window), "reordered": self.reordered,
            "received": self.received, "sent": self.sent,
            "reordered_ratio": self.reordered / self.received if self.received else 0.0,
            "offset_max": self.offsets.max,
            "extent_at_percentile": self.extents.percentile(self.percentile),
            "sender": self.sender, "receiver": self.receiver, "where": self.where,
            "sentence": self.recommendation(), "sweep_note": self.sweep_note or None})
        return recs


def probe_round(rec: ResultRecord, run_id: int) -> ProbeRound:
    x = rec.extra
    return ProbeRound(run_id=run_id, sent=int(x.get("datagrams_expected", 0)),
                      received=int(x.get("datagrams_received", 0)),
                      lost=int(x.get("lost_rfc4737", x.get("lost", 0))),
                      duplicates=int(x.get("duplicates_rfc4737", 0)),
                      reordered=int(x.get("reordered_rfc4737", 0)),
                      reordered_ratio=float(x.get("reordered_ratio", 0.0)),
                      received_mb_per_s=float(x.get("received_mb_per_s", 0.0)))


def run_reorder(opts: ReorderOptions, scheduler: Scheduler, store_path: Path,
                say: Say) -> ReorderDiagnosis:
    if not 0 < opts.percentile <= 100:
        raise FabenchError(f"--percentile {opts.percentile:g}: above 0, at most 100")
    if opts.rounds < 1:
        raise FabenchError("--rounds must be >= 1")
    if opts.size < 16 or opts.iterations < 1 or (opts.window is not None and opts.window < 1):
        raise FabenchError("--size must be >= 16, --iterations and --window >= 1")
    bad = [w for w in opts.sweep_settings.windows if not 0 <= w <= WINDOW_MAX]
    if bad:
        raise FabenchError(f"--sweep-windows {bad[0]}: a window W is 0..{WINDOW_MAX}")
    if opts.hosts is not None and len(opts.hosts) != 2:
        raise FabenchError("--hosts: SENDER,RECEIVER (two hosts)")
    placed = PlacedScheduler(scheduler, opts.hosts, "inter")
    kernel = get_kernel(PROBE)
    settings = settings_for(kernel, sizes=str(opts.size), iterations=opts.iterations,
                            window=opts.window, extra=["--rcvbuf", PROBE_RCVBUF])
    rounds: list[ProbeRound] = []
    extents, offsets = Histogram(), Histogram()
    failures: list[str] = []
    # the hosts named are checked here, before the campaign: each round would fail on them
    names = placed.names_for(plan_run(PROBE, ranks=2, settings=settings))
    with Store(store_path) as store:
        cid = store.begin_campaign("diagnose reorder", {
            "diagnose": "reorder", "hosts": names, "percentile": opts.percentile,
            "size": opts.size, "iterations": opts.iterations, "rounds": opts.rounds,
            "sweep": opts.sweep, "where": placed.describe()}, host_provenance())
        try:
            for rnd in range(opts.rounds):
                planned = plan_run(PROBE, ranks=2, repeat=rnd, settings=settings,
                                   timeout_s=opts.timeout_s)
                oc = execute_run(store, placed, planned, cid)
                if oc.status != "ok" or not oc.results:
                    failures.append(f"round {rnd + 1}: {oc.status}: {oc.reason}")
                    say(f"round {rnd + 1}/{opts.rounds}: {oc.status} ({(oc.reason or '')[:160]})")
                    continue
                for rec in oc.results:
                    if "reordering_offsets" not in rec.extra:
                        raise FabenchError(f"{PROBE} gave no reordering_offsets (a kernel "
                                           "built before them?): rebuild the native kernels")
                    rounds.append(probe_round(rec, oc.run_id))
                    extents.add(rec.extra["reordering_extents"],
                                rec.extra["reordering_extent_counts"])
                    offsets.add(rec.extra["reordering_offsets"],
                                rec.extra["reordering_offset_counts"])
                r = rounds[-1]
                say(f"round {rnd + 1}/{opts.rounds}: run {oc.run_id}: {r.reordered} of "
                    f"{r.received} reordered, {r.lost} lost")
            diag = ReorderDiagnosis(where=scheduler.describe(), sender=names[0],
                                    receiver=names[1], percentile=opts.percentile,
                                    size=opts.size, rounds=rounds, extents=extents,
                                    offsets=offsets, failures=failures)
            if opts.sweep and rounds:
                diag.sweep, diag.sweep_note = run_sweep(
                    scheduler, diag.sender, diag.receiver, diag.window, opts.sweep_settings,
                    store, cid, say)
        except BaseException:
            store.end_campaign(cid, "interrupted")
            raise
        store.end_campaign(cid, "finished")
    return diag
