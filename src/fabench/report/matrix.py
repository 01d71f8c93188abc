"""The report's matrix section: heatmaps of latency and bandwidth (hosts ordered by inferred
switch group, flagged cells outlined), the verdicts, the node table and the groups. Inline SVG;
every host name goes through html.escape."""

import math
from html import escape
from typing import Any

CELL = 22  # px per cell: 64 hosts fit a 1400 px page's width with labels
LABEL = 60


def _order(j: dict[str, Any]) -> list[int]:
    hosts = j["hosts"]
    groups = (j.get("topology") or {}).get("groups") or [hosts]
    order = [hosts.index(h) for g in groups for h in g if h in hosts]
    return order + [i for i in range(len(hosts)) if i not in order]


def _colour(t: float) -> str:
    """0 (best) .. 1 (worst): green through yellow to red."""
    t = min(1.0, max(0.0, t))
    r = int(255 * min(1.0, 2 * t))
    g = int(200 * min(1.0, 2 * (1 - t)))
    return f"rgb({r},{g},60)"


def heatmap(j: dict[str, Any], metric: str) -> str:
    """One metric as an N x N SVG: row = source, column = destination; colour on a log scale
    from the best to the worst value measured."""
    key, unit, worse_up = ({"latency": ("latency_us", "us", True),
                            "bandwidth": ("bandwidth_MBps", "MB/s", False)})[metric]
    hosts = j["hosts"]
    vals = {(int(i), int(k)): float(v) for i, k, v in j.get(key, []) if v and v > 0}
    flagged = {(v["src"], v["dst"]) for v in j.get("verdicts", []) if v["dst"]}
    slow = {v["src"] for v in j.get("verdicts", []) if v["dst"] is None}
    order = _order(j)
    n = len(order)
    lo = math.log(min(vals.values())) if vals else 0.0
    hi = math.log(max(vals.values())) if vals else 1.0
    span = hi - lo or 1.0
    w = LABEL + n * CELL + 4
    out = [f'<svg class="heatmap" id="heatmap-{metric}" viewBox="0 0 {w} {w}" width="{w}" '
           f'height="{w}" role="img" aria-label="{metric} heatmap">']
    for pos, h in enumerate(order):
        name = escape(hosts[h])
        weight = ' font-weight="bold" fill="#c22"' if hosts[h] in slow else ""
        out.append(f'<text x="{LABEL - 4}" y="{LABEL + pos * CELL + 15}" font-size="11" '
                   f'text-anchor="end"{weight}>{name}</text>')
        out.append(f'<text x="{LABEL + pos * CELL + 15}" y="{LABEL - 4}" font-size="11" '
                   f'transform="rotate(-60 {LABEL + pos * CELL + 15} {LABEL - 4})"{weight}>'
                   f'{name}</text>')
    for r, src in enumerate(order):
        for c, dst in enumerate(order):
            x, y = LABEL + c * CELL, LABEL + r * CELL
            v = vals.get((src, dst))
            if src == dst:
                out.append(f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" '
                           'fill="#eee"/>')
                continue
            if v is None:
                out.append(f'<rect class="missing" x="{x}" y="{y}" width="{CELL}" '
                           f'height="{CELL}" fill="#444"><title>{escape(hosts[src])} -&gt; '
                           f'{escape(hosts[dst])}: not measured</title></rect>')
                continue
            t = (math.log(v) - lo) / span
            bad = (hosts[src], hosts[dst]) in flagged
            stroke = ' stroke="#000" stroke-width="3"' if bad else ' stroke="#fff"'
            cls = "cell flagged" if bad else "cell"
            out.append(f'<rect class="{cls}" x="{x}" y="{y}" width="{CELL}" height="{CELL}" '
                       f'fill="{_colour(t if worse_up else 1 - t)}"{stroke}><title>'
                       f'{escape(hosts[src])} -&gt; {escape(hosts[dst])}: {v:.4g} {unit}'
                       f'{" (flagged)" if bad else ""}</title></rect>')
    out.append("</svg>")
    return "".join(out)


def matrix_section(matrices: list[dict[str, Any]]) -> str:
    parts = []
    for j in matrices:
        hosts = j["hosts"]
        groups = (j.get("topology") or {}).get("groups") or [hosts]
        verdicts = j.get("verdicts", [])
        parts.append(f"<h3>Matrix of campaign {int(j['campaign_id'])}: {len(hosts)} hosts, "
                     f"{len(verdicts)} verdicts</h3>")
        parts.append("<ul>" + "".join(
            f"<li class=bad>{escape(v['line'])}</li>" for v in verdicts) + "</ul>"
            if verdicts else "<p class=ok>no link or node flagged</p>")
        parts.append("<p>Inferred switch groups: " + " | ".join(
            escape(" ".join(g)) for g in groups) + "</p>")
        for line in (j.get("topology") or {}).get("misplaced", []):
            parts.append(f"<p class=warn>{escape(line)}</p>")
        parts.append('<div class="charts">')
        for metric, title in (("latency", "8 B latency, us (row: source)"),
                              ("bandwidth", "bandwidth, MB/s (row: source)")):
            parts.append(f'<figure class="chartbox"><figcaption>{title}</figcaption>'
                         f"{heatmap(j, metric)}</figure>")
        parts.append("</div>")
        nodes = j.get("nodes", [])
        parts.append("<table><tr><th class=l>host</th><th>latency score</th>"
                     "<th>bandwidth score</th></tr>" + "".join(
                         f"<tr><td class=l>{escape(str(n['host']))}</td>"
                         f"<td>{_score(n.get('latency'))}</td>"
                         f"<td>{_score(n.get('bandwidth'))}</td></tr>" for n in nodes)
                     + "</table>")
        parts.append(f"<p class=muted>Score: modified z-score of log values (Iglewicz &amp; "
                     f"Hoaglin 1993), positive when worse; flagged above {j['threshold']} "
                     "after an isolated retest (docs/matrix.md). A node's score is the median "
                     "of its row and column.</p>")
    return "\n".join(parts)


def _score(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"
