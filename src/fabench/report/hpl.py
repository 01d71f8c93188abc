"""The report's HPL section: stored hpcc.hpl runs by node count (efficiency against N, a table
and a chart), the model's prediction beside each where a fabric and a single-node run exist,
and the node-consistency table of every `fabench hpl nodes` campaign selected.

The prediction is fabench.model.hpl's, at each run's own problem size and block size: the
single-node rate comes from the selected 1-node runs (the median of their efficiencies), the
fabric's alpha and beta carry the rest. A multi-node run whose ranks per node differ from the
1-node run's is shown without a prediction: its efficiency is against another peak. Runs of
an `hpl nodes` campaign are node checks, often concurrent on one machine, so they feed the
node table only, not the scaling baseline.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from html import escape
from typing import Any

from ..errors import FabenchError
from ..hpl.nodes import DEFAULT_THRESHOLD, NodeReport, NodeResult
from ..hpl.scaling import SPEC_KEY as SCALING_KEY
from ..model.fabric import Fabric
from ..model.hpl import HplParams, MeasuredHpl, hpl_point, measured_hpl
from ..model.schema import validate_dict
from ..store.database import RunRow, Store
from ..util.textable import Col, header, row, signed_percent
from .charts import Line, line_chart

KERNEL = "hpcc.hpl"
NODES_CAMPAIGN = "hpl_nodes"  # the campaign spec key `fabench hpl nodes` stores
PEAK_MATCH = 0.01  # per-node peaks this close are the same ranks per node


@dataclass
class ScalingRow:
    """One stored hpcc.hpl run, with the model's efficiency at its node count and N."""

    run: MeasuredHpl
    grid: str
    efficiency_stardgemm: float | None
    blas: str
    nb: int
    model_efficiency: float | None = None
    model_gflops: float | None = None
    why_no_model: str | None = None

    @property
    def error(self) -> float | None:
        if self.model_efficiency is None or not self.run.efficiency:
            return None
        err = (self.model_efficiency - self.run.efficiency) / self.run.efficiency
        return 0.0 if abs(err) < 1e-12 else err  # the baseline run itself: no "-0.0 %"

    def as_dict(self) -> dict[str, Any]:
        m = self.run
        return {"run_id": m.run_id, "nodes": m.nodes, "n": m.n, "grid": self.grid,
                "gflops": m.gflops, "efficiency": m.efficiency,
                "node_peak_gflops": m.node_peak_gflops,
                "efficiency_stardgemm": self.efficiency_stardgemm, "blas": self.blas,
                "model_efficiency": self.model_efficiency, "model_gflops": self.model_gflops,
                "model_error": self.error, "no_model": self.why_no_model}


@dataclass
class HplSection:
    rows: list[ScalingRow]
    fabric: str | None  # the fabric the model used
    baseline: str | None  # where the single-node rate came from
    notes: list[str] = field(default_factory=list)
    node_tables: list[tuple[int, NodeReport]] = field(default_factory=list)  # (campaign, table)

    def by_nodes(self) -> dict[int, list[ScalingRow]]:
        out: dict[int, list[ScalingRow]] = {}
        for r in sorted(self.rows, key=lambda r: (r.run.nodes, r.run.run_id)):
            out.setdefault(r.run.nodes, []).append(r)
        return out

    def to_json(self) -> dict[str, Any]:
        groups = []
        for nodes, rows in self.by_nodes().items():
            eff = [r.run.efficiency for r in rows]
            model = [r.model_efficiency for r in rows if r.model_efficiency is not None]
            groups.append({"nodes": nodes, "runs": [r.run.run_id for r in rows],
                           "efficiency_median": statistics.median(eff),
                           "efficiency_min": min(eff), "efficiency_max": max(eff),
                           "model_efficiency_median": statistics.median(model) if model
                           else None})
        return {"fabric": self.fabric, "baseline": self.baseline, "notes": self.notes,
                "runs": [r.as_dict() for r in self.rows], "by_nodes": groups,
                "node_tables": [{"campaign_id": cid, **t.to_json()}
                                for cid, t in self.node_tables]}


def _campaign_specs(store: Store) -> dict[int, dict[str, Any]]:
    return {int(c["id"]): dict(c.get("spec") or {}) for c in store.campaigns()}


def scaling_fabric(store: Store, runs: list[RunRow]) -> Fabric | None:
    """The fabric an `hpl scaling` campaign of these runs was given (stored in its spec)."""
    specs = _campaign_specs(store)
    for cid in sorted({r.campaign_id for r in runs if r.campaign_id is not None}):
        d = (specs.get(cid) or {}).get(SCALING_KEY) or {}
        if isinstance(d.get("fabric"), dict):
            try:
                return validate_dict(dict(d["fabric"]), f"campaign {cid}'s fabric")
            except FabenchError:
                continue
    return None


def _row(store: Store, run: RunRow) -> ScalingRow | None:
    try:
        m = measured_hpl(store, run.id)
    except FabenchError:
        return None
    recs = list(store.results(run.id))
    x = recs[-1].extra if recs else {}
    eff_dg = x.get("efficiency_stardgemm")
    return ScalingRow(m, f"{x.get('p', '?')}x{x.get('q', '?')}",
                      float(eff_dg) if eff_dg is not None else None, str(x.get("blas") or "?"),
                      int(x.get("nb") or 0))


def _node_table(store: Store, runs: list[RunRow]) -> NodeReport:
    out = []
    for r in sorted(runs, key=lambda r: r.id):
        name = str(r.settings.get("label") or f"run {r.id}")
        try:
            m = measured_hpl(store, r.id)
        except FabenchError:
            out.append(NodeResult(name, r.ranks, r.status, reason=r.reason, run_id=r.id))
            continue
        out.append(NodeResult(name, r.ranks, "ok", m.gflops, m.efficiency, m.n, run_id=r.id,
                              peak_gflops=m.node_peak_gflops * m.nodes))
    return NodeReport(out, DEFAULT_THRESHOLD)


def _predict(rows: list[ScalingRow], fabric: Fabric, cores: int | None,
             notes: list[str]) -> str | None:
    """Fill each row's model efficiency; returns where the single-node rate came from."""
    ones = [r.run for r in rows if r.run.nodes == 1]
    if not ones:
        for r in rows:
            r.why_no_model = "no 1-node run selected"
        notes.append(f"no model on {fabric.name}: no 1-node run selected, whose rate it "
                     "starts from")
        return None
    effs = sorted(ones, key=lambda m: m.efficiency)
    base = effs[(len(effs) - 1) // 2]  # the median run (the lower one of an even count)
    baseline = (f"run {base.run_id}: 1 node, N {base.n}, efficiency {base.efficiency:.2%} of "
                f"{base.node_peak_gflops:.1f} GFLOPS"
                + (f" (median of {len(ones)} 1-node runs)" if len(ones) > 1 else ""))
    prm = HplParams(node_peak_gflops=base.node_peak_gflops, efficiency_1node=base.efficiency,
                    mem_per_node_gb=0.0, cores=cores,
                    sources={"efficiency_1node": baseline})
    for r in rows:
        m = r.run
        if abs(m.node_peak_gflops - base.node_peak_gflops) > PEAK_MATCH * base.node_peak_gflops:
            r.why_no_model = (f"{m.node_peak_gflops:.1f} GFLOPS per node, not the 1-node "
                              f"run's {base.node_peak_gflops:.1f} (other ranks per node)")
            continue
        pt = hpl_point(fabric, m.nodes, replace(prm, nb=r.nb or prm.nb), n=m.n)
        r.model_efficiency, r.model_gflops = pt.efficiency, pt.gflops
    if cores:
        notes.append(f"The nodes are emulated on one machine: they share its {cores} cores "
                     "(the model's `cores`)")
    return baseline


def _emulated_cores(runs: list[RunRow]) -> int | None:
    """A testbed's hosts are namespaces of this machine: their cores are shared."""
    if not runs or not all(str(r.provenance.get("launcher") or r.launcher).startswith(
            "testbed") for r in runs):
        return None
    cores = [int(c) for r in runs if (c := (r.provenance.get("peak") or {}).get("cores"))]
    return min(cores) if cores else None


def hpl_section(store: Store, runs: list[RunRow], fabric: Fabric | None) -> HplSection | None:
    """The section for the selected runs; None when none of them is an hpcc.hpl run."""
    hpl = [r for r in runs if r.kernel == KERNEL]
    if not hpl:
        return None
    specs = _campaign_specs(store)
    node_runs: dict[int, list[RunRow]] = {}
    scaling: list[RunRow] = []
    for r in hpl:
        if r.campaign_id is not None and NODES_CAMPAIGN in specs.get(r.campaign_id, {}):
            node_runs.setdefault(r.campaign_id, []).append(r)
        elif r.status == "ok":
            scaling.append(r)
    rows = [row for r in scaling if (row := _row(store, r)) is not None]
    notes: list[str] = []
    baseline = None
    if fabric is not None and rows:
        baseline = _predict(rows, fabric, _emulated_cores(scaling), notes)
    elif rows:
        notes.append("no fabric given (fabench report --fabric NAME): measurements only")
    return HplSection(rows, fabric.name if fabric is not None and baseline else None, baseline,
                      notes, [(cid, _node_table(store, rs)) for cid, rs in
                              sorted(node_runs.items())])


def text_lines(sec: HplSection) -> list[str]:
    """The scaling table as `fabench hpl scaling` prints it."""
    lines = [f"# model: {sec.fabric}, from {sec.baseline}" if sec.baseline else
             "# no model: " + ("; ".join(sec.notes) or "no 1-node run")]
    if sec.baseline:
        lines += [f"# {n}" for n in sec.notes]
    cols = (Col("nodes", 5), Col("run", 5), Col("N", 7), Col("grid", 5, text=True),
            Col("GFLOPS", 10), Col("eff", 7), Col("vs DGEMM", 8), Col("model", 7),
            Col("error", 7))
    lines.append(header(cols))
    for r in sorted(sec.rows, key=lambda r: (r.run.nodes, r.run.run_id)):
        m = r.run
        lines.append(row(cols, [str(m.nodes), str(m.run_id), str(m.n), r.grid,
                                f"{m.gflops:.3f}", _pct(m.efficiency),
                                _pct(r.efficiency_stardgemm), _pct(r.model_efficiency),
                                "-" if r.error is None else signed_percent(r.error)]))
        if r.why_no_model and sec.baseline:
            lines.append(f"#   run {m.run_id}: no model: {r.why_no_model}")
    return lines


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.2%}"


def _chart(sec: HplSection) -> str:
    groups = sec.by_nodes()
    xs = list(groups)
    eff = [[r.run.efficiency * 100 for r in rows] for rows in groups.values()]
    lines = [Line("measured (median of the runs; band: min-max)", xs,
                  [statistics.median(e) for e in eff], [min(e) for e in eff],
                  [max(e) for e in eff])]
    model = [(n, [r.model_efficiency * 100 for r in rows if r.model_efficiency is not None])
             for n, rows in groups.items()]
    model = [(n, m) for n, m in model if m]
    if model and sec.fabric:
        lines.append(Line(f"model ({sec.fabric})", [n for n, _ in model],
                          [statistics.median(m) for _, m in model]))
    return line_chart("hpl-scaling", "HPL efficiency against the number of nodes",
                      "efficiency (% of Rpeak)", lines, x_title="nodes (log)", x_label=str)


def _scaling_table(sec: HplSection) -> str:
    head = ("run", "nodes", "N", "grid", "GFLOPS", "efficiency", "vs StarDGEMM", "model",
            "model GFLOPS", "error", "BLAS")
    rows = []
    for r in sorted(sec.rows, key=lambda r: (r.run.nodes, r.run.run_id)):
        m = r.run
        model = _pct(r.model_efficiency) if r.why_no_model is None else (
            f'<span class=muted title="{escape(r.why_no_model)}">-</span>')
        err = "-" if r.error is None else signed_percent(r.error)
        cells = [str(m.run_id), str(m.nodes), str(m.n), escape(r.grid), f"{m.gflops:.3f}",
                 _pct(m.efficiency), _pct(r.efficiency_stardgemm), model,
                 "-" if r.model_gflops is None else f"{r.model_gflops:.3f}", err]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells)
                    + f'<td class="l">{escape(r.blas)}</td></tr>')
    return ("<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
            + "".join(rows) + "</table>")


def _node_table_html(cid: int, t: NodeReport) -> str:
    med = t.median
    flagged = {r.node for r in t.flagged}
    rows = []
    for r in t.nodes:
        rel = f"{(r.gflops / med - 1):+.2%}" if r.gflops and med else "-"
        status = "SLOW" if r.node in flagged else r.status
        cls = "bad" if status != "ok" else "ok"
        rows.append(f'<tr><td class="l">{escape(r.node)}</td><td>{r.run_id}</td>'
                    f"<td>{r.ranks}</td><td>{r.n or '-'}</td>"
                    f"<td>{'-' if r.gflops is None else f'{r.gflops:.3f}'}</td>"
                    f"<td>{_pct(r.efficiency)}</td><td>{rel}</td>"
                    f'<td class="l {cls}">{escape(status)}'
                    f"{(': ' + escape(r.reason)) if r.reason else ''}</td></tr>")
    v = t.rates
    foot = ""
    if v:
        cv = t.cv
        foot = (f"<p>{len(v)} of {len(t.nodes)} nodes: min {min(v):.3f}, max {max(v):.3f}, "
                f"median {statistics.median(v):.3f}, spread {max(v) - min(v):.3f} GFLOPS, CV "
                f"{'-' if cv is None else f'{cv:.2%}'}; flagged below the median by more than "
                f"{t.threshold:.0%}: {escape(', '.join(sorted(flagged))) or 'none'}</p>")
    return (f"<h3>node consistency (campaign {cid}, fabench hpl nodes)</h3><table><tr>"
            '<th class="l">node</th><th>run</th><th>ranks</th><th>N</th><th>GFLOPS</th>'
            '<th>efficiency</th><th>vs median</th><th class="l">status</th></tr>'
            + "".join(rows) + "</table>" + foot)


def html_section(sec: HplSection | None) -> str:
    """The report's HPL section; empty when no hpcc.hpl run was selected."""
    if sec is None:
        return ""
    parts = ["<h2>HPL</h2>"]
    if sec.rows:
        about = ("<p class=muted>Stored hpcc.hpl runs by node count: efficiency against the "
                 "Rpeak of the ranks run, and against StarDGEMM (the same cores' practical "
                 "peak). ")
        if sec.baseline:
            about += (f"The model (docs/model.md, HPL) on fabric {escape(sec.fabric or '')}, "
                      f"at each run's own N and NB, from {escape(sec.baseline)}; error = "
                      "(model - measured) / measured. ")
        parts.append(about + "".join(f"{escape(n)}. " for n in sec.notes) + "</p>")
        parts.append(_scaling_table(sec))
        parts.append('<div class="charts">' + _chart(sec) + "</div>")
    parts += [_node_table_html(cid, t) for cid, t in sec.node_tables]
    return "\n".join(parts)
