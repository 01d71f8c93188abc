"""What a report says, computed once and rendered as HTML, CSV and JSON."""

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from ..analysis.compare import Comparison, compare_series
from ..analysis.history import History, history
from ..analysis.host_load import host_state_warning, load_warning
from ..analysis.selection import (
    Series,
    SizeEstimate,
    config_label,
    group_series,
    load_results,
    run_metrics,
    run_source,
)
from ..congestion.impact import ImpactRow, impact_rows
from ..errors import FabenchError
from ..matrix.stored import judgements
from ..model.fabric import Fabric
from ..mpi.onnode import FLAG as NIC_FLAG
from ..store.database import RunRow, Store
from .hpl import HplSection, hpl_section, scaling_fabric
from .tcp import TcpRow, tcp_rows

SMALL_SIZE = 8  # document 004 tabulates small-message latency ...
LARGE_SIZE = 4 << 20  # ... and bandwidth at 4 MiB
REPEAT_CV_WARN = 0.02
OUTLIER_WARN = 0.01


@dataclass
class TableRow:
    fabric: str
    cells: dict[str, tuple[SizeEstimate, Series] | None]


@dataclass
class Report:
    title: str
    runs: list[RunRow]
    excluded: list[RunRow]  # selected but not ok (failed, skipped, interrupted)
    series: list[Series]
    comparisons: list[Comparison]
    table: list[TableRow]
    warnings: list[str]
    campaigns: list[dict[str, Any]]
    generated: float = field(default_factory=time.time)
    tcp: list[TcpRow] = field(default_factory=list)  # each host's TCP counters per run
    # judged all-pairs matrices of the selected campaigns (fabench matrix), each with its
    # campaign_id
    matrices: list[dict[str, Any]] = field(default_factory=list)
    congestion: list[ImpactRow] = field(default_factory=list)  # congestion runs selected
    hpl: HplSection | None = None  # hpcc.hpl runs selected: scaling, model, node tables
    # the series (fabench history) of each selected campaign's name that has 2+ campaigns,
    # as it stood at the newest selected campaign of that name: the report's trend charts
    history: list[History] = field(default_factory=list)


TABLE_COLUMNS = {  # column -> (kernel suffix, metric, size)
    "latency": ("latency", "latency", SMALL_SIZE),
    "bandwidth": ("bw", "bandwidth", LARGE_SIZE),
    "bibw": ("bibw", "bandwidth", LARGE_SIZE),
}


def _family(kernel: str) -> str:
    return kernel.split(".", 1)[0]


def _nearest(series: Series, size: int) -> SizeEstimate | None:
    if not series.points:
        return None
    exact = series.at(size)
    if exact is not None:
        return exact
    return min(series.points, key=lambda p: abs(math.log2(max(p.size, 1)) - math.log2(size)))


def summary_table(series: list[Series]) -> list[TableRow]:
    rows: dict[str, TableRow] = {}
    for s in series:
        suffix = s.kernel.split(".", 1)[-1]
        for col, (ksuf, metric, size) in TABLE_COLUMNS.items():
            if suffix != ksuf or s.metric.name != metric:
                continue
            fabric = f"{_family(s.kernel).upper()} {s.label}"
            row = rows.setdefault(fabric, TableRow(fabric, {c: None for c in TABLE_COLUMNS}))
            p = _nearest(s, size)
            if p is not None:
                row.cells[col] = (p, s)
    return list(rows.values())


def run_warnings(run: RunRow) -> list[str]:
    who = f"run {run.id} ({config_label(run, with_kernel=True)})"
    out = []
    for flag in run.flags:
        out.append(f"{who}: {flag}")
    return out


def build_report(store: Store, runs: list[RunRow], excluded: list[RunRow] | None = None,
                 title: str = "fabench report", compare: bool = True,
                 fabric: Fabric | None = None) -> Report:
    """`fabric`: the model's, for the HPL section (default: an `hpl scaling` campaign's)."""
    results = load_results(store, runs)
    # a run without result records (mpi.matrix keeps its samples in matrix_pairs) has no chart
    series = [s for s in group_series(runs, results) if s.points]
    series.sort(key=lambda s: (s.kernel, s.metric.name, s.runs[0].ranks, s.runs[0].id))
    comparisons = _baseline_comparisons(series) if compare else []
    cids = sorted({r.campaign_id for r in runs if r.campaign_id is not None})
    campaigns = [c for c in store.campaigns() if c["id"] in cids]
    prov = {c["id"]: _campaign_provenance(store, c["id"]) for c in campaigns}
    for c in campaigns:
        c["provenance"] = prov[c["id"]]
    # Intra-node traffic over a network transport (document 003) is a wrong configuration,
    # not noise: it leads the list so a long one of load warnings cannot hide it.
    warnings: list[str] = [w for r in runs for w in run_warnings(r) if NIC_FLAG in w]
    cores = next((p.get("cores") for p in prov.values() if p.get("cores")), None)
    warnings += [w for w in (load_warning(runs, cores), host_state_warning(runs)) if w]
    over = [r for r in runs if r.oversubscribed]
    if over:
        warnings.append(f"{len(over)} runs oversubscribed (more ranks than cores; "
                        f"{', '.join(sorted({config_label(r, True) for r in over}))}): their "
                        "latencies are noise")
    for r in runs:
        warnings += [w for w in run_warnings(r) if NIC_FLAG not in w]
        for rec in results.get(r.id, []):
            if rec.validated is False:
                warnings.append(f"run {r.id}: data validation FAILED at {rec.size} B")
    for r in excluded or []:
        warnings.append(f"run {r.id} ({config_label(r, with_kernel=True)}) {r.status}: "
                        f"{r.reason or 'no reason recorded'}")
    warnings += _stat_warnings(series)
    matrices = judgements(store, cids)
    return Report(title, runs, list(excluded or []), series, comparisons,
                  summary_table(series), warnings, campaigns, tcp=tcp_rows(runs),
                  matrices=matrices, congestion=impact_rows(runs, results),
                  hpl=hpl_section(store, [*runs, *(excluded or [])],
                                  fabric or scaling_fabric(store, runs)),
                  history=_histories(store, campaigns))


# A report reads the samples of every campaign of the series it charts: the newest ones only,
# so a report of night 1000 costs what one of night 30 does (`fabench history` reads all).
REPORT_NIGHTS = 30


def _histories(store: Store, campaigns: list[dict[str, Any]]) -> list[History]:
    newest: dict[str, int] = {}
    for c in campaigns:
        newest[c["name"]] = max(newest.get(c["name"], 0), int(c["id"]))
    out = []
    for name, until in sorted(newest.items()):
        try:
            h = history(store, name, until=until, last=REPORT_NIGHTS)
        except FabenchError:  # every campaign of the name still running: no series yet
            continue
        if len(h.campaigns) >= 2:
            out.append(h)
    return out


def _campaign_provenance(store: Store, cid: int) -> dict[str, Any]:
    row = store.db.execute("SELECT provenance FROM campaigns WHERE id = ?", (cid,)).fetchone()
    return json.loads(row[0] or "{}") if row else {}


def _stat_warnings(series: list[Series]) -> list[str]:
    out = []
    for s in series:
        if s.metric is not run_metrics(s.runs[0])[0]:
            continue
        noisy = [p for p in s.points if len(p.run_medians) >= 2 and p.repeat_cv > REPEAT_CV_WARN]
        if noisy:
            worst = max(noisy, key=lambda p: p.repeat_cv)
            out.append(f"{s.kernel} {s.label}: repeats disagree by more than "
                       f"{REPEAT_CV_WARN:.0%} (CV of run medians) at {len(noisy)} of "
                       f"{len(s.points)} sizes, worst {worst.repeat_cv:.1%} at {worst.size} B")
        heavy = [p for p in s.points if p.summary.n >= 100 and
                 (p.summary.outliers_high + p.summary.outliers_low) / p.summary.n > OUTLIER_WARN]
        if heavy:
            out.append(f"{s.kernel} {s.label}: more than {OUTLIER_WARN:.0%} far-out samples "
                       f"(> 3 IQR) at {len(heavy)} sizes (kept; the median resists them)")
        if any(run_source(r) != "fabench" for r in s.runs) and all(
                p.summary.n <= 1 for p in s.points):
            out.append(f"{s.kernel} {s.label}: imported aggregates only (one value per size): "
                       "no confidence interval")
    return out


def _baseline_comparisons(series: list[Series]) -> list[Comparison]:
    """Within each kernel, metric and rank count: every configuration against the first."""
    groups: dict[tuple[str, str, int], list[Series]] = {}
    for s in series:
        if s.metric is run_metrics(s.runs[0])[0]:
            groups.setdefault((s.kernel, s.metric.name, s.runs[0].ranks), []).append(s)
    out = []
    for members in groups.values():
        base = members[0]
        for other in members[1:]:
            out.append(compare_series(base, other))
    return out
