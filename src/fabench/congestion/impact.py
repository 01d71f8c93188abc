"""The congestion impact factor (GPCNeT: congested / isolated, at the median and at P99) with
its confidence interval, and the counters that explain it, from the runs in the store.

Each round of a congestion test measures every victim alone and under each aggressor, so a
round is one run per side: the interval comes from the two-stage bootstrap of util/stats.py
(rounds drawn, then samples within them), which carries the round-to-round spread of a
noisy host into it. One round gives an interval from the samples alone.
"""

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..records import ResultRecord
from ..store.database import RunRow, Store
from ..util.stats import QuantileRatio, quantile_ratio_runs
from .victims import ISOLATED, phase_of, victim_of

QUANTILES = {"median": 0.5, "p99": 0.99}
# What a phase's counters sum, over every host's TCP (nstat names in tcpstats.NAMED) and every
# fb-link rule of the testbed.
TCP_SUMS = ("retrans_segs", "timeouts", "delivered_ce", "in_ce_pkts", "in_ect0_pkts",
            "ofo_queue")
LINK_SUMS = ("ce_marked", "ect_seen", "not_ect_over_k", "queue_drops", "limit_drops",
             "write_drops")


def _num(x: float | None) -> float | None:
    """JSON has no NaN: an undefined value is null."""
    return x if x is not None and math.isfinite(x) else None


@dataclass(frozen=True)
class ImpactFactor:
    """congested / isolated at one quantile of a victim's times, with its interval."""

    quantile: str  # "median", "p99"
    isolated_us: float
    congested_us: float
    factor: float
    low: float
    high: float
    method: str
    point_outside: bool = False  # the interval misses the factor (stats.Interval)

    @classmethod
    def of(cls, name: str, r: QuantileRatio) -> "ImpactFactor":
        return cls(name, r.value_a, r.value_b, r.ratio, r.ratio_ci.low, r.ratio_ci.high,
                   r.ratio_ci.method, r.ratio_ci.point_outside)

    def to_json(self) -> dict[str, Any]:
        return {"isolated_us": _num(self.isolated_us), "congested_us": _num(self.congested_us),
                "factor": _num(self.factor), "ci": [_num(self.low), _num(self.high)],
                "method": self.method, "point_outside": self.point_outside}


def impact_factors(isolated: Sequence[Sequence[float] | np.ndarray],
                   congested: Sequence[Sequence[float] | np.ndarray]) -> dict[str, ImpactFactor]:
    """Per quantile, congested / isolated of the pooled samples; each argument is one sample
    list per round."""
    return {name: ImpactFactor.of(name, quantile_ratio_runs(isolated, congested, q))
            for name, q in QUANTILES.items()}


def run_counters(run: RunRow) -> dict[str, int]:
    """What every host's TCP and every fb-link counted during one run (its provenance)."""
    out = dict.fromkeys((*TCP_SUMS, *LINK_SUMS), 0)
    for delta in (run.provenance.get("tcp_counters") or {}).values():
        for k in TCP_SUMS:
            out[k] += int(delta.get(k, 0) or 0)
    links = (run.provenance.get("testbed") or {}).get("link_counters") or {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k in LINK_SUMS and isinstance(v, int) and not isinstance(v, bool):
                    out[k] += v
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(links)
    return out


def bottleneck_of(run: RunRow) -> str:
    """The testbed's impaired links as specified, e.g. `h2:rate=200mbit,queue=100,ecn=20`."""
    links = (run.provenance.get("testbed") or {}).get("links") or []
    specs = [s for ln in links for s in (ln.get("specs") or [])]
    return "; ".join(str(s) for s in specs) or "none"


@dataclass
class ImpactRow:
    """One victim metric under one aggressor in one congestion test (campaign)."""

    campaign_id: int | None
    aggressor: str
    victim: str
    kernel: str
    size: int
    ranks: int
    bottleneck: str
    rounds: int
    impact_factor: dict[str, ImpactFactor]
    isolated_bandwidth_mbs: float | None = None  # bandwidth victim: medians, MB/s
    congested_bandwidth_mbs: float | None = None
    counters: dict[str, int] = field(default_factory=dict)  # congested runs, summed
    isolated_counters: dict[str, int] = field(default_factory=dict)
    run_ids: list[int] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"type": "congestion", "campaign_id": self.campaign_id,
                "aggressor": self.aggressor, "victim": self.victim, "kernel": self.kernel,
                "size": self.size, "ranks": self.ranks, "bottleneck": self.bottleneck,
                "rounds": self.rounds,
                "impact_factor": {k: v.to_json() for k, v in self.impact_factor.items()},
                "isolated_bandwidth_mbs": _num(self.isolated_bandwidth_mbs),
                "congested_bandwidth_mbs": _num(self.congested_bandwidth_mbs),
                "counters": self.counters, "isolated_counters": self.isolated_counters,
                "run_ids": self.run_ids, "flags": self.flags}


def _bandwidth(records: list[ResultRecord]) -> float | None:
    rates = [r.bytes_per_sample / t for r in records for t in r.times if t > 0]
    return float(np.median(rates)) if rates else None  # bytes/us = MB/s


def _sum(counters: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for c in counters:
        for k, v in c.items():
            out[k] += v
    return dict(out)


Group = dict[str, list[tuple[RunRow, list[ResultRecord]]]]  # phase -> [(run, records)]


def _groups(runs: list[RunRow], results: dict[int, list[ResultRecord]]
            ) -> dict[tuple[Any, ...], Group]:
    """(campaign, kernel, size, ranks) -> phase -> the ok victim runs of that phase, in run
    order (a round's runs come one after the other)."""
    groups: dict[tuple[Any, ...], Group] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        phase = phase_of(str(run.settings.get("label") or ""))
        if phase is None or run.status != "ok":
            continue
        for rec in results.get(run.id, []):
            if victim_of(run.kernel, rec.size) is None:
                continue
            groups[(run.campaign_id, run.kernel, rec.size, run.ranks)][phase].append(
                (run, [rec]))
    return groups


def _times(group: list[tuple[RunRow, list[ResultRecord]]]) -> list[np.ndarray]:
    """One sample array per run (round)."""
    return [np.asarray([t for r in recs for t in r.times]) for _, recs in group]


@dataclass(frozen=True)
class RoundSamples:
    """A victim metric under one aggressor: its times alone and congested, one array per
    round (what an impact factor is computed from, kept for comparing two tests)."""

    victim: str
    aggressor: str
    kernel: str
    size: int
    ranks: int
    isolated: list[np.ndarray]
    congested: list[np.ndarray]
    run_ids: list[int]


def round_samples(runs: list[RunRow], results: dict[int, list[ResultRecord]]
                  ) -> list[RoundSamples]:
    out = []
    for (_, kernel, size, ranks), phases in sorted(_groups(runs, results).items(),
                                                   key=lambda kv: (kv[0][0] or 0, kv[0][1],
                                                                   kv[0][2])):
        alone = phases.get(ISOLATED, [])
        victim = victim_of(kernel, size)
        if not alone or victim is None:
            continue
        for pattern, congested in sorted(phases.items()):
            if pattern != ISOLATED:
                out.append(RoundSamples(victim.name, pattern, kernel, size, ranks,
                                        _times(alone), _times(congested),
                                        sorted(r.id for r, _ in (*alone, *congested))))
    return out


def impact_rows(runs: list[RunRow], results: dict[int, list[ResultRecord]]) -> list[ImpactRow]:
    """Every (campaign, aggressor, victim) of the congestion runs among `runs` (ok ones)."""
    rows = []
    for (cid, kernel, size, ranks), phases in sorted(_groups(runs, results).items(),
                                                     key=lambda kv: (kv[0][0] or 0, kv[0][1],
                                                                     kv[0][2])):
        alone = phases.get(ISOLATED, [])
        if not alone:
            continue
        victim = victim_of(kernel, size)
        assert victim is not None
        for pattern, congested in sorted(phases.items()):
            if pattern == ISOLATED:
                continue
            bw = victim.name == "bandwidth"
            rows.append(ImpactRow(
                cid, pattern, victim.name, kernel, size, ranks,
                bottleneck_of(congested[0][0]), min(len(alone), len(congested)),
                impact_factors(_times(alone), _times(congested)),
                _bandwidth([r for _, recs in alone for r in recs]) if bw else None,
                _bandwidth([r for _, recs in congested for r in recs]) if bw else None,
                _sum([run_counters(r) for r, _ in congested]),
                _sum([run_counters(r) for r, _ in alone]),
                sorted(r.id for r, _ in (*alone, *congested)),
                sorted({f for r, _ in congested for f in r.flags})))
    return rows


def impact_rows_from_store(store: Store, campaign_id: int) -> list[ImpactRow]:
    runs = store.runs(campaign_id)
    return impact_rows(runs, {r.id: list(store.results(r.id)) for r in runs
                              if r.status == "ok"})


def round_samples_from_store(store: Store, campaign_id: int) -> list[RoundSamples]:
    runs = store.runs(campaign_id)
    return round_samples(runs, {r.id: list(store.results(r.id)) for r in runs
                                if r.status == "ok"})
