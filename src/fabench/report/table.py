"""OSU-like terminal tables: one row per message size, robust statistics first."""

import json
from collections.abc import Iterable

from ..analyse import SizeSummary, summarize_results
from ..kernels import get_kernel
from ..records import ResultRecord
from ..units import format_size


def _fmt(v: float) -> str:
    if v != v:  # NaN
        return "-"
    if abs(v) >= 1e5:
        return f"{v:.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    return f"{v:.2f}"


def header_lines(title: str, notes: Iterable[str] = ()) -> list[str]:
    return [f"# {title}", *[f"# {n}" for n in notes if n]]


def size_table(rows: list[SizeSummary]) -> list[str]:
    if not rows:
        return ["# (no results)"]
    m = rows[0].metric
    lines = [f"# {'Size':>9} {'Median':>11} {'P5':>11} {'P95':>11} {'Mean':>11} {'Min':>11}"
             f" {'Max':>11} {'N':>7}   [{m.name}, {m.unit}, {m.better.value} is better]"]
    for r in rows:
        s = r.summary
        check = "" if r.validated is None else ("  validated" if r.validated else "  INVALID")
        lines.append(f"  {format_size(r.size):>9} {_fmt(s.median):>11} {_fmt(s.p5):>11}"
                     f" {_fmt(s.p95):>11} {_fmt(s.mean):>11} {_fmt(s.min):>11}"
                     f" {_fmt(s.max):>11} {s.n:>7}{check}")
    return lines


def kernel_tables(kernel_name: str, results: list[ResultRecord]) -> list[str]:
    """One table per metric of the kernel (mbw_mr has bandwidth and message rate)."""
    lines: list[str] = []
    for metric in get_kernel(kernel_name).metrics:
        lines += size_table(summarize_results(kernel_name, results, metric))
    return lines


def summaries_json(kernel_name: str, results: list[ResultRecord],
                   context: dict[str, object]) -> list[str]:
    out = []
    for metric in get_kernel(kernel_name).metrics:
        for r in summarize_results(kernel_name, results, metric):
            out.append(json.dumps({
                **context, "size": r.size, "metric": metric.name, "unit": metric.unit,
                "better": metric.better.value, "iterations": r.iterations,
                "validated": r.validated, **r.summary.as_dict()}))
    return out
