"""OSU-like terminal tables: one row per message size, robust statistics first."""

import json
from collections.abc import Iterable

from ..analysis.analyse import SizeSummary, summarize_results
from ..analysis.streams import stream_results
from ..kernels import get_kernel
from ..records import ResultRecord
from ..util.textable import Col, header, row
from ..util.units import format_number, format_size


def header_lines(title: str, notes: Iterable[str] = ()) -> list[str]:
    return [f"# {title}", *[f"# {n}" for n in notes if n]]


SIZE_COLUMNS = (Col("Size", 9), *(Col(t, 11) for t in ("Median", "P5", "P95", "Mean", "Min",
                                                        "Max")), Col("N", 7))


# A collective's OSU-comparable figures (fabench.analysis.peer_stats) after the headline's.
PEER_COLUMNS = (Col("RankMean", 11), Col("OSU avg", 11))


def size_table(rows: list[SizeSummary], peers: bool = False) -> list[str]:
    if not rows:
        return ["# (no results)"]
    m = rows[0].metric
    cols = (*SIZE_COLUMNS, *(PEER_COLUMNS if peers else ()))
    lines = [header(cols, f"   [{m.name}, {m.unit}, {m.better.value} is better]")]
    for r in rows:
        s = r.summary
        check = "" if r.validated is None else ("  validated" if r.validated else "  INVALID")
        cells = [format_size(r.size), *(
            format_number(v) for v in (s.median, s.p5, s.p95, s.mean, s.min, s.max)), str(s.n)]
        if peers:
            cells += [format_number(v) if v is not None else "-"
                      for v in (r.median_rank_mean, r.osu_avg)]
        lines.append(row(cols, cells, check))
    if peers:
        lines.append("# Median: slowest rank per call after a barrier (fabench's headline); "
                     "RankMean: mean over ranks per call; OSU avg: loop mean without barriers, "
                     "as osu_* prints")
    return lines


def kernel_tables(kernel_name: str, results: list[ResultRecord]) -> list[str]:
    """One table per metric of the kernel (mbw_mr has bandwidth and message rate)."""
    lines: list[str] = []
    kernel = get_kernel(kernel_name)
    for metric in kernel.metrics:
        lines += size_table(summarize_results(kernel_name, results, metric),
                            peers=kernel.kind == "collective")
    return lines


def summaries_json(kernel_name: str, results: list[ResultRecord],
                   context: dict[str, object]) -> list[str]:
    out = []
    kernel = get_kernel(kernel_name)
    for metric in kernel.metrics:
        for rec, r in zip(results, summarize_results(kernel_name, results, metric),
                          strict=True):
            own = {f: rec.extra.get(f) for f in kernel.summary_fields}
            own |= {f: rec.extra[f] for f in EVIDENCE_FIELDS if f in rec.extra}
            out.append(json.dumps({
                **context, "size": r.size, "metric": metric.name, "unit": metric.unit,
                "better": metric.better.value, "iterations": r.iterations,
                "validated": r.validated, "datatype": r.datatype, **r.summary.as_dict(),
                **({"median_rank_mean": r.median_rank_mean, "osu_avg": r.osu_avg}
                   if kernel.kind == "collective" else {}), **own}))
    return out


# Per-size evidence the sockets kernels report beside their times (netperf's service demand,
# TCP_INFO retransmits, UDP loss), shown when present: (record key, column title, format).
_DETAIL_COLUMNS = (
    ("client_cpu_util", "cli CPU", "{:.0%}"),
    ("server_cpu_util", "srv CPU", "{:.0%}"),
    ("client_cpu_s_per_gb", "cli s/GB", "{:.3f}"),
    ("server_cpu_s_per_gb", "srv s/GB", "{:.3f}"),
    ("client_retransmits", "retrans", "{:.0f}"),
    ("loss_ratio", "loss", "{:.2%}"),
    ("reordered", "reorder", "{:.0f}"),
)


# The per-size evidence the terminal's detail table shows (and `diagnose reorder` for the
# UDP probes), carried in each JSON summary where the kernel reported it.
EVIDENCE_FIELDS = (*(key for key, _, _ in _DETAIL_COLUMNS), "datagrams_sent",
                   "datagrams_expected", "datagrams_received", "lost", "duplicates",
                   "reordered_ratio", "reordered_rfc4737", "lost_rfc4737",
                   "duplicates_rfc4737", "reordering_extent_max", "received_mb_per_s")


def own_fields(kernel_name: str, results: list[ResultRecord]) -> list[str]:
    """The fields a kernel's records carry beside its samples (HPL's efficiency and residual,
    a proxy's communication fraction), one line per record."""
    fields = get_kernel(kernel_name).summary_fields
    lines = []
    for r in results:
        cells = []
        for f in fields:
            v = r.extra.get(f)
            if v is None:
                continue
            if isinstance(v, float):
                v = f"{v:.2%}" if "efficiency" in f or f.endswith("fraction") else f"{v:.4g}"
            cells.append(f"{f} {v}")
        if cells:
            lines.append(f"# {format_size(r.size)}: " + ", ".join(cells))
    return lines


def transport_details(kernel_name: str, results: list[ResultRecord]) -> list[str]:
    """CPU use, CPU seconds per GB moved, retransmits, loss, and for tcp.streams each stream's
    median bandwidth (lowest..highest stream): the columns a transport tuning decision needs."""

    cols = [c for c in _DETAIL_COLUMNS if any(c[0] in r.extra for r in results)]
    streams = {r.size: stream_results(r) for r in results}
    # UDP's headline bandwidth is what the sender offered; what arrived is the other half.
    received = any("received_bytes" in r.extra and r.extra.get("timed_s") for r in results)
    if not cols and not any(streams.values()):
        return []
    head = f"# {'Size':>9}" + "".join(f" {t:>9}" for _, t, _ in cols)
    if received:
        head += f" {'recv MB/s':>10}"
    if any(streams.values()):
        head += f"  {'per-stream MB/s (median, lowest..highest)':>s}"
    lines = [head]
    for r in results:
        row = f"  {format_size(r.size):>9}"
        for key, _, fmt in cols:
            v = r.extra.get(key)
            row += f" {fmt.format(v) if isinstance(v, int | float) and v == v else '-':>9}"
        if received:
            t = r.extra.get("timed_s") or 0
            row += f" {format_number(r.extra.get('received_bytes', 0) / t / 1e6) if t else '-':>10}"
        per = streams.get(r.size) or []
        if per:
            meds = [summarize_results(kernel_name, [s], get_kernel(kernel_name).primary)[0]
                    .summary.median for s in per]
            row += (f"  {len(per)} streams: {format_number(sorted(meds)[len(meds) // 2])}, "
                    f"{format_number(min(meds))}..{format_number(max(meds))}")
        lines.append(row)
    return lines
