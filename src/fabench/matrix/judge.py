"""Judge an all-pairs matrix: a robust score per link, node, leaf switch and uplink; suspects;
verdicts.

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

A fault that is correlated owns a large share of the links: a slow host owns 2(N-1) of the
N(N-1) directions (a third at 6 hosts), a leaf switch with a bad uplink all of its hosts'
directions to the rest. Scored against all links, such a fault moves the median and MAD toward
itself and hides. So each level is scored against a reference that leaves the suspect out
(the leave-one-out, or jackknife, reference of robust statistics: F. R. Hampel, E. M. Ronchetti,
P. J. Rousseeuw, W. A. Stahel, "Robust Statistics: The Approach Based on Influence Functions",
Wiley 1986, ch. 1; P. J. Rousseeuw and A. M. Leroy, "Robust Regression and Outlier Detection",
Wiley 1987, on masking by clustered outliers), top down:

- leaf (switch group, declared or inferred, three groups or more): the median of the group's
  links to the other groups against the links between the other groups; a bad leaf is one
  whose every group pair scores above the threshold (all its hosts slow to the rest);
- uplink (one group pair): its median against the other group pairs (with two groups, its
  bandwidth against the links inside the groups: a non-blocking tree's cross links carry what
  its leaf links carry; latency across has more hops by design, so it is not judged there);
- node: the median of a host's directions, each taken relative to its switch-pair class (same
  leaf, leaf to leaf), against the directions that touch neither it nor another host that
  scored above 1 in a first sweep (leave-one-node-out, then leave the other suspects out: two
  slow hosts do not hide each other);
- link: each direction against its switch-pair class, classes and spread taken without the
  links of slow nodes.

Each fault is named once, at the highest level that explains it: the hosts of a bad leaf are
not slow nodes, the links of a bad uplink are not bad links, the links of a slow node not
bad links. Above LOO_MAX hosts a node owns under 0.8 % of the directions and leaving it out
moves the median by under 0.01 sigma: the reference there is all directions but those of the
first sweep's suspects, one sweep instead of one per host.

Suspects (a link or node scoring above the threshold) are measured again, one pair at a time
(the retest, as ClusterKit retests), beside a few reference links that scored near the median:
the references give the retest's own centre (isolated runs are faster than concurrent ones),
the first pass keeps the spread and the class offsets. A suspect becomes a verdict only when
the retest scores above the threshold too; each verdict carries both values, the threshold and
both scores. A leaf or uplink is retested on a sample: a few of its directions against a few
of its reference's, isolated.

Contention for the CPU and passing traffic only add time to a sample: where the samples are
known, links, nodes, leaves and uplinks are scored on their medians and on their best samples
alike, and the lower score counts (_steady, _steady_group); a retest is scored in the larger
of the first pass's spread and its references' own scatter (_retest_score).

Ping-pong latency is one round trip over both directions, so asymmetry is judged on bandwidth.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ..records import PairRecord

THRESHOLD = 3.5  # Iglewicz & Hoaglin (1993): |modified z| > 3.5 is a potential outlier
_K = 0.6745  # Phi^-1(0.75): MAD / 0.6745 estimates sigma for normal data
_MEANAD = 1.253314  # sqrt(pi / 2): MeanAD x 1.2533 estimates sigma for normal data
LOO_MAX = 256  # hosts up to which every node gets a reference without it
# A node whose first-pass score passes half the threshold is retested (a screen, as in
# two-stage testing: the retest alone, isolated and twice, must then score above THRESHOLD).
# A concurrent pass of ranks that outnumber the cores spreads healthy directions over a factor
# of 6 (52-346 MB/s on an 8-host testbed here), so a slow host's first-pass score there can
# fall under 3.5 (4.4 and below 3.5 in two runs of the same fault) while its isolated retest
# stands out; the retest is only paid where a node looks off.
NODE_SCREEN = THRESHOLD / 2
# First-sweep node score above which a host is left out of the other hosts' references in
# the second sweep (a healthy host scores about 0 +- 1; leaving a few out only thins a
# reference, never below 3 hosts).
LEAVE_OUT = 1.0
# A node's reference is the directions among the other hosts: 3 hosts give 6, the fewest on
# which a median and MAD mean anything; below 4 hosts only links are judged.
MIN_NODE_HOSTS = 4
# Nothing is named for a difference within 5 %, however tight the spread: the band within
# which fabench calls two medians equal (compare's default tolerance; docs/statistics.md:
# run-to-run differences reach 5 % on a loaded host). Without it a simulator, whose spread is
# near 0, named the extra hop across a healthy spine, and a 4-host testbed whose ping-pongs
# all took 9.7-10.1 us named a host 1.5 % slower (score 6.3). A score is capped at THRESHOLD
# where the difference is that small.
FLOOR = math.log(1.05)
REFERENCES = 6  # reference links measured beside the suspects in the retest
METRICS = ("latency", "bandwidth")
GROUP_KINDS = ("bad leaf", "bad uplink")  # verdicts on a switch group or a pair of them
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
    # a link's best sample (fastest ping-pong or window; for asymmetry, the ratio of the
    # fastest windows) and the value at which it scores THRESHOLD: the score above is the
    # lower of the median's and the best sample's (_steady)
    best: float | None = None
    best_threshold: float | None = None
    retest_best: float | None = None

    def text(self) -> str:
        unit = _UNITS[self.metric]
        s = (f"{self.metric} {self.first:.4g} {unit}, threshold {self.threshold:.4g} {unit}")
        if self.best is not None and self.best_threshold is not None:
            s += f", best sample {self.best:.4g} {unit} (threshold {self.best_threshold:.4g})"
        s += f", score {self.score:.1f}"
        if self.retest is not None:
            s += f"; retest {self.retest:.4g} {unit}"
            if self.retest_best is not None:
                s += f", best sample {self.retest_best:.4g} {unit}"
            s += f", score {self.retest_score:.1f}"
        return s


@dataclass(frozen=True)
class Verdict:
    kind: str  # bad link, asymmetric link, slow node, bad leaf, bad uplink, unreachable
    src: str
    dst: str | None = None
    evidence: tuple[Evidence, ...] = ()
    hosts: tuple[str, ...] = ()  # the hosts a node, leaf or uplink verdict covers

    @property
    def line(self) -> str:
        arrow = "<->" if self.kind == "bad uplink" else "->"
        where = f"{self.src} {arrow} {self.dst}" if self.dst else self.src
        if self.kind in GROUP_KINDS:
            where += f" ({len(self.hosts)} hosts)"
        why = "; ".join(e.text() for e in self.evidence)
        return f"{self.kind} {where}" + (f": {why}" if why else "")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "src": self.src, "dst": self.dst, "line": self.line,
                "hosts": list(self.hosts), "evidence": [asdict(e) for e in self.evidence]}


@dataclass
class Matrix:
    """Per ordered pair of ranks, the median latency (us) and bandwidth (MB/s) of one pass,
    and where the samples are known, each direction's best sample (`best`: the fastest
    ping-pong, the fastest window): the floor that contention cannot lower."""

    hosts: list[str]
    latency: dict[Link, float] = field(default_factory=dict)
    bandwidth: dict[Link, float] = field(default_factory=dict)
    best: dict[str, dict[Link, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, hosts: list[str], pairs: Iterable[PairRecord]) -> Matrix:
        m = cls(list(hosts))
        lat: dict[Link, float] = {}
        bw: dict[Link, float] = {}
        for p in pairs:
            m.latency[(p.src, p.dst)] = p.latency
            m.bandwidth[(p.src, p.dst)] = p.bandwidth
            ok = [t for t in p.latency_us if t > 0 and math.isfinite(t)]
            if ok:
                lat[(p.src, p.dst)] = min(ok)
            ok = [t for t in p.bandwidth_us if t > 0 and math.isfinite(t)]
            if ok:
                bw[(p.src, p.dst)] = p.bytes_per_sample / min(ok)
        m.best = {k: v for k, v in (("latency", lat), ("bandwidth", bw)) if v}
        return m

    def values(self, metric: str) -> dict[Link, float]:
        return self.latency if metric == "latency" else self.bandwidth

    def best_values(self, metric: str) -> dict[Link, float]:
        """The best sample of each direction; empty where only medians are known (a matrix
        read back from its JSON, a synthetic one)."""
        return self.best.get(metric, {})

    def best_asymmetry(self) -> dict[Link, float]:
        """asymmetry() of the fastest windows."""
        return _ratios(self.best_values("bandwidth"))

    def asymmetry(self) -> dict[Link, float]:
        """bw(j->i) / bw(i->j) per measured direction i->j: above 1 when i->j is the slow
        one."""
        return _ratios(self.bandwidth)


def _usable(v: float) -> bool:
    """A measured value that has a logarithm: positive and finite (an imported or damaged
    matrix may hold 0, a negative number, inf or nan)."""
    return 0 < v < math.inf


def _ratios(bw: Mapping[Link, float]) -> dict[Link, float]:
    return {(i, j): bw[(j, i)] / v for (i, j), v in bw.items()
            if (j, i) in bw and _usable(v) and _usable(bw[(j, i)])}


@dataclass(frozen=True)
class Groups:
    """Switch groups as the judge sees them: hosts per group and a name for each."""

    members: tuple[tuple[str, ...], ...]
    names: tuple[str, ...]

    @classmethod
    def of(cls, groups: Sequence[Sequence[str]],
           declared: Mapping[str, Sequence[str]] | None = None,
           hosts: Sequence[str] | None = None) -> Groups:
        """A group is named after the declared switch holding all its hosts, else after its
        runs of hosts (in the order given): `h1..h8+h13..h16`."""
        order = {h: k for k, h in enumerate(h for g in groups for h in g)}
        if hosts is not None:
            order = {h: k for k, h in enumerate(hosts)}
        names = []
        for g in groups:
            sw = [s for s, hs in (declared or {}).items() if set(g) <= set(hs)]
            names.append(sw[0] if sw else _runs(list(g), order))
        return cls(tuple(tuple(g) for g in groups), tuple(names))

    @classmethod
    def declared(cls, hosts: Sequence[str], switches: Mapping[str, Sequence[str]]) -> Groups:
        """The declared switches, hosts in rank order; hosts no switch names stay apart."""
        members = [[h for h in hosts if h in set(hs)] for hs in switches.values()]
        names = [s for s, m in zip(switches, members, strict=True) if m]
        members = [m for m in members if m]
        rest = [h for h in hosts if not any(h in m for m in members)]
        if rest and members:
            members.append(rest)
            names.append("undeclared")
        return cls(tuple(tuple(m) for m in members), tuple(names))

    def labels(self, hosts: Sequence[str]) -> np.ndarray:
        where = {h: g for g, hs in enumerate(self.members) for h in hs}
        return np.array([where.get(h, 0) for h in hosts], dtype=np.int64)


def _runs(group: list[str], order: Mapping[str, int]) -> str:
    """Hosts consecutive in the matrix's order as `first..last`, runs joined by `+`."""
    hs = sorted(group, key=lambda h: order.get(h, 0))
    parts, start = [], 0
    for k in range(1, len(hs) + 1):
        if k == len(hs) or order.get(hs[k], -9) != order.get(hs[k - 1], -9) + 1:
            run = hs[start:k]
            parts.append(run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}")
            start = k
    return "+".join(parts)


@dataclass(frozen=True)
class _Flat:
    """One metric's measured directions as arrays, in worse-up log units (log latency,
    -log bandwidth): a million directions at 1024 hosts."""

    src: np.ndarray
    dst: np.ndarray
    w: np.ndarray
    # the directions measured without a usable value (not positive, not finite): (k, 2) ends
    unusable: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))

    @classmethod
    def of(cls, values: Mapping[Link, float], worse_up: bool) -> _Flat:
        k = len(values)
        ends = np.fromiter((e for link in values for e in link), dtype=np.int64,
                           count=2 * k).reshape(k, 2)
        v = np.fromiter(values.values(), dtype=float, count=k)
        ok = (v > 0) & np.isfinite(v)
        w = np.log(v[ok]) if ok.any() else np.zeros(0)
        return cls(ends[ok, 0], ends[ok, 1], w if worse_up else -w, ends[~ok])


def _capped(score: float, d: float) -> float:
    """The score, at most THRESHOLD where the difference d (log units) is within FLOOR."""
    return min(score, THRESHOLD) if d <= FLOOR else score


def _robust(x: np.ndarray) -> tuple[float, float]:
    """Median and spread (MAD / 0.6745, or 1.2533 MeanAD where MAD is 0)."""
    if x.size == 0:
        return 0.0, 0.0
    med = float(np.median(x))
    dev = np.abs(x - med)
    mad = float(np.median(dev))
    return med, (mad / _K if mad > 0 else _MEANAD * float(dev.mean()))


def _z(d: float, spread: float) -> float:
    if spread == 0:
        return 0.0 if d == 0 else math.copysign(math.inf, d)
    return d / spread


def _value(metric: str, w: float) -> float:
    """A worse-up log value back in the metric's unit."""
    return math.exp(w if _WORSE_UP[metric] else -w)


@dataclass(frozen=True)
class Scales:
    """Per metric: the centre of all links, the pooled spread of links around their
    switch-pair class, and each class's centre (worse-up log units)."""

    by_metric: Mapping[str, Scale]
    classes: Mapping[str, Mapping[int, float]] = field(default_factory=dict)
    labels: tuple[int, ...] = ()
    ngroups: int = 1

    def cls(self, link: Link) -> int:
        """Inside a leaf (0) or across leaves (1)."""
        if not self.labels:
            return 0
        return int(self.labels[link[0]] != self.labels[link[1]])

    def centre(self, metric: str, link: Link) -> float:
        """The link's class centre, worse-up."""
        c = self.classes.get(metric, {}).get(self.cls(link))
        if c is not None:
            return c
        sc = self.by_metric[metric]
        return sc.centre if _WORSE_UP[metric] else -sc.centre

    def spread(self, metric: str) -> float:
        return self.by_metric[metric].spread

    def score(self, metric: str, value: float, link: Link | None = None) -> float:
        if link is None or metric == "asymmetry":
            return self.by_metric[metric].score(value, _WORSE_UP[metric])
        if not (value > 0 and math.isfinite(value)):
            return math.inf
        w = math.log(value) if _WORSE_UP[metric] else -math.log(value)
        return _z(w - self.centre(metric, link), self.spread(metric))

    def limit(self, metric: str, link: Link | None = None) -> float:
        if link is None or metric == "asymmetry":
            return self.by_metric[metric].limit(_WORSE_UP[metric])
        return _value(metric, self.centre(metric, link) + THRESHOLD * self.spread(metric))


@dataclass(frozen=True)
class GroupFinding:
    kind: str  # bad leaf, bad uplink
    groups: tuple[int, ...]
    evidence: tuple[Evidence, ...]
    spreads: tuple[tuple[str, float], ...] = ()  # per metric, the reference's spread
    # what the retest measures again: a few of its directions and of its reference's
    sample: tuple[Link, ...] = ()
    reference: tuple[Link, ...] = ()
    # per metric, the spread of the reference's best samples (empty where only medians are
    # known): the retest scores the group's best samples too (_steady)
    best_spreads: tuple[tuple[str, float], ...] = ()

    def same(self, other: GroupFinding) -> bool:
        return (self.kind, self.groups) == (other.kind, other.groups)


@dataclass
class Analysis:
    """One sweep of a first pass: scores at every level."""

    scales: Scales
    scores: dict[Link, dict[str, float]]
    nodes: list[dict[str, float]]
    node_evidence: dict[int, dict[str, tuple[float, float, float, float]]]
    findings: list[GroupFinding]
    groups: Groups | None
    # `scores` as arrays, in its order: the (k, 2) ends and the (k, 3) latency, bandwidth and
    # asymmetry scores (0 where not measured both ways): a million directions at 1024 hosts
    arrays: tuple[np.ndarray, np.ndarray]
    # the yardstick of the directions' best samples (None where only medians are known)
    best: Scales | None = None
    best_node_evidence: dict[int, dict[str, tuple[float, float, float, float]]] = \
        field(default_factory=dict)

    @property
    def slow(self) -> frozenset[int]:
        return frozenset(h for h, s in enumerate(self.nodes) if max(s.values()) > THRESHOLD)


def _by_node(n: int, f: _Flat, e: np.ndarray) -> list[np.ndarray]:
    """Each host's values over its row and column, in one sort."""
    who = np.concatenate([f.src, f.dst])
    vals = np.concatenate([e, e])
    order = np.argsort(who, kind="stable")
    counts = np.bincount(who, minlength=n)
    return np.split(vals[order], np.cumsum(counts)[:-1])


def _node_scores(n: int, f: _Flat, e: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                            np.ndarray, np.ndarray]:
    """Per host: its median (relative to class), the reference centre and spread, the score."""
    mine = _by_node(n, f, e)
    own = np.array([float(np.median(x)) if x.size else math.nan for x in mine])
    if n < MIN_NODE_HOSTS:  # no reference left once a host is left out: links only
        zero = np.zeros(n)
        return own, zero, zero, zero
    # A host whose directions (those no leaf or uplink finding explains) reach one other host
    # only cannot be told from that one link: 2 hosts per leaf under a bad uplink leave each
    # host its 2 directions to its neighbour, and both hosts scored alike. Links only there.
    lo, hi = np.minimum(f.src, f.dst), np.maximum(f.src, f.dst)
    seen = np.zeros(n * n, dtype=bool)  # each unordered pair once: a mask, not a sort or hash
    seen[lo * n + hi] = True  # of a million directions at 1024 hosts
    pairs = np.flatnonzero(seen)
    partners = np.bincount(pairs // n, minlength=n) + np.bincount(pairs % n, minlength=n)
    own = np.where(partners >= 2, own, math.nan)

    def sweep(out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ref_c, ref_s = np.zeros(n), np.zeros(n)
        if n > LOO_MAX:
            keep = ~(out[f.src] | out[f.dst])
            c, s = _robust(e[keep] if keep.sum() >= 2 else e)
            ref_c[:], ref_s[:] = c, s
            return ref_c, ref_s
        for h in range(n):
            gone = out.copy()
            gone[h] = True
            if n - gone.sum() < 3:  # too few hosts left: leave only this one out
                gone[:] = False
                gone[h] = True
            keep = ~(gone[f.src] | gone[f.dst])
            ref_c[h], ref_s[h] = _robust(e[keep])
        return ref_c, ref_s

    def scores(own: np.ndarray, ref_c: np.ndarray, ref_s: np.ndarray) -> np.ndarray:
        return np.array([_capped(_z(own[h] - ref_c[h], ref_s[h]), own[h] - ref_c[h])
                         if math.isfinite(own[h]) else 0.0 for h in range(n)])

    none = np.zeros(n, dtype=bool)
    c1, s1 = sweep(none)
    first = scores(own, c1, s1)
    # every host that looks worse than the rest by more than one unit of spread: two slow
    # hosts of 6 own 60 % of the directions, and on a loaded testbed the healthy ones spread
    # over a factor of 4 besides, so each scored 1.5 with the other in its reference
    suspects = first > LEAVE_OUT
    if not suspects.any():
        return own, c1, s1, first
    c2, s2 = sweep(suspects)
    # a host's own median without its directions to the other suspects, as its reference is
    # without them: beside two slow hosts of 6, 4 of a healthy host's 10 directions are slow
    # and its median sank to its slowest healthy ones (two healthy hosts named slow)
    partner = np.concatenate([f.dst, f.src])
    who = np.concatenate([f.src, f.dst])
    vals = np.concatenate([e, e])
    own2 = own.copy()
    if n <= LOO_MAX:
        for h in range(n):
            others = suspects.copy()
            others[h] = False
            pick = (who == h) & ~others[partner]
            if pick.any():
                own2[h] = float(np.median(vals[pick]))
    return own2, c2, s2, scores(own2, c2, s2)


def _class_ids(f: _Flat, lab: np.ndarray, g: int) -> np.ndarray:
    a, b = lab[f.src], lab[f.dst]
    return np.minimum(a, b) * g + np.maximum(a, b)


def _per_direction(centres: Mapping[int, float], cid: np.ndarray) -> np.ndarray:
    """Each direction's class centre, looked up in one array (a million directions at 1024
    hosts)."""
    if not cid.size:
        return np.zeros(0)
    return np.array([centres.get(c, math.nan) for c in range(int(cid.max()) + 1)])[cid]


def _class_centres(cid: np.ndarray, w: np.ndarray, keep: np.ndarray | None = None
                   ) -> dict[int, float]:
    out: dict[int, float] = {}
    if keep is not None and keep.any():
        cid, w = cid[keep], w[keep]
    order = np.argsort(cid, kind="stable")
    cs, ws = cid[order], w[order]
    starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]]) if cs.size else np.zeros(0, int)
    for k, st in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else cs.size
        out[int(cs[st])] = float(np.median(ws[st:end]))
    return out


def _group_findings(metric: str, f: _Flat, lab: np.ndarray, g: int) -> list[GroupFinding]:
    """Bad leaves and bad uplinks on one metric."""
    la, lb = lab[f.src], lab[f.dst]
    cross = la != lb
    cid = _class_ids(f, lab, g)
    out: list[GroupFinding] = []

    spread: dict[int, float] = {}

    def ev(x: np.ndarray, ref: np.ndarray) -> Evidence | None:
        if not x.size or ref.size < 2:
            return None
        c, s = _robust(ref)
        spread[id(ref)] = s
        med = float(np.median(x))
        return Evidence(metric, _value(metric, med), _value(metric, c + THRESHOLD * s),
                        _z(med - c, s))

    def found(kind: str, groups: tuple[int, ...], e: Evidence, ref: np.ndarray) -> None:
        c, _ = _robust(ref)
        if _w(metric, e.first) - c <= FLOOR:
            return
        out.append(GroupFinding(kind, groups, (e,), ((metric, spread[id(ref)]),)))

    if g == 2:
        if metric != "bandwidth":
            return []
        inside = f.w[~cross]
        e = ev(f.w[cross], inside)
        if e is not None and e.score > THRESHOLD:
            found("bad uplink", (0, 1), e, inside)
        return out
    bad_leaves = set()
    for k in range(g):
        touch = cross & ((la == k) | (lb == k))
        ref = f.w[cross & ~touch]
        pairs = [evidence for o in range(g) if o != k
                 if (evidence := ev(f.w[cid == min(k, o) * g + max(k, o)], ref))]
        if pairs and all(p.score > THRESHOLD for p in pairs):
            whole = ev(f.w[touch], ref)
            assert whole is not None
            worst = min(p.score for p in pairs)
            found("bad leaf", (k,), Evidence(metric, whole.first, whole.threshold, worst), ref)
            bad_leaves.add(k)
    near_bad = np.isin(la, list(bad_leaves)) | np.isin(lb, list(bad_leaves))
    for a in range(g):
        for b in range(a + 1, g):
            if a in bad_leaves or b in bad_leaves:
                continue
            mine = cid == a * g + b
            ref = f.w[cross & ~mine & ~near_bad]
            e = ev(f.w[mine], ref)
            if e is not None and e.score > THRESHOLD:
                found("bad uplink", (a, b), e, ref)
    return out


RETEST_PAIRS = 4  # host pairs (both directions) a leaf or uplink verdict is retested on



def _pairs(xs: list[int], ys: list[int], limit: int = RETEST_PAIRS) -> list[Link]:
    """Up to `limit` host pairs from xs to ys, spread over both lists, both directions."""
    out: list[Link] = []
    for k in range(max(len(xs), len(ys))):
        if len(out) >= 2 * limit:
            break
        a, b = xs[k % len(xs)], ys[(k * 7 + 3) % len(ys)] if len(ys) > 1 else ys[0]
        if a != b and (a, b) not in out:
            out += [(a, b), (b, a)]
    return out


def _retest_sets(fd: GroupFinding, lab: np.ndarray, g: int, bad_leaves: set[int]
                 ) -> tuple[tuple[Link, ...], tuple[Link, ...]]:
    """A few directions of a leaf or uplink verdict and of its reference, to retest."""
    hosts = {k: [int(h) for h in np.flatnonzero(lab == k)] for k in range(g)}
    others = [k for k in range(g) if k not in fd.groups and k not in bad_leaves]
    if fd.kind == "bad leaf":
        (k,) = fd.groups
        rest = [h for o in range(g) if o != k for h in hosts[o]]
        sample = _pairs(hosts[k], rest)
        ref = _pairs(hosts[others[0]], [h for o in others[1:] for h in hosts[o]]) \
            if len(others) >= 2 else []
    else:
        a, b = fd.groups
        sample = _pairs(hosts[a], hosts[b])
        if g == 2:  # inside the groups
            ref = [link for k in (a, b) if len(hosts[k]) > 1
                   for link in _pairs(hosts[k][: len(hosts[k]) // 2 or 1],
                                      hosts[k][len(hosts[k]) // 2 or 1:], RETEST_PAIRS // 2)]
        else:
            pool = [k for k in range(g) if k not in bad_leaves]
            pairs = [(x, y) for x in pool for y in pool if x < y and (x, y) != (a, b)]
            ref = [link for x, y in pairs[:RETEST_PAIRS]
                   for link in _pairs(hosts[x], hosts[y], 1)]
    return tuple(sample), tuple(ref)


def analyse(m: Matrix, groups: Groups | None = None) -> Analysis:
    """Scores at every level the data supports, in one sweep per level."""
    n = len(m.hosts)
    if groups is not None and len(groups.members) < 2:
        groups = None
    lab = groups.labels(m.hosts) if groups is not None else np.zeros(n, dtype=np.int64)
    g = len(groups.members) if groups is not None else 1
    flats = {k: _Flat.of(m.values(k), _WORSE_UP[k]) for k in METRICS}
    has_best = all(m.best_values(k) for k in METRICS)
    # the best samples as arrays once: groups, nodes, links and asymmetry all read them
    best_flats = {k: _Flat.of(m.best_values(k), _WORSE_UP[k]) for k in METRICS} \
        if has_best else {}
    findings: list[GroupFinding] = []
    if groups is not None:
        for k in METRICS:
            on_median = _group_findings(k, flats[k], lab, g)
            if has_best and on_median:
                on_best = {(fd.kind, fd.groups): fd for fd in _group_findings(
                    k, best_flats[k], lab, g)}
                on_median = [both for fd in on_median
                             if (both := _steady_group(fd, on_best.get((fd.kind, fd.groups))))]
            findings += on_median
    # merge a group's findings over both metrics: one verdict each
    merged: dict[tuple[str, tuple[int, ...]], list[GroupFinding]] = {}
    for fd in findings:
        merged.setdefault((fd.kind, fd.groups), []).append(fd)
    bad_leaves = {gs[0] for kind, gs in merged if kind == "bad leaf"}
    findings = []
    for (kind, gs), fds in merged.items():
        if kind == "bad uplink" and set(gs) & bad_leaves:
            continue  # named by the leaf
        one = GroupFinding(kind, gs, tuple(e for fd in fds for e in fd.evidence),
                           tuple(x for fd in fds for x in fd.spreads))
        sample, ref = _retest_sets(one, lab, g, bad_leaves)
        findings.append(GroupFinding(kind, gs, one.evidence, one.spreads, sample, ref,
                                     tuple(x for fd in fds for x in fd.best_spreads)))

    node_sc: list[dict[str, float]] = [{k: 0.0 for k in METRICS} for _ in range(n)]
    node_ev: dict[int, dict[str, tuple[float, float, float, float]]] = {}
    best_ev: dict[int, dict[str, tuple[float, float, float, float]]] = {}
    by_metric: dict[str, Scale] = {}
    classes: dict[str, dict[int, float]] = {}
    for k in METRICS:
        f = _node_flat(flats[k], lab, findings)
        # the switch-pair class of a direction: inside a leaf (0) or across leaves (1); two
        # classes, not one per leaf pair, so that a leaf of 2 hosts (2 directions) does not
        # make a class whose centre its own fault drags
        cid = (lab[f.src] != lab[f.dst]).astype(np.int64)
        e = f.w - _per_direction(_class_centres(cid, f.w), cid)
        own, rc, rs, sc = _node_scores(n, f, e) if f.w.size else \
            (np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n))
        for h in range(n):
            node_sc[h][k] = float(sc[h])
            node_ev.setdefault(h, {})[k] = (float(own[h]), float(rc[h]), float(rs[h]),
                                            float(sc[h]))
        # a node too is out only where its best samples are (_steady): on a loaded 5-host
        # testbed a healthy host's median latency scored 16.4 and its retest 21.3
        fb = _node_flat(best_flats[k], lab, findings) if has_best else None
        if fb is not None and fb.w.size:
            cb = (lab[fb.src] != lab[fb.dst]).astype(np.int64)
            eb = fb.w - _per_direction(_class_centres(cb, fb.w), cb)
            ob, rcb, rsb, scb = _node_scores(n, fb, eb)
            for h in range(n):
                node_sc[h][k] = _steady(node_sc[h][k], float(scb[h]))
                best_ev.setdefault(h, {})[k] = (float(ob[h]), float(rcb[h]), float(rsb[h]),
                                                float(scb[h]))
    slow = np.array([max(s.values()) > THRESHOLD for s in node_sc], dtype=bool)
    scores_w: dict[str, np.ndarray] = {}
    for k in METRICS:
        scale, classes[k], scores_w[k] = _link_scores(k, flats[k], lab, slow, findings)
        by_metric[k] = scale
    _, asym, by_metric["asymmetry"] = _asymmetry(n, flats["bandwidth"], slow)
    scales = Scales(by_metric, classes, tuple(int(x) for x in lab), g)

    # The same links judged on their best sample (the fastest ping-pong, the fastest window),
    # each against the best samples of the other links: see _steady.
    best = None
    best_sw: dict[str, tuple[_Flat, np.ndarray]] = {}
    best_asym = None
    if has_best:
        b_metric: dict[str, Scale] = {}
        b_classes: dict[str, dict[int, float]] = {}
        for k in METRICS:
            b_metric[k], b_classes[k], sw = _link_scores(k, best_flats[k], lab, slow, findings)
            best_sw[k] = (best_flats[k], sw)
        _, best_asym, b_metric["asymmetry"] = _asymmetry(n, best_flats["bandwidth"], slow)
        best = Scales(b_metric, b_classes, scales.labels, g)

    tables = {k: _score_table(n, flats[k], scores_w[k], *best_sw.get(k, (None, None)))
              for k in METRICS}
    measured = np.zeros((n, n), dtype=bool)
    for f in flats.values():
        measured[f.src, f.dst] = True
        measured[f.unusable[:, 0], f.unusable[:, 1]] = True
    with np.errstate(invalid="ignore"):  # nan: not measured both ways, or no best samples
        a = asym if best_asym is None else \
            np.where(np.isfinite(asym) & (best_asym < asym), best_asym, asym)
    src, dst = np.nonzero(measured)  # row-major: the links in sorted order
    links = list(zip(src.tolist(), dst.tolist(), strict=True))
    scores: dict[Link, dict[str, float]] = {
        link: {"latency": x, "bandwidth": y} for link, x, y in zip(
            links, tables["latency"][src, dst].tolist(), tables["bandwidth"][src, dst].tolist(),
            strict=True)}
    av = a[src, dst]
    for x in np.flatnonzero(~np.isnan(av)).tolist():  # measured both ways
        scores[links[x]]["asymmetry"] = float(av[x])
    arrays = (np.column_stack([src, dst]).astype(np.int64),
              np.column_stack([tables["latency"][src, dst], tables["bandwidth"][src, dst],
                               np.where(np.isnan(av), 0.0, av)]))
    return Analysis(scales, scores, node_sc, node_ev, findings, groups, arrays, best, best_ev)


def _score_table(n: int, f: _Flat, sw: np.ndarray, fb: _Flat | None,
                 sb: np.ndarray | None) -> np.ndarray:
    """A metric's score of every direction as an n x n array by the rule of _steady: nan
    where not measured, inf where measured without a usable value (scored as missing)."""
    t = np.full((n, n), math.nan)
    t[f.unusable[:, 0], f.unusable[:, 1]] = math.inf
    t[f.src, f.dst] = sw
    if fb is None or sb is None:
        return t
    b = np.full((n, n), math.nan)
    b[fb.src, fb.dst] = sb
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(t) & (b < t), b, t)


def _steady(typical: float, best: float | None) -> float:
    """A link's score on a metric: that of its median, and no higher than that of its best
    sample where the samples are known.

    Contention for the CPU (ranks that outnumber the cores, a busy host) and passing traffic
    only ever add time to a ping-pong or a window, never take it away: it moves a direction's
    median and leaves its fastest sample, the path's floor (the minimum filter of network
    measurement: V. Paxson, "End-to-end Internet packet dynamics", SIGCOMM 1997; NTP's clock
    filter, D. L. Mills, RFC 5905, keeps the sample of least delay for the same reason). A
    fault of the path itself (a slower or longer route, a degraded rate, a delay) moves every
    sample, the fastest too. So a direction is out only when both its median and its best
    sample are out, each against the same statistic of the other directions (an
    intersection-union test: R. L. Berger, Technometrics 24, 1982: the two together keep the
    error rate of either)."""
    if best is None or not math.isfinite(typical):
        return typical
    return min(typical, best)


def _steady_group(fd: GroupFinding, best: GroupFinding | None) -> GroupFinding | None:
    """A leaf or uplink finding on one metric by the rule of _steady: out only when the median
    of its directions and the median of their best samples are both out, each against the
    same statistic of its reference; its score the lower of the two. A leaf whose hosts
    waited for the CPU in most of their windows (ranks that outnumber the cores) moves its
    medians and leaves its fastest windows at the fabric's floor; a degraded uplink moves
    every window."""
    if best is None:
        return None
    (e,), (b,) = fd.evidence, best.evidence
    return replace(fd, evidence=(replace(e, score=min(e.score, b.score), best=b.first,
                                         best_threshold=b.threshold),),
                   best_spreads=best.spreads)


def _explained(f: _Flat, lab: np.ndarray, findings: Sequence[GroupFinding]) -> np.ndarray:
    """The directions a leaf or uplink finding explains: a bad leaf's directions to the other
    leaves, a bad uplink's directions between its two groups."""
    out = np.zeros(f.w.size, dtype=bool)
    la, lb = lab[f.src], lab[f.dst]
    for fd in findings:
        if fd.kind == "bad leaf":
            out |= (la != lb) & ((la == fd.groups[0]) | (lb == fd.groups[0]))
        else:
            out |= (((la == fd.groups[0]) & (lb == fd.groups[1])) |
                    ((la == fd.groups[1]) & (lb == fd.groups[0])))
    return out


def _node_flat(f: _Flat, lab: np.ndarray, findings: Sequence[GroupFinding]) -> _Flat:
    """The directions a node is judged on: those no leaf or uplink finding explains. A host
    of a bad leaf has half or more of its directions slow through the leaf's uplink; kept,
    they made the across class bimodal, its spread swallowed a slow host inside that leaf
    (64 hosts in 4 leaves: named as 30 bad links, not one slow node), and every host of the
    leaf looked alike."""
    if not findings:
        return f
    keep = ~_explained(f, lab, findings)
    return _Flat(f.src[keep], f.dst[keep], f.w[keep])


def _link_scores(metric: str, f: _Flat, lab: np.ndarray, slow: np.ndarray,
                 findings: Sequence[GroupFinding]
                 ) -> tuple[Scale, dict[int, float], np.ndarray]:
    """Each direction of one metric against its switch-pair class: the yardstick, the class
    centres and the scores (worse-up, capped within FLOOR)."""
    cid = (lab[f.src] != lab[f.dst]).astype(np.int64)
    clean = ~(slow[f.src] | slow[f.dst]) if f.w.size else np.zeros(0, dtype=bool)
    # nor the directions a leaf or uplink verdict explains: they would drag the centre of
    # the across class (a bad leaf of 4 among 16 hosts owns half of it)
    keep = clean & ~_explained(f, lab, findings)
    centres = _class_centres(cid, f.w, keep)
    full = _class_centres(cid, f.w)
    merged = {c: centres.get(c, v) for c, v in full.items()}
    e = f.w - _per_direction(merged, cid)
    # A class that a verdict explains whole (the across class of two switches under a bad
    # uplink) is centred on its own median, so its directions measure the noise as well as
    # the others do. Left out, the spread of a 4-host, 2-switch testbed came from the 4
    # directions inside the leaves alone, and a leaf's direction 5 % under the others scored
    # above 3.5 (twice, retest included).
    own = np.isin(cid, [c for c in full if c not in centres]) & clean
    pool = keep | own
    _, spread = _robust(e[pool] if pool.any() else e)
    glob, _ = _robust(f.w[keep] if keep.any() else f.w)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = e / spread if spread > 0 else np.where(e == 0, 0.0, np.copysign(np.inf, e))
    return (Scale(glob if _WORSE_UP[metric] else -glob, spread), merged,
            np.where((e <= FLOOR) & (raw > THRESHOLD), THRESHOLD, raw))


def _asymmetry(n: int, fb: _Flat, slow: np.ndarray) -> tuple[np.ndarray, np.ndarray, Scale]:
    """bw(j->i) / bw(i->j) per direction as one n x n array of logs, its scores, its scale."""
    bw = np.full((n, n), np.nan)
    bw[fb.src, fb.dst] = -fb.w  # log bandwidth
    ratio = bw.T - bw  # log of bw(j->i) / bw(i->j) at [i, j]
    ok = np.isfinite(ratio)
    # the spread without the slow nodes' pairs: a rate-limited host is slow both ways, and
    # its many ratios of 1 (60 % of the pairs with two slow hosts of 6) would shrink it
    calm = ok & ~(slow[:, None] | slow[None, :])
    logs = np.abs(ratio[calm if calm.any() else ok])
    scale = Scale(0.0, 0.0)
    if logs.size:
        mad = float(np.median(logs))
        scale = Scale(0.0, mad / _K if mad > 0 else _MEANAD * float(logs.mean()))
    with np.errstate(divide="ignore", invalid="ignore"):
        raw_a = (ratio / scale.spread if scale.spread > 0 else
                 np.where(ratio == 0, 0.0, np.copysign(np.inf, ratio)))
        asym = np.where((ratio <= FLOOR) & (raw_a > THRESHOLD), THRESHOLD, raw_a)
    return ratio, asym, scale


def link_scores(m: Matrix, scales: Scales | None = None,
                groups: Groups | None = None) -> dict[Link, dict[str, float]]:
    return analyse(m, groups).scores


def node_scores(m: Matrix, groups: Groups | None = None) -> list[dict[str, float]]:
    """Per rank and metric, the leave-one-node-out score of its row and column."""
    return analyse(m, groups).nodes


@dataclass(frozen=True)
class Suspects:
    links: frozenset[Link]
    nodes: frozenset[int]
    references: tuple[Link, ...]
    groups: tuple[GroupFinding, ...] = ()  # bad leaves and uplinks of the first pass

    def retest_pairs(self, n: int) -> list[Link]:
        """Every direction to measure again: suspect links, all links of suspect nodes, a
        few directions of each suspect leaf or uplink and of its reference, and the
        references."""
        # both directions of a suspect link: asymmetry is judged on the pair
        want = set(self.links) | {(j, i) for i, j in self.links} | set(self.references)
        for fd in self.groups:
            want |= set(fd.sample) | set(fd.reference)
        for h in self.nodes:
            want |= {(h, o) for o in range(n) if o != h} | {(o, h) for o in range(n) if o != h}
        return sorted(want)

    @property
    def empty(self) -> bool:
        return not self.links and not self.nodes and not self.groups


def expected_links(n: int, asked: Iterable[Link] | None = None) -> set[Link]:
    return set(asked) if asked is not None else \
        {(i, j) for i in range(n) for j in range(n) if i != j}


def find_suspects(m: Matrix, groups: Groups | None = None,
                  analysis: Analysis | None = None, screen: bool = False) -> Suspects:
    """What to retest. With `screen` (a retest follows), nodes from NODE_SCREEN on."""
    an = analysis or analyse(m, groups)
    # a host behind a bad leaf is judged on the directions the leaf does not explain
    # (_node_flat): it is a suspect only when it stands out among those
    slow = an.slow
    nodes = slow | frozenset(h for h, sc in enumerate(an.nodes)
                             if screen and max(sc.values()) > NODE_SCREEN)
    # the links of a suspect node stay suspects of their own: the retest measures them anyway,
    # and if it clears the node (concurrent noise made it look slow) a bad link of its stays
    # to be judged; a node the retest confirms names its links itself
    ends, sc = an.arrays
    k = len(ends)

    def key(x: int) -> Link:
        return int(ends[x, 0]), int(ends[x, 1])
    with np.errstate(invalid="ignore"):
        worst = np.nanmax(np.where(np.isnan(sc), -np.inf, sc), axis=1) if k else np.zeros(0)
    node_mask = np.zeros(len(m.hosts) + 1, dtype=bool)
    node_mask[list(nodes)] = True
    out = worst > THRESHOLD
    if an.groups is not None and an.findings and k:  # a leaf or uplink verdict names those
        out &= ~_explained(_Flat(ends[:, 0], ends[:, 1], np.zeros(k)),
                           an.groups.labels(m.hosts), an.findings)
    links = frozenset(key(x) for x in np.flatnonzero(out).tolist())
    # References: the links closest to their class centre on both metrics, neither a suspect
    # (either direction) nor touching a suspect node. A reference may share a host with a
    # suspect link: on 4 hosts every link does, and a retest without references has no
    # centre of its own.
    shunned = set(links) | {(j, i) for i, j in links}
    at_node = node_mask[ends[:, 0]] | node_mask[ends[:, 1]] if k else np.zeros(0, bool)
    calm = np.maximum(np.abs(sc[:, 0]), np.abs(sc[:, 1])) if k else np.zeros(0)
    slow_mask = np.zeros(len(m.hosts) + 1, dtype=bool)
    slow_mask[list(slow)] = True
    at_slow = slow_mask[ends[:, 0]] | slow_mask[ends[:, 1]] if k else np.zeros(0, bool)
    refs: list[Link] = []
    # where the suspect nodes cover nearly every host (half of 6 screened on a loaded
    # testbed), the references may touch a screened node, never one above the threshold:
    # without references a retest has no centre and clears everything
    for eligible in (np.isfinite(calm) & ~at_node, np.isfinite(calm) & ~at_slow):
        for x in np.flatnonzero(eligible)[np.argsort(calm[eligible], kind="stable")].tolist():
            if len(refs) == REFERENCES:
                break
            if key(x) not in shunned and key(x) not in refs:
                refs.append(key(x))
    return Suspects(links, nodes, tuple(refs), tuple(an.findings))


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
    groups: Groups | None = None

    @property
    def flagged(self) -> bool:
        return bool(self.verdicts)

    def to_json(self) -> dict[str, Any]:
        return _finite(self._json())

    def _json(self) -> dict[str, Any]:
        def links(d: Mapping[Link, float]) -> list[list[float]]:
            return [[i, j, v] for (i, j), v in sorted(d.items())]
        flagged_nodes = {h for v in self.verdicts if v.dst is None for h in v.hosts}
        return {
            "hosts": self.hosts, "threshold": THRESHOLD,
            "method": METHOD,
            "verdicts": [v.to_json() for v in self.verdicts],
            "latency_us": links(self.first.latency),
            "bandwidth_MBps": links(self.first.bandwidth),
            "retest_latency_us": links(self.retest.latency) if self.retest else [],
            "retest_bandwidth_MBps": links(self.retest.bandwidth) if self.retest else [],
            "scores": [[i, j, s] for (i, j), s in sorted(self.scores.items())],
            "nodes": [{"host": h, **s, "flagged": h in flagged_nodes}
                      for h, s in zip(self.hosts, self.nodes, strict=True)],
            "scales": {k: asdict(v) for k, v in self.scales.by_metric.items()},
            "judged_groups": ({"members": [list(g) for g in self.groups.members],
                               "names": list(self.groups.names)} if self.groups else None),
            "suspects": {"links": sorted(self.suspects.links),
                         "nodes": sorted(self.suspects.nodes),
                         "references": list(self.suspects.references),
                         "groups": [[fd.kind, list(fd.groups)] for fd in self.suspects.groups]},
            "cleared": self.cleared,
        }


METHOD = ("modified z-score of log values (Iglewicz & Hoaglin 1993); nodes against the links "
          "that do not touch them (leave-one-node-out), links within their switch-pair class, "
          "leaves and uplinks against the other group pairs")


def _retest_centre(scales: Scales, vals: Mapping[Link, float], refs: tuple[Link, ...],
                   metric: str) -> float | None:
    """The retest's own centre: its references' median, each relative to its class."""
    xs = [_w(metric, vals[link]) - scales.centre(metric, link) for link in refs
          if link in vals and vals[link] > 0 and math.isfinite(vals[link])]
    return statistics.median(xs) if xs else None


def _ref_spread(scales: Scales, vals: Mapping[Link, float], refs: tuple[Link, ...],
                metric: str) -> float:
    """The spread of the retest's references, each relative to its class (0 without any)."""
    xs = np.array([_w(metric, vals[r]) - scales.centre(metric, r) for r in refs
                   if r in vals and vals[r] > 0 and math.isfinite(vals[r])])
    return _robust(xs)[1] if xs.size else 0.0


def _retest_score(scales: Scales, vals: Mapping[Link, float], refs: tuple[Link, ...],
                  metric: str, link: Link) -> float | None:
    """A link's retest score: its value relative to its class, less the retest's own centre
    (its references' median, each relative to its class), over the larger of the first pass's
    spread and the references' own spread in the retest. The retest runs at another moment
    than the first pass, and where the host was busier then (other work, ranks that
    outnumber the cores), its references say so by scattering; scored with the first pass's
    spread alone, a healthy link of a loaded 5-host testbed on 2 cores, 10.3 us in the first
    pass against a threshold of 9.8 us, was confirmed by a retest at 24.5 us. On a calm
    fabric the references agree and the first pass's spread stands."""
    v = vals.get(link)
    if v is None or not (v > 0 and math.isfinite(v)):
        return None
    xs = np.array([_w(metric, vals[r]) - scales.centre(metric, r) for r in refs
                   if r in vals and vals[r] > 0 and math.isfinite(vals[r])])
    if not xs.size:
        return None
    c, s = _robust(xs)
    d = _w(metric, v) - scales.centre(metric, link) - c
    return _capped(_z(d, max(scales.spread(metric), s)), d)


def _group_retest(fd: GroupFinding, retest: Matrix) -> tuple[Evidence, ...]:
    """A leaf or uplink verdict's evidence with its retest: the median of its retested
    directions against that of its retested reference, in the first pass's spread; only the
    metrics whose retest scores above the threshold too."""
    out = []
    spread, best_spread = dict(fd.spreads), dict(fd.best_spreads)

    def apart(vals: Mapping[Link, float], metric: str) -> tuple[list[float], float | None]:
        mine = [vals[x] for x in fd.sample if vals.get(x, 0) > 0]
        ref = [vals[x] for x in fd.reference if vals.get(x, 0) > 0]
        if not mine or not ref:
            return mine, None
        return mine, statistics.median(_w(metric, v) for v in mine) - \
            statistics.median(_w(metric, v) for v in ref)

    for ev in fd.evidence:
        mine, d = apart(retest.values(ev.metric), ev.metric)
        if d is None:
            continue
        score = _z(d, spread.get(ev.metric, 0.0))
        if score <= THRESHOLD or d <= FLOOR:
            continue
        # and its best samples, where both passes know them (_steady)
        rbest = None
        if ev.metric in best_spread and retest.best_values(ev.metric):
            bmine, bd = apart(retest.best_values(ev.metric), ev.metric)
            if bd is None:
                continue
            bscore = _z(bd, best_spread[ev.metric])
            if bscore <= THRESHOLD or bd <= FLOOR:
                continue
            score, rbest = min(score, bscore), statistics.median(bmine)
        out.append(replace(ev, retest=statistics.median(mine), retest_score=score,
                           retest_best=rbest))
    return tuple(out)


def _w(metric: str, v: float) -> float:
    return math.log(v) if _WORSE_UP[metric] else -math.log(v)


def judge(first: Matrix, retest: Matrix | None = None, suspects: Suspects | None = None,
          asked: Iterable[Link] | None = None, groups: Groups | None = None,
          analysis: Analysis | None = None) -> Judgement:
    """Verdicts from a first pass and (optionally) its retest. Without a retest every suspect
    is a verdict on first-pass evidence alone."""
    n = len(first.hosts)
    name = first.hosts
    an = analysis or analyse(first, groups)
    scales, scores, nodes = an.scales, an.scores, an.nodes
    suspects = suspects or find_suspects(first, analysis=an)
    centre = {k: _retest_centre(scales, retest.values(k), suspects.references, k)
              for k in METRICS} \
        if retest is not None else {}
    verdicts: list[Verdict] = []
    cleared: list[str] = []

    # Unreachable: directions the pass should have measured and did not.
    missing, dead = _unmeasured(n, first.latency, asked)
    for h in sorted(dead):
        verdicts.append(Verdict("unreachable", name[h], hosts=(name[h],)))
    for i, j in missing:
        if i not in dead and j not in dead:
            verdicts.append(Verdict("unreachable", name[i], name[j]))

    if an.groups is not None:
        gn, gm = an.groups.names, an.groups.members
        for fd in suspects.groups:
            evs = fd.evidence if retest is None else _group_retest(fd, retest)
            where = gn[fd.groups[0]] if fd.kind == "bad leaf" else \
                f"{gn[fd.groups[0]]} <-> {gn[fd.groups[1]]}"
            if not evs:
                cleared.append(f"{fd.kind.split()[1]} {where}")
            elif fd.kind == "bad leaf":
                verdicts.append(Verdict("bad leaf", gn[fd.groups[0]], None, evs,
                                        tuple(gm[fd.groups[0]])))
            else:
                a, b = fd.groups
                verdicts.append(Verdict("bad uplink", gn[a], gn[b], evs,
                                        tuple(gm[a]) + tuple(gm[b])))

    def retested(metric: str, links: Iterable[Link], best: bool = False) -> float | None:
        """Median of the retest's values (or best samples) relative to class, minus the
        retest's centre."""
        sc = an.best if best else scales
        if retest is None or sc is None:
            return None
        vals = retest.best_values(metric) if best else retest.values(metric)
        c = _retest_centre(sc, vals, suspects.references, metric) if best else \
            centre.get(metric)
        if c is None:
            return None
        xs = [_w(metric, vals[link]) - sc.centre(metric, link) for link in links
              if link in vals and vals[link] > 0 and math.isfinite(vals[link])]
        return statistics.median(xs) - c if xs else None

    ends = an.arrays[0] if suspects.nodes else np.zeros((0, 2), dtype=np.int64)
    touching = {h: [(int(i), int(j)) for i, j in
                    ends[(ends[:, 0] == h) | (ends[:, 1] == h)].tolist()]
                for h in suspects.nodes}
    slow = set()
    for h in sorted(suspects.nodes):
        evs = []
        for k in METRICS:
            if nodes[h][k] <= (THRESHOLD if retest is None else NODE_SCREEN):
                continue
            own, rc, rs, sc = an.node_evidence[h][k]
            mine = [link for link in touching[h] if link in first.values(k)]
            # without the directions to the other suspect nodes, as its score was taken
            apart = [link for link in mine if not (set(link) - {h}) & suspects.nodes]
            mine = apart or mine
            fv = statistics.median([first.values(k)[link] for link in mine])
            # the value at which this node's median would score the threshold
            limit = _value(k, _w(k, fv) - (own - rc) + THRESHOLD * rs)
            d = retested(k, mine)
            rv = rs_ = None
            if d is not None and retest is not None:
                rvals = [retest.values(k)[link] for link in mine if link in retest.values(k)]
                # in units of the references' own scatter in the retest where it is the
                # larger, as a link's retest (_retest_score): a 4-host reference (6
                # directions) gave a spread of 1-2 % and named a host 5 % slower in latency
                rv = statistics.median(rvals)
                rs_ = _capped(_z(d, max(rs, _ref_spread(scales, retest.values(k),
                                                        suspects.references, k))), d)
                bd = retested(k, mine, best=True)
                if bd is not None and an.best is not None and \
                        k in an.best_node_evidence.get(h, {}):
                    bs = max(an.best_node_evidence[h][k][2],
                             _ref_spread(an.best, retest.best_values(k), suspects.references, k))
                    rs_ = min(rs_, _capped(_z(bd, bs), bd))
            ev = Evidence(k, fv, limit, nodes[h][k], rv, rs_)
            if retest is None or (rs_ is not None and rs_ > THRESHOLD):
                evs.append(ev)
        if evs:
            slow.add(h)
            verdicts.append(Verdict("slow node", name[h], None, tuple(evs), (name[h],)))
        else:
            cleared.append(f"node {name[h]}")

    best = an.best
    rasymmetry = retest.asymmetry() if retest is not None else {}
    rbest_asym = retest.best_asymmetry() if retest is not None else {}
    # once, not per suspect: at 512 hosts, 261,632 directions for each of ~900 suspects
    first_best_asym = first.best_asymmetry() if best is not None else {}
    for link in sorted(suspects.links):
        if set(link) & slow:
            continue
        i, j = link
        evs, asym = [], None
        for k in METRICS:
            if scores[link].get(k, 0.0) > THRESHOLD:
                fv = first.values(k)[link]
                bv = first.best_values(k).get(link)
                ev = Evidence(k, fv, scales.limit(k, link), scores[link][k],
                              best=bv if best is not None else None,
                              best_threshold=best.limit(k, link)
                              if best is not None and bv is not None else None)
                if retest is None:
                    evs.append(ev)
                    continue
                rs = _retest_score(scales, retest.values(k), suspects.references, k, link)
                rb = _retest_score(best, retest.best_values(k), suspects.references, k,
                                   link) if best is not None else None
                if rs is not None:
                    ev = replace(ev, retest=retest.values(k)[link],
                                 retest_score=rs if rb is None else min(rs, rb),
                                 retest_best=retest.best_values(k).get(link)
                                 if rb is not None else None)
                    if ev.retest_score is not None and ev.retest_score > THRESHOLD:
                        evs.append(ev)
        # a one-way measurement (--pairs h1:h2) has no way back to be asymmetric against
        if scores[link].get("asymmetry", 0.0) > THRESHOLD and (j, i) in first.bandwidth:
            ratio = first.bandwidth[(j, i)] / first.bandwidth[link]
            br = first_best_asym.get(link) if best is not None else None
            ev = Evidence("asymmetry", ratio, scales.limit("asymmetry"),
                          scores[link]["asymmetry"], best=br,
                          best_threshold=best.limit("asymmetry")
                          if best is not None and br is not None else None)
            rv = rasymmetry.get(link)
            if rv is not None and rv > 0:
                rsc = _capped(scales.score("asymmetry", rv), math.log(rv))
                rb = rbest_asym.get(link) if best is not None else None
                if rb is not None and rb > 0:
                    rsc = min(rsc, _capped(best.score("asymmetry", rb), math.log(rb)))
                ev = replace(ev, retest=rv, retest_score=rsc, retest_best=rb)
            if retest is None or (ev.retest_score is not None and ev.retest_score > THRESHOLD):
                asym = ev
        bw_ev = next((e for e in evs if e.metric == "bandwidth"), None)
        if asym is None and bw_ev is not None and (j, i) in first.bandwidth:
            asym = _one_way(scales, first, retest, scores, suspects.references, link, bw_ev)
        if evs:
            verdicts.append(Verdict("bad link", name[i], name[j], tuple(evs)))
        if asym is not None:
            verdicts.append(Verdict("asymmetric link", name[i], name[j], (asym,)))
        if not evs and asym is None:
            cleared.append(f"link {name[i]} -> {name[j]}")
    return Judgement(list(name), verdicts, first, scales, scores, nodes, suspects, retest,
                     cleared, an.groups)


def _one_way(scales: Scales, first: Matrix, retest: Matrix | None,
             scores: Mapping[Link, Mapping[str, float]], refs: tuple[Link, ...], link: Link,
             bw: Evidence) -> Evidence | None:
    """A direction confirmed bad by its bandwidth whose way back is not (neither in the first
    pass nor in the retests that measured both) is asymmetric, whatever the spread of the
    ratios: that spread pools two directions' noise, and a concurrent pass on a loaded host
    (bandwidths of 320 to 4780 MB/s on a 5-host testbed at load average 16 on 2 cores) made
    it so wide that a direction at 6 MB/s against 495 MB/s back scored 3.47. The evidence is
    the ratio, the ratio at which the direction would be at its bandwidth threshold, and its
    bandwidth scores."""
    i, j = link
    if scores.get((j, i), {}).get("bandwidth", 0.0) > THRESHOLD:
        return None
    back = first.bandwidth[(j, i)]
    if not (_usable(back) and _usable(first.bandwidth[link])):
        return None  # no ratio: the direction without a value is scored as missing
    ratio = back / first.bandwidth[link]
    limit = back / bw.threshold
    if math.log(ratio) <= FLOOR:
        return None
    if retest is None:
        return Evidence("asymmetry", ratio, limit, bw.score)
    rv = retest.asymmetry().get(link)
    back_score = _retest_score(scales, retest.bandwidth, refs, "bandwidth", (j, i))
    if rv is None or back_score is None or back_score > THRESHOLD or math.log(rv) <= FLOOR:
        return None
    return Evidence("asymmetry", ratio, limit, bw.score, rv, bw.retest_score)


def _unmeasured(n: int, measured: Mapping[Link, float], asked: Iterable[Link] | None
                ) -> tuple[list[Link], set[int]]:
    """The directions expected and not measured, in order, and the hosts none of whose
    expected directions was measured. Every direction (no `asked`): one n x n mask, not a set
    of a million links."""
    if asked is not None:
        expected = expected_links(n, asked)
        missing = expected - set(measured)
        return sorted(missing), _dead(expected, missing)
    got = np.eye(n, dtype=bool)
    k = len(measured)
    ends = np.fromiter((e for link in measured for e in link), dtype=np.int64,
                       count=2 * k).reshape(k, 2)
    ends = ends[((ends >= 0) & (ends < n)).all(axis=1)]  # no host of this matrix: not asked
    got[ends[:, 0], ends[:, 1]] = True
    src, dst = np.nonzero(~got)
    lost = np.bincount(src, minlength=n) + np.bincount(dst, minlength=n)
    dead = set(np.flatnonzero(lost == 2 * (n - 1)).tolist()) if n > 1 else set()
    return list(zip(src.tolist(), dst.tolist(), strict=True)), dead


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
