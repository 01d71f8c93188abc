"""Judge an all-pairs matrix: a robust score per link and per node, suspects, verdicts.

The score is Iglewicz and Hoaglin's modified z-score (B. Iglewicz and D. C. Hoaglin, "How to
Detect and Handle Outliers", ASQC Quality Press, 1993): M = 0.6745 (x - median) / MAD, with
|M| > 3.5 a potential outlier. Why this and not a fixed ratio to the best link (ClusterKit's
"latency > 2.1x the minimum, bandwidth < 93 % of the maximum"): the median and MAD come from
the links themselves, so the same rule holds on a 100 Gbit/s fabric and on a testbed of veth
pairs, one extreme link cannot move the yardstick (both have a 50 % breakdown point: up to half
the links may be bad), and the score is in units of the fabric's own spread, a confidence a
fixed ratio does not carry. Scores are taken on log values: a link at half the bandwidth is as
far from the median as one at twice the latency, and the spread is relative. Where MAD is 0
(more than half the links identical, as in a simulator) the same authors' fallback divides by
1.253314 x the mean absolute deviation instead.

Suspects (a link or node scoring above the threshold) are measured again, one pair at a time
(the retest, as ClusterKit retests), beside a few reference links that scored near the median:
the references give the retest's own centre (isolated runs are faster than concurrent ones),
the first pass keeps the spread. A suspect becomes a verdict only when the retest scores above
the threshold too; each verdict carries both values, the threshold and both scores.

Ping-pong latency is one round trip over both directions, so asymmetry is judged on bandwidth.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..records import PairRecord

THRESHOLD = 3.5  # Iglewicz & Hoaglin (1993): |modified z| > 3.5 is a potential outlier
_K = 0.6745  # Phi^-1(0.75): MAD / 0.6745 estimates sigma for normal data
_MEANAD = 1.253314  # sqrt(pi / 2): MeanAD x 1.2533 estimates sigma for normal data
REFERENCES = 6  # reference links measured beside the suspects in the retest
METRICS = ("latency", "bandwidth")
# Which way is worse: latency up, bandwidth down.
_WORSE_UP = {"latency": True, "bandwidth": False, "asymmetry": True}
_UNITS = {"latency": "us", "bandwidth": "MB/s", "asymmetry": "x"}

Link = tuple[int, int]


@dataclass(frozen=True)
class Scale:
    """Robust centre and spread of log values: the yardstick of a score."""

    centre: float
    spread: float  # MAD / 0.6745 (or 1.2533 MeanAD), in log units

    @classmethod
    def of(cls, values: Iterable[float]) -> Scale:
        logs = [math.log(v) for v in values if v > 0 and math.isfinite(v)]
        if not logs:
            return cls(0.0, 0.0)
        med = statistics.median(logs)
        dev = [abs(x - med) for x in logs]
        mad = statistics.median(dev)
        spread = mad / _K if mad > 0 else _MEANAD * statistics.fmean(dev)
        return cls(med, spread)

    def recentred(self, values: Iterable[float]) -> Scale:
        """The same spread around the median of other values (the retest's references)."""
        logs = [math.log(v) for v in values if v > 0 and math.isfinite(v)]
        return Scale(statistics.median(logs), self.spread) if logs else self

    def score(self, value: float, worse_up: bool) -> float:
        """Modified z-score, positive when worse."""
        if not (value > 0 and math.isfinite(value)):
            return math.inf
        d = math.log(value) - self.centre
        if not worse_up:
            d = -d
        if self.spread == 0:
            return 0.0 if d == 0 else math.copysign(math.inf, d)
        return d / self.spread

    def limit(self, worse_up: bool) -> float:
        """The value that scores THRESHOLD."""
        step = THRESHOLD * self.spread
        return math.exp(self.centre + step if worse_up else self.centre - step)


@dataclass(frozen=True)
class Evidence:
    metric: str  # latency, bandwidth or asymmetry
    first: float
    threshold: float
    score: float
    retest: float | None = None
    retest_score: float | None = None

    def text(self) -> str:
        unit = _UNITS[self.metric]
        s = (f"{self.metric} {self.first:.4g} {unit}, threshold {self.threshold:.4g} {unit}, "
             f"score {self.score:.1f}")
        if self.retest is not None:
            s += f"; retest {self.retest:.4g} {unit}, score {self.retest_score:.1f}"
        return s


@dataclass(frozen=True)
class Verdict:
    kind: str  # bad link, asymmetric link, slow node, unreachable
    src: str
    dst: str | None = None
    evidence: tuple[Evidence, ...] = ()

    @property
    def line(self) -> str:
        where = f"{self.src} -> {self.dst}" if self.dst else self.src
        why = "; ".join(e.text() for e in self.evidence)
        return f"{self.kind} {where}" + (f": {why}" if why else "")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "src": self.src, "dst": self.dst, "line": self.line,
                "evidence": [asdict(e) for e in self.evidence]}


@dataclass
class Matrix:
    """Per ordered pair of ranks, the median latency (us) and bandwidth (MB/s) of one pass."""

    hosts: list[str]
    latency: dict[Link, float] = field(default_factory=dict)
    bandwidth: dict[Link, float] = field(default_factory=dict)

    @classmethod
    def of(cls, hosts: list[str], pairs: Iterable[PairRecord]) -> Matrix:
        m = cls(list(hosts))
        for p in pairs:
            m.latency[(p.src, p.dst)] = p.latency
            m.bandwidth[(p.src, p.dst)] = p.bandwidth
        return m

    def values(self, metric: str) -> dict[Link, float]:
        return self.latency if metric == "latency" else self.bandwidth

    def asymmetry(self) -> dict[Link, float]:
        """bw(j->i) / bw(i->j) per measured direction i->j: above 1 when i->j is the slow
        one."""
        bw = self.bandwidth
        return {(i, j): bw[(j, i)] / v for (i, j), v in bw.items()
                if (j, i) in bw and v > 0 and bw[(j, i)] > 0}


@dataclass(frozen=True)
class Scales:
    by_metric: Mapping[str, Scale]

    @classmethod
    def of(cls, m: Matrix) -> Scales:
        sc = {k: Scale.of(m.values(k).values()) for k in METRICS}
        # asymmetry is a ratio around 1: its centre stays at log 1 = 0
        asym = list(m.asymmetry().values())
        logs = [abs(math.log(a)) for a in asym if a > 0]
        if logs:
            mad = statistics.median(logs)
            sc["asymmetry"] = Scale(0.0, mad / _K if mad > 0 else
                                    _MEANAD * statistics.fmean(logs))
        else:
            sc["asymmetry"] = Scale(0.0, 0.0)
        return cls(sc)

    def score(self, metric: str, value: float) -> float:
        return self.by_metric[metric].score(value, _WORSE_UP[metric])

    def limit(self, metric: str) -> float:
        return self.by_metric[metric].limit(_WORSE_UP[metric])


def link_scores(m: Matrix, scales: Scales) -> dict[Link, dict[str, float]]:
    out: dict[Link, dict[str, float]] = {}
    asym = m.asymmetry()
    for link in sorted(set(m.latency) | set(m.bandwidth)):
        s = {k: scales.score(k, m.values(k).get(link, math.nan)) for k in METRICS}
        if link in asym:
            s["asymmetry"] = scales.score("asymmetry", asym[link])
        out[link] = s
    return out


def node_scores(n: int, scores: Mapping[Link, Mapping[str, float]]) -> list[dict[str, float]]:
    """Per rank and metric, the median score of its row and column (its links both ways)."""
    # one sweep over the links, not one per host: at 1024 hosts there are a million of them
    mine: list[dict[str, list[float]]] = [{k: [] for k in METRICS} for _ in range(n)]
    for (i, j), s in scores.items():
        for k in METRICS:
            mine[i][k].append(s[k])
            mine[j][k].append(s[k])
    return [{k: statistics.median(v[k]) if v[k] else 0.0 for k in METRICS} for v in mine]


@dataclass(frozen=True)
class Suspects:
    links: frozenset[Link]
    nodes: frozenset[int]
    references: tuple[Link, ...]

    def retest_pairs(self, n: int) -> list[Link]:
        """Every direction to measure again: suspect links, all links of suspect nodes, and
        the references."""
        # both directions of a suspect link: asymmetry is judged on the pair
        want = set(self.links) | {(j, i) for i, j in self.links} | set(self.references)
        for h in self.nodes:
            want |= {(h, o) for o in range(n) if o != h} | {(o, h) for o in range(n) if o != h}
        return sorted(want)

    @property
    def empty(self) -> bool:
        return not self.links and not self.nodes


def expected_links(n: int, asked: Iterable[Link] | None = None) -> set[Link]:
    return set(asked) if asked is not None else \
        {(i, j) for i in range(n) for j in range(n) if i != j}


def find_suspects(m: Matrix, scales: Scales | None = None) -> Suspects:
    scales = scales or Scales.of(m)
    scores = link_scores(m, scales)
    n = len(m.hosts)
    nodes = frozenset(h for h, s in enumerate(node_scores(n, scores))
                      if max(s.values()) > THRESHOLD)
    links = frozenset(link for link, s in scores.items()
                      if max(s.values()) > THRESHOLD and not set(link) & nodes)
    # References: the links closest to the median on both metrics, neither a suspect (either
    # direction) nor touching a suspect node. A reference may share a host with a suspect
    # link: on 4 hosts every link does, and a retest without references has no centre of
    # its own.
    shunned = set(links) | {(j, i) for i, j in links}
    calm = sorted((max(abs(s["latency"]), abs(s["bandwidth"])), link)
                  for link, s in scores.items() if link not in shunned and not set(link) & nodes)
    return Suspects(links, nodes, tuple(link for _, link in calm[:REFERENCES]))


@dataclass
class Judgement:
    hosts: list[str]
    verdicts: list[Verdict]
    first: Matrix
    scales: Scales
    scores: dict[Link, dict[str, float]]
    nodes: list[dict[str, float]]
    suspects: Suspects
    retest: Matrix | None = None
    cleared: list[str] = field(default_factory=list)  # suspects the retest cleared

    @property
    def flagged(self) -> bool:
        return bool(self.verdicts)

    def to_json(self) -> dict[str, Any]:
        return _finite(self._json())

    def _json(self) -> dict[str, Any]:
        def links(d: Mapping[Link, float]) -> list[list[float]]:
            return [[i, j, v] for (i, j), v in sorted(d.items())]
        return {
            "hosts": self.hosts, "threshold": THRESHOLD,
            "method": "modified z-score of log values (Iglewicz & Hoaglin 1993)",
            "verdicts": [v.to_json() for v in self.verdicts],
            "latency_us": links(self.first.latency),
            "bandwidth_MBps": links(self.first.bandwidth),
            "retest_latency_us": links(self.retest.latency) if self.retest else [],
            "retest_bandwidth_MBps": links(self.retest.bandwidth) if self.retest else [],
            "scores": [[i, j, s] for (i, j), s in sorted(self.scores.items())],
            "nodes": [{"host": h, **s} for h, s in zip(self.hosts, self.nodes, strict=True)],
            "scales": {k: asdict(v) for k, v in self.scales.by_metric.items()},
            "suspects": {"links": sorted(self.suspects.links),
                         "nodes": sorted(self.suspects.nodes),
                         "references": list(self.suspects.references)},
            "cleared": self.cleared,
        }


def _evidence(metric: str, first: float, scales: Scales, retest: float | None,
              rscales: Scales | None) -> Evidence:
    rs = rscales.score(metric, retest) if (retest is not None and rscales) else None
    return Evidence(metric, first, scales.limit(metric), scales.score(metric, first), retest, rs)


def _retest_scales(scales: Scales, retest: Matrix, refs: tuple[Link, ...]) -> Scales:
    """The first pass's spread around the retest's own centre (its reference links)."""
    by = dict(scales.by_metric)
    for k in METRICS:
        ref = [retest.values(k)[link] for link in refs if link in retest.values(k)]
        if ref:
            by[k] = scales.by_metric[k].recentred(ref)
    return Scales(by)


def judge(first: Matrix, retest: Matrix | None = None, suspects: Suspects | None = None,
          asked: Iterable[Link] | None = None) -> Judgement:
    """Verdicts from a first pass and (optionally) its retest. Without a retest every suspect
    is a verdict on first-pass evidence alone."""
    n = len(first.hosts)
    name = first.hosts
    scales = Scales.of(first)
    scores = link_scores(first, scales)
    nodes = node_scores(n, scores)
    suspects = suspects or find_suspects(first, scales)
    rscales = _retest_scales(scales, retest, suspects.references) if retest else None
    verdicts: list[Verdict] = []
    cleared: list[str] = []

    # Unreachable: directions the pass should have measured and did not.
    expected = expected_links(n, asked)
    missing = expected - set(first.latency)
    dead = _dead(expected, missing)
    for h in sorted(dead):
        verdicts.append(Verdict("unreachable", name[h]))
    for i, j in sorted(missing):
        if i not in dead and j not in dead:
            verdicts.append(Verdict("unreachable", name[i], name[j]))

    def confirmed(metric: str, link: Link) -> tuple[bool, Evidence]:
        retest_v = retest.values(metric).get(link) if retest else None
        ev = _evidence(metric, first.values(metric)[link], scales, retest_v, rscales)
        if retest is None:
            return True, ev
        return (ev.retest_score is not None and ev.retest_score > THRESHOLD), ev

    asymmetry = first.asymmetry()
    rasymmetry = retest.asymmetry() if retest is not None else {}
    touching: dict[int, list[Link]] = {h: [] for h in suspects.nodes}
    for link in (first.latency.keys() | first.bandwidth.keys()) if touching else ():
        for h in {link[0], link[1]} & touching.keys():
            touching[h].append(link)
    slow = set()
    for h in sorted(suspects.nodes):
        evs = []
        for k in METRICS:
            if nodes[h][k] <= THRESHOLD:
                continue
            mine = [link for link in touching[h] if link in first.values(k)]
            rvals = [retest.values(k)[link] for link in mine
                     if retest and link in retest.values(k)]
            fv = statistics.median([first.values(k)[link] for link in mine])
            rv = statistics.median(rvals) if rvals else None
            ev = _evidence(k, fv, scales, rv, rscales)
            if retest is None or (ev.retest_score is not None and ev.retest_score > THRESHOLD):
                evs.append(ev)
        if evs:
            slow.add(h)
            verdicts.append(Verdict("slow node", name[h], None, tuple(evs)))
        else:
            cleared.append(f"node {name[h]}")

    for link in sorted(suspects.links):
        if set(link) & slow:
            continue
        i, j = link
        evs, asym = [], None
        for k in METRICS:
            if scores[link][k] > THRESHOLD:
                ok, ev = confirmed(k, link)
                if ok:
                    evs.append(ev)
        if scores[link].get("asymmetry", 0.0) > THRESHOLD:
            ratio = asymmetry[link]
            rv = rasymmetry.get(link) if rscales is not None else None
            ev = Evidence("asymmetry", ratio, scales.limit("asymmetry"),
                          scales.score("asymmetry", ratio), rv,
                          scales.score("asymmetry", rv) if rv is not None else None)
            if retest is None or (ev.retest_score is not None and ev.retest_score > THRESHOLD):
                asym = ev
        if evs:
            verdicts.append(Verdict("bad link", name[i], name[j], tuple(evs)))
        if asym is not None:
            verdicts.append(Verdict("asymmetric link", name[i], name[j], (asym,)))
        if not evs and asym is None:
            cleared.append(f"link {name[i]} -> {name[j]}")
    return Judgement(list(name), verdicts, first, scales, scores, nodes, suspects, retest,
                     cleared)


def _dead(expected: set[Link], missing: set[Link]) -> set[int]:
    """Hosts with links expected and none of them measured."""
    links: dict[int, int] = {}
    lost: dict[int, int] = {}
    for i, j in expected:
        links[i] = links.get(i, 0) + 1
        links[j] = links.get(j, 0) + 1
    for i, j in missing:
        lost[i] = lost.get(i, 0) + 1
        lost[j] = lost.get(j, 0) + 1
    return {h for h, c in links.items() if lost.get(h, 0) == c}


def _finite(x: Any) -> Any:
    """JSON has no infinity: a score without a value (a direction not measured) is null."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x
