"""Two judged matrices of the same hosts (before and after a repair): per link, what changed.

Per direction measured in both: the bandwidth and latency ratio (after / before) and a verdict:
`fixed` (flagged before, not after), `broken` (flagged after only), `still bad`, or, for a
direction flagged in neither, `changed` when its score moved by more than the threshold (3.5,
the judge's: a move the size of an outlier) and `same` otherwise. Nodes alike (slow node,
unreachable host).
"""

from dataclasses import dataclass
from typing import Any

from .judge import THRESHOLD


@dataclass(frozen=True)
class LinkChange:
    src: str
    dst: str | None
    verdict: str  # fixed, broken, still bad, changed, same
    before: str  # the verdict line before, or ""
    after: str
    bandwidth_ratio: float | None = None
    latency_ratio: float | None = None

    @property
    def line(self) -> str:
        where = f"{self.src} -> {self.dst}" if self.dst else self.src
        ratios = []
        if self.bandwidth_ratio is not None:
            ratios.append(f"bandwidth x{self.bandwidth_ratio:.3g}")
        if self.latency_ratio is not None:
            ratios.append(f"latency x{self.latency_ratio:.3g}")
        return f"{self.verdict} {where}" + (f" ({', '.join(ratios)})" if ratios else "")


def _flags(j: dict[str, Any]) -> dict[tuple[str, str | None], str]:
    out: dict[tuple[str, str | None], str] = {}
    for v in j["verdicts"]:
        out.setdefault((v["src"], v["dst"]), v["line"])
    return out


def _values(j: dict[str, Any], key: str) -> dict[tuple[str, str], float]:
    h = j["hosts"]
    return {(h[i], h[k]): v for i, k, v in j.get(key, []) if v}


def _scores(j: dict[str, Any]) -> dict[tuple[str, str], dict[str, float]]:
    h = j["hosts"]
    return {(h[i], h[k]): s for i, k, s in j.get("scores", [])}


def _ratio(d0: dict[tuple[str, str], float], d1: dict[tuple[str, str], float],
           key: tuple[str, str | None]) -> float | None:
    src, dst = key
    if dst is None or (src, dst) not in d0 or (src, dst) not in d1:
        return None
    return d1[(src, dst)] / d0[(src, dst)]


def _moved(s0: dict[tuple[str, str], dict[str, float]], s1: dict[tuple[str, str], dict[str, float]],
           key: tuple[str, str | None]) -> float:
    src, dst = key
    if dst is None:
        return 0.0
    a, b = s0.get((src, dst)) or {}, s1.get((src, dst)) or {}
    return max(abs((b.get(m) or 0.0) - (a.get(m) or 0.0)) for m in ("latency", "bandwidth"))


def diff(before: dict[str, Any], after: dict[str, Any]) -> list[LinkChange]:
    fb, fa = _flags(before), _flags(after)
    bw0, bw1 = _values(before, "bandwidth_MBps"), _values(after, "bandwidth_MBps")
    l0, l1 = _values(before, "latency_us"), _values(after, "latency_us")
    s0, s1 = _scores(before), _scores(after)
    keys: set[tuple[str, str | None]] = set(fb) | set(fa) | (set(bw0) & set(bw1))
    out = []
    for key in sorted(keys, key=lambda k: (k[0], k[1] or "")):
        b, a = fb.get(key, ""), fa.get(key, "")
        if b and a:
            verdict = "still bad"
        elif b:
            verdict = "fixed"
        elif a:
            verdict = "broken"
        else:
            verdict = "changed" if _moved(s0, s1, key) > THRESHOLD else "same"
        out.append(LinkChange(key[0], key[1], verdict, b, a, _ratio(bw0, bw1, key),
                              _ratio(l0, l1, key)))
    return out


def diff_lines(before: dict[str, Any], after: dict[str, Any], show_all: bool = False
               ) -> tuple[list[str], int]:
    """The lines `fabench matrix compare` and `fabench compare` print for two matrices, and the
    exit status: 3 when the second matrix has a verdict (still bad, or broken), as `matrix`."""
    changes = diff(before, after)
    out = [c.line for c in changes if show_all or c.verdict != "same"]
    same = sum(c.verdict == "same" for c in changes)
    out.append(f"# {len(changes)} directions and nodes compared, {same} the same")
    return out, 3 if after["verdicts"] else 0
