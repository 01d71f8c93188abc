"""Terminal tables for the model commands."""

from __future__ import annotations

import json
import math
from typing import Any

from ..units import format_size
from .calibrate import Calibration, segs_time
from .collectives import Prediction, fastest
from .fabric import Fabric
from .hpl import HplParams, HplPoint
from .params import PARAMS
from .validate import Comparison


def _us(v: float) -> str:
    if not math.isfinite(v):
        return "-"
    return f"{v:.1f}" if v >= 100 else f"{v:.2f}"


def _num(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.4g}"


def _exchange_note(f: Fabric) -> str:
    slow = [(int(s), x) for s, x in f.exchange_slowdown if x >= 1.25]
    if not f.exchange_slowdown:
        return ""
    if not slow:
        return "; exchanges full duplex (mpi.bibw)"
    return (f"; exchanges (both ways at once) up to x{max(x for _, x in slow):.2f} slower "
            f"from {format_size(slow[0][0])} (mpi.bibw)")


def parameter_lines(f: Fabric) -> list[str]:
    """Every parameter with its value, its source or "assumed", and its band range."""
    lines = [f"# {'parameter':<32} {'value':>12} {'unit':<6} {'range':<19} source"]
    for p in PARAMS:
        v = p.get(f)
        if v is None:
            continue
        prov = f.provenance.get(p.name)
        rng = ""
        if prov and prov.low is not None and prov.high is not None:
            rng = f"{_num(prov.low)}..{_num(prov.high)}"
        if prov is None:
            src = "assumed (no source recorded)"
        elif prov.assumed:
            src = prov.source if prov.source.startswith("assumed") else \
                f"assumed: {prov.source}"
        else:
            src = prov.source
        lines.append(f"  {p.name:<32} {_num(v):>12} {p.unit:<6} {rng:<19} {src}")
    return lines


def fabric_lines(f: Fabric, params: bool = True) -> list[str]:
    lg = f.loggp()
    inn = ("in-network reduction declared" if f.in_network_reduction
           else "no in-network reduction")
    lines = [f"# fabric {f.name} ({f.origin}, family {f.family}): {f.source}",
             f"#   LogGP: L={lg['L_us']:.3f} us  o={lg['o_us']:.3f} us  g={lg['g_us']:.3f} us  "
             f"G={lg['G_us_per_byte'] * 1e3:.4f} ns/B ({f.peak_bandwidth_MBps:,.0f} MB/s)",
             f"#   path: {f.calibrated_hops} switch(es) measured, +{f.hop_latency_us:g} us per "
             f"extra switch; link {f.link_bandwidth_MBps:,.0f} MB/s; {inn}"
             + _exchange_note(f),
             f"# {'from':>9} {'alpha us':>10} {'MB/s':>10} {'points':>7} {'med err':>8}"
             f" {'max err':>8}"]
    for s in f.segments:
        lines.append(f"  {format_size(s.start):>9} {s.alpha_us:>10.3f} {s.bandwidth_MBps:>10,.1f}"
                     f" {s.n_points:>7} {s.median_rel_err * 100:>7.1f}% "
                     f"{s.max_rel_err * 100:>7.1f}%")
    if f.fit:
        q = f.fit
        if "median_rel_err" in q:
            step = q.get("rounding_step") or 0
            lines.append(f"# fit: {int(q.get('points', 0))} sizes, {int(q.get('segments', 0))} "
                         f"segment(s), breakpoints {q.get('breakpoints', [])}, median error "
                         f"{q['median_rel_err'] * 100:.1f} %, max {q['max_rel_err'] * 100:.1f} %"
                         + (f"; values rounded to {step:g} us (residuals within half a step "
                            "count as zero)" if step else ""))
    if f.contention:
        lo = min(x for _, x in f.contention)
        hi = max(x for _, x in f.contention)
        lines.append(f"# ranks sharing cores: measured with {f.contention_ranks} ranks, a step "
                     f"stretched {lo:.2f}-{hi:.2f}x (--cores)")
    else:
        lines.append("# ranks sharing cores: not measured; with --cores a step stretches by "
                     "active ranks / cores (assumed)")
    if f.replicates:
        lines.append(f"# bands: {len(f.replicates)} bootstrap refits of the calibration runs "
                     "and the ranges below")
    if params:
        lines += parameter_lines(f)
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
    hosts = [a for a in pred.algorithms if a != "in_network"]
    if "in_network" not in pred.times or not hosts:
        return None
    best = fastest(pred.times, i, hosts)
    inn = pred.times["in_network"][i]
    return best, pred.times[best][i] / inn if inn > 0 else float("inf")


def _banded(pred: Prediction, col: str, i: int) -> str:
    t = pred.times[col][i]
    b = pred.bands.get(col)
    if b is None:
        return _us(t)
    return f"{_us(t)} [{_us(b.low[i])}-{_us(b.high[i])}]"


def prediction_lines(pred: Prediction, title: str) -> list[str]:
    algos = pred.algorithms
    libs = list(pred.chosen)
    w = max(12, *(len(a) + 1 for a in algos)) if algos else 12
    vs = _best_host_based(pred, 0) is not None
    lines = [f"# {title}: {pred.collective}, us per call (lower is better)"
             + ("; host/in-net = fastest host-based algorithm's time / in-network's" if vs
                else "")]
    if libs:
        lines.append("# " + "; ".join(
            f"{lib}: the algorithm {lib} runs by default at each size (docs/model.md, "
            "'What your MPI will do')" for lib in libs)
            + ("; [low-high]: 5th-95th percentile over fabric variants (docs/model.md, "
               "'Uncertainty')" if pred.bands else ""))
    lines.append(f"# {'size':>9} " + " ".join(f"{a:>{w}}" for a in algos) + "  best"
                 + ("  (fastest host-based: host/in-net)" if vs else "")
                 + "".join(f"  {lib}" for lib in libs))
    winners = pred.winners() if algos else [""] * len(pred.sizes)
    for i, (s, best) in enumerate(zip(pred.sizes, winners, strict=True)):
        hb = _best_host_based(pred, i)
        lines.append(f"  {format_size(s):>9} " + " ".join(
            f"{_us(pred.times[a][i]):>{w}}" for a in algos) + f"  {best}"
            + (f"  ({hb[0]}: {hb[1]:.2f}x)" if hb else "")
            + "".join(f"  {_banded(pred, lib, i)} {pred.chosen[lib][i]}" for lib in libs))
    lines += [f"# {note}" for note in pred.notes]
    return lines


def prediction_json(pred: Prediction, context: dict[str, object]) -> list[str]:
    out = []
    winners = pred.winners() if pred.algorithms else []
    for i, s in enumerate(pred.sizes):
        row: dict[str, Any] = {**context, "collective": pred.collective, "size": s,
                               "times_us": {a: t[i] for a, t in pred.times.items()}}
        if winners:
            row["best"] = winners[i]
        if pred.chosen:
            row["chosen"] = {lib: c[i] for lib, c in pred.chosen.items()}
        if pred.bands:
            row["bands_us"] = {a: [b.low[i], b.high[i]] for a, b in pred.bands.items()}
        hb = _best_host_based(pred, i)
        if hb:
            row["best_host_based"], row["host_over_in_network"] = hb
        if pred.notes:
            row["notes"] = pred.notes
        out.append(json.dumps(row))
    return out


def hpl_lines(points: list[HplPoint], title: str, prm: HplParams | None = None,
              fitted: str | None = None) -> list[str]:
    lines = [f"# {title}"]
    if prm is not None:
        lines += [f"#   {k}: {v}" for k, v in prm.sources.items()]
    if fitted:
        lines.append(f"# FITTED, NOT PREDICTED: {fitted}")
    lines.append(f"# {'nodes':>6} {'grid':>9} {'N':>9} {'eff %':>7} {'band %':>15} "
                 f"{'TFLOPS':>9} {'compute s':>10} {'bw s':>8} {'lat s':>8}")
    for p in points:
        band = (f"{p.band[0] * 100:.2f}-{p.band[1] * 100:.2f}" if p.band else "-")
        lines.append(f"  {p.nodes:>6} {f'{p.grid[0]}x{p.grid[1]}':>9} {p.n:>9} "
                     f"{p.efficiency * 100:>7.2f} {band:>15} {p.gflops / 1e3:>9.2f} "
                     f"{p.t_compute_s:>10.0f} {p.t_bandwidth_s:>8.1f} {p.t_latency_s:>8.1f}")
    return lines


def _band_cell(c: Comparison, i: int) -> str:
    if not c.low:
        return "-"
    return f"{_us(c.low[i])}-{_us(c.high[i])}"


def comparison_lines(c: Comparison) -> list[str]:
    kind = "simulated" if c.simulated else "measured"
    lines = [f"# run {c.run_id}: {c.kernel} {c.algorithm} ({kind}, {c.ranks} ranks) vs model: "
             f"median |error| {c.median_abs_error * 100:.1f} %"
             + "".join(f"; {n}" for n in c.notes),
             f"# {'size':>9} {kind:>12} {'predicted':>10} {'band':>17} {'error':>8}"]
    for i, (s, o, p) in enumerate(zip(c.sizes, c.observed, c.predicted, strict=True)):
        lines.append(f"  {format_size(s):>9} {_us(o):>12} {_us(p):>10} {_band_cell(c, i):>17} "
                     f"{(p - o) / o * 100:>7.1f}%")
    return lines


def validation_lines(c: Comparison, sim: Comparison) -> list[str]:
    """Measured against the model and against the simulator (the same calibration)."""
    sim_at = dict(zip(sim.sizes, sim.predicted, strict=True))
    lines = [f"# run {c.run_id}: {c.kernel} {c.algorithm} ({c.ranks} ranks): median |error| "
             f"model {c.median_abs_error * 100:.1f} %, SimGrid {sim.median_abs_error * 100:.1f} %"
             f" (run {sim.run_id})" + "".join(f"; {n}" for n in c.notes),
             f"# {'size':>9} {'measured':>10} {'predicted':>10} {'band':>17} {'error':>8} "
             f"{'simulated':>10} {'error':>8}"]
    for i, (s, o, p) in enumerate(zip(c.sizes, c.observed, c.predicted, strict=True)):
        sv = sim_at.get(s)
        tail = (f" {_us(sv):>10} {(sv - o) / o * 100:>7.1f}%" if sv is not None
                else f" {'-':>10} {'-':>8}")
        lines.append(f"  {format_size(s):>9} {_us(o):>10} {_us(p):>10} {_band_cell(c, i):>17} "
                     f"{(p - o) / o * 100:>7.1f}%" + tail)
    return lines


def validation_summary(tables: list[tuple[Comparison, Comparison | None]]) -> list[str]:
    lines = ["# summary: median |error| across sizes",
             f"# {'collective':<14} {'algorithm':<20} {'ranks':>6} {'sizes':>5} {'model':>7} "
             f"{'SimGrid':>8}"]
    for c, sim in tables:
        simerr = f"{sim.median_abs_error * 100:>7.1f}%" if sim else f"{'-':>8}"
        lines.append(f"  {c.kernel:<14} {c.algorithm:<20} {c.ranks:>6} {len(c.sizes):>5} "
                     f"{c.median_abs_error * 100:>6.1f}% {simerr}")
    return lines
