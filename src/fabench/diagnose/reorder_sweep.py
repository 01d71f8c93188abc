"""The trade-off behind a reorder window: TCP throughput and reorder events at candidate W.

Only a testbed can change its link's window, so the sweep copies the path under diagnosis:
for each W (and each loss) a 2-host testbed with the original's MTU, rates, queue, offloads
and sysctls, and the --impair specs that concern the sender and the receiver, renamed h1 and
h2, with `reorder-window=W` added to every spec that reorders (multipath, netem's model,
jitter) and, for the lossy rows, `loss=L` (after the link numbered the frames: each loss is a
hole that the window holds until it gives it up). On it `tcp.streams` runs h1 -> h2 with 1
and several streams through the normal scheduler and runner, so each run is stored with the
kernel's TCP counters (the sender's TCPSACKReorder + TCPTSReorder + TCPRenoReorder are the
reorder events; the receiver's TCPOFOQueue the out-of-order queueings). Rounds walk the W
values forward and backward in turn, so a change of host load falls on every W alike
(bench/reorder_window.py is the long version of the same sweep).
"""

from __future__ import annotations

import os
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..choices import REORDER_WINDOWS
from ..errors import FabenchError
from ..kernels import get_kernel
from ..plan.plan import plan_run, settings_for
from ..run.runner import execute_run
from ..schedulers import Scheduler
from ..schedulers.testbed import TestbedScheduler
from ..store.database import Store
from ..testbed import TestbedConfig, TestbedState, create, destroy
from ..testbed.impair import WINDOW_MAX, parse_impair
from ..util.textable import signed_percent

Say = Callable[[str], None]
WINDOWS = REORDER_WINDOWS
KERNEL = "tcp.streams"
_TARGET = re.compile(r"^(h\d+)(?:([->])(h\d+))?\Z")


@dataclass
class SweepSettings:
    windows: tuple[int, ...] = WINDOWS
    losses: tuple[str, ...] = ("0%", "1%")
    streams: tuple[int, ...] = (1, 4)
    seconds: float = 2.0
    rounds: int = 1


@dataclass
class SweepPoint:
    window: int  # W
    loss: str
    streams: int
    round: int
    run_id: int
    gbit_s: float
    reorder_events_per_s: float
    ofo_queue_per_s: float
    retrans_per_s: float
    dsack_per_s: float
    spec: str = ""
    flags: list[str] = field(default_factory=list)


def path_specs(impairs: list[str], sender: str, receiver: str) -> list[str]:
    """The specs that concern the two hosts, renamed h1 (sender) and h2 (receiver); the
    window and its hold are the sweep's to set."""
    names = {sender: "h1", receiver: "h2"}
    out = []
    for text in impairs:
        target, _, body = text.partition(":")
        m = _TARGET.match(target)
        if not m or any(h is not None and h not in names for h in (m.group(1), m.group(3))):
            continue
        new = names[m.group(1)] + (f"{m.group(2)}{names[m.group(3)]}" if m.group(3) else "")
        keys = [kv for kv in body.split(",") if kv.split("=", 1)[0] not in
                ("reorder-window", "reorder-hold")]
        out.append(f"{new}:{','.join(keys)}")
    return out


def _reorders(spec: str) -> bool:
    keys = {kv.split("=", 1)[0] for kv in spec.partition(":")[2].split(",")}
    return bool(keys & {"reorder", "jitter"})


def with_window(specs: list[str], w: int, loss: str) -> list[str]:
    """The specs of one sweep point: W on every spec that reorders, the loss on the same."""
    out = []
    for s in specs:
        if _reorders(s):
            has_loss = "loss=" in s.partition(":")[2]
            s += (f",reorder-window={w}" if w else "") + (
                f",loss={loss}" if loss != "0%" and not has_loss else "")
        out.append(s)
    return out


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _gbit_s(store: Store, run_id: int) -> float:
    rates = []
    for rec in store.results(run_id):
        rates += [rec.bytes_per_sample * 8 / (t * 1e3) for t in rec.times if t > 0]
    return _median(rates)


def _point(store: Store, run_id: int, w: int, loss: str, streams: int, rnd: int,
           spec: str, flags: list[str]) -> SweepPoint:
    tcp: dict[str, Any] = store.run(run_id).provenance.get("tcp_counters", {})
    snd, rcv = tcp.get("h1", {}), tcp.get("h2", {})
    secs = float(snd.get("seconds") or 0) or 1.0
    return SweepPoint(window=w, loss=loss, streams=streams, round=rnd, run_id=run_id,
                      gbit_s=_gbit_s(store, run_id),
                      reorder_events_per_s=float(snd.get("reorder_events", 0)) / secs,
                      ofo_queue_per_s=float(rcv.get("ofo_queue", 0)) / secs,
                      retrans_per_s=float(snd.get("retrans_segs", 0)) / secs,
                      dsack_per_s=float(snd.get("dsack_recv", 0)) / secs, spec=spec,
                      flags=flags)


def run_sweep(scheduler: Scheduler, sender: str, receiver: str, recommended: int,
              s: SweepSettings, store: Store, cid: int,
              say: Say) -> tuple[list[SweepPoint], str]:
    """Every (W, loss, streams) point, ``s.rounds`` times; ([], why) when it cannot run."""
    inner = getattr(scheduler, "inner", scheduler)
    if not isinstance(inner, TestbedScheduler):
        return [], (f"no sweep: only a testbed's link can be given a window (--on "
                    f"{scheduler.name}); apply W where the path is repaired and compare")
    st: TestbedState = inner.state
    specs = path_specs(st.config.impairs, sender, receiver)
    if not any(_reorders(x) for x in specs):
        return [], (f"no sweep: no impairment of testbed {st.name} between {sender} and "
                    f"{receiver} reorders (reorder=, jitter=)")
    for w in s.windows:
        if not 0 <= w <= WINDOW_MAX:
            raise FabenchError(f"--sweep-windows: {w} is not 0..{WINDOW_MAX}")
    windows = sorted({*s.windows, *([recommended] if recommended <= WINDOW_MAX else [])})
    for loss in s.losses:  # checked before any testbed is made
        for w in windows:
            for x in with_window(specs, w, loss):
                parse_impair(x, ["h1", "h2"])
    kernel = get_kernel(KERNEL)
    c = st.config
    points: list[SweepPoint] = []
    n = 0
    for rnd in range(s.rounds):
        order = windows if rnd % 2 == 0 else windows[::-1]
        for loss in s.losses:
            for w in order:
                impairs = with_window(specs, w, loss)
                config = TestbedConfig(hosts=2, mtu=c.mtu, rate=c.rate, burst=c.burst,
                                       queue=c.queue, offloads=c.offloads,
                                       sysctls=dict(c.sysctls), impairs=impairs,
                                       link_impl="fb-link")
                name = f"rs{os.getpid() % 100000}w{w}"
                tb = create(name, config)
                try:
                    sched = TestbedScheduler(testbed=name)
                    for streams in s.streams:
                        settings = settings_for(kernel, extra=[
                            "--streams", str(streams), "--duration", f"{s.seconds:g}"])
                        planned = plan_run(KERNEL, ranks=2, repeat=rnd, settings=settings,
                                           label=f"W={w} loss={loss}")
                        oc = execute_run(store, sched, planned, cid)
                        n += 1
                        if oc.status != "ok":
                            say(f"sweep W={w} loss {loss} {streams} stream(s): {oc.status} "
                                f"({(oc.reason or '')[:160]})")
                            continue
                        p = _point(store, oc.run_id, w, loss, streams, rnd, ";".join(impairs),
                                   list(oc.flags))
                        points.append(p)
                        say(f"sweep W={w} loss {loss} {streams} stream(s): run {oc.run_id} "
                            f"{p.gbit_s:.3f} Gbit/s, {p.reorder_events_per_s:.0f} reorder "
                            f"events/s")
                finally:
                    destroy(tb)
    return points, ""


def best_window(points: list[SweepPoint], loss: str, streams: int) -> int | None:
    """The W with the highest median throughput for one row set."""
    by_w: dict[int, list[float]] = {}
    for p in points:
        if p.loss == loss and p.streams == streams:
            by_w.setdefault(p.window, []).append(p.gbit_s)
    return max(by_w, key=lambda w: _median(by_w[w])) if by_w else None


def sweep_lines(points: list[SweepPoint], recommended: int, note: str) -> list[str]:
    if not points:
        return [f"# {note}"] if note else []
    out = ["trade-off (tcp.streams h1 -> h2 on a copy of the path with window W; medians over "
           "rounds; reorder events = sender's TCPSACKReorder+TCPTSReorder+TCPRenoReorder)"]
    losses = list(dict.fromkeys(p.loss for p in points))
    streams = list(dict.fromkeys(p.streams for p in points))
    for loss in losses:
        for n in streams:
            rows = [p for p in points if p.loss == loss and p.streams == n]
            if not rows:
                continue
            best = best_window(points, loss, n)
            base = _median([p.reorder_events_per_s for p in rows if p.window == 0])
            out.append(f"loss {loss}, {n} stream(s)")
            out.append(f"{'W':>5} {'Gbit/s':>7} {'reorder ev/s':>12} {'vs W=0':>7} "
                       f"{'OFO/s':>8} {'retrans/s':>9} {'DSACK/s':>8}")
            for w in sorted({p.window for p in rows}):
                ps = [p for p in rows if p.window == w]
                ev = _median([p.reorder_events_per_s for p in ps])
                cut = signed_percent(ev / base - 1, 0) if base and base == base else "-"
                mark = ("  <- recommended" if w == recommended else "") + (
                    "  * best throughput" if w == best else "")
                out.append(f"{w:>5} {_median([p.gbit_s for p in ps]):>7.3f} {ev:>12.0f} "
                           f"{cut:>7} {_median([p.ofo_queue_per_s for p in ps]):>8.0f} "
                           f"{_median([p.retrans_per_s for p in ps]):>9.0f} "
                           f"{_median([p.dsack_per_s for p in ps]):>8.0f}{mark}")
    return out
