"""The report's matrix section: heatmaps of latency and bandwidth (hosts ordered by switch
group, a colour scale, each value on its cell or on hover, flagged cells outlined, flagged
hosts' rows and columns and flagged group pairs framed), the verdicts, the node table and the
groups, all drawn from the one stored judgement. Inline SVG; every host name goes through
html.escape."""

import math
from html import escape
from typing import Any

LABEL = 70  # px for the host names left of and above the cells
VALUES_UP_TO = 24  # hosts up to which each cell carries its value as text (else: hover)
LINK_KINDS = ("bad link", "asymmetric link", "unreachable")


def _cell(n: int) -> int:
    """Cell size: 64 hosts at 20 px fit the page's 1400 px; never under 14 px (the figure
    scrolls instead), up to 36 px where values are written on the cells."""
    return max(14, min(36, 1300 // max(n, 1)))


def _order(j: dict[str, Any]) -> list[int]:
    hosts = j["hosts"]
    groups = _groups(j)
    order = [hosts.index(h) for g in groups for h in g if h in hosts]
    return order + [i for i in range(len(hosts)) if i not in order]


def _groups(j: dict[str, Any]) -> list[list[str]]:
    judged = j.get("judged_groups") or {}
    return judged.get("members") or (j.get("topology") or {}).get("groups") or [j["hosts"]]


def flags(j: dict[str, Any]) -> tuple[dict[str, str], dict[tuple[str, str], str],
                                      list[tuple[list[str], list[str], str]]]:
    """From the verdicts: flagged hosts (slow node, hosts of a bad leaf, unreachable host),
    flagged directions, and flagged group pairs (bad uplink: the hosts of each side)."""
    hosts: dict[str, str] = {}
    links: dict[tuple[str, str], str] = {}
    blocks: list[tuple[list[str], list[str], str]] = []
    groups = j.get("judged_groups") or {}
    named = dict(zip(groups.get("names", []), groups.get("members", []), strict=False))
    for v in j.get("verdicts", []):
        kind = v["kind"]
        if kind == "bad uplink":
            a, b = named.get(v["src"], []), named.get(v["dst"], [])
            blocks.append((a, b, v["line"]))
        elif v.get("dst") is None:
            for h in v.get("hosts") or [v["src"]]:
                hosts.setdefault(h, v["line"])
        elif kind in LINK_KINDS:
            links.setdefault((v["src"], v["dst"]), v["line"])
    return hosts, links, blocks


def _colour(t: float) -> str:
    """0 (best) .. 1 (worst): green through yellow to red."""
    t = min(1.0, max(0.0, t))
    r = int(255 * min(1.0, 2 * t))
    g = int(200 * min(1.0, 2 * (1 - t)))
    return f"rgb({r},{g},60)"


def _fmt(v: float) -> str:
    return f"{v:.3g}" if v < 1000 else f"{v / 1000:.3g}k"


def _scale_bar(metric: str, ticks: list[str], label: str, x: int, y: int, width: int) -> str:
    """The colour scale: a gradient from best (left) to worst, five ticks."""
    gid = f"grad-{metric}"
    stops = "".join(f'<stop offset="{k * 10}%" stop-color="{_colour(k / 10)}"/>'
                    for k in range(11))
    out = [f'<defs><linearGradient id="{gid}">{stops}</linearGradient></defs>',
           f'<g class="scale"><rect x="{x}" y="{y}" width="{width}" height="10" '
           f'fill="url(#{gid})" stroke="#999"/>']
    for k, tick in enumerate(ticks):
        tx = x + k / (len(ticks) - 1) * width
        out.append(f'<text x="{tx:.0f}" y="{y + 22}" font-size="10" '
                   f'text-anchor="middle">{escape(tick)}</text>')
    out.append(f'<text x="{x + width + 6}" y="{y + 9}" font-size="10">{escape(label)}</text></g>')
    return "".join(out)


# Colour by score: 0 (the class's typical direction) is green, the judge's threshold sits at
# this fraction of the scale (orange), twice the threshold and beyond is red.
_SCORE_TOP = 2.0


def _scored(j: dict[str, Any], metric: str) -> dict[tuple[int, int], float] | None:
    """Each direction's score on `metric` against its switch-pair class, where the matrix
    spans more than one switch group (else None: the values themselves are the picture).
    Across two leaves a healthy direction pays more hops than inside one, so coloured by value
    the healthy cross-leaf cells were as red as a fault (issue 28)."""
    if len(_groups(j)) < 2:
        return None
    out: dict[tuple[int, int], float] = {}
    for i, k, s in j.get("scores", []):
        v = s.get(metric) if isinstance(s, dict) else None
        if isinstance(v, (int, float)) and v == v:
            out[(int(i), int(k))] = float(v)
    return out or None


def heatmap(j: dict[str, Any], metric: str) -> str:
    """One metric as an N x N SVG: row = source, column = destination; each cell carries its
    value. Colour: with several switch groups, the direction's score within its switch-pair
    class (what the judge sees: 0 typical, the threshold orange); with one group, a log scale
    from the best to the worst value measured."""
    key, unit, worse_up = ({"latency": ("latency_us", "us", True),
                            "bandwidth": ("bandwidth_MBps", "MB/s", False)})[metric]
    hosts = j["hosts"]
    vals = {(int(i), int(k)): float(v) for i, k, v in j.get(key, []) if v and v > 0}
    # The cells show the first pass (every direction measured alike); a direction the judge
    # retested in isolation carries that value too, marked, so a first-pass outlier the
    # retest cleared does not read as a fault the verdicts forgot.
    retest = {(int(i), int(k)): float(v) for i, k, v in j.get(f"retest_{key}", [])
              if v and v > 0}
    bad_hosts, bad_links, blocks = flags(j)
    order = _order(j)
    pos = {h: p for p, h in enumerate(order)}
    n = len(order)
    cell = _cell(n)
    lo = math.log(min(vals.values())) if vals else 0.0
    hi = math.log(max(vals.values())) if vals else 1.0
    span = hi - lo or 1.0
    scored = _scored(j, metric)
    limit = float(j.get("threshold") or 3.5) * _SCORE_TOP
    if scored is None:
        # the best value sits left: small latency, large bandwidth
        ticks = [_fmt(math.exp(lo + k / 4 * span) if worse_up else math.exp(hi - k / 4 * span))
                 for k in range(5)]
        legend = f"{unit} (green better, red worse)"
    else:
        ticks = [f"{limit * k / 4:.3g}" for k in range(5)]
        legend = ("score within its switch-pair class (0 typical, "
                  f"{limit / _SCORE_TOP:.3g} the threshold)")
    side = LABEL + n * cell + 4
    top = 34  # the colour scale above the labels
    h_total = side + top
    font = min(11, max(8, cell - 6))
    out = [f'<svg class="heatmap" id="heatmap-{metric}" viewBox="0 0 {side + 190} {h_total}" '
           f'width="{side + 190}" height="{h_total}" role="img" '
           f'aria-label="{metric} heatmap">',
           _scale_bar(metric, ticks, legend, LABEL, 4, min(260, max(120, n * cell))),
           f'<g transform="translate(0 {top})">']
    for p, h in enumerate(order):
        name = escape(hosts[h])
        flagged = hosts[h] in bad_hosts
        weight = ' font-weight="bold" fill="#c22"' if flagged else ""
        mark = "\u25b6 " if flagged else ""
        c = LABEL + p * cell + cell / 2 + 4
        out.append(f'<text x="{LABEL - 4}" y="{c:.0f}" font-size="{font}" '
                   f'text-anchor="end"{weight}>{mark}{name}</text>')
        out.append(f'<text x="{c:.0f}" y="{LABEL - 4}" font-size="{font}" '
                   f'transform="rotate(-60 {c:.0f} {LABEL - 4})"{weight}>{name}</text>')
    for r, src in enumerate(order):
        for c, dst in enumerate(order):
            x, y = LABEL + c * cell, LABEL + r * cell
            v = vals.get((src, dst))
            if src == dst:
                out.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                           'fill="#eee"/>')
                continue
            if v is None:
                out.append(f'<rect class="missing" x="{x}" y="{y}" width="{cell}" '
                           f'height="{cell}" fill="#444"><title>{escape(hosts[src])} -&gt; '
                           f'{escape(hosts[dst])}: not measured</title></rect>')
                continue
            if scored is None:
                t = (math.log(v) - lo) / span
                t = t if worse_up else 1 - t
            else:
                t = scored.get((src, dst), 0.0) / limit
            why = bad_links.get((hosts[src], hosts[dst]))
            again = retest.get((src, dst))
            if why:
                stroke, cls = ' stroke="#000" stroke-width="3"', "cell flagged"
            elif again is not None:
                stroke, cls = (' stroke="#555" stroke-width="2" stroke-dasharray="3 2"',
                               "cell retested")
            else:
                stroke, cls = ' stroke="#fff"', "cell"
            note = "" if again is None else (
                f"; isolated retest {again:.4g} {unit}" + ("" if why else ": cleared"))
            out.append(f'<rect class="{cls}" x="{x}" y="{y}" width="{cell}" height="{cell}" '
                       f'fill="{_colour(t)}"{stroke}><title>'
                       f'{escape(hosts[src])} -&gt; {escape(hosts[dst])}: {v:.4g} {unit}'
                       f'{note}{" (" + escape(why) + ")" if why else ""}</title></rect>')
            if n <= VALUES_UP_TO:
                out.append(f'<text class="val" x="{x + cell / 2:.0f}" y="{y + cell / 2 + 3:.0f}"'
                           f' font-size="{max(7, min(10, cell // 4))}" text-anchor="middle" '
                           f'pointer-events="none">{_fmt(v)}</text>')
    # group boundaries: a line between switch groups
    edge = LABEL + n * cell
    at = 0
    for g in _groups(j)[:-1]:
        at += sum(1 for h in g if h in hosts)
        z = LABEL + at * cell
        out.append(f'<line class="group" x1="{LABEL}" y1="{z}" x2="{edge}" y2="{z}" '
                   'stroke="#333" stroke-width="2"/>'
                   f'<line class="group" x1="{z}" y1="{LABEL}" x2="{z}" y2="{edge}" '
                   'stroke="#333" stroke-width="2"/>')
    # flagged hosts: their row and column framed
    for h, why in bad_hosts.items():
        if h not in hosts:
            continue
        p = pos[hosts.index(h)]
        z = LABEL + p * cell
        out.append(f'<rect class="flagged-row" x="{LABEL}" y="{z}" width="{n * cell}" '
                   f'height="{cell}" fill="none" stroke="#c22" stroke-width="2">'
                   f'<title>{escape(why)}</title></rect>'
                   f'<rect class="flagged-col" x="{z}" y="{LABEL}" width="{cell}" '
                   f'height="{n * cell}" fill="none" stroke="#c22" stroke-width="2">'
                   f'<title>{escape(why)}</title></rect>')
    # flagged group pairs (bad uplink): both blocks framed
    for a, b, why in blocks:
        ra = sorted(pos[hosts.index(h)] for h in a if h in hosts)
        rb = sorted(pos[hosts.index(h)] for h in b if h in hosts)
        if not ra or not rb:
            continue
        for rows, cols in ((ra, rb), (rb, ra)):
            out.append(f'<rect class="flagged-block" x="{LABEL + cols[0] * cell}" '
                       f'y="{LABEL + rows[0] * cell}" width="{len(cols) * cell}" '
                       f'height="{len(rows) * cell}" fill="none" stroke="#c22" '
                       f'stroke-width="3" stroke-dasharray="6 3"><title>{escape(why)}</title>'
                       "</rect>")
    out.append("</g></svg>")
    return "".join(out)


def matrix_section(matrices: list[dict[str, Any]]) -> str:
    parts = []
    for j in matrices:
        hosts = j["hosts"]
        groups = _groups(j)
        verdicts = j.get("verdicts", [])
        bad_hosts, _, _ = flags(j)
        parts.append(f"<h3>Matrix of campaign {int(j['campaign_id'])}: {len(hosts)} hosts, "
                     f"{len(verdicts)} verdict{'' if len(verdicts) == 1 else 's'}</h3>")
        parts.append('<ul class="verdicts">' + "".join(
            f"<li class=bad>{escape(v['line'])}</li>" for v in verdicts) + "</ul>"
            if verdicts else "<p class=ok>no link or node flagged</p>")
        for w in j.get("warnings", []):
            parts.append(f"<p class=warn>{escape(w)}</p>")
        if len(groups) > 1:
            parts.append("<p>Switch groups: " + " | ".join(
                escape(" ".join(g)) for g in groups) + "</p>")
        for line in (j.get("topology") or {}).get("misplaced", []):
            parts.append(f"<p class=warn>{escape(line)}</p>")
        parts.append('<div class="charts">')
        for metric, title in (("latency", "8 B latency, us (row: source)"),
                              ("bandwidth", "bandwidth, MB/s (row: source)")):
            parts.append(f'<figure class="chartbox heatbox" style="max-width:100%;'
                         f'overflow:auto"><figcaption>{title}</figcaption>'
                         f"{heatmap(j, metric)}</figure>")
        parts.append("</div>")
        nodes = j.get("nodes", [])
        judged = j.get("judged_groups") or {}
        where = {h: name for name, g in zip(judged.get("names", []), judged.get("members", []),
                                            strict=False) for h in g} or \
            {h: _group_name(g) for g in groups for h in g}
        parts.append('<table class="nodes"><tr><th class=l>host</th><th class=l>group</th>'
                     "<th>latency score</th><th>bandwidth score</th><th class=l>verdict</th>"
                     "</tr>" + "".join(
                         f"<tr{' class=bad' if n['host'] in bad_hosts else ''}>"
                         f"<td class=l>{escape(str(n['host']))}</td>"
                         f"<td class=l>{escape(where.get(n['host'], ''))}</td>"
                         f"<td>{_score(n.get('latency'))}</td>"
                         f"<td>{_score(n.get('bandwidth'))}</td>"
                         f"<td class=l>{escape(bad_hosts.get(n['host'], '').split(':')[0])}"
                         "</td></tr>" for n in nodes)
                     + "</table>")
        parts.append(f"<p class=muted>Score: modified z-score of log values (Iglewicz &amp; "
                     f"Hoaglin 1993), positive when worse; flagged above {j['threshold']} "
                     "after an isolated retest (docs/matrix.md). A node's score is the median "
                     "of its row and column, each direction relative to its switch-pair class, "
                     "against the directions that do not touch it. Framed in red: the rows "
                     "and columns of flagged hosts and the blocks of a bad uplink; outlined "
                     "in black: flagged directions; dashed grey: retested in isolation and "
                     "cleared (the cell shows the first pass, its title both values).</p>")
    return "\n".join(parts)


def _group_name(g: list[str]) -> str:
    return g[0] if len(g) == 1 else f"{g[0]}..{g[-1]}"


def _score(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"
