"""Terminal tables for the model commands, in the one text-table convention (textable)."""

from __future__ import annotations

import json
import math
from typing import Any

from ..util.textable import Col, header, row, signed_percent
from ..util.units import format_number, format_size
from .calibrate import Calibration, segs_time
from .collectives import Prediction, fastest
from .fabric import Fabric
from .hpl import HplParams, HplPoint, MeasuredHpl
from .params import PARAMS
from .validate import Validation


def _us(v: float) -> str:
    return format_number(v) if math.isfinite(v) else "-"


_num = format_number


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
    cols = [Col("parameter", 32, text=True), Col("value", 10), Col("unit", 5, text=True),
            Col("range", 17)]
    lines = [header(cols, " source")]
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
        lines.append(row(cols, [p.name, _num(v), p.unit, rng], f" {src}"))
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
             + _exchange_note(f)]
    seg = [Col("from", 9), Col("alpha us", 10), Col("MB/s", 10), Col("points", 7),
           Col("med err", 8), Col("max err", 8)]
    lines.append(header(seg))
    for s in f.segments:
        lines.append(row(seg, [format_size(s.start), f"{s.alpha_us:.3f}", _num(s.bandwidth_MBps),
                               str(s.n_points), f"{s.median_rel_err * 100:.1f}%",
                               f"{s.max_rel_err * 100:.1f}%"]))
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
    cols = [Col("size", 9), Col("measured us", 12), Col("model us", 10), Col("err", 7)]
    lines.append(header(cols))
    for s, t in zip(cal.latency.sizes, cal.latency.times, strict=True):
        m = segs_time(cal.fabric.segments, s)
        lines.append(row(cols, [format_size(s), _us(t), _us(m), f"{(m - t) / t * 100:.1f}%"]))
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
            + (f"; {pred.band_label}" if pred.bands and pred.band_label else
               "; [low-high]: 5th-95th percentile over fabric variants (docs/model.md, "
               "'Uncertainty')" if pred.bands else ""))
    cols = [Col("size", 9), *(Col(a, w) for a in algos), Col("best", 18, text=True)]
    lines.append(header(cols, ("  (fastest host-based: host/in-net)" if vs else "")
                        + "".join(f"  {lib}" for lib in libs)))
    winners = pred.winners() if algos else [""] * len(pred.sizes)
    for i, (s, best) in enumerate(zip(pred.sizes, winners, strict=True)):
        hb = _best_host_based(pred, i)
        tail = ((f"  ({hb[0]}: {hb[1]:.2f}x)" if hb else "")
                + "".join(f"  {_banded(pred, lib, i)} {pred.chosen[lib][i]}" for lib in libs))
        lines.append(row(cols, [format_size(s), *(_us(pred.times[a][i]) for a in algos), best],
                         tail))
    lines += [f"# {note}" for note in pred.notes]
    return lines


def prediction_json(pred: Prediction, context: dict[str, object]) -> list[str]:
    out = []
    winners = pred.winners() if pred.algorithms else []
    for i, s in enumerate(pred.sizes):
        rec: dict[str, Any] = {**context, "collective": pred.collective, "size": s,
                               "times_us": {a: t[i] for a, t in pred.times.items()}}
        if winners:
            rec["best"] = winners[i]
        if pred.chosen:
            rec["chosen"] = {lib: c[i] for lib, c in pred.chosen.items()}
        if pred.bands:
            rec["bands_us"] = {a: [b.low[i], b.high[i]] for a, b in pred.bands.items()}
            rec["band_kind"] = "prediction interval" if pred.band_level else "parameters"
            if pred.band_level:
                rec["band_level"] = pred.band_level
        hb = _best_host_based(pred, i)
        if hb:
            rec["best_host_based"], rec["host_over_in_network"] = hb
        if pred.notes:
            rec["notes"] = pred.notes
        out.append(json.dumps(rec))
    return out


def hpl_lines(points: list[HplPoint], title: str, prm: HplParams | None = None,
              fitted: str | None = None) -> list[str]:
    lines = [f"# {title}"]
    if prm is not None:
        lines += [f"#   {k}: {v}" for k, v in prm.sources.items()]
    if fitted:
        lines.append(f"# FITTED, NOT PREDICTED: {fitted}")
    cols = [Col("nodes", 6), Col("grid", 9), Col("N", 9), Col("eff %", 7), Col("band %", 15),
            Col("TFLOPS", 9), Col("compute s", 10), Col("bw s", 8), Col("lat s", 8)]
    lines.append(header(cols))
    for p in points:
        band = (f"{p.band[0] * 100:.2f}-{p.band[1] * 100:.2f}" if p.band else "-")
        lines.append(row(cols, [str(p.nodes), f"{p.grid[0]}x{p.grid[1]}", str(p.n),
                                f"{p.efficiency * 100:.2f}", band, f"{p.gflops / 1e3:.2f}",
                                f"{p.t_compute_s:.0f}", f"{p.t_bandwidth_s:.1f}",
                                f"{p.t_latency_s:.1f}"]))
    return lines


def hpl_measured_lines(points: list[HplPoint], measured: list[MeasuredHpl]) -> list[str]:
    """Stored HPL runs beside the model's row of the same node count."""
    at = {p.nodes: p for p in points}
    cols = [Col("run", 6), Col("nodes", 6), Col("N", 9), Col("Gflops", 10), Col("eff %", 7),
            Col("model %", 8), Col("error", 8), Col("model N", 9)]
    lines = ["# measured (stored hpcc.hpl runs) against the model", header(cols)]
    for m in measured:
        p = at.get(m.nodes)
        cells = [str(m.run_id), str(m.nodes), str(m.n), f"{m.gflops:.3f}",
                 f"{m.efficiency * 100:.2f}"]
        if p is None:
            cells += ["-", "-", "-"]
        else:
            cells += [f"{p.efficiency * 100:.2f}",
                      signed_percent((p.efficiency - m.efficiency) / m.efficiency), str(p.n)]
        lines.append(row(cols, cells))
    return lines


def _band_cell(c: Validation, i: int) -> str:
    if not c.low:
        return "-"
    return f"{_us(c.low[i])}-{_us(c.high[i])}"


def comparison_lines(c: Validation) -> list[str]:
    kind = "simulated" if c.simulated else "measured"
    lines = [f"# run {c.run_id}: {c.kernel} {c.algorithm} ({kind}, {c.ranks} ranks) vs model: "
             f"median |error| {c.median_abs_error * 100:.1f} %"
             + "".join(f"; {n}" for n in c.notes)]
    cols = [Col("size", 9), Col(kind, 12), Col("predicted", 10), Col("band", 17),
            Col("error", 8)]
    lines.append(header(cols))
    for i, (s, o, p) in enumerate(zip(c.sizes, c.observed, c.predicted, strict=True)):
        lines.append(row(cols, [format_size(s), _us(o), _us(p), _band_cell(c, i),
                                f"{(p - o) / o * 100:.1f}%"]))
    return lines


def validation_lines(c: Validation, sim: Validation) -> list[str]:
    """Measured against the model and against the simulator (the same calibration)."""
    sim_at = dict(zip(sim.sizes, sim.predicted, strict=True))
    lines = [f"# run {c.run_id}: {c.kernel} {c.algorithm} ({c.ranks} ranks): median |error| "
             f"model {c.median_abs_error * 100:.1f} %, SimGrid {sim.median_abs_error * 100:.1f} %"
             f" (run {sim.run_id})" + "".join(f"; {n}" for n in c.notes)]
    cols = [Col("size", 9), Col("measured", 10), Col("predicted", 10), Col("band", 17),
            Col("error", 8), Col("simulated", 10), Col("error", 8)]
    lines.append(header(cols))
    for i, (s, o, p) in enumerate(zip(c.sizes, c.observed, c.predicted, strict=True)):
        sv = sim_at.get(s)
        lines.append(row(cols, [format_size(s), _us(o), _us(p), _band_cell(c, i),
                                f"{(p - o) / o * 100:.1f}%",
                                _us(sv) if sv is not None else "-",
                                f"{(sv - o) / o * 100:.1f}%" if sv is not None else "-"]))
    return lines


def validation_summary(tables: list[tuple[Validation, Validation | None]]) -> list[str]:
    cols = [Col("collective", 14, text=True), Col("algorithm", 20, text=True), Col("ranks", 6),
            Col("sizes", 5), Col("model", 7), Col("SimGrid", 8)]
    lines = ["# summary: median |error| across sizes", header(cols)]
    for c, sim in tables:
        lines.append(row(cols, [c.kernel, c.algorithm, str(c.ranks), str(len(c.sizes)),
                                f"{c.median_abs_error * 100:.1f}%",
                                f"{sim.median_abs_error * 100:.1f}%" if sim else "-"]))
    return lines
