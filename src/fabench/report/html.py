"""The report as one self-contained HTML file: inline CSS, inline SVG, a few lines of inline JS
(legend toggles). Every string that comes from a user, a store or a tool goes through
html.escape."""

import datetime as _dt
import json
from html import escape
from pathlib import Path
from typing import Any

from .. import __version__
from ..analysis.compare import Comparison, summary_sentence
from ..analysis.peer_stats import peer_fields
from ..analysis.selection import Series, SizeEstimate, config_label
from ..host.probe import run_core_to_core_ns
from ..util.units import format_number
from .charts import Line, line_chart, size_label
from .congestion import html_section
from .hpl import html_section as hpl_html
from .matrix import matrix_section
from .model import TABLE_COLUMNS, Report
from .prediction import prediction_section
from .tcp import COLUMNS as TCP_COLUMNS
from .trend import TREND_CSS, changes_list, trend_chart

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1400px;color:#222;
padding:0 16px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:3px;
margin-top:28px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure.chartbox{margin:0;border:1px solid #ddd;padding:6px;background:#fff}
figcaption{font-weight:600;margin-bottom:4px}
svg.chart .plot{fill:#fafafa;stroke:#999}svg.chart .grid{stroke:#e4e4e4}
svg.chart .tick{font-size:10px;fill:#444}svg.chart .axis{font-size:11px;fill:#222}
svg.chart .band{opacity:.22;stroke:none}svg.chart .median{fill:none;stroke-width:1.6}
svg.chart .ci{stroke-width:3;opacity:.5}
svg.chart g.off{display:none}
ul.legend{list-style:none;padding:0;margin:4px 0;font-size:12px;max-width:640px}
ul.legend li{display:inline-block;margin-right:12px;cursor:pointer}
ul.legend li.off{opacity:.35;text-decoration:line-through}
.swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
.warn{background:#fff4e5;border-left:4px solid #f0a020;padding:6px 10px}
.ok{color:#2a7}.bad{color:#c22}.muted{color:#777}
code,pre{font-size:12px;background:#f6f6f6}pre{white-space:pre-wrap;padding:6px}
td.better{color:#2a7}td.worse{color:#c22}td.equal{color:#555}td.inconclusive{color:#999}
"""

# Clicking a legend entry hides or shows that configuration in its chart.
_JS = """
document.querySelectorAll('figure.chartbox').forEach(function (fig) {
  fig.querySelectorAll('ul.legend li').forEach(function (li) {
    li.addEventListener('click', function () {
      var g = fig.querySelector('g.series[data-series="' + li.dataset.series + '"]');
      if (g) { g.classList.toggle('off'); li.classList.toggle('off'); }
    });
  });
});
document.body.dataset.charts = String(document.querySelectorAll('svg.chart').length);
"""


def _f(v: float) -> str:
    return format_number(v)


def _ci(p: SizeEstimate) -> str:
    ci = p.ci
    return f"{_f(ci.low)}–{_f(ci.high)}" if ci.defined else "-"


def _metric_title(s: Series) -> str:
    return f"{s.metric.name} ({s.metric.unit}, {s.metric.better.value} is better)"


def _charts(report: Report) -> str:
    groups: dict[tuple[str, str], list[Series]] = {}
    for s in report.series:
        groups.setdefault((s.kernel, s.metric.name), []).append(s)
    figs = []
    for n, ((kernel, _metric), members) in enumerate(sorted(groups.items())):
        lines = []
        for s in members:
            pts = s.points
            lines.append(Line(s.label, [p.size for p in pts], [p.summary.median for p in pts],
                              [p.ci.low for p in pts], [p.ci.high for p in pts]))
        title = f"{kernel}: {_metric_title(members[0])}, median and 95% CI"
        figs.append(line_chart(f"chart-{n}", title, f"{members[0].metric.name} "
                               f"({members[0].metric.unit})", lines))
    return '<div class="charts">' + "".join(figs) + "</div>"


def _summary_table(report: Report) -> str:
    if not report.table:
        return "<p class=muted>No point-to-point latency or bandwidth runs selected.</p>"
    head = "".join(f"<th>{escape(c)}</th>" for c in
                   ("latency (us)", "bandwidth (MB/s)", "bibw (MB/s)"))
    rows = []
    for row in report.table:
        cells = [f'<td class="l">{escape(row.fabric)}</td>']
        for col in TABLE_COLUMNS:
            cell = row.cells[col]
            if cell is None:
                cells.append("<td>-</td>")
                continue
            p, s = cell
            cv = (f"<br><span class=muted>CV over {len(p.run_medians)} runs "
                  f"{p.repeat_cv:.1%}</span>" if len(p.run_medians) >= 2 else "")
            cells.append(f"<td><b>{_f(p.summary.median)}</b> @ {escape(size_label(p.size))}"
                         f"<br><span class=muted>95% CI {_ci(p)}</span>{cv}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table><tr><th class="l">fabric / configuration</th>{head}</tr>'
            + "".join(rows) + "</table><p class=muted>Like document 004's table: latency at "
            "8 B and bandwidth at 4 MiB (or the nearest size measured), medians of all "
            "samples of all repeats, with the bootstrap 95% confidence interval of the median "
            "and the coefficient of variation of the repeats' medians.</p>")


def _comparisons(report: Report) -> str:
    if not report.comparisons:
        return "<p class=muted>One configuration per kernel: nothing to compare.</p>"
    parts = []
    for c in report.comparisons:
        parts.append(f"<p><b>{escape(summary_sentence(c))}</b></p>")
        if c.host_note:
            parts.append(f"<p class=warn>caution: {escape(c.host_note)}</p>")
        parts.append(_comparison_table(c))
    return "".join(parts)


def _comparison_table(c: Comparison) -> str:
    u = escape(c.metric.unit)
    rows = [f'<details><summary>per size ({escape(c.kernel)}, B = {escape(c.name_b)}, '
            f'A = {escape(c.name_a)})</summary><table><tr><th>size</th><th>A ({u})</th>'
            f"<th>B ({u})</th><th>B−A ({u})</th><th>95% CI</th><th>B/A</th><th>95% CI</th>"
            '<th class="l">verdict</th></tr>']
    for sc in c.sizes:
        t = sc.two
        dci = f"{_f(t.diff_ci.low)}–{_f(t.diff_ci.high)}" if t.diff_ci.defined else "-"
        rci = f"{t.ratio_ci.low:.3f}–{t.ratio_ci.high:.3f}" if t.ratio_ci.defined else "-"
        rows.append(f"<tr><td>{escape(size_label(sc.size))}</td><td>{_f(t.median_a)}</td>"
                    f"<td>{_f(t.median_b)}</td><td>{_f(t.diff)}</td><td>{dci}</td>"
                    f"<td>{t.ratio:.3f}</td><td>{rci}</td><td class=\"l {sc.verdict}\">"
                    f"{escape(sc.verdict)}{(' (' + escape(sc.note) + ')') if sc.note else ''}"
                    "</td></tr>")
    rows.append("</table></details>")
    return "".join(rows)


def _warnings(report: Report) -> str:
    if not report.warnings:
        return "<p class=ok>None: no load, oversubscription, flags or failures recorded.</p>"
    items = [f"<li>{escape(w)}</li>" for w in report.warnings]
    more = ""
    if len(items) > 8:
        more = (f"<details><summary>{len(items) - 8} more</summary><ul>"
                + "".join(items[8:]) + "</ul></details>")
    return '<div class="warn"><ul>' + "".join(items[:8]) + "</ul>" + more + "</div>"


def _kv(d: dict[str, Any]) -> str:
    rows = []
    for k, v in d.items():
        text = v if isinstance(v, str) else json.dumps(v, sort_keys=True)
        rows.append(f'<tr><th class="l">{escape(str(k))}</th><td class="l"><code>'
                    f"{escape(str(text))}</code></td></tr>")
    return "<table>" + "".join(rows) + "</table>"


def _provenance(report: Report) -> str:
    parts = []
    for c in report.campaigns:
        started = _dt.datetime.fromtimestamp(c["started"]).isoformat(timespec="seconds")
        parts.append(f"<details><summary>campaign {c['id']}: {escape(str(c['name']))} "
                     f"({escape(started)}, {escape(str(c['status']))})</summary>"
                     f"{_kv(dict(c.get('provenance', {})))}</details>")
    rows = ['<table><tr><th>run</th><th class="l">kernel</th><th class="l">configuration</th>'
            '<th>repeat</th><th class="l">status</th><th class="l">selected</th>'
            '<th>core-to-core (ns)</th><th class="l">details</th></tr>']
    for r in [*report.runs, *report.excluded]:
        det = {"command": r.command or "", "settings": r.settings, "notes": r.notes,
               "flags": r.flags, "kernel_meta": r.kernel_meta, "provenance": r.provenance}
        c2c = run_core_to_core_ns(r.provenance)  # the host state, docs/statistics.md
        rows.append(f"<tr><td>{r.id}</td><td class=l>{escape(r.kernel)}</td>"
                    f"<td class=l>{escape(config_label(r))}</td><td>{r.repeat}</td>"
                    f"<td class=l>{escape(r.status)}</td>"
                    f"<td class=l>{escape(r.selected_transport or '?')}</td>"
                    f"<td>{'-' if c2c is None else f'{c2c:.0f}'}</td>"
                    f"<td class=l><details><summary>show</summary>{_kv(det)}</details></td>"
                    "</tr>")
    rows.append("</table>")
    return "".join(parts) + "".join(rows)


def _stats_tables(report: Report) -> str:
    parts = []
    for s in report.series:
        # collectives also carry what OSU prints (fabench.analysis.peer_stats): the columns users
        # check fabench against
        peers = s.metric.source == "time" and any(
            r.times_mean for recs in s.results.values() for r in recs)
        rows = [f"<details><summary>{escape(s.kernel)} {escape(s.label)}: "
                f"{escape(_metric_title(s))}</summary><table><tr><th>size</th><th>N</th>"
                "<th>runs</th><th>median</th><th>95% CI</th><th>mean</th><th>min</th>"
                "<th>P5</th><th>P95</th><th>P99</th><th>CV</th><th>robust CV</th>"
                "<th>repeat CV</th><th>far-out</th>"
                + ("<th title='median over calls of the mean over ranks'>median rank mean</th>"
                   "<th title='loop mean without barriers, averaged over ranks: what osu_* "
                   "prints'>OSU avg</th>" if peers else "") + "</tr>"]
        for p in s.points:
            m = p.summary
            rcv = f"{p.repeat_cv:.2%}" if len(p.run_medians) >= 2 else "-"
            extra = ""
            if peers:
                pf = peer_fields([r for recs in s.results.values() for r in recs
                                  if r.size == p.size])
                extra = "".join(f"<td>{'-' if v is None else _f(v)}</td>"
                                for v in (pf["median_rank_mean"], pf["osu_avg"]))
            rows.append(f"<tr><td>{escape(size_label(p.size))}</td><td>{m.n}</td>"
                        f"<td>{len(p.run_medians)}</td><td>{_f(m.median)}</td><td>{_ci(p)}</td>"
                        f"<td>{_f(m.mean)}</td><td>{_f(m.min)}</td><td>{_f(m.p5)}</td>"
                        f"<td>{_f(m.p95)}</td><td>{_f(m.p99)}</td><td>{m.cv:.2%}</td>"
                        f"<td>{m.robust_cv:.2%}</td><td>{rcv}</td>"
                        f"<td>{m.outliers_low + m.outliers_high}</td>{extra}</tr>")
        rows.append("</table></details>")
        parts.append("".join(rows))
    return "".join(parts)


def _tcp_counters(report: Report) -> list[str]:
    """Each host's TCP events per second over each run (fabench.host.tcpstats)."""
    if not report.tcp:
        return []
    head = "".join(f'<th title="{escape(title)}">{escape(col)}/s</th>'
                   for col, _, title in TCP_COLUMNS)
    rows = ['<p class=muted>The kernel\'s TCP counters inside each host over the run '
            "(nstat's /proc/net/netstat and snmp), per second. Reordering is detected by the "
            "sending host, out-of-order queueing (TCPOFOQueue) by the receiving one.</p>"
            '<table><tr><th>run</th><th class="l">kernel</th><th class="l">configuration</th>'
            f'<th class="l">host</th><th>s</th>{head}</tr>']
    for t in report.tcp:
        cells = "".join(f"<td>{t.per_second(col):.0f}</td>" for col, _, _ in TCP_COLUMNS)
        rows.append(f"<tr><td>{t.run_id}</td><td class=l>{escape(t.kernel)}</td>"
                    f"<td class=l>{escape(t.configuration)}</td><td class=l>"
                    f"{escape(t.host)}</td><td>{t.seconds:.1f}</td>{cells}</tr>")
    rows.append("</table>")
    return ["<h2>TCP counters</h2>", "".join(rows)]


def _prediction(report: Report) -> list[str]:

    section = prediction_section(report.series)
    return ["<h2>Prediction</h2>", section] if section else []


def _trends(report: Report) -> list[str]:
    """Each selected campaign name's series over time (fabench history), changes marked."""
    if not report.history:
        return []
    out = ["<h2>Trends</h2>", f"<style>{TREND_CSS}</style>"]
    for k, h in enumerate(report.history):
        regs = h.regressions
        out.append(f"<p>{escape(h.name)}: {len(h.campaigns)} campaigns, "
                   f'<span class="{"bad" if regs else "ok"}">{len(regs)} regression(s)</span>'
                   f" (<code>fabench history {escape(h.name)}</code>, docs/history.md)</p>")
        out.append('<div class="charts">')
        for i, s in enumerate(h.series):
            out.append(f'<figure class="chartbox"><figcaption>{escape(s.label)} size '
                       f"{s.size}</figcaption>{trend_chart(f'trend-{k}-{i}', s)}"
                       f"{changes_list(s)}</figure>")
        out.append("</div>")
    return out


def render_html(report: Report) -> str:
    when = _dt.datetime.fromtimestamp(report.generated).isoformat(timespec="seconds")
    body = [
        f"<h1>{escape(report.title)}</h1>",
        f"<p class=muted>fabench {escape(__version__)}, generated {escape(when)}; "
        f"{len(report.runs)} runs in {len(report.series)} series. Medians with bootstrap 95% "
        "confidence intervals; nothing dropped (see docs/statistics.md).</p>",
        "<h2>Warnings</h2>", _warnings(report),
        # a section with nothing to show is left out, not printed empty (a matrix report
        # has no point-to-point runs, charts or statistics per size)
        *(["<h2>Summary</h2>", _summary_table(report)]
          if report.table or not report.matrices else []),
        *(["<h2>All-pairs matrix</h2>", matrix_section(report.matrices)]
          if report.matrices else []),
        *(["<h2>Comparisons</h2>", _comparisons(report)] if report.comparisons else []),
        *(["<h2>Charts</h2>", _charts(report)] if report.series else []),
        *_trends(report),
        *_prediction(report),
        *_tcp_counters(report),
        html_section(report.congestion),
        hpl_html(report.hpl),
        *(["<h2>Statistics per size</h2>", _stats_tables(report)] if report.series else []),
        "<h2>Provenance</h2>", _provenance(report),
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(report.title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(body) + f"<script>{_JS}</script></body></html>\n")


def write_html(report: Report, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report), encoding="utf-8")
    return path
