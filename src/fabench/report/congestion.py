"""The congestion section of a report (and of `fabench congestion`'s output): per aggressor and
victim metric, the impact factor at the median and at P99 with its interval, and the counters
of the congested phases (CE marks, ECN-echoed deliveries, retransmits, drops)."""

import math
from html import escape

from ..congestion.impact import ImpactFactor, ImpactRow

HEADER = ("aggressor", "victim", "impact median [95% CI]", "impact P99 [95% CI]",
          "isolated med/P99 us", "congested med/P99 us", "CE marked", "CE delivered",
          "retrans", "drops")


def _f(x: float | None, digits: int = 2) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.{digits}f}" if abs(x) < 1000 else f"{x:.0f}"


def _factor(f: ImpactFactor) -> str:
    return f"{_f(f.factor)} [{_f(f.low)}, {_f(f.high)}]"


def cells(row: ImpactRow) -> list[str]:
    med, p99 = row.impact_factor["median"], row.impact_factor["p99"]
    c = row.counters
    victim = row.victim + (f" ({_f(row.isolated_bandwidth_mbs, 1)} -> "
                           f"{_f(row.congested_bandwidth_mbs, 1)} MB/s)"
                           if row.isolated_bandwidth_mbs is not None else "")
    return [row.aggressor, victim, _factor(med), _factor(p99),
            f"{_f(med.isolated_us, 1)} / {_f(p99.isolated_us, 1)}",
            f"{_f(med.congested_us, 1)} / {_f(p99.congested_us, 1)}",
            str(c.get("ce_marked", 0)), str(c.get("delivered_ce", 0)),
            str(c.get("retrans_segs", 0)),
            str(c.get("queue_drops", 0) + c.get("limit_drops", 0) + c.get("write_drops", 0))]


def _groups(rows: list[ImpactRow]) -> dict[tuple[int | None, str], list[ImpactRow]]:
    out: dict[tuple[int | None, str], list[ImpactRow]] = {}
    for r in rows:
        out.setdefault((r.campaign_id, r.bottleneck), []).append(r)
    return out


def text_lines(rows: list[ImpactRow]) -> list[str]:
    if not rows:
        return ["(no congestion runs: every victim needs an isolated and a congested phase)"]
    lines = []
    for (cid, bottleneck), group in _groups(rows).items():
        lines.append(f"# campaign {cid}, bottleneck: {bottleneck}; {group[0].rounds} rounds; "
                     "impact = congested / isolated time (>1: slower under congestion)")
        table = [list(HEADER), *(cells(r) for r in group)]
        widths = [max(len(row[i]) for row in table) for i in range(len(HEADER))]
        for row in table:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
        for r in group:
            for flag in r.flags:
                lines.append(f"FLAG {r.aggressor}/{r.victim}: {flag}")
    return lines


def html_section(rows: list[ImpactRow]) -> str:
    """The report's Congestion section; empty when no congestion run was selected."""
    if not rows:
        return ""
    parts = ["<h2>Congestion</h2>",
             "<p class=muted>GPCNeT's congestion impact factor: a victim's time under the "
             "aggressor over its time alone, at the median and at P99, with two-stage "
             "bootstrap 95% intervals over rounds and samples (docs/congestion.md). Counters "
             "are the congested phases' own: fb-link CE marks and drops, and every host's "
             "TCP (TCPDeliveredCE, RetransSegs).</p>"]
    for (cid, bottleneck), group in _groups(rows).items():
        parts.append(f"<h3>campaign {escape(str(cid))}: bottleneck {escape(bottleneck)}, "
                     f"{group[0].rounds} rounds</h3>")
        head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells(r)) + "</tr>"
                       for r in group)
        parts.append(f"<table><tr>{head}</tr>{body}</table>")
    return "\n".join(parts)
