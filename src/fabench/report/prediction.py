"""The report's "prediction" section: measured vs predicted vs simulated on one chart.

No extra input: a simulated run (launcher simgrid) carries its fabric, platform and pinned
algorithm in its provenance, so the analytic model's prediction for exactly that setup is
computed here, with its band (docs/model.md, "Uncertainty") drawn as the prediction line's
interval, beside the simulated series and every measured series of the same collective and
rank count that the report selected. The table gives the median |error| across sizes of the
prediction and the simulation against each measured series, and how many measured medians
fall inside the prediction's band.
"""

from __future__ import annotations

from html import escape

import numpy as np

from ..analysis.selection import Series
from ..errors import FabenchError
from ..model.collectives import ALGORITHMS, predict
from ..model.cost import Cluster
from ..model.schema import validate_dict
from ..model.topology import TopologySpec
from ..model.uncertainty import variants
from ..model.validate import barrier_exit_skew, run_algorithm
from .charts import Line, line_chart

BAND_SAMPLES = 16


def _cluster(sim: dict) -> Cluster:  # type: ignore[type-arg]
    nodes = int(sim["nodes"])
    if isinstance(sim.get("topology_spec"), dict):
        spec = TopologySpec.from_dict(sim["topology_spec"])
    else:  # runs stored before the spec was recorded
        spec = TopologySpec(str(sim.get("topology", "fat-tree")),
                            int(sim.get("hosts_per_leaf", 24)))
    return Cluster(nodes, int(sim.get("ppn", 1)), spec.build(nodes))


def _inside(m: Series, pred: Line) -> tuple[int, int]:
    """(measured medians inside the prediction's band, sizes compared)."""
    band = {x: (lo, hi) for x, lo, hi in zip(pred.xs, pred.lo, pred.hi, strict=True)}
    hits = [band[p.size][0] <= p.summary.median <= band[p.size][1]
            for p in m.points if p.size in band]
    return sum(hits), len(hits)


def _median_error(a: Series | Line, b: Line) -> float:
    xs = a.xs if isinstance(a, Line) else [p.size for p in a.points]
    ys = a.ys if isinstance(a, Line) else [p.summary.median for p in a.points]
    ref = dict(zip(xs, ys, strict=True))
    errs = [abs(y - ref[x]) / ref[x] for x, y in zip(b.xs, b.ys, strict=True)
            if x in ref and ref[x] > 0]
    return float(np.median(errs)) if errs else float("nan")


def prediction_section(series: list[Series]) -> str:
    """HTML for every simulated collective series in `series`; "" if there is none."""
    figs: list[str] = []
    table_rows: list[str] = []
    latency = [s for s in series if s.metric.name == "latency"]
    for n, sim in enumerate(s for s in latency if "simulated" in s.runs[0].flags):
        run = sim.runs[0]
        coll = sim.kernel.partition(".")[2]
        info = run.provenance.get("simulation") or {}
        if coll not in ALGORITHMS or not info.get("fabric"):
            continue
        try:
            fabric = validate_dict(dict(info["fabric"]), f"run {run.id}'s fabric")
        except FabenchError:
            continue
        algo = info.get("algorithm") or next(
            (a for a, (_, smpi) in ALGORITHMS[coll].items()
             if smpi == (info.get("cfg") or {}).get(f"smpi/{coll}")), None)
        if algo is None:
            continue
        sizes = [p.size for p in sim.points if p.size > 0]
        cluster = _cluster(info)
        # as `fabench model validate`: the kernels' times include the barrier's exit skew
        skew = barrier_exit_skew(fabric, cluster)
        rows = np.array([[t + barrier_exit_skew(v, cluster) for t in
                          predict(v, cluster, coll, algo, sizes)]
                         for v in variants(fabric, BAND_SAMPLES)])
        pred = Line(f"predicted ({fabric.name}, {algo})", sizes,
                    [t + skew for t in predict(fabric, cluster, coll, algo, sizes)],
                    [float(x) for x in np.percentile(rows, 5, axis=0)],
                    [float(x) for x in np.percentile(rows, 95, axis=0)])
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
            hits, total = _inside(m, pred)
            table_rows.append(f'<tr><td class="l">{escape(sim.kernel)} {escape(algo)}</td>'
                              f'<td class="l">{escape(m.label)}</td>'
                              f"<td>{_median_error(m, pred):.1%}</td>"
                              f"<td>{hits} of {total}</td>"
                              f"<td>{_median_error(m, simline):.1%}</td></tr>")
    if not figs:
        return ""
    table = ""
    if table_rows:
        table = ('<table><tr><th class="l">collective, algorithm</th><th class="l">measured '
                 "series</th><th>model: median |error|</th><th>measured inside the model's "
                 "band</th><th>SimGrid: median |error|</th></tr>" + "".join(table_rows)
                 + "</table>")
    return ('<p class=muted>Analytic model and SimGrid from the same fabric (docs/model.md); '
            "the prediction's interval is its band (5th-95th percentile over the fabric's "
            "calibration replicates and assumed ranges); "
            "the measured series are the report's runs of the same collective and ranks. "
            "Measured runs that record another (pinned) algorithm are left out.</p>"
            + table + '<div class="charts">' + "".join(figs) + "</div>")
