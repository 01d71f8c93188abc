"""`fabench history NAME`: the campaigns of one name (or spec digest) as a series over time,
and the changes in it, called with a method that can be defended (docs/history.md).

Each metric (kernel, transport, MPI, ranks, settings, size) of the series is one value per
campaign ("night"): the median of that campaign's ok runs, pooled. Changes are found by binary
segmentation (Scott and Knott 1974; Vostrikova 1981) with a permutation test of the largest
two-sample t statistic over the splits (the likelihood-ratio statistic for one change in
mean: Hawkins 1977, Worsley 1979; its permutation distribution: Antoch and Huskova 2001), on
the logarithm of the nights' medians, the form of test E-Divisive brought to performance
testing at MongoDB (Matteson and James 2014; Daly et al., ICPE 2020):

1. in a segment of nights, every split leaving at least `min_nights` on each side is scored
   by |mean(log after) - mean(log before)| / s x sqrt(n_before x n_after / n), s the pooled
   standard deviation within the two sides;
2. the best score is compared with the best scores of `permutations` random orders of the same
   nights: p = (1 + #{permuted >= observed}) / (1 + permutations). A change is called where
   p < alpha, the ratio of the two sides' medians lies beyond the tolerance, and its 95 %
   interval (two-stage bootstrap: nights drawn, then samples within each night; util/stats.py)
   excludes 1;
3. each side is searched again, until no segment holds a change.

Night-to-night spread enters twice (the permutation test and the nights-first bootstrap), so a
host that is merely noisy calls nothing; with fewer than 2 x min_nights nights no change can be
called at all, and the report says so.
"""

import datetime
import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..choices import HISTORY_ALPHA as ALPHA
from ..choices import HISTORY_MIN_NIGHTS as MIN_NIGHTS
from ..choices import HISTORY_PERMUTATIONS as PERMUTATIONS
from ..choices import HISTORY_TOLERANCE as TOLERANCE
from ..errors import FabenchError
from ..metrics import Better, Metric
from ..store.database import CampaignRow, RunRow, Store
from ..util.stats import compare_medians_runs, median_ci_runs
from .selection import config_key, run_label, run_metrics

# ALPHA, TOLERANCE (a policy, not a measurement), MIN_NIGHTS and PERMUTATIONS live in
# fabench.choices: `fabench history --help` shows them without importing this module.
SEED = 20_261_127


def spec_digest(spec: dict[str, Any]) -> str:
    """The campaign spec's identity, whatever its name: SHA-256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


@dataclass
class Night:
    campaign_id: int
    started: float
    runs: list[int]
    samples: list[np.ndarray]  # one array per run
    median: float
    low: float
    high: float

    @property
    def date(self) -> str:
        return _date(self.started)


@dataclass
class Change:
    index: int  # position in the series: the first night after the change
    campaign_id: int
    started: float
    kind: str  # "regression" or "improvement"
    before: float
    after: float
    ratio: float
    ratio_low: float
    ratio_high: float
    p_value: float
    nights_before: int
    nights_after: int
    changed: list[str] = field(default_factory=list)
    standing: bool = False  # its after-side reaches the newest night

    @property
    def date(self) -> str:
        return _date(self.started)

    @property
    def percent(self) -> tuple[float, float, float]:
        return ((self.ratio - 1) * 100, (self.ratio_low - 1) * 100,
                (self.ratio_high - 1) * 100)


@dataclass
class Series:
    label: str
    kernel: str
    size: int
    metric: Metric
    nights: list[Night]
    changes: list[Change] = field(default_factory=list)
    watch: str | None = None


@dataclass
class History:
    name: str
    campaigns: list[CampaignRow]
    series: list[Series]
    method: dict[str, Any]

    @property
    def regressions(self) -> list[Change]:
        return [c for s in self.series for c in s.changes if c.kind == "regression"]

    @property
    def exit_code(self) -> int:
        """3 when a regression stands (nothing after it brought the metric back)."""
        return 3 if any(c.standing for c in self.regressions) else 0


def _date(t: float) -> str:
    return datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M")


def series_campaigns(store: Store, name: str, until: int | None = None,
                     last: int | None = None) -> list[CampaignRow]:
    """The campaigns named `name`, or whose spec digest starts with `name` (>= 8 hex digits),
    oldest first; none still running."""
    rows = [store.campaign(c["id"]) for c in store.campaigns()]
    by_name = [c for c in rows if c.name == name]
    if not by_name and len(name) >= 8 and all(ch in "0123456789abcdef" for ch in name):
        by_name = [c for c in rows if spec_digest(c.spec).startswith(name)]
    out = [c for c in by_name if c.status != "running" and (until is None or c.id <= until)]
    out.sort(key=lambda c: (c.started, c.id))
    return out[-last:] if last else out


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, json.dumps(value, sort_keys=True)


def _facts(camp: CampaignRow, run: RunRow | None) -> dict[str, str]:
    """What could explain a change: the host's provenance (kernel, libraries, sysctls, NICs,
    firmware where read), the steering environment the ranks saw, the transport the library
    chose, and the spec. Per-run measurements of the host (load) are not facts."""
    facts = dict(_flatten(camp.provenance))
    facts.update(_flatten({"spec": camp.spec}))
    if run is not None:
        facts.update(_flatten({"environment": run.provenance.get("environment", {})}))
        facts["selected_transport"] = json.dumps(run.selected_transport)
    return facts


def provenance_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    out = []
    for k in sorted(set(before) | set(after)):
        a, b = before.get(k), after.get(k)
        if a != b:
            out.append(f"{k}: {'(unset)' if a is None else a} -> {'(unset)' if b is None else b}")
    return out


def _label(r: RunRow) -> str:
    """A series' name: its configuration, without the transport the library selected (that
    may change along the series, and is listed with the changes)."""
    env = r.settings.get("env") or {}
    return " ".join([r.kernel, run_label(r) or r.transport, f"np={r.ranks}", r.mpi,
                     *(f"{k}={v}" for k, v in sorted(env.items()))])


def _scores(rows: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row of values (a segment, or a permutation of it): the largest two-sample t
    statistic over its splits into [:s] and [s:], m <= s <= n - m (the likelihood-ratio
    statistic for one change in mean; Hawkins 1977, Worsley 1979), and the first s that
    reaches it; s is -1 where no split is allowed. Every split of every row at once, from
    running sums: a report's history ran 1,000 rows of up to a few hundred nights."""
    k, n = rows.shape
    splits = np.arange(m, n - m + 1)
    if splits.size == 0:
        return np.full(k, -1.0), np.full(k, -1, dtype=int)
    # centred first: the residual sum of squares below is a difference of sums of squares
    x = rows - rows.mean(axis=1, keepdims=True)
    head = np.cumsum(x, axis=1)[:, splits - 1]
    head_sq = np.cumsum(x * x, axis=1)[:, splits - 1]
    total, total_sq = x.sum(axis=1, keepdims=True), (x * x).sum(axis=1, keepdims=True)
    mean_a = head / splits
    mean_b = (total - head) / (n - splits)
    resid = (head_sq - splits * mean_a ** 2) + (total_sq - head_sq - (n - splits) * mean_b ** 2)
    sd = np.sqrt(np.maximum(resid, 0.0) / max(n - 2, 1))
    sd[sd == 0] = 1e-12
    t = np.abs(mean_b - mean_a) / sd * np.sqrt(splits * (n - splits) / n)
    best = t.max(axis=1)
    # the first split at the maximum; splits whose statistics differ only by rounding (equal
    # halves of tied values) are one maximum, not a later one by a last bit
    first = (t >= best[:, None] * (1 - 1e-9)).argmax(axis=1)
    return best, splits[first]


def _split(logm: np.ndarray, m: int, permutations: int,
           rng: np.random.Generator) -> tuple[int, float] | None:
    """The best split of a segment and its permutation p-value; None when too short. The
    permutations are drawn as `rng.permutation(logm)` one after another would draw them."""
    if logm.size < 2 * m:
        return None
    best, where = _scores(logm[None, :], m)
    if where[0] < 0:
        return None
    shuffled = rng.permuted(np.broadcast_to(logm, (permutations, logm.size)), axis=1)
    hits = int(np.count_nonzero(_scores(shuffled, m)[0] >= best[0] - 1e-12))
    return int(where[0]), (1 + hits) / (1 + permutations)


def detect(nights: list[Night], better: Better, *, alpha: float = ALPHA,
           tolerance: float = TOLERANCE, min_nights: int = MIN_NIGHTS,
           permutations: int = PERMUTATIONS) -> list[Change]:
    logm = np.log(np.array([n.median for n in nights]))
    rng = np.random.default_rng(SEED)
    points: dict[int, float] = {}
    todo = [(0, len(nights))]
    while todo:
        lo, hi = todo.pop()
        found = _split(logm[lo:hi], min_nights, permutations, rng)
        if found is None:
            continue
        s, p = found
        cut = lo + s
        ratio = math.exp(float(np.median(logm[cut:hi]) - np.median(logm[lo:cut])))
        if p >= alpha or abs(ratio - 1) < tolerance:
            continue
        points[cut] = p
        todo += [(lo, cut), (cut, hi)]
    cuts = sorted(points)
    bounds = [0, *cuts, len(nights)]
    changes = []
    for i, cut in enumerate(cuts):
        lo, hi = bounds[i], bounds[i + 2]
        cmp = compare_medians_runs([np.concatenate(n.samples) for n in nights[lo:cut]],
                                   [np.concatenate(n.samples) for n in nights[cut:hi]])
        lo_r, hi_r = cmp.ratio_ci.low, cmp.ratio_ci.high
        if not (lo_r > 1 or hi_r < 1) or abs(cmp.ratio - 1) < tolerance:
            continue  # the nights-first interval holds no change: the spread explains it
        worse = cmp.ratio > 1 if better == Better.LOWER else cmp.ratio < 1
        changes.append(Change(
            index=cut, campaign_id=nights[cut].campaign_id, started=nights[cut].started,
            kind="regression" if worse else "improvement", before=cmp.median_a,
            after=cmp.median_b, ratio=cmp.ratio, ratio_low=lo_r, ratio_high=hi_r,
            p_value=points[cut], nights_before=cut - lo, nights_after=hi - cut,
            standing=hi == len(nights)))
    return changes


def _watch(series: Series, tolerance: float, min_nights: int) -> str | None:
    """The newest night alone beyond every night since the last change and the tolerance: too
    early to call (a change needs min_nights on its side), worth saying."""
    start = series.changes[-1].index if series.changes else 0
    prev = [n.median for n in series.nights[start:-1]]
    if len(prev) < min_nights:
        return None
    last = series.nights[-1].median
    ref = float(np.median(prev))
    if abs(last / ref - 1) >= tolerance and (last > max(prev) or last < min(prev)):
        return (f"newest night c{series.nights[-1].campaign_id} is x{last / ref:.3g} the "
                f"nights before it and outside their range; a change needs {min_nights} "
                "nights on its side to be called")
    return None


def history(store: Store, name: str, *, until: int | None = None, last: int | None = None,
            alpha: float = ALPHA,
            tolerance: float = TOLERANCE, min_nights: int = MIN_NIGHTS,
            permutations: int = PERMUTATIONS) -> History:
    if min_nights < 1:
        raise FabenchError("--min-nights must be at least 1")
    camps = series_campaigns(store, name, until, last)
    if not camps:
        names = sorted({c["name"] for c in store.campaigns()})
        raise FabenchError(f"no finished campaign named {name!r} (or with that spec digest) in "
                           f"{store.path}; names there: {', '.join(names)[:300] or 'none'}")
    method = {"alpha": alpha, "tolerance": tolerance, "min_nights": min_nights,
              "permutations": permutations,
              "test": "binary segmentation, permutation test of the largest split t statistic; "
                      "95 % interval of the ratio by two-stage bootstrap (nights, then "
                      "samples)"}
    hist = History(name, camps, [], method)
    if len(camps) < 2:
        return hist
    groups: dict[tuple[Any, ...], dict[int, list[tuple[RunRow, np.ndarray]]]] = {}
    labels: dict[tuple[Any, ...], tuple[str, str, int, Metric]] = {}
    first_run: dict[tuple[tuple[Any, ...], int], RunRow] = {}
    for c in camps:
        for r in store.runs(c.id, status="ok"):
            metrics = run_metrics(r)
            if not metrics:
                continue
            metric = metrics[0]
            for rec in store.results(r.id):
                vals = metric.values(rec.times, rec.bytes_per_sample, rec.messages_per_sample)
                vals = vals[np.isfinite(vals) & (vals > 0)]
                if not vals.size:
                    continue
                key = (*config_key(r), rec.size, metric.name)
                groups.setdefault(key, {}).setdefault(c.id, []).append((r, vals))
                labels.setdefault(key, (_label(r), r.kernel, rec.size, metric))
                first_run.setdefault((key, c.id), r)
    by_id = {c.id: c for c in camps}
    for key, per_camp in groups.items():
        nights = []
        for cid in sorted(per_camp, key=lambda i: (by_id[i].started, i)):
            samples = [v for _, v in per_camp[cid]]
            ci = median_ci_runs(samples)
            nights.append(Night(cid, by_id[cid].started, [r.id for r, _ in per_camp[cid]],
                                samples, float(np.median(np.concatenate(samples))),
                                ci.low, ci.high))
        label, kernel, size, metric = labels[key]
        s = Series(label, kernel, size, metric, nights)
        if len(nights) >= 2:
            s.changes = detect(nights, metric.better, alpha=alpha, tolerance=tolerance,
                               min_nights=min_nights, permutations=permutations)
            for ch in s.changes:
                before_id, after_id = nights[ch.index - 1].campaign_id, ch.campaign_id
                ch.changed = provenance_changes(
                    _facts(by_id[before_id], first_run.get((key, before_id))),
                    _facts(by_id[after_id], first_run.get((key, after_id))))
            s.watch = _watch(s, tolerance, min_nights)
        hist.series.append(s)
    hist.series.sort(key=lambda s: (s.kernel, s.label, s.size))
    return hist


def to_json(h: History) -> dict[str, Any]:
    return {
        "name": h.name, "campaigns": [c.id for c in h.campaigns], "method": h.method,
        "exit_status": h.exit_code,
        "series": [{
            "label": s.label, "kernel": s.kernel, "size": s.size, "metric": s.metric.name,
            "unit": s.metric.unit, "better": str(s.metric.better), "watch": s.watch,
            "nights": [{"campaign": n.campaign_id, "started": n.started, "date": n.date,
                        "median": n.median, "low": n.low, "high": n.high, "runs": n.runs}
                       for n in s.nights],
            "changes": [{"kind": c.kind, "campaign": c.campaign_id, "date": c.date,
                         "started": c.started, "before": c.before, "after": c.after,
                         "ratio": c.ratio, "ratio_low": c.ratio_low,
                         "ratio_high": c.ratio_high, "change_pct": c.percent[0],
                         "change_pct_low": c.percent[1], "change_pct_high": c.percent[2],
                         "p_value": c.p_value, "nights_before": c.nights_before,
                         "nights_after": c.nights_after, "standing": c.standing,
                         "provenance_changed": c.changed} for c in s.changes]}
            for s in h.series]}


def history_lines(h: History) -> list[str]:
    if len(h.campaigns) < 2:
        return [f"# history of {h.name!r}: no history yet ({len(h.campaigns)} campaign"
                f"{'' if len(h.campaigns) == 1 else 's'}; a series needs two or more)"]
    first, last = h.campaigns[0], h.campaigns[-1]
    out = [f"# history of {h.name!r}: {len(h.campaigns)} campaigns, {_date(first.started)} "
           f"(c{first.id}) .. {_date(last.started)} (c{last.id})",
           f"# changes: {h.method['test']}; alpha {h.method['alpha']}, tolerance "
           f"{h.method['tolerance'] * 100:g} %, at least {h.method['min_nights']} nights a "
           "side (docs/history.md)"]
    for s in h.series:
        m = s.metric
        out.append("")
        out.append(f"{s.label} size {s.size}: {m.name} ({m.unit}, {m.better} is better)")
        marks = {c.index: c for c in s.changes}
        for i, n in enumerate(s.nights):
            tag = f"   <- {marks[i].kind.upper()}" if i in marks else ""
            out.append(f"  c{n.campaign_id:<5} {n.date}  {n.median:10.4g}  "
                       f"[{n.low:.4g}, {n.high:.4g}]{tag}")
        for c in s.changes:
            pct, lo, hi = c.percent
            out.append(f"  {c.kind.upper()} at c{c.campaign_id} ({c.date}): "
                       f"{c.before:.4g} -> {c.after:.4g} {m.unit}, {pct:+.1f} % "
                       f"[{lo:+.1f}, {hi:+.1f}] (95 %), p = {c.p_value:.3f}, "
                       f"{c.nights_before} nights before, {c.nights_after} after"
                       f"{'' if c.standing else ' (not standing: a later change followed)'}")
            if c.changed:
                out.append("    changed with it:")
                out += [f"      {line}" for line in c.changed[:20]]
                if len(c.changed) > 20:
                    out.append(f"      ... and {len(c.changed) - 20} more")
            else:
                out.append("    nothing recorded in provenance changed with it")
        if s.watch:
            out.append(f"  watch: {s.watch}")
        if len(s.nights) < 2 * h.method["min_nights"]:
            out.append(f"  ({len(s.nights)} nights: a change needs "
                       f"{h.method['min_nights']} on each side to be called)")
    regs = h.regressions
    out.append("")
    out.append(f"# {len(regs)} regression(s), "
               f"{sum(1 for s in h.series for c in s.changes if c.kind == 'improvement')} "
               f"improvement(s) over {len(h.series)} metric(s)")
    return out
