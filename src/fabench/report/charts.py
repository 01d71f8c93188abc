"""Inline SVG charts: metric against message size, log-log, one line per configuration with
its confidence band. Generated here so the report needs no network and no JS library."""

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape

from ..util.units import format_number, format_size

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")
W, H = 620, 340
ML, MR, MT, MB = 70, 16, 16, 46  # margins: room for tick labels and axis titles


@dataclass
class Line:
    label: str
    xs: list[int]  # message sizes (bytes)
    ys: list[float]  # medians
    lo: list[float] = field(default_factory=list)  # CI low per point (NaN where undefined)
    hi: list[float] = field(default_factory=list)


def size_label(n: int) -> str:
    return format_size(n, long=True)


def _num(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e4 or a < 1e-2:
        return f"{v:.0e}".replace("e+0", "e").replace("e-0", "e-")
    return f"{v:g}"


def _fin(v: float) -> bool:
    return math.isfinite(v) and v > 0


class _Axes:
    def __init__(self, lines: list[Line]) -> None:
        sizes = sorted({x for ln in lines for x in ln.xs})
        pos = [s for s in sizes if s > 0]
        self.zero_at = math.log2(pos[0]) - 1 if pos else 0.0  # size 0 sits one step left
        xs = [self.xv(s) for s in sizes] or [0.0]
        self.x0, self.x1 = min(xs), max(xs)
        if self.x1 == self.x0:
            self.x0, self.x1 = self.x0 - 1, self.x1 + 1
        ys = [v for ln in lines for v in (*ln.ys, *ln.lo, *ln.hi) if _fin(v)] or [1.0]
        self.y0 = math.floor(math.log10(min(ys)) * 4) / 4
        self.y1 = math.ceil(math.log10(max(ys)) * 4) / 4
        if self.y1 - self.y0 < 0.5:
            mid = (self.y0 + self.y1) / 2
            self.y0, self.y1 = mid - 0.25, mid + 0.25
        self.sizes = sizes

    def xv(self, size: int) -> float:
        return math.log2(size) if size > 0 else self.zero_at

    def px(self, size: int) -> float:
        return ML + (self.xv(size) - self.x0) / (self.x1 - self.x0) * (W - ML - MR)

    def py(self, v: float) -> float:
        return MT + (self.y1 - math.log10(v)) / (self.y1 - self.y0) * (H - MT - MB)

    def yticks(self) -> list[float]:
        lo, hi = math.floor(self.y0), math.ceil(self.y1)
        steps = (1,) if self.y1 - self.y0 > 2.5 else (1, 2, 5)
        ticks = [m * 10.0 ** e for e in range(lo, hi + 1) for m in steps]
        return [t for t in ticks if self.y0 - 1e-9 <= math.log10(t) <= self.y1 + 1e-9]

    def xticks(self) -> list[int]:
        if len(self.sizes) <= 12:
            return self.sizes
        stride = math.ceil(len(self.sizes) / 12)
        return self.sizes[::stride]


def line_chart(chart_id: str, title: str, y_title: str, lines: list[Line],
               x_title: str = "message size (log)",
               x_label: Callable[[int], str] = size_label) -> str:
    """An <svg> with axes, a CI band (polygon) and a median line (path + markers) per line;
    x on a log2 axis (message sizes unless `x_title` and `x_label` say otherwise)."""
    ax = _Axes(lines)
    out = [f'<svg class="chart" id="{escape(chart_id)}" viewBox="0 0 {W} {H}" width="{W}" '
           f'height="{H}" role="img" aria-label="{escape(title)}" '
           f'xmlns="http://www.w3.org/2000/svg">',
           f"<title>{escape(title)}</title>",
           f'<rect x="{ML}" y="{MT}" width="{W - ML - MR}" height="{H - MT - MB}" '
           f'class="plot"/>']
    for t in ax.yticks():
        y = ax.py(t)
        out.append(f'<line class="grid" x1="{ML}" x2="{W - MR}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{ML - 6}" y="{y + 4:.1f}" '
                   f'text-anchor="end">{escape(_num(t))}</text>')
    for s in ax.xticks():
        x = ax.px(s)
        out.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{MT}" y2="{H - MB}"/>'
                   f'<text class="tick" x="{x:.1f}" y="{H - MB + 14}" text-anchor="end" '
                   f'transform="rotate(-35 {x:.1f} {H - MB + 14})">'
                   f"{escape(x_label(s))}</text>")
    out.append(f'<text class="axis" x="{(ML + W - MR) / 2}" y="{H - 4}" '
               f'text-anchor="middle">{escape(x_title)}</text>'
               f'<text class="axis" x="14" y="{(MT + H - MB) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {(MT + H - MB) / 2})">{escape(y_title)}</text>')
    for i, ln in enumerate(lines):
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<g class="series" data-series="{i}" data-label="{escape(ln.label)}">')
        band = [(x, lo, hi) for x, lo, hi in zip(ln.xs, ln.lo, ln.hi, strict=False)
                if _fin(lo) and _fin(hi)]
        if band:
            if len(band) == 1:  # a single size: a whisker instead of a band
                x, lo, hi = band[0]
                out.append(f'<line class="ci" x1="{ax.px(x):.1f}" x2="{ax.px(x):.1f}" '
                           f'y1="{ax.py(lo):.1f}" y2="{ax.py(hi):.1f}" stroke="{color}"/>')
            else:
                pts = [f"{ax.px(x):.1f},{ax.py(lo):.1f}" for x, lo, _ in band]
                pts += [f"{ax.px(x):.1f},{ax.py(hi):.1f}" for x, _, hi in reversed(band)]
                out.append(f'<polygon class="band" points="{" ".join(pts)}" fill="{color}"/>')
        pts = [(x, y) for x, y in zip(ln.xs, ln.ys, strict=False) if _fin(y)]
        if pts:
            d = " ".join(f"{'M' if j == 0 else 'L'}{ax.px(x):.1f},{ax.py(y):.1f}"
                         for j, (x, y) in enumerate(pts))
            out.append(f'<path class="median" d="{d}" stroke="{color}"/>')
            for x, y in pts:
                k = ln.xs.index(x)
                ci = ""
                if k < len(ln.lo) and _fin(ln.lo[k]) and _fin(ln.hi[k]):
                    ci = f" (95% CI {format_number(ln.lo[k])}-{format_number(ln.hi[k])})"
                out.append(f'<circle cx="{ax.px(x):.1f}" cy="{ax.py(y):.1f}" r="2.5" '
                           f'fill="{color}"><title>{escape(ln.label)} {escape(x_label(x))}: '
                           f"{format_number(y)}{escape(ci)}</title></circle>")
        out.append("</g>")
    out.append("</svg>")
    legend = ['<ul class="legend">']
    for i, ln in enumerate(lines):
        color = PALETTE[i % len(PALETTE)]
        legend.append(f'<li data-series="{i}"><span class="swatch" style="background:{color}">'
                      f"</span>{escape(ln.label)}</li>")
    legend.append("</ul>")
    return (f'<figure class="chartbox" data-chart="{escape(chart_id)}">'
            f"<figcaption>{escape(title)}</figcaption>{''.join(out)}{''.join(legend)}"
            "</figure>")
