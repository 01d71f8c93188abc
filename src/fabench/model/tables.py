"""Terminal tables for the model commands."""

from __future__ import annotations

import json
import math

from ..units import format_size
from .calibrate import Calibration, segs_time
from .collectives import Prediction, fastest
from .fabric import Fabric
from .hpl import HplPoint
from .validate import Comparison


def _us(v: float) -> str:
    if not math.isfinite(v):
        return "-"
    return f"{v:.1f}" if v >= 100 else f"{v:.2f}"


def _exchange_note(f: Fabric) -> str:
    slow = [(int(s), x) for s, x in f.exchange_slowdown if x >= 1.25]
    if not f.exchange_slowdown:
        return ""
    if not slow:
        return "; exchanges full duplex (mpi.bibw)"
    return (f"; exchanges (both ways at once) up to x{max(x for _, x in slow):.2f} slower "
            f"from {format_size(slow[0][0])} (mpi.bibw)")


def fabric_lines(f: Fabric) -> list[str]:
    lg = f.loggp()
    lines = [f"# fabric {f.name} ({f.origin}): {f.source}",
             f"#   LogGP: L={lg['L_us']:.3f} us  o={lg['o_us']:.3f} us  g={lg['g_us']:.3f} us  "
             f"G={lg['G_us_per_byte'] * 1e3:.4f} ns/B ({f.peak_bandwidth_MBps:.0f} MB/s)",
             f"#   path: {f.calibrated_hops} switch(es) measured, +{f.hop_latency_us} us per "
             f"extra switch; link {f.link_bandwidth_MBps:.0f} MB/s; reduction "
             f"{1 / f.reduce_us_per_byte if f.reduce_us_per_byte else 0:.0f} MB/s"
             + _exchange_note(f),
             f"# {'from':>9} {'alpha us':>10} {'MB/s':>10} {'points':>7} {'med err':>8}"
             f" {'max err':>8}"]
    for s in f.segments:
        lines.append(f"  {format_size(s.start):>9} {s.alpha_us:>10.3f} {s.bandwidth_MBps:>10.1f}"
                     f" {s.n_points:>7} {s.median_rel_err * 100:>7.1f}% "
                     f"{s.max_rel_err * 100:>7.1f}%")
    if f.fit:
        q = f.fit
        if "median_rel_err" in q:
            lines.append(f"# fit: {int(q.get('points', 0))} sizes, {int(q.get('segments', 0))} "
                         f"segment(s), breakpoints {q.get('breakpoints', [])}, median error "
                         f"{q['median_rel_err'] * 100:.1f} %, max {q['max_rel_err'] * 100:.1f} %")
    lines += [f"# assumption: {a}" for a in f.assumptions]
    return lines


def calibration_lines(cal: Calibration) -> list[str]:
    lines = fabric_lines(cal.fabric)
    lines.append(f"# {'size':>9} {'measured us':>12} {'model us':>10} {'err':>7}")
    for s, t in zip(cal.latency.sizes, cal.latency.times, strict=True):
        m = segs_time(cal.fabric.segments, s)
        lines.append(f"  {format_size(s):>9} {_us(t):>12} {_us(m):>10} "
                     f"{(m - t) / t * 100:>6.1f}%")
    return lines


def _best_host_based(pred: Prediction, i: int) -> tuple[str, float] | None:
    """(fastest host-based algorithm, its time / in-network's) at size index i, when the
    prediction has in-network reduction and at least one host-based algorithm."""
    hosts = [a for a in pred.times if a != "in_network"]
    if "in_network" not in pred.times or not hosts:
        return None
    best = fastest(pred.times, i, hosts)
    inn = pred.times["in_network"][i]
    return best, pred.times[best][i] / inn if inn > 0 else float("inf")


def prediction_lines(pred: Prediction, title: str) -> list[str]:
    algos = list(pred.times)
    w = max(12, *(len(a) + 1 for a in algos))
    vs = _best_host_based(pred, 0) is not None
    lines = [f"# {title}: {pred.collective}, us per call (lower is better)"
             + ("; host/in-net = fastest host-based algorithm's time / in-network's" if vs
                else ""),
             f"# {'size':>9} " + " ".join(f"{a:>{w}}" for a in algos) + "  best"
             + ("  (fastest host-based: host/in-net)" if vs else "")]
    for i, (s, best) in enumerate(zip(pred.sizes, pred.winners(), strict=True)):
        hb = _best_host_based(pred, i)
        lines.append(f"  {format_size(s):>9} " + " ".join(
            f"{_us(pred.times[a][i]):>{w}}" for a in algos) + f"  {best}"
            + (f"  ({hb[0]}: {hb[1]:.2f}x)" if hb else ""))
    lines += [f"# {note}" for note in pred.notes]
    return lines


def prediction_json(pred: Prediction, context: dict[str, object]) -> list[str]:
    out = []
    for i, s in enumerate(pred.sizes):
        row = {**context, "collective": pred.collective, "size": s,
               "times_us": {a: t[i] for a, t in pred.times.items()},
               "best": pred.winners()[i]}
        hb = _best_host_based(pred, i)
        if hb:
            row["best_host_based"], row["host_over_in_network"] = hb
        if pred.notes:
            row["notes"] = pred.notes
        out.append(json.dumps(row))
    return out


def hpl_lines(points: list[HplPoint], title: str) -> list[str]:
    lines = [f"# {title}",
             f"# {'nodes':>6} {'grid':>9} {'N':>9} {'eff %':>7} {'TFLOPS':>9} {'compute s':>10}"
             f" {'bw s':>8} {'lat s':>8}"]
    for p in points:
        lines.append(f"  {p.nodes:>6} {f'{p.grid[0]}x{p.grid[1]}':>9} {p.n:>9} "
                     f"{p.efficiency * 100:>7.2f} {p.gflops / 1e3:>9.2f} {p.t_compute_s:>10.0f}"
                     f" {p.t_bandwidth_s:>8.1f} {p.t_latency_s:>8.1f}")
    return lines


def comparison_lines(c: Comparison) -> list[str]:
    kind = "simulated" if c.simulated else "measured"
    lines = [f"# run {c.run_id}: {c.kernel} {c.algorithm} ({kind}) vs model: median |error| "
             f"{c.median_abs_error * 100:.1f} %" + "".join(f"; {n}" for n in c.notes),
             f"# {'size':>9} {kind:>12} {'predicted':>10} {'error':>8}"]
    for s, o, p in zip(c.sizes, c.observed, c.predicted, strict=True):
        lines.append(f"  {format_size(s):>9} {_us(o):>12} {_us(p):>10} "
                     f"{(p - o) / o * 100:>7.1f}%")
    return lines


def validation_lines(c: Comparison, sim: Comparison) -> list[str]:
    """Measured against the model and against the simulator (the same calibration)."""
    sim_at = dict(zip(sim.sizes, sim.predicted, strict=True))
    lines = [f"# run {c.run_id}: {c.kernel} {c.algorithm}: median |error| model "
             f"{c.median_abs_error * 100:.1f} %, SimGrid {sim.median_abs_error * 100:.1f} % "
             f"(run {sim.run_id})" + "".join(f"; {n}" for n in c.notes),
             f"# {'size':>9} {'measured':>10} {'predicted':>10} {'error':>8} {'simulated':>10}"
             f" {'error':>8}"]
    for s, o, p in zip(c.sizes, c.observed, c.predicted, strict=True):
        sv = sim_at.get(s)
        tail = (f" {_us(sv):>10} {(sv - o) / o * 100:>7.1f}%" if sv is not None
                else f" {'-':>10} {'-':>8}")
        lines.append(f"  {format_size(s):>9} {_us(o):>10} {_us(p):>10} "
                     f"{(p - o) / o * 100:>7.1f}%" + tail)
    return lines


def validation_summary(tables: list[tuple[Comparison, Comparison | None]]) -> list[str]:
    lines = ["# summary: median |error| across sizes",
             f"# {'collective':<14} {'algorithm':<20} {'sizes':>5} {'model':>7} {'SimGrid':>8}"]
    for c, sim in tables:
        simerr = f"{sim.median_abs_error * 100:>7.1f}%" if sim else f"{'-':>8}"
        lines.append(f"  {c.kernel:<14} {c.algorithm:<20} {len(c.sizes):>5} "
                     f"{c.median_abs_error * 100:>6.1f}% {simerr}")
    return lines
