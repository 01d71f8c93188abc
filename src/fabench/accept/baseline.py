"""`fabench accept --baseline CAMPAIGN`: every measured metric against the same metric of an
earlier acceptance, with analysis/compare.py's verdicts (better, worse, equal within noise,
inconclusive). The comparison sits beside each verdict; it never changes one (a threshold
does).

- p2p and collectives (the acceptance's own runs) and per-node HPL: `fabench compare` of the
  two campaigns, paired by configuration;
- the matrix: per direction and per node, what the judge flagged then and now (matrix/diff.py:
  broken, fixed, still bad), and the latency and bandwidth medians over every direction both
  matrices measured, and over each host's directions. A matrix is one measurement, so its
  directions are the clusters of a paired two-stage bootstrap (one draw of directions for
  both matrices, then samples within each) and the no-change band is the tolerance;
- congestion: each victim's median impact factor under each aggressor, before against after;
  the four groups (alone and congested, then and now) each resampled by rounds, the rounds'
  own factors standing for the repeats.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.compare import (
    Comparison,
    SizeComparison,
    compare_selections,
    judge_two,
)
from ..choices import DEFAULT_TOLERANCE
from ..congestion.impact import RoundSamples, round_samples_from_store
from ..errors import FabenchError
from ..matrix.diff import diff
from ..matrix.stored import MatrixStore as Store
from ..metrics import BANDWIDTH, LATENCY, Better, Metric
from ..util.stats import compare_medians_paired, compare_ratio_runs
from .verdict import Acceptance, Verdict

IMPACT = Metric("impact_factor", "x", Better.LOWER, "time")
_COMPARED = ("better", "worse", "equal", "inconclusive", "no-ci")


def saved_path(store_path: Path, campaign_id: int) -> Path:
    return store_path.parent / f"accept-c{campaign_id}.json"


def attach_baseline(acc: Acceptance, store_path: Path, base: int,
                    tolerance: float = DEFAULT_TOLERANCE) -> None:
    old = saved_path(store_path, base)
    before = json.loads(old.read_text(encoding="utf-8")) if old.exists() else None
    _attach_runs(acc, store_path, base, before)
    if before is None:
        acc.baseline_summary.append(
            f"c{base}: no saved acceptance ({old.name}) beside the store: the matrix, HPL and "
            "congestion campaigns it ran are unknown, so only its own runs are compared")
        return
    then = before.get("checks", [])
    now = [v.to_json() for v in acc.verdicts]
    with Store(store_path) as store:
        _attach_matrix(acc, store, base, _campaign_of(then, "matrix"),
                       _campaign_of(now, "matrix"), tolerance)
        _attach_congestion(acc, store, base, _campaign_of(then, "congestion"),
                           _campaign_of(now, "congestion"), tolerance)


def _campaign_of(checks: list[dict[str, Any]], kind: str) -> int | None:
    """The campaign a kind of check ran (matrix, congestion, hpl nodes), from a saved
    acceptance's JSON."""
    for c in checks:
        if c.get("kind") == kind and c.get("campaign_ids"):
            return int(c["campaign_ids"][-1])
    return None


# ---- the acceptance's own runs and the per-node HPL runs: `fabench compare` -------------------
def _attach_runs(acc: Acceptance, store_path: Path, base: int,
                 before: dict[str, Any] | None) -> None:
    pairs = [(f"c{base}", f"c{acc.campaign_id}")]
    if before is not None:
        hpl_then = _campaign_of(before.get("checks", []), "hpl")
        hpl_now = _campaign_of([v.to_json() for v in acc.verdicts], "hpl")
        if hpl_then and hpl_now:
            pairs.append((f"c{hpl_then}", f"c{hpl_now}"))
    comps: list[Comparison] = []
    with Store(store_path) as store:
        for a, b in pairs:
            try:
                comps += compare_selections(store, [a], [b])
            except FabenchError as exc:
                acc.baseline_summary.append(f"{a} vs {b}: {exc}")
    for c in comps:
        acc.baseline_summary.append(c.sentence())
    for v in acc.verdicts:
        m = v.measured
        if m is None or not m.run_ids or v.check.kind in ("matrix", "congestion"):
            continue
        for c in comps:
            if not {r.id for r in c.b.runs} & set(m.run_ids):
                continue
            for sc in c.sizes:
                if v.check.size is None or sc.size == v.check.size:
                    v.baseline.append({"campaign": base, "kernel": c.kernel,
                                       "label": c.b.label, "metric": c.metric.name,
                                       **sc.as_dict()})


# ---- the all-pairs matrix ---------------------------------------------------------------------
Direction = tuple[str, str]


@dataclass
class MatrixSamples:
    """A stored matrix's first pass: per direction (host names), its samples."""

    campaign_id: int
    size: int | None
    mode: str | None
    latency: dict[Direction, np.ndarray]
    bandwidth: dict[Direction, np.ndarray]


def matrix_samples(store: Store, campaign_id: int) -> tuple[MatrixSamples, dict[str, Any]]:
    """The samples of a matrix's first pass (not its retests: those measure suspects alone),
    and its stored judgement."""
    _, judgement = store.matrix(campaign_id)
    lat: dict[Direction, np.ndarray] = {}
    bw: dict[Direction, np.ndarray] = {}
    sizes, modes = set(), set()
    for p in judgement.get("passes", []):
        if p.get("role") != "first":
            continue
        for rec in store.matrix_pairs(int(p["run_id"])):
            key = (rec.src_host, rec.dst_host)
            sizes.add(rec.size)
            modes.add(rec.mode)
            t = np.asarray(rec.bandwidth_us, dtype=float)
            rates = rec.bytes_per_sample / t[t > 0]
            if rec.latency_us:
                lat[key] = np.asarray(rec.latency_us, dtype=float)
            if rates.size:
                bw[key] = rates
    return (MatrixSamples(campaign_id, sizes.pop() if len(sizes) == 1 else None,
                          modes.pop() if len(modes) == 1 else None, lat, bw), judgement)


def _compare_directions(a: dict[Direction, np.ndarray], b: dict[Direction, np.ndarray],
                        keys: Sequence[Direction], size: int, metric: Metric,
                        tolerance: float) -> SizeComparison:
    # the same directions on both sides, drawn together; each side one measurement: no
    # repeats, so the band is the tolerance alone
    two = compare_medians_paired([a[k] for k in keys], [b[k] for k in keys])
    return judge_two(size, two, metric, tolerance, [], [])


def compare_matrices(store: Store, cid_a: int, cid_b: int, base: int,
                     tolerance: float = DEFAULT_TOLERANCE) -> tuple[list[dict[str, Any]],
                                                                    list[dict[str, Any]], str]:
    """(entries for `no bad link`, entries for `no slow node`, one summary sentence): flagged
    links and nodes that appeared or disappeared, and the latency and bandwidth medians over
    every direction both matrices measured and over each host's directions."""
    sa, ja = matrix_samples(store, cid_a)
    sb, jb = matrix_samples(store, cid_b)
    links: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for ch in diff(ja, jb):
        if ch.verdict == "same":
            continue
        entry = {"campaign": base, "kind": "link" if ch.dst else "node", "src": ch.src,
                 "dst": ch.dst, "verdict": ch.verdict, "line": ch.line, "before": ch.before,
                 "after": ch.after, "bandwidth_ratio": ch.bandwidth_ratio,
                 "latency_ratio": ch.latency_ratio}
        (links if ch.dst else nodes).append(entry)
        if ch.verdict != "changed":
            what = f"{ch.verdict} {'link' if ch.dst else 'node'}"
            counts[what] = counts.get(what, 0) + 1
    parts = [", ".join(f"{n} {w}(s)" for w, n in sorted(counts.items())) or
             "no flagged link or node appeared or disappeared"]
    if sa.size != sb.size or sa.mode != sb.mode:
        parts.append(f"medians not compared: c{cid_a} measured {sa.size} B {sa.mode}, "
                     f"c{cid_b} {sb.size} B {sb.mode}")
        return links, nodes, f"matrix c{cid_a} -> c{cid_b}: " + "; ".join(parts)
    hosts = sorted({h for k in (*sa.latency, *sb.latency) for h in k})
    for metric, a, b, size in ((LATENCY, sa.latency, sb.latency, 8),
                               (BANDWIDTH, sa.bandwidth, sb.bandwidth, sa.size or 0)):
        common = sorted(set(a) & set(b))
        if not common:
            continue
        sc = _compare_directions(a, b, common, size, metric, tolerance)
        links.append({"campaign": base, "kernel": "matrix", "scope": "all directions",
                      "label": f"{metric.name}, {len(common)} directions",
                      "metric": metric.name, "directions": len(common), **sc.as_dict()})
        parts.append(f"{metric.name} median of {len(common)} directions {sc.verdict} "
                     f"(x{sc.two.ratio:.3f} [{sc.two.ratio_ci.low:.3f}, "
                     f"{sc.two.ratio_ci.high:.3f}])")
        for h in hosts:
            mine = [k for k in common if h in k]
            if not mine:
                continue
            sc = _compare_directions(a, b, mine, size, metric, tolerance)
            nodes.append({"campaign": base, "kernel": "matrix", "scope": f"host {h}",
                          "host": h, "label": f"{metric.name} of {h}'s {len(mine)} directions",
                          "metric": metric.name, "directions": len(mine), **sc.as_dict()})
    return links, nodes, f"matrix c{cid_a} -> c{cid_b}: " + "; ".join(parts)


def _comparable(acc: Acceptance, kind: str, then: int | None, now: int | None,
                missing: str) -> list[Verdict]:
    """The acceptance's checks of a kind, when both acceptances measured it; else none, and
    the summary says which side did not."""
    checks = [v for v in acc.verdicts if v.check.kind == kind]
    if checks and (then is None or now is None):
        side = "the baseline" if then is None else "this acceptance"
        acc.baseline_summary.append(f"{kind}: {side} {missing}: nothing to compare")
        return []
    return checks


def _attach_matrix(acc: Acceptance, store: Store, base: int, then: int | None,
                   now: int | None, tolerance: float) -> None:
    checks = _comparable(acc, "matrix", then, now, "measured no matrix")
    if not checks or then is None or now is None:
        return
    try:
        links, nodes, sentence = compare_matrices(store, then, now, base, tolerance)
    except FabenchError as exc:
        acc.baseline_summary.append(f"matrix c{then} vs c{now}: {exc}")
        return
    acc.baseline_summary.append(sentence)
    for v in checks:
        v.baseline += links if v.check.metric.name == "matrix.bad_links" else nodes


# ---- congestion: the impact factors ----------------------------------------------------------
def _round_factors(r: RoundSamples) -> list[float]:
    """Each round's own median factor (congested / alone), the repeats of the comparison."""
    return [float(np.median(c) / np.median(i)) for i, c in zip(r.isolated, r.congested,
                                                              strict=False)
            if i.size and c.size and np.median(i) > 0]


def compare_congestion(store: Store, cid_a: int, cid_b: int, base: int,
                       tolerance: float = DEFAULT_TOLERANCE) -> list[dict[str, Any]]:
    """Each (victim, aggressor) both congestion tests measured: the median impact factor
    then and now, B against A."""
    def key(r: RoundSamples) -> tuple[Any, ...]:
        return (r.victim, r.aggressor, r.kernel, r.size, r.ranks)

    before = {key(r): r for r in round_samples_from_store(store, cid_a)}
    out = []
    for r in round_samples_from_store(store, cid_b):
        a = before.get(key(r))
        if a is None:
            continue
        two = compare_ratio_runs(a.isolated, a.congested, r.isolated, r.congested, 0.5)
        sc = judge_two(r.size, two, IMPACT, tolerance, _round_factors(a), _round_factors(r))
        out.append({"campaign": base, "kernel": r.kernel,
                    "label": f"{r.victim} under {r.aggressor}", "metric": IMPACT.name,
                    "runs_then": a.run_ids, "runs_now": r.run_ids, **sc.as_dict()})
    return out


def _attach_congestion(acc: Acceptance, store: Store, base: int, then: int | None,
                       now: int | None, tolerance: float) -> None:
    checks = _comparable(acc, "congestion", then, now, "ran no congestion test")
    if not checks or then is None or now is None:
        return
    entries = compare_congestion(store, then, now, base, tolerance)
    if not entries:
        acc.baseline_summary.append(f"congestion c{then} vs c{now}: no victim and aggressor "
                                    "in common")
        return
    for v in checks:
        v.baseline += entries
    acc.baseline_summary.append(
        f"congestion c{then} -> c{now}: median impact factor " + "; ".join(
            f"{e['label']} {e['median_a']:.3g} -> {e['median_b']:.3g} {e['verdict']}"
            for e in entries))


# ---- words -------------------------------------------------------------------------------------
def baseline_text(b: dict[str, Any]) -> str:
    """One baseline entry as a line of the text output and the HTML notes."""
    if b.get("verdict") not in _COMPARED:  # a link or node that changed its verdict
        return f"vs baseline c{b['campaign']}: {b['line']}"
    what = b.get("label") or b.get("kernel", "")
    ratio = f"ratio {b['ratio']:.3f}"
    if b.get("ratio_low") is not None and np.isfinite(b["ratio_low"]):
        ratio += f" [{b['ratio_low']:.3f}, {b['ratio_high']:.3f}]"
    return f"vs baseline c{b['campaign']}: {what}: {b['verdict']} ({ratio})"


def shown(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries worth a line: per-host medians only where they moved (the JSON has all)."""
    return [b for b in entries if not str(b.get("scope", "")).startswith("host ")
            or b.get("verdict") in ("better", "worse")]
