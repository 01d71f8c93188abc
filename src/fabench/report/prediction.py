"""The report's "prediction" section: measured vs predicted vs simulated on one chart.

No extra input: a simulated run (launcher simgrid) carries its fabric, platform and pinned
algorithm in its provenance, so the analytic model's prediction for exactly that setup is
computed here, and drawn with the simulated series and every measured series of the same
collective and rank count that the report selected. The table gives the median |error|
across sizes of the prediction and the simulation against each measured series.
"""

from __future__ import annotations

from html import escape

import numpy as np

from ..model.collectives import ALGORITHMS, Cluster, predict
from ..model.fabric import Fabric
from ..model.topology import make_topology
from ..model.validate import barrier_exit_skew, run_algorithm
from ..selection import Series
from .charts import Line, line_chart


def _cluster(sim: dict) -> Cluster:  # type: ignore[type-arg]
    nodes = int(sim["nodes"])
    topo = make_topology(str(sim.get("topology", "fat-tree")), nodes,
                         hosts_per_leaf=int(sim.get("hosts_per_leaf", 24)))
    return Cluster(nodes, int(sim.get("ppn", 1)), topo)


def _median_error(a: Series | Line, b: Line) -> float:
    xs = a.xs if isinstance(a, Line) else [p.size for p in a.points]
    ys = a.ys if isinstance(a, Line) else [p.summary.median for p in a.points]
    ref = dict(zip(xs, ys, strict=True))
    errs = [abs(y - ref[x]) / ref[x] for x, y in zip(b.xs, b.ys, strict=True)
            if x in ref and ref[x] > 0]
    return float(np.median(errs)) if errs else float("nan")


def prediction_section(series: list[Series]) -> str:
    """HTML for every simulated collective series in `series`; "" if there is none."""
    figs, rows = [], []
    latency = [s for s in series if s.metric.name == "latency"]
    for n, sim in enumerate(s for s in latency if "simulated" in s.runs[0].flags):
        run = sim.runs[0]
        coll = sim.kernel.partition(".")[2]
        info = run.provenance.get("simulation") or {}
        if coll not in ALGORITHMS or not info.get("fabric"):
            continue
        fabric = Fabric.from_dict(info["fabric"])
        algo = info.get("algorithm") or next(
            (a for a, (_, smpi) in ALGORITHMS[coll].items()
             if smpi == (info.get("cfg") or {}).get(f"smpi/{coll}")), None)
        if algo is None:
            continue
        sizes = [p.size for p in sim.points if p.size > 0]
        cluster = _cluster(info)
        # as `fabench model validate`: the kernels' times include the barrier's exit skew
        skew = barrier_exit_skew(fabric, cluster)
        pred = Line(f"predicted ({fabric.name}, {algo})", sizes,
                    [t + skew for t in predict(fabric, cluster, coll, algo, sizes)])
        simline = Line(f"simulated ({fabric.name}, {algo})", sizes,
                       [p.summary.median for p in sim.points if p.size > 0])
        # measured runs of the same collective and ranks, unless they record (pinned) a
        # different algorithm
        measured = [s for s in latency if s.kernel == sim.kernel and "simulated" not in
                    s.runs[0].flags and s.runs[0].ranks == run.ranks
                    and run_algorithm(s.runs[0], coll) in (None, algo)]
        lines = [Line(f"measured {m.label}", [p.size for p in m.points],
                      [p.summary.median for p in m.points],
                      [p.ci.low for p in m.points], [p.ci.high for p in m.points])
                 for m in measured]
        figs.append(line_chart(f"prediction-{n}", f"{sim.kernel} np={run.ranks}: measured, "
                               f"predicted, simulated", "latency (us)",
                               [*lines, pred, simline]))
        for m in measured:
            rows.append(f'<tr><td class="l">{escape(sim.kernel)} {escape(algo)}</td>'
                        f'<td class="l">{escape(m.label)}</td>'
                        f"<td>{_median_error(m, pred):.1%}</td>"
                        f"<td>{_median_error(m, simline):.1%}</td></tr>")
    if not figs:
        return ""
    table = ""
    if rows:
        table = ('<table><tr><th class="l">collective, algorithm</th><th class="l">measured '
                 "series</th><th>model: median |error|</th><th>SimGrid: median |error|</th>"
                 "</tr>" + "".join(rows) + "</table>")
    return ('<p class=muted>Analytic model and SimGrid from the same fabric (docs/model.md); '
            "the measured series are the report's runs of the same collective and ranks. "
            "Measured runs that record another (pinned) algorithm are left out.</p>"
            + table + '<div class="charts">' + "".join(figs) + "</div>")
