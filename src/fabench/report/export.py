"""CSV and JSON export of everything a report shows.

CSV: one row per (series, size) with scope "pooled" (all runs of a configuration, with the
confidence interval) and one row per (run, size) with scope "run" (that run alone, no interval).
JSON: the same rows plus runs with their provenance, comparisons, the summary table and the
warnings; with samples=True also every per-iteration time.
"""

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.peer_stats import peer_fields
from ..analysis.selection import config_label, run_configuration, run_source
from ..plan.plan import configuration_text
from ..util.stats import summarize
from .model import TABLE_COLUMNS, Report

CSV_FIELDS = ("scope", "kernel", "configuration", "transport", "selected", "mpi", "ranks",
              "source", "label", "kernel_settings", "metric", "unit", "better", "size",
              "run_ids", "runs", "n", "median", "ci_low", "ci_high", "confidence", "ci_method",
              "ci_point_outside", "mean", "min", "max",
              "p5", "p95", "p99", "stdev", "cv", "robust_cv", "outliers_low", "outliers_high",
              "repeat_cv", "median_rank_mean", "osu_avg", "on")


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_clean(x) for x in v]
    if isinstance(v, np.floating):
        return _clean(float(v))
    if isinstance(v, np.integer):
        return int(v)
    return v


# OWASP "CSV Injection": a cell starting with one of these is a formula to a spreadsheet.
_FORMULA_LEAD = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(v: Any) -> Any:
    """A value safe in a spreadsheet: labels, notes and names come from users and peer tools,
    so a text cell that a spreadsheet would run as a formula gets a leading `'` (OWASP). Numbers,
    negative ones included, stay numbers."""
    if v is None:
        return ""
    if not isinstance(v, str) or not v.startswith(_FORMULA_LEAD):
        return v
    try:
        float(v)
        return v  # "-1.5" is a number, not a formula
    except ValueError:
        return "'" + v


def rows(report: Report) -> list[dict[str, Any]]:
    out = []
    for s in report.series:
        r0 = s.runs[0]
        base = {"kernel": s.kernel, "configuration": s.label, "transport": r0.transport,
                "selected": r0.selected_transport or "", "mpi": r0.mpi, "ranks": r0.ranks,
                "source": run_source(r0), "label": r0.settings.get("label") or "",
                "kernel_settings": configuration_text(run_configuration(r0)),
                "metric": s.metric.name, "unit": s.metric.unit,
                "better": s.metric.better.value,
                # where it ran, with a testbed's rate, MTU and impairments
                "on": r0.provenance.get("launcher") or r0.launcher}
        timed = s.metric.source == "time"
        for p in s.points:
            d = p.as_dict()
            recs = [r for run in s.runs for r in s.results.get(run.id, []) if r.size == p.size]
            out.append({**base, "scope": "pooled", **{k: d.get(k) for k in CSV_FIELDS if k in d},
                        "run_ids": " ".join(str(r.id) for r in s.runs),
                        "runs": len(p.run_medians), **(peer_fields(recs) if timed else {})})
        # a one-run series' point at a size of one record holds that record's samples: its
        # summary is the run row's (a third of a default campaign's report time, computed twice)
        lone = {p.size: p for p in s.points} if len(s.runs) == 1 else {}
        for run in s.runs:
            recs = s.results.get(run.id, [])
            for rec in recs:
                p1 = lone.get(rec.size)
                if p1 is not None and sum(r.size == rec.size for r in recs) == 1:
                    sm = p1.summary.as_dict()
                else:
                    sm = summarize(s.metric.values(rec.times, rec.bytes_per_sample,
                                                   rec.messages_per_sample)).as_dict()
                out.append({**base, "scope": "run", "size": rec.size, "run_ids": str(run.id),
                            "runs": 1, **sm, "selected": run.selected_transport or "",
                            **(peer_fields([rec]) if timed else {})})
    return [_clean(r) for r in out]


def write_csv(report: Report, path: Path, table: list[dict[str, Any]] | None = None) -> Path:
    """`table`: rows(report) when the caller has them (write_report: the CSV and the JSON
    share one computation, half a second of summaries on a default campaign)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows(report) if table is None else table:
            w.writerow({k: csv_cell(r.get(k)) for k in CSV_FIELDS})
    return path


def as_json(report: Report, samples: bool = False,
            table: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    runs = []
    for r in [*report.runs, *report.excluded]:
        runs.append({"id": r.id, "campaign_id": r.campaign_id, "kernel": r.kernel,
                     "configuration": config_label(r), "transport": r.transport, "mpi": r.mpi,
                     "ranks": r.ranks, "launcher": r.launcher, "repeat": r.repeat,
                     "status": r.status, "reason": r.reason,
                     "selected_transport": r.selected_transport,
                     "oversubscribed": r.oversubscribed, "notes": r.notes, "flags": r.flags,
                     "command": r.command, "settings": r.settings,
                     "kernel_meta": r.kernel_meta, "provenance": r.provenance})
    summary = []
    for row in report.table:
        cells = {}
        for col in TABLE_COLUMNS:
            cell = row.cells[col]
            if cell is not None:
                p, s = cell
                cells[col] = {"size": p.size, "median": p.summary.median, "unit": s.metric.unit,
                              "ci_low": p.ci.low, "ci_high": p.ci.high,
                              "runs": len(p.run_medians), "repeat_cv": p.repeat_cv}
        summary.append({"fabric": row.fabric, **cells})
    out: dict[str, Any] = {
        "title": report.title, "generated": report.generated, "campaigns": report.campaigns,
        "runs": runs, "summary_table": summary, "warnings": report.warnings,
        "comparisons": [c.as_dict() for c in report.comparisons],
        "rows": rows(report) if table is None else table,
        "tcp_counters": [t.as_dict() for t in report.tcp],
        "congestion": [r.to_json() for r in report.congestion],
        "hpl": report.hpl.to_json() if report.hpl is not None else None}
    if samples:
        seen: dict[int, list[Any]] = {}
        for s in report.series:
            for rid, recs in s.results.items():
                seen.setdefault(rid, recs)
        out["samples"] = [
            {"run_id": rid, "size": rec.size, "times": rec.times, "times_min": rec.times_min,
             "times_mean": rec.times_mean}
            for rid, recs in sorted(seen.items()) for rec in recs]
    return _clean(out)


def write_json(report: Report, path: Path, samples: bool = False,
               table: list[dict[str, Any]] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(as_json(report, samples, table), indent=1, allow_nan=False))
    return path
