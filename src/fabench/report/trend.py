"""Trend charts of a history (fabench history --html): each metric over its nights, the
median with its 95 % interval, the changes marked where they start. Inline SVG, as the
report's other charts, so the page needs no network."""

import datetime as _dt
import math
from html import escape
from pathlib import Path

from .. import __version__
from ..analysis.history import History, Series
from ..util.units import format_number

W, H = 620, 300
ML, MR, MT, MB = 70, 16, 22, 58
_COLORS = {"regression": "#c22", "improvement": "#2a7"}

# The charts' own rules (the report's page has the rest).
TREND_CSS = """
svg.trend .plot{fill:#fafafa;stroke:#999}svg.trend .grid{stroke:#e4e4e4}
svg.trend .tick{font-size:10px;fill:#444}svg.trend .axis{font-size:11px;fill:#222}
svg.trend .ci{stroke:#1f77b4;stroke-width:3;opacity:.35}
svg.trend .median{fill:none;stroke:#1f77b4;stroke-width:1.6}
svg.trend .change{stroke-width:1.5;stroke-dasharray:4 3}
svg.trend .changelabel{font-size:11px}
ul.changes{font-size:13px;margin:4px 0 0 0;padding-left:18px}
"""
_CSS = TREND_CSS + """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1400px;color:#222;
padding:0 16px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:3px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure.chartbox{margin:0;border:1px solid #ddd;padding:6px;background:#fff;max-width:640px}
figcaption{font-weight:600;margin-bottom:4px}
.muted{color:#777}.bad{color:#c22}.good{color:#2a7}
code{font-size:12px;background:#f6f6f6}
"""


def _log_ticks(y0: float, y1: float) -> list[float]:
    lo, hi = math.floor(y0), math.ceil(y1)
    steps = (1,) if y1 - y0 > 2.5 else (1, 2, 5)
    ticks = [m * 10.0 ** e for e in range(lo, hi + 1) for m in steps]
    return [t for t in ticks if y0 - 1e-9 <= math.log10(t) <= y1 + 1e-9]


def trend_chart(chart_id: str, s: Series) -> str:
    """One metric over the nights (x: the campaigns in order, y: log scale)."""
    vals = [v for n in s.nights for v in (n.median, n.low, n.high)
            if math.isfinite(v) and v > 0] or [1.0]
    y0 = math.floor(math.log10(min(vals)) * 4) / 4
    y1 = math.ceil(math.log10(max(vals)) * 4) / 4
    if y1 - y0 < 0.5:
        mid = (y0 + y1) / 2
        y0, y1 = mid - 0.25, mid + 0.25
    n = len(s.nights)

    def px(i: float) -> float:
        return ML + (i + 0.5) / max(n, 1) * (W - ML - MR)

    def py(v: float) -> float:
        return MT + (y1 - math.log10(v)) / (y1 - y0) * (H - MT - MB)

    title = f"{s.label} size {s.size}: {s.metric.name} ({s.metric.unit})"
    out = [f'<svg class="trend" id="{escape(chart_id)}" viewBox="0 0 {W} {H}" width="{W}" '
           f'height="{H}" role="img" aria-label="{escape(title)}" '
           f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>',
           f'<rect x="{ML}" y="{MT}" width="{W - ML - MR}" height="{H - MT - MB}" '
           'class="plot"/>']
    for t in _log_ticks(y0, y1):
        y = py(t)
        out.append(f'<line class="grid" x1="{ML}" x2="{W - MR}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{ML - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f"{escape(format_number(t))}</text>")
    stride = max(1, math.ceil(n / 14))
    for i, night in enumerate(s.nights):
        if i % stride:
            continue
        x = px(i)
        label = f"c{night.campaign_id} {_dt.datetime.fromtimestamp(night.started):%m-%d}"
        out.append(f'<text class="tick" x="{x:.1f}" y="{H - MB + 14}" text-anchor="end" '
                   f'transform="rotate(-35 {x:.1f} {H - MB + 14})">{escape(label)}</text>')
    out.append(f'<text class="axis" x="{(ML + W - MR) / 2}" y="{H - 4}" '
               'text-anchor="middle">campaign (date)</text>'
               f'<text class="axis" x="14" y="{(MT + H - MB) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(MT + H - MB) / 2})">'
               f"{escape(f'{s.metric.name} ({s.metric.unit}, log)')}</text>")
    for ch in s.changes:
        x = (px(ch.index - 1) + px(ch.index)) / 2
        color = _COLORS.get(ch.kind, "#555")
        pct = (ch.ratio - 1) * 100
        out.append(f'<line class="change" data-kind="{ch.kind}" x1="{x:.1f}" x2="{x:.1f}" '
                   f'y1="{MT}" y2="{H - MB}" stroke="{color}"/>'
                   f'<text class="changelabel" x="{x + 3:.1f}" y="{MT + 12}" fill="{color}">'
                   f"{escape(f'{ch.kind} {pct:+.0f} %')}</text>")
    pts = []
    for i, night in enumerate(s.nights):
        if math.isfinite(night.low) and math.isfinite(night.high) and night.low > 0:
            out.append(f'<line class="ci" x1="{px(i):.1f}" x2="{px(i):.1f}" '
                       f'y1="{py(night.low):.1f}" y2="{py(night.high):.1f}"/>')
        if night.median > 0:
            pts.append((i, night))
    if pts:
        d = " ".join(f"{'M' if j == 0 else 'L'}{px(i):.1f},{py(nt.median):.1f}"
                     for j, (i, nt) in enumerate(pts))
        out.append(f'<path class="median" d="{d}"/>')
        for i, nt in pts:
            out.append(f'<circle cx="{px(i):.1f}" cy="{py(nt.median):.1f}" r="2.5" '
                       f'fill="#1f77b4"><title>c{nt.campaign_id} {escape(nt.date)}: '
                       f"{escape(format_number(nt.median))} (95% CI "
                       f"{escape(format_number(nt.low))}-{escape(format_number(nt.high))})"
                       "</title></circle>")
    out.append("</svg>")
    return "".join(out)


def changes_list(s: Series) -> str:
    if not s.changes:
        return '<p class="muted">no change called</p>'
    items = []
    for ch in s.changes:
        pct, lo, hi = ch.percent
        cls = "bad" if ch.kind == "regression" else "ok good"
        changed = "".join(f"<li><code>{escape(c)}</code></li>" for c in ch.changed[:12]) or \
            '<li class="muted">nothing recorded in provenance changed with it</li>'
        items.append(
            f'<li><span class="{cls}">{escape(ch.kind)}</span> at c{ch.campaign_id} '
            f"({escape(ch.date)}): {escape(format_number(ch.before))} &rarr; "
            f"{escape(format_number(ch.after))} {escape(s.metric.unit)}, {pct:+.1f} % "
            f"[{lo:+.1f}, {hi:+.1f}], p = {ch.p_value:.3f}<ul>{changed}</ul></li>")
    return f'<ul class="changes">{"".join(items)}</ul>'


def history_html(h: History) -> str:
    title = f"fabench history: {h.name}"
    body = [f"<h1>{escape(title)}</h1>",
            f'<p class="muted">fabench {escape(__version__)}; {len(h.campaigns)} campaigns; '
            f"{escape(str(h.method['test']))}; alpha {h.method['alpha']}, tolerance "
            f"{h.method['tolerance'] * 100:g} % (docs/history.md).</p>"]
    if len(h.campaigns) < 2:
        body.append("<p>No history yet: a series needs two or more campaigns.</p>")
    else:
        regs = h.regressions
        body.append(f'<p class="{"bad" if regs else "good"}">{len(regs)} regression(s) over '
                    f"{len(h.series)} metric(s).</p>")
        body.append('<h2>Trends</h2><div class="charts">')
        for i, s in enumerate(h.series):
            body.append(f'<figure class="chartbox"><figcaption>{escape(s.label)} size '
                        f"{s.size}</figcaption>{trend_chart(f'trend-{i}', s)}"
                        f"{changes_list(s)}</figure>")
        body.append("</div>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


def write_history_html(h: History, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(history_html(h), encoding="utf-8")
    return path
